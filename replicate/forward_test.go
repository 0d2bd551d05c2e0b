package replicate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// The forwarders a cluster of the tests may use.
const (
	fwdLocal = "local" // LocalForwarder
	fwdNet   = "net"   // NetForwarder and ForwardServer on loopback TCP
)

// fwdNodes is what startForwardNodes started beside the nodes.
type fwdNodes struct {
	nodes   []*rnode
	local   *LocalForwarder
	servers []*ForwardServer
	addrs   []string // the servers' TCP addresses
	nets    []*NetForwarder
}

// startForwardNodes starts n nodes as newRCluster does (in-memory raft
// transport, a LogStore each, feeds opened before any write), each with a
// Forwarder of the given kind, and bootstraps them.
func startForwardNodes(tb testing.TB, n int, mode string, holds ...func(holdPoint, int)) *fwdNodes {
	tb.Helper()
	return startForwardNodesWith(tb, n, mode, nil, holds...)
}

// startForwardNodesWith is startForwardNodes with conf, if not nil,
// changing each node's raft configuration.
func startForwardNodesWith(tb testing.TB, n int, mode string, conf func(*raft.Config), holds ...func(holdPoint, int)) *fwdNodes {
	tb.Helper()
	f := &fwdNodes{local: NewLocalForwarder()}
	// The forward addresses of the net mode, known before any node
	// starts: each node's listener is open before its NewNode.
	var (
		mu    sync.RWMutex
		addrs = map[raft.ServerAddress]string{}
		lns   []net.Listener
	)
	for i := range n {
		nd := &rnode{id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), num: uint16(i + 1), db: strata.New(), snaps: testSnapshots(tb)}
		binds := nd.addTables(tb)
		var err error
		nd.store = openStore(tb, nil, filepath.Join(tb.TempDir(), "log"))
		_, nd.trans = raft.NewInmemTransport(nd.addr)
		var fwd Forwarder = f.local
		if mode == fwdNet {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			must(tb, err)
			lns = append(lns, ln)
			f.addrs = append(f.addrs, ln.Addr().String())
			mu.Lock()
			addrs[nd.addr] = ln.Addr().String()
			mu.Unlock()
			nf := NewNetForwarder(StaticResolver(addrs, &mu))
			f.nets = append(f.nets, nf)
			fwd = nf
		}
		rc := testRaftConfig(nd.id)
		if conf != nil {
			conf(rc)
		}
		nd.node, err = NewNode(nd.config(binds, rc, withForwarder(fwd), withHold(holdOf(holds, i))))
		must(tb, err)
		f.local.Register(nd.addr, nd.node)
		if mode == fwdNet {
			f.servers = append(f.servers, ServeForward(nd.node, lns[i]))
		}
		f.nodes = append(f.nodes, nd)
	}
	for _, a := range f.nodes {
		for _, b := range f.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	var members raft.Configuration
	for _, nd := range f.nodes {
		members.Servers = append(members.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	must(tb, f.nodes[0].node.Raft().BootstrapCluster(members).Error())
	return f
}

// holdOf returns the i'th hook of holds, or nil.
func holdOf(holds []func(holdPoint, int), i int) func(holdPoint, int) {
	if i < len(holds) {
		return holds[i]
	}
	return nil
}

// closeForwarders closes the servers and the network forwarders, after
// the nodes.
func (f *fwdNodes) closeForwarders(tb testing.TB) {
	for _, s := range f.servers {
		if err := s.Close(); err != nil {
			tb.Errorf("ForwardServer.Close: %v", err)
		}
	}
	for _, nf := range f.nets {
		nf.Close()
	}
}

// newForwardCluster is newRCluster with forwarding.
func newForwardCluster(t *testing.T, n int, mode string, holds ...func(holdPoint, int)) (*rcluster, *fwdNodes) {
	t.Helper()
	return newForwardClusterWith(t, n, mode, nil, holds...)
}

// newForwardClusterWith is newForwardCluster with conf, if not nil,
// changing each node's raft configuration.
func newForwardClusterWith(t *testing.T, n int, mode string, conf func(*raft.Config), holds ...func(holdPoint, int)) (*rcluster, *fwdNodes) {
	t.Helper()
	f := startForwardNodesWith(t, n, mode, conf, holds...)
	c := &rcluster{t: t, nodes: f.nodes}
	t.Cleanup(func() {
		c.close()
		f.closeForwarders(t)
	})
	return c, f
}

// forEachForwarder runs test with each kind of forwarder.
func forEachForwarder(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{fwdLocal, fwdNet} {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// putWith is put with Write's options.
func putWith(ctx context.Context, nd *rnode, id uint64, val string, opts ...WriteOption) (uint64, error) {
	return nd.node.Write(ctx, nd.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := nd.tables[0].Insert(txn, &item{ID: id, Val: val})
		return err
	}, opts...)
}

// has reports whether nd holds item id in table tbl, in a fresh read.
func has(nd *rnode, tbl int, id uint64) bool {
	_, _, found := nd.tables[tbl].Get(nd.db.ReadTxn(), itemByID.Query(id))
	return found
}

// TestForwardWriteEveryNode: a Write through every node of a 3-node
// cluster returns an index; when it returns, the node it went through
// already reads the write, and has published the index; a follower's
// write is in the leader's log at that index. A linearizable read on a
// follower (its read index through the forwarder) sees the last write
// made through another node. The nodes converge.
func TestForwardWriteEveryNode(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		c, _ := newForwardCluster(t, 3, mode)
		ld := c.leader()
		ctx := context.Background()
		for round := range 3 {
			for i, nd := range c.nodes {
				id := uint64(round*10 + i)
				index, err := put(ctx, nd, id, fmt.Sprint("via ", nd.id))
				if err != nil {
					t.Fatalf("Write through %s (leader %s): %v", nd.id, ld.id, err)
				}
				if index == 0 {
					t.Fatalf("Write through %s returned index 0", nd.id)
				}
				if !has(nd, 0, id) {
					t.Errorf("%s does not read its own write %d once Write returned", nd.id, id)
				}
				if got := nd.node.PublishedIndex(); got < index {
					t.Errorf("%s: published index %d below its write's %d", nd.id, got, index)
				}
				var l raft.Log
				must(t, ld.store.GetLog(index, &l))
				e, err := DecodeEntry(l.Data)
				must(t, err)
				if !entryInserts(t, ld, e, id) {
					t.Errorf("the entry at index %d does not insert %d", index, id)
				}
				// A linearizable read on the next node sees it.
				next := c.nodes[(i+1)%len(c.nodes)]
				txn, err := next.node.ReadLinearizable(ctx)
				if err != nil {
					t.Fatalf("ReadLinearizable on %s: %v", next.id, err)
				}
				if get(next, txn, id) == "" {
					t.Errorf("a linearizable read on %s misses %d, written through %s", next.id, id, nd.id)
				}
			}
		}
		c.converge()
		c.checkEqual(true)
	})
}

// entryInserts reports whether e upserts item id in table a.
func entryInserts(t *testing.T, nd *rnode, e *Entry, id uint64) bool {
	t.Helper()
	codec := persist.JSON[*item]()
	for _, cs := range e.Changes {
		for _, tc := range cs.Tables {
			for _, op := range tc.Ops {
				if tc.Table != "a" || op.Kind != OpUpsert {
					continue
				}
				o, err := codec.Decode(op.Value, op.CodecVersion)
				must(t, err)
				if o.ID == id {
					return true
				}
			}
		}
	}
	return false
}

// TestForwardConcurrent: writers on every node insert into one table at
// once, each running its transaction again after a conflict. Every write
// is acknowledged once, none is lost, nothing that conflicted applies,
// and the nodes converge to the same objects at the same revisions.
func TestForwardConcurrent(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		t.Run("table", func(t *testing.T) { testForwardConcurrent(t, mode) })
		t.Run("objects", func(t *testing.T) { testForwardConcurrent(t, mode, ObjectConflicts()) })
	})
}

