package replicate

// Tests of the node's raft snapshots (snapshot.go).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// snapshotConf keeps few entries behind a snapshot, so that a node that
// misses a few dozen entries is sent the snapshot.
func snapshotConf(conf *raft.Config) { conf.TrailingLogs = defaultMaxInFlight + 4 } // the least NewNode takes

// disconnect cuts nd off the other nodes, both ways.
func (c *rcluster) disconnect(nd *rnode) {
	for _, o := range c.nodes {
		if o != nd && !o.closed {
			o.trans.Disconnect(nd.addr)
		}
	}
	nd.trans.DisconnectAll()
}

// connect connects nd and the other live nodes, both ways.
func (c *rcluster) connect(nd *rnode) {
	for _, o := range c.live() {
		if o != nd {
			o.trans.Connect(nd.addr, nd.trans)
			nd.trans.Connect(o.addr, o.trans)
		}
	}
}

// restart starts nd, which was stopped, again: on a new in-memory
// database, its log store and its snapshot store.
func (c *rcluster) restart(nd *rnode) {
	c.t.Helper()
	c.start(nd)
	c.connect(nd)
}

// follower returns a live node that does not lead.
func (c *rcluster) follower() *rnode {
	ld := c.leader()
	for _, nd := range c.live() {
		if nd != ld {
			return nd
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// committingLeader returns a leader once one commits a barrier: after a
// partition heals, a node may take itself for the leader until it hears
// of the others' newer term.
func (c *rcluster) committingLeader() *rnode {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ld := c.leader()
		err := ld.node.Raft().Barrier(5 * time.Second).Error()
		if err == nil {
			return ld
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader commits: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// writeRandom makes n random commits through ld.
func writeRandom(t *testing.T, ld *rnode, rng *rand.Rand, n int) {
	t.Helper()
	for range n {
		k := 1 + rng.IntN(2)
		first := rng.IntN(len(ld.tables) - k + 1)
		_, err := ld.node.Write(context.Background(), ld.metas[first:first+k], func(txn strata.WriteTxn) error {
			return randomWrite(rng, txn, ld.tables[first:first+k], 0)
		})
		must(t, err)
	}
}

// settle waits, for up to a minute, until every live node applied the
// leader's last entry and published it, and returns its index. (A node
// that was cut off waits out raft's backoff before it hears from the
// leader again: longer than converge waits.)
func (c *rcluster) settle() uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ld := c.leader()
	must(c.t, ld.node.Raft().Barrier(10*time.Second).Error())
	target := ld.node.AppliedIndex()
	for _, nd := range c.live() {
		if err := nd.node.waitIndex(ctx, &nd.node.published, target); err != nil {
			c.t.Fatalf("%s: applied %d, published %d, waiting for %d: %v", nd.id, nd.node.AppliedIndex(), nd.node.PublishedIndex(), target, err)
		}
		if got := nd.node.AppliedIndex(); got != target {
			c.t.Fatalf("%s: applied %d, the leader %d", nd.id, got, target)
		}
	}
	return target
}

// snapshotBytes is persist's snapshot of nd's tables.
func (nd *rnode) snapshotBytes(t *testing.T) []byte {
	t.Helper()
	var tbls []persist.TableBinding
	for _, tbl := range nd.tables {
		tbls = append(tbls, persist.Table(tbl, persist.JSON[*item]()))
	}
	var buf bytes.Buffer
	must(t, persist.WriteSnapshot(&buf, nd.db.ReadTxn(), tbls...))
	return buf.Bytes()
}

// checkSameBytes fails the test unless every live node's tables give the
// same snapshot bytes.
func (c *rcluster) checkSameBytes() {
	c.t.Helper()
	live := c.live()
	want := live[0].snapshotBytes(c.t)
	for _, nd := range live[1:] {
		if got := nd.snapshotBytes(c.t); !bytes.Equal(got, want) {
			c.t.Fatalf("%s's snapshot differs from %s's (%d and %d bytes):\n%s\nwant\n%s", nd.id, live[0].id, len(got), len(want), nd.dump(), live[0].dump())
		}
	}
}

// feedView is what a consumer of a node's change feeds holds: per table,
// each object's value and revision by ID.
type feedView []map[uint64]string

func newFeedView() feedView {
	v := make(feedView, len(tableNames))
	for i := range v {
		v[i] = map[uint64]string{}
	}
	return v
}

// consume applies what nd's feeds deliver now.
func (v feedView) consume(nd *rnode) {
	txn := nd.db.ReadTxn()
	for i, it := range nd.feeds {
		seq, _ := it.Next(txn)
		for ch, rev := range seq {
			if ch.Deleted {
				delete(v[i], ch.Object.ID)
			} else {
				v[i][ch.Object.ID] = fmt.Sprintf("%s/%s@%d", ch.Object.Val, ch.Object.Tag, rev)
			}
		}
	}
}

// tableView is the view of nd's tables themselves.
func tableView(nd *rnode) feedView {
	v := newFeedView()
	txn := nd.db.ReadTxn()
	for i, tbl := range nd.tables {
		for o, rev := range tbl.All(txn) {
			v[i][o.ID] = fmt.Sprintf("%s/%s@%d", o.Val, o.Tag, rev)
		}
	}
	return v
}

func (v feedView) equal(w feedView) bool {
	for i := range v {
		if !maps.Equal(v[i], w[i]) {
			return false
		}
	}
	return true
}

// lastSnapshot returns the index of the last snapshot nd's raft took or
// installed.
func lastSnapshot(nd *rnode) string { return nd.node.Raft().Stats()["last_snapshot_index"] }

// TestSnapshotInstall: a follower cut off while the leader writes,
// snapshots and writes on, past the entries it keeps behind the snapshot,
// is sent the snapshot when it is back. It installs it and catches up:
// every node then gives the same snapshot bytes at the same applied
// index, every watch channel of the follower's old state closed, a waiter
// for an index past the snapshot woke, and the consumer of its change
// feeds holds what the leader's tables hold.
func TestSnapshotInstall(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	c := newRClusterWith(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 30)
	c.settle()
	f := c.follower()
	view := newFeedView()
	view.consume(f)
	old := f.db.ReadTxn()
	var watches []<-chan struct{}
	for _, tbl := range f.tables {
		_, w := tbl.AllWatch(old)
		watches = append(watches, w)
		for o := range tbl.All(old) {
			_, _, w, _ := tbl.GetWatch(old, itemByID.Query(o.ID))
			watches = append(watches, w)
		}
	}
	applied := f.node.AppliedIndex()

	c.disconnect(f)
	writeRandom(t, ld, rng, 60)
	must(t, ld.node.Raft().Snapshot().Error())
	snapIndex := ld.node.AppliedIndex()
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		waited <- f.node.WaitApplied(ctx, snapIndex)
	}()
	writeRandom(t, ld, rng, 20)
	if first, _ := bounds(t, ld.store); first <= applied+1 {
		t.Fatalf("the leader's log begins at %d: the follower, at %d, needs no snapshot", first, applied)
	}
	c.connect(f)
	c.settle()

	if got := lastSnapshot(f); got == "0" {
		t.Fatalf("the follower installed no snapshot (last snapshot %s)", got)
	}
	must(t, <-waited)
	for i, w := range watches {
		select {
		case <-w:
		default:
			t.Fatalf("watch channel %d of the follower's old state is open", i)
		}
	}
	c.checkEqual(false)
	c.checkSameBytes()
	view.consume(f)
	if want := tableView(ld); !view.equal(want) {
		t.Fatalf("the follower's feeds leave\n%v\nthe leader holds\n%v", view, want)
	}
	// And it goes on applying.
	writeRandom(t, ld, rng, 10)
	c.settle()
	c.checkSameBytes()
}

// TestSnapshotRestart: a node that took a snapshot, and applied entries
// after it, is restarted on a new, empty in-memory database: raft restores
// the snapshot from the node's snapshot store as it starts, then the node
// applies the log after it, and catches up with the others.
func TestSnapshotRestart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	c := newRClusterWith(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 30)
	c.settle()
	f := c.follower()
	must(t, f.node.Raft().Snapshot().Error())
	snapIndex := f.node.AppliedIndex()
	writeRandom(t, ld, rng, 15)
	c.settle()
	if first, _ := bounds(t, f.store); first <= 1 {
		t.Fatalf("the follower's log begins at %d after its snapshot at %d", first, snapIndex)
	}
	c.stop(f)
	writeRandom(t, ld, rng, 15)
	c.restart(f)
	if got := f.node.AppliedIndex(); got < snapIndex {
		t.Fatalf("restarted at applied index %d, the snapshot is at %d", got, snapIndex)
	}
	view := newFeedView()
	c.settle()
	c.checkEqual(false)
	c.checkSameBytes()
	view.consume(f)
	if want := tableView(ld); !view.equal(want) {
		t.Fatalf("the restarted node's feeds deliver\n%v\nthe leader holds\n%v", view, want)
	}
}

// TestSnapshotCorrupt: a damaged snapshot stream is refused with a
// *SnapshotError matching persist.ErrCorruptSnapshot, and the node's
// tables and applied index are as they were. An intact snapshot older
// than the node's state is refused too.
func TestSnapshotCorrupt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	c := newRClusterWith(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 30)
	c.settle()
	s, err := ld.node.fsm.Snapshot()
	must(t, err)
	var buf bytes.Buffer
	must(t, s.(*nodeSnapshot).write(&buf))
	good := buf.Bytes()
	// The follower moves past the snapshot: a snapshot that applied
	// would change its tables.
	writeRandom(t, ld, rng, 10)
	c.settle()
	f := c.follower()
	before, applied := f.dump(), f.node.AppliedIndex()

	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		return b
	}
	cases := map[string][]byte{
		"empty":               nil,
		"magic":               flip(0),
		"version":             flip(11),
		"index":               flip(19),
		"header checksum":     flip(23),
		"tables":              flip(snapshotHeaderSize + len(good[snapshotHeaderSize:])/2),
		"last byte":           flip(len(good) - 1),
		"header only":         good[:snapshotHeaderSize],
		"truncated":           good[:len(good)-10],
		"bytes after the end": append(bytes.Clone(good), 0),
	}
	for name, data := range cases {
		err := f.node.fsm.Restore(io.NopCloser(bytes.NewReader(data)))
		var se *SnapshotError
		if !errors.As(err, &se) || !errors.Is(err, ErrSnapshotRefused) || !errors.Is(err, persist.ErrCorruptSnapshot) {
			t.Errorf("%s: Restore: %v, want a *SnapshotError of persist.ErrCorruptSnapshot", name, err)
		}
		if got := f.dump(); got != before {
			t.Fatalf("%s: the tables changed:\n%s\nwere\n%s", name, got, before)
		}
		if got := f.node.AppliedIndex(); got != applied {
			t.Fatalf("%s: applied index %d, was %d", name, got, applied)
		}
	}
	err = f.node.fsm.Restore(io.NopCloser(bytes.NewReader(good)))
	if !errors.Is(err, ErrSnapshotRefused) || !errors.Is(err, strata.ErrWriteOrder) {
		t.Errorf("Restore of an older snapshot: %v, want ErrSnapshotRefused of strata.ErrWriteOrder", err)
	}
	if got := f.dump(); got != before {
		t.Fatalf("an older snapshot changed the tables:\n%s\nwere\n%s", got, before)
	}
	// The node goes on.
	writeRandom(t, ld, rng, 5)
	c.settle()
	c.checkSameBytes()
}

