package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// item is the tests' replicated object.
type item struct {
	ID  uint64 `json:"id"`
	Val string `json:"val"`
	Tag string `json:"tag"`
}

var (
	itemByID = strata.Index[*item, uint64]{
		Name:       "id",
		FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	itemByTag = strata.Index[*item, string]{
		Name:       "tag",
		FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.String(o.Tag)) },
		FromKey:    index.String,
	}
)

var tableNames = []string{"a", "b", "c"}

// rnode is one member of a test cluster.
type rnode struct {
	id     raft.ServerID
	addr   raft.ServerAddress
	num    uint16 // NodeNumber
	dir    string // the log store's directory
	snaps  raft.SnapshotStore
	db     *strata.DB
	tables []strata.RWTable[*item]
	metas  []strata.TableMeta
	feeds  []strata.ChangeIterator[*item]
	store  *LogStore
	// stateDir and state are the node's persist store, in a cluster of
	// durable nodes (rcluster.durable).
	stateDir string
	state    *persist.Store
	trans    *raft.InmemTransport
	node     *Node
	closed   bool
}

type rcluster struct {
	t     *testing.T
	nodes []*rnode
	// conf, if not nil, changes each node's raft configuration.
	conf func(*raft.Config)
	// durable nodes keep their tables in a persist store (Config.Store).
	durable bool
}

// newRCluster starts n nodes on the in-memory transport, each on a
// LogStore of its own, with a change feed on each table opened before
// any write, and bootstraps them.
func newRCluster(t *testing.T, n int) *rcluster { return newRClusterWith(t, n, nil) }

// newRClusterWith is newRCluster with conf changing each node's raft
// configuration.
func newRClusterWith(t *testing.T, n int, conf func(*raft.Config)) *rcluster {
	t.Helper()
	return startRCluster(&rcluster{t: t, conf: conf}, n)
}