func testForwardConcurrent(t *testing.T, mode string, opts ...WriteOption) {
	c, _ := newForwardCluster(t, 3, mode)
	c.leader()
	const perNode, commits = 3, 15
	var (
		wg        sync.WaitGroup
		conflicts atomic.Int64
		mu        sync.Mutex
		acked     = map[uint64]uint64{} // id: index
	)
	for i, nd := range c.nodes {
		for w := range perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range commits {
					id := uint64(i*10000 + w*100 + k)
					for {
						index, err := putWith(context.Background(), nd, id, fmt.Sprint(nd.id, "/", w), opts...)
						if errors.Is(err, ErrConflict) {
							conflicts.Add(1)
							continue
						}
						if err != nil {
							t.Errorf("%s writer %d: %v", nd.id, w, err)
							return
						}
						mu.Lock()
						acked[id] = index
						mu.Unlock()
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d writes acknowledged, %d conflicts run again", len(acked), conflicts.Load())
	c.converge()
	c.checkEqual(true)
	for _, nd := range c.nodes {
		txn := nd.db.ReadTxn()
		if got := nd.tables[0].NumObjects(txn); got != len(acked) {
			t.Errorf("%s holds %d objects, %d writes were acknowledged", nd.id, got, len(acked))
		}
		for id := range acked {
			if get(nd, txn, id) == "" {
				t.Errorf("%s: acknowledged write %d lost", nd.id, id)
			}
		}
	}
}

// TestForwardConflict: a follower's transaction whose table changed
// between its read and the leader's check fails with ErrConflict, and
// nothing of it applies on any node, also in the other table it wrote;
// the same transaction run again commits. Bad input to ApplyForwarded is
// refused with ErrInvalidForward, changing nothing.
func TestForwardConflict(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		c, ld, f := firstWritten(t, mode)
		ctx := context.Background()
		revB := f.tables[1].Revision(f.db.ReadTxn())
		attempt := 0
		fn := func(txn strata.WriteTxn) error {
			attempt++
			if attempt == 1 {
				// The leader writes table a after this transaction
				// read it (the follower's FSM waits for its locks).
				if _, err := put(ctx, ld, 2, "meanwhile"); err != nil {
					return err
				}
			}
			if _, _, err := f.tables[0].Insert(txn, &item{ID: 3, Val: "follower"}); err != nil {
				return err
			}
			_, _, err := f.tables[1].Insert(txn, &item{ID: 4, Val: "follower"})
			return err
		}
		_, err := f.node.Write(ctx, f.metas[:2], fn)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("a forwarded write of a table written meanwhile: %v, want ErrConflict", err)
		}
		c.converge()
		c.checkEqual(false)
		for _, nd := range c.nodes {
			if has(nd, 0, 3) || has(nd, 1, 4) {
				t.Errorf("%s holds a write of the conflicting transaction", nd.id)
			}
			if got := nd.tables[1].Revision(nd.db.ReadTxn()); got != revB {
				t.Errorf("%s: table b at revision %d after the conflict, was %d", nd.id, got, revB)
			}
			if !has(nd, 0, 2) {
				t.Errorf("%s misses the leader's write", nd.id)
			}
		}
		index, err := f.node.Write(ctx, f.metas[:2], fn)
		must(t, err)
		if !has(f, 0, 3) || !has(f, 1, 4) {
			t.Errorf("the transaction run again (index %d) is not on the follower", index)
		}

		// Bad input, on the leader.
		before := ld.dump()
		bad := map[string][]byte{"garbage": {1, 2, 3}}
		for name, cs := range map[string]ChangeSet{
			"unbound table": {Tables: []TableChanges{{Table: "nope", Ops: []Op{SetRevision(1)}}}},
		} {
			data, err := AppendEntry(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{cs}})
			must(t, err)
			bad[name] = data
		}
		two, err := AppendEntry(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{
			{Tables: []TableChanges{{Table: "a", Ops: []Op{SetRevision(100)}}}},
			{Tables: []TableChanges{{Table: "a", Ops: []Op{SetRevision(100)}}}},
		}})
		must(t, err)
		bad["two change sets"] = two
		for name, data := range bad {
			if _, err := ld.node.ApplyForwarded(ctx, data); !errors.Is(err, ErrInvalidForward) {
				t.Errorf("ApplyForwarded of %s: %v, want ErrInvalidForward", name, err)
			}
		}
		if got := ld.dump(); got != before {
			t.Errorf("refused input changed the leader:\n%s\nwas\n%s", got, before)
		}
		c.converge()
		c.checkEqual(true)
	})
}

