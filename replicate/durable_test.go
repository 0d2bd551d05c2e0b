package replicate

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// newDurableRCluster is newRClusterWith with every node's tables in a
// persist store of its own (Config.Store).
func newDurableRCluster(t *testing.T, n int, conf func(*raft.Config)) *rcluster {
	t.Helper()
	return startRCluster(&rcluster{t: t, conf: conf, durable: true}, n)
}

// countingSnapshots is a raft.SnapshotStore that counts the snapshots
// opened: what a node restores.
type countingSnapshots struct {
	raft.SnapshotStore
	opened atomic.Int32
}

func (s *countingSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.opened.Add(1)
	return s.SnapshotStore.Open(id)
}

// TestDurableRestart: a follower with a snapshot older than its store
// restarts from the store, without opening the snapshot, holding at once
// (before raft applies anything) the state it stopped at, then catches
// up from the log; a restart of every node, the leader included, gives
// back every node's state. Every node ends equal, feeds and snapshot
// bytes included.
func TestDurableRestart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	c := newDurableRCluster(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 30)
	c.settle()
	f := c.follower()
	must(t, f.node.Raft().Snapshot().Error())
	snapIndex := f.node.AppliedIndex()
	writeRandom(t, ld, rng, 15)
	stoppedAt := c.settle()
	if stoppedAt <= snapIndex {
		t.Fatalf("settled at %d, the snapshot is at %d", stoppedAt, snapIndex)
	}
	want := f.dump()
	c.stop(f)
	writeRandom(t, ld, rng, 15)

	snaps := &countingSnapshots{SnapshotStore: f.snaps}
	f.snaps = snaps
	c.start(f) // not connected yet: nothing to apply
	if got := f.node.AppliedIndex(); got != stoppedAt {
		t.Fatalf("started at applied index %d, stopped at %d", got, stoppedAt)
	}
	if got := f.dump(); got != want {
		t.Fatalf("started holding\n%s\nstopped holding\n%s", got, want)
	}
	if n := snaps.opened.Load(); n != 0 {
		t.Fatalf("a node whose store is newer than its snapshot opened %d snapshots", n)
	}
	c.connect(f)
	view := newFeedView()
	c.settle()
	c.checkEqual(false)
	c.checkSameBytes()
	view.consume(f)
	if want := tableView(ld); !view.equal(want) {
		t.Fatalf("the restarted node's feeds deliver\n%v\nthe leader holds\n%v", view, want)
	}

	// Every node, the leader's own commits included.
	writeRandom(t, c.leader(), rng, 20)
	last := c.settle()
	dumps := map[raft.ServerID]string{}
	for _, nd := range c.nodes {
		dumps[nd.id] = nd.dump()
		c.stop(nd)
	}
	for _, nd := range c.nodes {
		c.start(nd)
		if got := nd.node.AppliedIndex(); got != last {
			t.Fatalf("%s started at %d, stopped at %d", nd.id, got, last)
		}
		if got := nd.dump(); got != dumps[nd.id] {
			t.Fatalf("%s started holding\n%s\nstopped holding\n%s", nd.id, got, dumps[nd.id])
		}
	}
	for _, nd := range c.nodes {
		c.connect(nd)
	}
	writeRandom(t, c.committingLeader(), rng, 10)
	c.settle()
	c.checkEqual(false)
	c.checkSameBytes()
}

// TestDurableSnapshotNewer: a node whose store is older than its latest
// snapshot (here: a new, empty store) restores the snapshot, once, before
// raft starts, writes it to the store, and replays the log after it.
func TestDurableSnapshotNewer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	c := newDurableRCluster(t, 3, snapshotConf)
	writeRandom(t, c.leader(), rng, 30)
	c.settle()
	f := c.follower()
	must(t, f.node.Raft().Snapshot().Error())
	// The snapshot's index is raft's last applied entry's, which may be
	// one without a command (a leader's no-op) after AppliedIndex.
	metas, err := f.snaps.List()
	must(t, err)
	snapIndex := metas[0].Index
	writeRandom(t, c.leader(), rng, 10)
	c.settle()
	c.stop(f)
	f.stateDir = filepath.Join(t.TempDir(), "state")
	snaps := &countingSnapshots{SnapshotStore: f.snaps}
	f.snaps = snaps
	c.start(f)
	if got := f.node.AppliedIndex(); got != snapIndex {
		t.Fatalf("started at %d, the snapshot is at %d", got, snapIndex)
	}
	if n := snaps.opened.Load(); n != 1 {
		t.Fatalf("opened %d snapshots, want 1", n)
	}
	c.connect(f)
	writeRandom(t, c.leader(), rng, 10)
	last := c.settle()
	c.checkEqual(false)

	// The snapshot's state and the log after it are in the new store.
	want := f.dump()
	c.stop(f)
	f.snaps = snaps.SnapshotStore
	c.start(f)
	if got := f.node.AppliedIndex(); got != last {
		t.Fatalf("started again at %d, stopped at %d", got, last)
	}
	if got := f.dump(); got != want {
		t.Fatalf("started again holding\n%s\nstopped holding\n%s", got, want)
	}
	c.connect(f)
	c.settle()
	c.checkEqual(false)
}

// TestDurableStoreAhead: a store whose position is beyond the node's raft
// log and snapshots (the raft directory was lost) is refused with
// ErrStoreAhead, and the node does not start.
func TestDurableStoreAhead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 5))
	c := newDurableRCluster(t, 3, nil)
	writeRandom(t, c.leader(), rng, 10)
	c.settle()
	f := c.follower()
	c.stop(f)

	db := strata.New()
	tbl, err := strata.NewTable(db, "a", itemByID, itemByTag, strata.RevisionIndex[*item]())
	must(t, err)
	var binds []Binding
	binds = append(binds, Bind(tbl, persist.JSON[*item]()))
	for _, name := range tableNames[1:] {
		o, err := strata.NewTable(db, name, itemByID, itemByTag, strata.RevisionIndex[*item]())
		must(t, err)
		binds = append(binds, Bind(o, persist.JSON[*item]()))
	}
	state, err := persist.Open(f.stateDir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	defer func() { must(t, state.Close()) }()
	logs := openStore(t, nil, filepath.Join(t.TempDir(), "lost"))
	defer closeStore(t, logs)
	_, trans := raft.NewInmemTransport("lost")
	defer func() { must(t, trans.Close()) }()
	_, err = NewNode(Config{
		DB: db, Tables: binds, NodeNumber: 9, Raft: testRaftConfig("lost"),
		LogStore: logs, StableStore: logs, Snapshots: testSnapshots(t), Transport: trans,
		Store: state,
	})
	if !errors.Is(err, ErrStoreAhead) {
		t.Fatalf("NewNode on a store ahead of the log: %v, want ErrStoreAhead", err)
	}
	if _, err := os.Stat(f.stateDir); err != nil {
		t.Fatal(err)
	}
}