// TestSnapshotInstallWhileWriting: writers commit through the leader, all
// of them successfully, while the leader takes a snapshot (with its own
// commits applied and being published) and while a follower that was cut
// off installs it and catches up.
func TestSnapshotInstallWhileWriting(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	c := newRClusterWith(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 20)
	c.settle()
	f := c.follower()
	c.disconnect(f)

	var (
		stop    atomic.Bool
		commits atomic.Int64
		wg      sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for !stop.Load() {
				table := rng.IntN(len(ld.tables))
				_, err := ld.node.Write(context.Background(), ld.metas[table:table+1], func(txn strata.WriteTxn) error {
					return randomWrite(rng, txn, ld.tables[table:table+1], w)
				})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				commits.Add(1)
			}
		}()
	}
	for commits.Load() < 100 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	must(t, ld.node.Raft().Snapshot().Error())
	for start := commits.Load(); commits.Load() < start+30 && !t.Failed(); {
		time.Sleep(time.Millisecond)
	}
	c.connect(f)
	deadline := time.Now().Add(time.Minute)
	for lastSnapshot(f) == "0" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	installed := commits.Load()
	// Writes go on after the install, through the catching up.
	for commits.Load() < installed+50 && time.Now().Before(deadline) && !t.Failed() {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if lastSnapshot(f) == "0" {
		t.Fatal("the follower installed no snapshot")
	}
	t.Logf("%d commits, %d of them before the follower had installed the snapshot", commits.Load(), installed)
	c.settle()
	c.checkEqual(false)
	c.checkSameBytes()
}