// firstWritten starts a forwarding cluster with holds, writes object 1
// ("first") through its leader, waits until every node applied it, and
// returns the cluster, its leader and a follower.
func firstWritten(t *testing.T, mode string, holds ...func(holdPoint, int)) (*rcluster, *rnode, *rnode) {
	t.Helper()
	c, _ := newForwardCluster(t, 3, mode, holds...)
	ld := c.leader()
	_, err := put(context.Background(), ld, 1, "first")
	must(t, err)
	c.converge()
	return c, ld, c.followers(ld)[0]
}

// TestForwardObjectConflicts: with ObjectConflicts, a follower's write
// commits although its table changed since it read it, when the objects
// it writes did not, at the leader's next revisions (the nodes converge
// to the same revisions); it conflicts when one of them changed, and then
// nothing of it applies.
func TestForwardObjectConflicts(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		c, ld, f := firstWritten(t, mode)
		ctx := context.Background()
		// write inserts id through f, after the leader wrote other (in
		// the same table) once f's transaction read the table.
		write := func(id, other uint64) error {
			first := true
			_, err := f.node.Write(ctx, f.metas[:1], func(txn strata.WriteTxn) error {
				if first {
					first = false
					if _, err := put(ctx, ld, other, "leader"); err != nil {
						return err
					}
				}
				_, _, err := f.tables[0].Insert(txn, &item{ID: id, Val: "follower"})
				return err
			}, ObjectConflicts())
			return err
		}
		if err := write(2, 3); err != nil {
			t.Fatalf("a write of an object the leader did not write meanwhile: %v", err)
		}
		if !has(f, 0, 2) {
			t.Error("the follower does not read its write")
		}
		if err := write(1, 1); !errors.Is(err, ErrConflict) {
			t.Fatalf("a write of an object the leader wrote meanwhile: %v, want ErrConflict", err)
		}
		c.converge()
		c.checkEqual(true)
		for _, nd := range c.nodes {
			o, _, found := nd.tables[0].Get(nd.db.ReadTxn(), itemByID.Query(1))
			if !found || o.Val != "leader" {
				t.Errorf("%s: object 1 is %+v, want the leader's", nd.id, o)
			}
		}
	})
}

