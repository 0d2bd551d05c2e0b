package replicate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestRaftCluster runs three raft nodes on the in-memory transport, each
// on a LogStore of its own (one behind raft's LogCache), each store
// wrapped to record the ranges raft deletes:
//
//  1. bootstrap, elect, apply entries;
//  2. shut a follower down, apply more, restart it on its reopened store:
//     it replays its log into a new FSM and catches up;
//  3. shut it down again, apply more, snapshot the leader: the leader's
//     store drops the head of its log up to TrailingLogs entries before
//     its last, in one DeleteRange;
//  4. restart the follower: its log is older than the leader's first
//     entry, so it installs the leader's snapshot and, the store being
//     monotonic, raft deletes its whole old log in one DeleteRange;
//
// after each step every FSM must hold the same commands, in order.
func TestRaftCluster(t *testing.T) {
	t.Parallel()
	const trailing = 50
	c := newCluster(t, 3, trailing)
	defer c.shutdown(t)
	must(t, c.nodes[0].raft.BootstrapCluster(c.configuration()).Error())
	c.waitLeader(t)
	leader := c.apply(t, 300)
	c.waitConverged(t)

	// 2: a follower down and back, catching up from its own log.
	f := c.follower(leader)
	lastBefore := f.lastIndex(t)
	c.stop(t, f)
	c.apply(t, 100)
	c.start(t, f)
	if got := f.lastIndex(t); got < lastBefore {
		t.Fatalf("restarted follower's log ends at %d, at %d before", got, lastBefore)
	}
	if ok, err := raft.HasExistingState(f.logs, f.store, f.snaps); err != nil || !ok {
		t.Fatalf("HasExistingState of the restarted follower: %v, %v", ok, err)
	}
	c.waitConverged(t)
	if got := f.store.deleted(); len(got) != 0 {
		t.Errorf("follower catching up from its log deleted %v", got)
	}

	// 3: a snapshot on the leader compacts its log.
	lastBefore = f.lastIndex(t)
	c.stop(t, f)
	leader = c.apply(t, 200)
	first := leader.firstIndex(t)
	leader.store.deleted() // forget the earlier calls
	snap := leader.raft.Snapshot()
	must(t, snap.Error())
	meta, rc, err := snap.Open()
	must(t, err)
	rc.Close()
	last := leader.lastIndex(t)
	wantFirst := min(meta.Index, last-trailing) + 1
	if got := leader.store.deleted(); !slices.Equal(got, [][2]uint64{{first, wantFirst - 1}}) {
		t.Errorf("leader's DeleteRange calls after a snapshot at %d (log %d..%d): %v, want [[%d %d]]",
			meta.Index, first, last, got, first, wantFirst-1)
	}
	if got := leader.firstIndex(t); got != wantFirst {
		t.Errorf("leader's log starts at %d after the snapshot, want %d", got, wantFirst)
	}
	var l raft.Log
	if err := leader.logs.GetLog(wantFirst-1, &l); err != raft.ErrLogNotFound {
		t.Errorf("GetLog of a compacted entry: %v", err)
	}

	// 4: the follower is too far behind: a snapshot, and its old log goes.
	c.start(t, f)
	leader = c.apply(t, 50)
	c.waitConverged(t)
	if got := f.store.deleted(); !slices.Equal(got, [][2]uint64{{1, lastBefore}}) {
		t.Errorf("follower's DeleteRange calls after installing a snapshot: %v, want [[1 %d]]", got, lastBefore)
	}
	if got := f.firstIndex(t); got <= meta.Index {
		t.Errorf("follower's log starts at %d after installing a snapshot at %d", got, meta.Index)
	}
	if _, err := readNodeLog(f); err != nil {
		t.Error(err)
	}
	t.Logf("leader %s; log %d..%d; follower %s log %d..%d", leader.id, leader.firstIndex(t), leader.lastIndex(t),
		f.id, f.firstIndex(t), f.lastIndex(t))
}

// cluster is raft nodes on the in-memory transport.
type cluster struct {
	nodes    []*node
	trailing uint64
	applied  int // commands applied through the leader
}

// node is one raft node and the parts that outlive its restarts.
type node struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	dir   string
	cache bool // raft.LogCache in front of the store

	store *recordingStore
	logs  raft.LogStore // store, or the cache in front of it
	snaps raft.SnapshotStore
	trans *raft.InmemTransport
	fsm   *commandFSM
	raft  *raft.Raft
}

func newCluster(t *testing.T, n int, trailing uint64) *cluster {
	c := &cluster{trailing: trailing}
	for i := range n {
		c.nodes = append(c.nodes, &node{
			id:    raft.ServerID(fmt.Sprint("node", i)),
			addr:  raft.ServerAddress(fmt.Sprint("addr", i)),
			dir:   t.TempDir(),
			cache: i == n-1,
		})
	}
	for _, nd := range c.nodes {
		c.start(t, nd)
	}
	return c
}