// startRCluster starts c's n nodes and bootstraps them.
func startRCluster(c *rcluster, n int) *rcluster {
	t := c.t
	t.Helper()
	for i := range n {
		nd := &rnode{
			id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), num: uint16(i + 1),
			dir: filepath.Join(t.TempDir(), "log"), snaps: testSnapshots(t),
			stateDir: filepath.Join(t.TempDir(), "state"),
		}
		c.start(nd)
		c.nodes = append(c.nodes, nd)
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	var cfg raft.Configuration
	for _, nd := range c.nodes {
		cfg.Servers = append(cfg.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	must(t, c.nodes[0].node.Raft().BootstrapCluster(cfg).Error())
	t.Cleanup(c.close)
	return c
}

// addTables creates the test tables in nd's database, each with a change
// feed opened before any write (nd.feeds), and returns their bindings.
func (nd *rnode) addTables(tb testing.TB) []Binding {
	tb.Helper()
	var binds []Binding
	for _, name := range tableNames {
		tbl, err := strata.NewTable(nd.db, name, itemByID, itemByTag, strata.RevisionIndex[*item]())
		must(tb, err)
		nd.tables = append(nd.tables, tbl)
		nd.metas = append(nd.metas, tbl)
		binds = append(binds, Bind(tbl, persist.JSON[*item]()))
	}
	txn := nd.db.WriteTxn(nd.metas[0], nd.metas[1:]...)
	for _, tbl := range nd.tables {
		it, err := tbl.Changes(txn)
		must(tb, err)
		nd.feeds = append(nd.feeds, it)
	}
	_, err := txn.Commit()
	must(tb, err)
	return binds
}

// start gives nd a new in-memory database with the bound tables and a
// change feed on each, opens its log store (in nd.dir, which may hold the
// log of a node stopped before) and a transport, and starts its node.
func (c *rcluster) start(nd *rnode) {
	t := c.t
	t.Helper()
	nd.db, nd.tables, nd.metas, nd.feeds, nd.closed = strata.New(), nil, nil, nil, false
	binds := nd.addTables(t)
	var err error
	nd.store = openStore(t, nil, nd.dir)
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	conf := testRaftConfig(nd.id)
	if c.conf != nil {
		c.conf(conf)
	}
	cfg := nd.config(binds, conf, withLeaderIndex(c.leaderIndexer(nd)))
	if c.durable {
		nd.state, err = persist.Open(nd.stateDir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
		must(t, err)
		cfg.Store = nd.state
	}
	nd.node, err = NewNode(cfg)
	must(t, err)
}

func (c *rcluster) close() {
	for _, nd := range c.nodes {
		c.stop(nd)
	}
}

// stop closes nd's node and disconnects it.
func (c *rcluster) stop(nd *rnode) {
	if nd.closed {
		return
	}
	nd.closed = true
	if err := nd.node.Close(); err != nil {
		c.t.Errorf("Close %s: %v", nd.id, err)
	}
	for _, o := range c.nodes {
		if o != nd {
			o.trans.Disconnect(nd.addr)
		}
	}
	nd.trans.DisconnectAll()
	for _, it := range nd.feeds {
		it.Close()
	}
	must(c.t, nd.trans.Close())
	must(c.t, nd.store.Close())
	if nd.state != nil {
		must(c.t, nd.state.Close())
		nd.state = nil
	}
}

func (c *rcluster) live() []*rnode {
	var l []*rnode
	for _, nd := range c.nodes {
		if !nd.closed {
			l = append(l, nd)
		}
	}
	return l
}

// leader waits for a live node to lead and returns it.
func (c *rcluster) leader() *rnode {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range c.live() {
			if nd.node.Raft().State() == raft.Leader {
				return nd
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// converge waits until every live node applied what the most advanced
// one applied, and the leader's last index, and returns that index.
func (c *rcluster) converge() uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ld := c.leader()
	// A barrier: everything before it is applied on the leader.
	must(c.t, ld.node.Raft().Barrier(5*time.Second).Error())
	target := ld.node.AppliedIndex()
	for _, nd := range c.live() {
		if err := nd.node.WaitApplied(ctx, target); err != nil {
			c.t.Fatalf("%s: applied %d, waiting for %d: %v", nd.id, nd.node.AppliedIndex(), target, err)
		}
	}
	return target
}

// dump is a node's tables: per table its revision and every object with
// its revision, in primary key and in revision order.
func (nd *rnode) dump() string { return dumpItems(nd.db, nd.tables, true) }

// dumpItems returns, per table of tables in db, its revision and every
// object with its revision in primary key order, and, with byRevision
// (the tables have a RevisionIndex), in revision order too.
func dumpItems(db *strata.DB, tables []strata.RWTable[*item], byRevision bool) string {
	var b strings.Builder
	txn := db.ReadTxn()
	for _, tbl := range tables {
		fmt.Fprintf(&b, "%s@%d:", tbl.Name(), tbl.Revision(txn))
		for o, rev := range tbl.All(txn) {
			fmt.Fprintf(&b, " %d=%s/%s@%d", o.ID, o.Val, o.Tag, rev)
		}
		if byRevision {
			b.WriteString(" |")
			for o, rev := range tbl.LowerBound(txn, strata.ByRevision[*item](0)) {
				fmt.Fprintf(&b, " %d@%d", o.ID, rev)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// drainFeeds returns what each of nd's feeds delivers now.
func (nd *rnode) drainFeeds() string {
	var b strings.Builder
	txn := nd.db.ReadTxn()
	for i, it := range nd.feeds {
		seq, _ := it.Next(txn)
		fmt.Fprintf(&b, "%s:", tableNames[i])
		for ch, rev := range seq {
			fmt.Fprintf(&b, " %d@%d/%v", ch.Object.ID, rev, ch.Deleted)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkEqual fails the test unless every live node holds what the first
// does, and its feeds delivered the same.
func (c *rcluster) checkEqual(feeds bool) {
	c.t.Helper()
	live := c.live()
	want := live[0].dump()
	for _, nd := range live[1:] {
		if got := nd.dump(); got != want {
			c.t.Fatalf("%s differs from %s:\n%s\nwant\n%s", nd.id, live[0].id, got, want)
		}
	}
	if !feeds {
		return
	}
	wantFeeds := live[0].drainFeeds()
	if wantFeeds == "a:\nb:\nc:\n" {
		c.t.Fatalf("the feeds delivered nothing: %q", wantFeeds)
	}
	for _, nd := range live[1:] {
		if got := nd.drainFeeds(); got != wantFeeds {
			c.t.Fatalf("%s's feeds differ from %s's:\n%s\nwant\n%s", nd.id, live[0].id, got, wantFeeds)
		}
	}
}

// randomWrite makes one random write transaction on tbls of nd.
func randomWrite(rng *rand.Rand, txn strata.WriteTxn, tbls []strata.RWTable[*item], who int) error {
	for range 1 + rng.IntN(3) {
		tbl := tbls[rng.IntN(len(tbls))]
		switch r := rng.IntN(20); {
		case r == 0:
			if err := tbl.DeleteAll(txn); err != nil {
				return err
			}
		case r < 6:
			id := uint64(rng.IntN(40))
			if _, _, err := tbl.Delete(txn, &item{ID: id}); err != nil {
				return err
			}
		default:
			id := uint64(rng.IntN(40))
			o := &item{ID: id, Val: fmt.Sprint(who, "-", rng.IntN(1000)), Tag: fmt.Sprint("t", id%3)}
			if _, _, err := tbl.Insert(txn, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestNodeConverges: writers on the leader (several goroutines, several
// tables, inserts, deletes, DeleteAll), then every node holds the same
// objects at the same revisions, and its feeds deliver the same changes.
func TestNodeConverges(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	c := newRCluster(t, 3)
	ld := c.leader()
	const writers, commits = 6, 40
	var wg sync.WaitGroup
	indexes := make([][]uint64, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range commits {
				k := 1 + rng.IntN(2)
				first := rng.IntN(len(ld.tables) - k + 1)
				tbls := ld.tables[first : first+k]
				index, err := ld.node.Write(context.Background(), ld.metas[first:first+k], func(txn strata.WriteTxn) error {
					return randomWrite(rng, txn, tbls, w)
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				indexes[w] = append(indexes[w], index)
			}
		}()
	}
	wg.Wait()
	for w, idx := range indexes {
		for i := 1; i < len(idx); i++ {
			if idx[i] != 0 && idx[i] <= idx[i-1] {
				t.Errorf("writer %d: index %d after %d", w, idx[i], idx[i-1])
			}
		}
	}
	c.converge()
	c.checkEqual(true)
	entries, combined := ld.node.Entries()
	t.Logf("%d entries, %d combined", entries, combined)
}

// TestNodePipelining: writers of one table commit concurrently through the
// leader; each gets a distinct index, increasing per writer, and change
// sets queued while entries were in flight shared entries.
func TestNodePipelining(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	writers, commits := 16, 40
	if testing.Short() {
		commits = 20
	}
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for i := range commits {
				index, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
					_, _, err := ld.tables[0].Insert(txn, &item{ID: uint64(w*1000 + i), Val: "v"})
					return err
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if index <= last {
					t.Errorf("writer %d: index %d after %d", w, index, last)
				}
				last = index
				mu.Lock()
				seen[index]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Change sets that share an entry share its index: each index is
	// at most as many commits as the entry carried, and the entries are
	// fewer than the commits.
	entries, combined := ld.node.Entries()
	t.Logf("%d commits in %d entries, %d of them combined; %d distinct indexes", writers*commits, entries, combined, len(seen))
	if combined == 0 {
		t.Errorf("no entry carried more than one change set")
	}
	c.converge()
	c.checkEqual(false)
	if got := ld.tables[0].NumObjects(ld.db.ReadTxn()); got != writers*commits {
		t.Errorf("%d objects, want %d", got, writers*commits)
	}
}

// TestNodeFollowerWrite: a write on a follower fails with ErrNotLeader,
// naming the leader, and changes nothing on any node.
func TestNodeFollowerWrite(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	_, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 1, Val: "leader"})
		return err
	})
	must(t, err)
	c.converge()
	var f *rnode
	for _, nd := range c.nodes {
		if nd != ld {
			f = nd
		}
	}
	before := f.dump()
	_, err = f.node.Write(context.Background(), f.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := f.tables[0].Insert(txn, &item{ID: 2, Val: "follower"})
		return err
	})
	var nl *NotLeaderError
	if !errors.Is(err, ErrNotLeader) || !errors.As(err, &nl) {
		t.Fatalf("Write on a follower: %v, want ErrNotLeader", err)
	}
	if nl.Leader != ld.addr {
		t.Errorf("NotLeaderError names %q, the leader is %q", nl.Leader, ld.addr)
	}
	// A plain commit too.
	txn := f.db.WriteTxn(f.metas[1])
	_, _, err = f.tables[1].Insert(txn, &item{ID: 3})
	must(t, err)
	if _, err := txn.Commit(); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Commit on a follower: %v, want ErrNotLeader", err)
	}
	if got := f.dump(); got != before {
		t.Errorf("the follower changed:\n%s\nwas\n%s", got, before)
	}
	c.converge()
	c.checkEqual(true)
}

// proposeRaw submits an entry built by hand through the leader's raft and
// returns the FSM's response.
func proposeRaw(t *testing.T, ld *rnode, data []byte) any {
	t.Helper()
	f := ld.node.Raft().Apply(data, 5*time.Second)
	must(t, f.Error())
	return f.Response()
}

// TestNodeConflict: an entry whose change set read a table at a stale
// revision is skipped, as a conflict, on every node, and the change set
// after it in the entry applies.
func TestNodeConflict(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	for i := range 3 {
		_, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
			_, _, err := ld.tables[0].Insert(txn, &item{ID: uint64(i), Val: "x"})
			return err
		})
		must(t, err)
	}
	c.converge()
	rev := ld.tables[0].Revision(ld.db.ReadTxn())
	val, err := persist.JSON[*item]().Append(nil, &item{ID: 7, Val: "stale"})
	must(t, err)
	stale := ChangeSet{ID: NewChangeSetID(99, 1), Tables: []TableChanges{{
		Table: "a", ReadRevision: rev - 1,
		Ops: []Op{{Kind: OpUpsert, Key: index.Uint64(7), Revision: rev, CodecVersion: 1, Value: val}, {Kind: OpSetRevision, Revision: rev}},
	}}}
	val2, err := persist.JSON[*item]().Append(nil, &item{ID: 8, Val: "fresh"})
	must(t, err)
	fresh := ChangeSet{ID: NewChangeSetID(99, 2), Tables: []TableChanges{{
		Table: "a", ReadRevision: rev,
		Ops: []Op{{Kind: OpUpsert, Key: index.Uint64(8), Revision: rev + 1, CodecVersion: 1, Value: val2}, {Kind: OpSetRevision, Revision: rev + 1}},
	}}}
	data, err := AppendEntry(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{stale, fresh}})
	must(t, err)
	res, ok := proposeRaw(t, ld, data).(*ApplyResult)
	if !ok || len(res.Conflicts) != 1 || res.Conflicts[0] != stale.ID {
		t.Fatalf("apply result %#v, want the stale change set as the conflict", res)
	}
	c.converge()
	c.checkEqual(true)
	txn := ld.db.ReadTxn()
	if _, _, found := ld.tables[0].Get(txn, itemByID.Query(7)); found {
		t.Error("the stale change set applied")
	}
	if _, r, found := ld.tables[0].Get(txn, itemByID.Query(8)); !found || r != rev+1 {
		t.Errorf("the change set after the conflict: found %v at %d, want %d", found, r, rev+1)
	}
	// The leader's next commit builds on the state the entry left.
	_, err = ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 9, Val: "after"})
		return err
	})
	must(t, err)
	c.converge()
	c.checkEqual(false)
}

// TestNodeCorruptEntry: an entry that does not decode stops every node:
// Apply returns a *StoppedError, the applied index stays below it, and the
// node refuses later commits.
func TestNodeCorruptEntry(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	c.converge()
	before := ld.node.AppliedIndex()
	res := proposeRaw(t, ld, []byte{EntryVersion, byte(KindChanges), 5, 1})
	var se *StoppedError
	if err, _ := res.(error); !errors.As(err, &se) || !errors.As(err, new(*DecodeError)) {
		t.Fatalf("apply of a corrupt entry: %#v, want a *StoppedError of a *DecodeError", res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, nd := range c.nodes {
		for nd.node.Stopped() == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if err := nd.node.Stopped(); !errors.Is(err, ErrStopped) {
			t.Errorf("%s: Stopped() = %v", nd.id, err)
		}
		if got := nd.node.AppliedIndex(); got > before || got >= se.Index {
			t.Errorf("%s: applied index %d, the corrupt entry at %d", nd.id, got, se.Index)
		}
	}
	_, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 1})
		return err
	})
	if !errors.Is(err, ErrStopped) {
		t.Errorf("Write on a stopped node: %v", err)
	}
}

// TestReadRevisionIsFirstWriteMinusOne checks the claim the journal's
// ReadRevision rests on: a transaction's writes to a table take
// consecutive revisions from the table's revision when it began, so the
// revision before its first write is the one it read, also when writes
// of it failed (a CompareAndSwap at a wrong revision, a Delete of nothing)
// and when its first write is a DeleteAll. Transactions that began from a
// tip are covered by TestNodePipelining and TestNodeConverges: a follower
// skips a change set whose ReadRevision is wrong, and would differ from
// the leader, which marks it applied.
func TestReadRevisionIsFirstWriteMinusOne(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 1)
	ld := c.leader()
	tbl := ld.tables[0]
	for i := range 20 {
		var read uint64
		index, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
			read = tbl.Revision(txn)
			if i%3 == 1 {
				// A failing CompareAndSwap and Delete of nothing first.
				if _, _, err := tbl.CompareAndSwap(txn, 12345, &item{ID: 0, Val: "cas"}); err == nil && i > 1 {
					return errors.New("CompareAndSwap at a wrong revision succeeded")
				}
				if _, _, err := tbl.Delete(txn, &item{ID: 999}); err != nil {
					return err
				}
			}
			if i%5 == 4 {
				if err := tbl.DeleteAll(txn); err != nil {
					return err
				}
			}
			_, _, err := tbl.Insert(txn, &item{ID: uint64(i % 4), Val: fmt.Sprint(i)})
			return err
		})
		must(t, err)
		var l raft.Log
		must(t, ld.store.GetLog(index, &l))
		e, err := DecodeEntry(l.Data)
		must(t, err)
		if len(e.Changes) != 1 || len(e.Changes[0].Tables) != 1 {
			t.Fatalf("entry %d: %+v", index, e)
		}
		if got := e.Changes[0].Tables[0].ReadRevision; got != read {
			t.Errorf("commit %d: ReadRevision %d, the transaction read the table at %d", i, got, read)
		}
	}
}

// TestNodeLeaderLoss: the leader shuts down while writers commit through
// it. Every commit returns success, or an error that says it was not
// proposed (ErrNotLeader, ErrShutdown) or may have been (ErrAmbiguous);
// after a new leader is elected the remaining nodes converge, hold every
// acknowledged write, and take new writes.
func TestNodeLeaderLoss(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	const writers = 8
	type ack struct {
		table int
		id    uint64
	}
	var (
		mu      sync.Mutex
		acked   []ack
		outcome = map[string]int{}
		wg      sync.WaitGroup
	)
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; ; i++ {
				id, table := uint64(w*100000+i), w%len(ld.tables)
				_, err := ld.node.Write(context.Background(), ld.metas[table:table+1], func(txn strata.WriteTxn) error {
					_, _, err := ld.tables[table].Insert(txn, &item{ID: id, Val: "acked"})
					return err
				})
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, ack{table, id})
					outcome["ok"]++
				case errors.Is(err, ErrAmbiguous):
					outcome["ambiguous"]++
				case errors.Is(err, ErrNotLeader):
					outcome["not leader"]++
				case errors.Is(err, ErrShutdown):
					outcome["shut down"]++
				default:
					t.Errorf("writer %d: %v", w, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	close(start)
	// Writers stop at their first error: if they all stop (the leader
	// lost its lead under load) before 200 writes, this waited for good.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 200 {
			break
		}
		select {
		case <-stopped:
			t.Fatalf("every writer stopped after %d acknowledged writes, before the leader was stopped: %v", n, outcome)
		case <-time.After(time.Millisecond):
		}
	}
	c.stop(ld)
	wg.Wait()
	t.Logf("outcomes %v", outcome)
	nl := c.leader()
	_, err := nl.node.Write(context.Background(), nl.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := nl.tables[0].Insert(txn, &item{ID: 1 << 40, Val: "new leader"})
		return err
	})
	must(t, err)
	c.converge()
	c.checkEqual(true)
	for _, nd := range c.live() {
		txn := nd.db.ReadTxn()
		for _, a := range acked {
			if _, _, found := nd.tables[a.table].Get(txn, itemByID.Query(a.id)); !found {
				t.Errorf("%s: acknowledged write %d of table %s lost", nd.id, a.id, tableNames[a.table])
			}
		}
	}
}

// TestNodeEntryTooLarge: a change set larger than an entry may be fails
// its commit with ErrEntryTooLarge before it is proposed, and the next
// commit goes through.
func TestNodeEntryTooLarge(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.leader()
	c.converge()
	before := ld.dump()
	_, err := ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 1, Val: strings.Repeat("x", MaxEntrySize)})
		return err
	})
	if !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("Write of a change set above MaxEntrySize: %v", err)
	}
	if got := ld.dump(); got != before {
		t.Errorf("the leader changed:\n%s\nwas\n%s", got, before)
	}
	_, err = ld.node.Write(context.Background(), ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 2, Val: "small"})
		return err
	})
	must(t, err)
	c.converge()
	c.checkEqual(true)
}