// TestForwardLeaderLoss: writers on the followers forward continuously
// while the leader is stopped (or partitioned away). Each Write returns
// an index, or ErrConflict, ErrNotLeader or ErrAmbiguous, nothing else;
// once a new leader is elected the remaining nodes converge and hold
// every acknowledged write, and no write reported as a conflict or as
// not leader applied anywhere: a failure is never false.
func TestForwardLeaderLoss(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		for _, how := range []string{"stop", "partition"} {
			t.Run(how, func(t *testing.T) { testForwardLeaderLoss(t, mode, how) })
		}
	})
}

func testForwardLeaderLoss(t *testing.T, mode, how string) {
	c, _ := newForwardCluster(t, 3, mode)
	ld := c.leader()
	type outcome struct {
		id  uint64
		err error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		acked    atomic.Int64
	)
	for wi, nd := range c.followers(ld) {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := uint64(wi*1000000 + w*100000 + i)
					_, err := put(context.Background(), nd, id, "forwarded")
					mu.Lock()
					outcomes = append(outcomes, outcome{id, err})
					mu.Unlock()
					if err == nil {
						acked.Add(1)
					}
				}
			}()
		}
	}
	for deadline := time.Now().Add(20 * time.Second); acked.Load() < 30; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("%d writes acknowledged before the leader was lost", acked.Load())
		}
	}
	if how == "stop" {
		c.stop(ld)
	} else {
		c.partition(ld)
	}
	// Writes go on until the new leader took some.
	before := acked.Load()
	deadline := time.Now().Add(20 * time.Second)
	for acked.Load() < before+20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if acked.Load() < before+20 {
		t.Errorf("no new writes acknowledged after the leader was lost")
	}
	if how == "partition" {
		c.heal(ld)
	}
	c.converge()
	c.checkEqual(true)
	count := map[string]int{}
	for _, o := range outcomes {
		present := false
		for _, nd := range c.live() {
			if has(nd, 0, o.id) {
				present = true
			}
		}
		switch {
		case o.err == nil:
			count["ok"]++
			if !present {
				t.Errorf("acknowledged write %d lost", o.id)
			}
		case errors.Is(o.err, ErrAmbiguous):
			count["ambiguous"]++
		case errors.Is(o.err, ErrConflict), errors.Is(o.err, ErrNotLeader):
			count[fmt.Sprint(errors.Is(o.err, ErrConflict))]++
			if present {
				t.Errorf("write %d failed (%v), and applied", o.id, o.err)
			}
		default:
			t.Errorf("write %d: %v", o.id, o.err)
		}
	}
	t.Logf("outcomes (true: conflict, false: not leader): %v", count)
}

