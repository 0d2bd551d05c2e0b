package replicate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
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
	db     *strata.DB
	tables []strata.RWTable[*item]
	metas  []strata.TableMeta
	feeds  []strata.ChangeIterator[*item]
	store  *LogStore
	trans  *raft.InmemTransport
	node   *Node
	closed bool
}

type rcluster struct {
	t     *testing.T
	nodes []*rnode
}

// newRCluster starts n nodes on the in-memory transport, each on a
// LogStore of its own, with a change feed on each table opened before
// any write, and bootstraps them.
func newRCluster(t *testing.T, n int) *rcluster {
	t.Helper()
	c := &rcluster{t: t}
	for i := range n {
		nd := &rnode{id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), db: strata.New()}
		var binds []Binding
		for _, name := range tableNames {
			tbl, err := strata.NewTable(nd.db, name, itemByID, itemByTag, strata.RevisionIndex[*item]())
			must(t, err)
			nd.tables = append(nd.tables, tbl)
			nd.metas = append(nd.metas, tbl)
			binds = append(binds, Bind(tbl, persist.JSON[*item]()))
		}
		txn := nd.db.WriteTxn(nd.metas[0], nd.metas[1:]...)
		for _, tbl := range nd.tables {
			it, err := tbl.Changes(txn)
			must(t, err)
			nd.feeds = append(nd.feeds, it)
		}
		_, err := txn.Commit()
		must(t, err)
		nd.store = openStore(t, nil, filepath.Join(t.TempDir(), "log"))
		_, nd.trans = raft.NewInmemTransport(nd.addr)
		conf := raft.DefaultConfig()
		conf.LocalID = nd.id
		conf.HeartbeatTimeout = 50 * time.Millisecond
		conf.ElectionTimeout = 50 * time.Millisecond
		conf.LeaderLeaseTimeout = 50 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		conf.SnapshotThreshold = 1 << 40 // snapshots are not supported yet
		conf.SnapshotInterval = time.Hour
		conf.Logger = hclog.NewNullLogger()
		nd.node, err = NewNode(Config{
			DB: nd.db, Tables: binds, NodeNumber: uint16(i + 1), Raft: conf,
			LogStore: nd.store, StableStore: nd.store, Snapshots: raft.NewInmemSnapshotStore(), Transport: nd.trans,
		})
		must(t, err)
		c.nodes = append(c.nodes, nd)
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	var conf raft.Configuration
	for _, nd := range c.nodes {
		conf.Servers = append(conf.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	must(t, c.nodes[0].node.Raft().BootstrapCluster(conf).Error())
	t.Cleanup(c.close)
	return c
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
func (nd *rnode) dump() string {
	var b strings.Builder
	txn := nd.db.ReadTxn()
	for _, tbl := range nd.tables {
		fmt.Fprintf(&b, "%s@%d:", tbl.Name(), tbl.Revision(txn))
		for o, rev := range tbl.All(txn) {
			fmt.Fprintf(&b, " %d=%s/%s@%d", o.ID, o.Val, o.Tag, rev)
		}
		b.WriteString(" |")
		for o, rev := range tbl.LowerBound(txn, strata.ByRevision[*item](0)) {
			fmt.Fprintf(&b, " %d@%d", o.ID, rev)
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
	if len(wantFeeds) < 20 {
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