// TestSnapshotWaitsForPublished: on the leader, an entry the FSM applied
// may hold the node's own commits that are not published yet; Snapshot
// takes its ReadTxn only once they are, so that the snapshot holds
// exactly the state of its index.
func TestSnapshotWaitsForPublished(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 1)
	ld := c.leader()
	writeRandom(t, ld, rand.New(rand.NewPCG(testSeed(t), 5)), 5)
	c.settle()
	n := ld.node
	// An entry applied whose commit is not published yet, as the FSM
	// leaves one of the node's own (Apply, setApplied).
	index := n.AppliedIndex() + 1
	n.mu.Lock()
	n.setApplied(index, 1)
	n.mu.Unlock()
	type result struct {
		s   raft.FSMSnapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := n.fsm.Snapshot()
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("Snapshot returned (%v) before the applied entry was published", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	n.mu.Lock()
	n.st.publishedOne(index)
	n.advancePublished()
	n.mu.Unlock()
	r := <-done
	must(t, r.err)
	if got := r.s.(*nodeSnapshot).index; got != index {
		t.Errorf("snapshot at index %d, want %d", got, index)
	}
}

// TestSnapshotRestoreFailsPending: a node that restores a snapshot while
// a commit of its own is proposed (it led, and was cut off) fails the
// commit as ambiguous, and the cluster converges once it is back.
func TestSnapshotRestoreFailsPending(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(testSeed(t), 6))
	c := newRClusterWith(t, 3, snapshotConf)
	ld := c.leader()
	writeRandom(t, ld, rng, 20)
	c.settle()
	s, err := ld.node.fsm.Snapshot()
	must(t, err)
	var buf bytes.Buffer
	must(t, s.(*nodeSnapshot).write(&buf))

	c.disconnect(ld)
	committed := make(chan error, 1)
	go func() {
		txn := ld.db.WriteTxn(ld.metas[0])
		if _, _, err := ld.tables[0].Insert(txn, &item{ID: 1000, Val: "pending"}); err != nil {
			txn.Abort()
			committed <- err
			return
		}
		_, err := txn.Commit()
		committed <- err
	}()
	proposed := func() bool {
		ld.node.mu.Lock()
		defer ld.node.mu.Unlock()
		for _, b := range ld.node.st.pending {
			if b.state == stateProposed {
				return true
			}
		}
		return false
	}
	for !proposed() {
		time.Sleep(time.Millisecond)
	}
	must(t, ld.node.fsm.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))))
	err = <-committed
	if !errors.Is(err, ErrAmbiguous) || !errors.Is(err, errRestored) {
		t.Fatalf("the pending commit: %v, want an ambiguous error of the restore", err)
	}
	c.connect(ld)
	// ld may lead still, until it hears of the others' new term: wait for
	// a leader that commits.
	writeRandom(t, c.committingLeader(), rng, 5)
	c.settle()
	c.checkEqual(false)
	c.checkSameBytes()
}