// TestForwardNoLeader: a Write on a node that knows no leader (the other
// two stopped) holds for Config.ForwardHold, then fails with
// ErrNotLeader, and changes nothing; a plain commit on a follower is
// still refused with ErrNotLeader.
func TestForwardNoLeader(t *testing.T) {
	t.Parallel()
	c, fwd := newForwardCluster(t, 3, fwdLocal)
	fw := fwd.local
	ld := c.leader()
	f := c.followers(ld)[0]
	txn := f.db.WriteTxn(f.metas[0])
	_, _, err := f.tables[0].Insert(txn, &item{ID: 9})
	must(t, err)
	if _, err := txn.Commit(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a plain Commit on a follower: %v, want ErrNotLeader", err)
	}
	// The leader unreachable (the forwarder's, not raft's).
	fw.Unregister(ld.addr)
	before := f.dump()
	_, err = put(context.Background(), f, 1, "unreachable")
	var nl *NotLeaderError
	if !errors.As(err, &nl) || nl.Leader != ld.addr {
		t.Fatalf("Write with the leader unreachable: %v, want a *NotLeaderError naming %s", err, ld.addr)
	}
	if got := f.dump(); got != before {
		t.Errorf("the node changed:\n%s\nwas\n%s", got, before)
	}
	fw.Register(ld.addr, ld.node)
	if _, err := put(context.Background(), f, 2, "reachable"); err != nil {
		t.Fatalf("Write with the leader reachable again: %v", err)
	}
	for _, nd := range c.live() {
		if nd != f {
			c.stop(nd)
		}
	}
	before = f.dump()
	_, err = put(context.Background(), f, 1, "alone")
	if !errors.As(err, &nl) {
		t.Fatalf("Write with no leader: %v, want a *NotLeaderError", err)
	}
	if got := f.dump(); got != before {
		t.Errorf("the node changed:\n%s\nwas\n%s", got, before)
	}
}