func (c *cluster) configuration() raft.Configuration {
	var conf raft.Configuration
	for _, nd := range c.nodes {
		conf.Servers = append(conf.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	return conf
}

// start opens nd's store, connects it and starts its raft node.
func (c *cluster) start(t *testing.T, nd *node) {
	t.Helper()
	nd.store = &recordingStore{LogStore: openStore(t, nil, filepath.Join(nd.dir, "log"))}
	nd.logs = nd.store
	if nd.cache {
		cache, err := raft.NewLogCache(64, nd.store)
		must(t, err)
		nd.logs = cache
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(nd.dir, "snaps"), 2, hclog.NewNullLogger())
	must(t, err)
	nd.snaps = snaps
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	for _, o := range c.nodes {
		if o != nd && o.raft != nil {
			o.trans.Connect(nd.addr, nd.trans)
			nd.trans.Connect(o.addr, o.trans)
		}
	}
	conf := testRaftConfig(nd.id)
	conf.TrailingLogs = c.trailing
	nd.fsm = &commandFSM{}
	nd.raft, err = raft.NewRaft(conf, nd.fsm, nd.logs, nd.store, nd.snaps, nd.trans)
	must(t, err)
}

// stop shuts nd's raft node down, disconnects it and closes its store.
func (c *cluster) stop(t *testing.T, nd *node) {
	t.Helper()
	must(t, nd.raft.Shutdown().Error())
	nd.raft = nil
	for _, o := range c.nodes {
		if o != nd && o.raft != nil {
			o.trans.Disconnect(nd.addr)
		}
	}
	must(t, nd.trans.Close())
	must(t, nd.store.Close())
}

func (c *cluster) shutdown(t *testing.T) {
	for _, nd := range c.nodes {
		if nd.raft != nil {
			c.stop(t, nd)
		}
	}
}

func (c *cluster) waitLeader(t *testing.T) *node {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			if nd.raft != nil && nd.raft.State() == raft.Leader {
				return nd
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader in 10s")
	return nil
}

// follower returns a follower, the one behind the LogCache if it is one.
func (c *cluster) follower(leader *node) *node {
	for i := len(c.nodes) - 1; i >= 0; i-- {
		if c.nodes[i] != leader {
			return c.nodes[i]
		}
	}
	return nil
}

// apply applies n commands through the leader, waits for them, and
// returns the leader that applied the last. The test is about the log
// store, not elections: on a loaded machine (-race on two cores) a leader
// may lose its lease in the middle. Then an apply is ambiguous, so apply
// asks the new leader, after a barrier, how many commands committed (the
// commands of one leader enter the log in order, so those that committed
// are a prefix) and applies the rest through it.
func (c *cluster) apply(t *testing.T, n int) *node {
	t.Helper()
	end := c.applied + n
	next := c.applied
	for changes := 0; ; changes++ {
		if changes == 5 {
			t.Fatalf("leadership changed %d times while applying %d commands", changes, n)
		}
		leader := c.waitLeader(t)
		futures := make([]raft.ApplyFuture, 0, end-next)
		for i := next; i < end; i++ {
			futures = append(futures, leader.raft.Apply(command(i), 10*time.Second))
		}
		var lost error
		for _, f := range futures {
			if err := f.Error(); err != nil {
				if !errors.Is(err, raft.ErrLeadershipLost) && !errors.Is(err, raft.ErrNotLeader) {
					t.Fatal(err)
				}
				lost = err
			}
		}
		if lost == nil {
			c.applied = end
			return leader
		}
		t.Logf("leadership changed while applying (%v): asking the new leader what committed", lost)
		leader = c.waitLeader(t)
		if err := leader.raft.Barrier(10 * time.Second).Error(); err != nil {
			t.Logf("barrier: %v", err)
			continue // ask the next leader
		}
		next = len(leader.fsm.commands())
	}
}

func command(i int) []byte { return fmt.Appendf(nil, "command %d", i) }

// waitConverged waits until every node's FSM holds every command applied,
// and checks they hold them in order.
func (c *cluster) waitConverged(t *testing.T) {
	t.Helper()
	want := make([]string, c.applied)
	for i := range want {
		want[i] = string(command(i))
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, nd := range c.nodes {
		for {
			got := nd.fsm.commands()
			if len(got) >= len(want) {
				if !slices.Equal(got, want) {
					t.Fatalf("%s's FSM holds %d commands, not the %d applied, in order", nd.id, len(got), len(want))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's FSM holds %d commands after 20s, want %d", nd.id, len(got), len(want))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (nd *node) firstIndex(t *testing.T) uint64 {
	i, err := nd.logs.FirstIndex()
	must(t, err)
	return i
}

func (nd *node) lastIndex(t *testing.T) uint64 {
	i, err := nd.logs.LastIndex()
	must(t, err)
	return i
}

// readNodeLog reads every entry of nd's log.
func readNodeLog(nd *node) (int, error) {
	first, _ := nd.store.FirstIndex()
	last, _ := nd.store.LastIndex()
	n := 0
	for i := first; first != 0 && i <= last; i++ {
		var l raft.Log
		if err := nd.store.GetLog(i, &l); err != nil {
			return n, fmt.Errorf("%s: entry %d of %d..%d: %w", nd.id, i, first, last, err)
		}
		n++
	}
	return n, nil
}

// recordingStore is a LogStore that records the ranges raft deletes.
type recordingStore struct {
	*LogStore
	mu   sync.Mutex
	dels [][2]uint64
}

func (r *recordingStore) DeleteRange(from, to uint64) error {
	r.mu.Lock()
	r.dels = append(r.dels, [2]uint64{from, to})
	r.mu.Unlock()
	return r.LogStore.DeleteRange(from, to)
}

// deleted returns the ranges deleted since the last call.
func (r *recordingStore) deleted() [][2]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dels
	r.dels = nil
	return d
}

// commandFSM applies commands by keeping them, in order.
type commandFSM struct {
	mu   sync.Mutex
	cmds []string
}

func (f *commandFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return nil
}

func (f *commandFSM) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cmds)
}

func (f *commandFSM) Snapshot() (raft.FSMSnapshot, error) { return fsmSnapshot(f.commands()), nil }

func (f *commandFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var cmds []string
	if err := json.NewDecoder(rc).Decode(&cmds); err != nil {
		return err
	}
	f.mu.Lock()
	f.cmds = cmds
	f.mu.Unlock()
	return nil
}

type fsmSnapshot []string

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(s)); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}