// BenchmarkForwardWrite: 16 clients commit inserts into one table
// through the leader, and through a follower (which forwards them, and
// runs a transaction again after a conflict; with the table's revision as
// the precondition, then with ObjectConflicts), in one in-process cluster
// (the in-memory raft transport and forwarder, a LogStore each).
func BenchmarkForwardWrite(b *testing.B) {
	f := startForwardNodes(b, 3, fwdLocal)
	defer func() {
		for _, nd := range f.nodes {
			if err := nd.node.Close(); err != nil {
				b.Error(err)
			}
			for _, it := range nd.feeds {
				it.Close()
			}
			nd.trans.DisconnectAll()
			must(b, nd.trans.Close())
			must(b, nd.store.Close())
		}
	}()
	var ld *rnode
	for deadline := time.Now().Add(10 * time.Second); ld == nil && time.Now().Before(deadline); {
		for _, nd := range f.nodes {
			if nd.node.Raft().State() == raft.Leader {
				ld = nd
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ld == nil {
		b.Fatal("no leader")
	}
	var fl *rnode
	for _, nd := range f.nodes {
		if nd != ld {
			fl = nd
		}
	}
	var next atomic.Uint64
	for _, via := range []struct {
		name string
		nd   *rnode
		opts []WriteOption
	}{{"leader", ld, nil}, {"follower", fl, nil}, {"follower-objects", fl, []WriteOption{ObjectConflicts()}}} {
		b.Run(via.name, func(b *testing.B) {
			const clients = 16
			var conflicts atomic.Int64
			var done atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for done.Add(1) <= int64(b.N) {
						id := next.Add(1)
						for {
							_, err := putWith(context.Background(), via.nd, id, "v", via.opts...)
							if errors.Is(err, ErrConflict) {
								conflicts.Add(1)
								continue
							}
							if err != nil {
								b.Error(err)
								return
							}
							break
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
			b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
		})
	}
}

// TestForwardMixedWrite: a follower's Write of a bound and an unbound
// table fails with ErrMixedWrite and changes neither; of the unbound
// table alone it commits locally, unreplicated.
func TestForwardMixedWrite(t *testing.T) {
	t.Parallel()
	c, _ := newForwardCluster(t, 3, fwdLocal)
	ld := c.leader()
	f := c.followers(ld)[0]
	local, err := strata.NewTable(f.db, "local", itemByID)
	must(t, err)
	ctx := context.Background()
	before := f.dump()
	_, err = f.node.Write(ctx, []strata.TableMeta{f.metas[0], local}, func(txn strata.WriteTxn) error {
		if _, _, err := f.tables[0].Insert(txn, &item{ID: 1}); err != nil {
			return err
		}
		_, _, err := local.Insert(txn, &item{ID: 2})
		return err
	})
	if !errors.Is(err, ErrMixedWrite) {
		t.Fatalf("a forwarded Write of a bound and an unbound table: %v, want ErrMixedWrite", err)
	}
	if got := f.dump(); got != before {
		t.Errorf("the follower changed:\n%s\nwas\n%s", got, before)
	}
	if n := local.NumObjects(f.db.ReadTxn()); n != 0 {
		t.Errorf("the unbound table holds %d objects", n)
	}
	index, err := f.node.Write(ctx, []strata.TableMeta{local}, func(txn strata.WriteTxn) error {
		_, _, err := local.Insert(txn, &item{ID: 3})
		return err
	})
	if err != nil || index != 0 {
		t.Fatalf("a Write of the unbound table alone: %d, %v; want 0, nil", index, err)
	}
	if n := local.NumObjects(f.db.ReadTxn()); n != 1 {
		t.Errorf("the unbound table holds %d objects, want 1", n)
	}
	c.converge()
	c.checkEqual(false)
}

// TestForwardObjectConflictsAfterApply: with ObjectConflicts, a
// follower's write is checked on the objects it wrote as its transaction
// found them, even when the follower applies another write to the same
// table between its commit and the forward (held at hold point forward
// while it does): no conflict. Enqueue takes the objects' revisions while
// the transaction holds the table's lock; taken at the forward, after the
// follower applied the other write, they fell back to the table's
// revision and conflicted (a mutation that takes them after the hold
// fails this test).
func TestForwardObjectConflictsAfterApply(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		t.Parallel()
		var armed atomic.Bool
		reached, release := make(chan struct{}), make(chan struct{})
		hold := func(p holdPoint, _ int) {
			if p == holdForward && armed.CompareAndSwap(true, false) {
				close(reached)
				<-release
			}
		}
		c, ld, f := firstWritten(t, mode, hold, hold, hold)
		ctx := context.Background()
		armed.Store(true)
		done := make(chan error, 1)
		go func() {
			_, err := putWith(ctx, f, 2, "follower", ObjectConflicts())
			done <- err
		}()
		<-reached
		index, err := put(ctx, ld, 3, "leader")
		must(t, err)
		_, err = f.node.ReadAtLeast(ctx, index)
		must(t, err)
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("the follower's write of an object nobody else wrote: %v", err)
		}
		c.converge()
		c.checkEqual(true)
	})
}
