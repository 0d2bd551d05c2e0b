package replicate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// gatedLog is a LogStore whose writes wait while gate is open (not nil).
type gatedLog struct {
	*LogStore
	gate chan struct{}
}

func (g *gatedLog) StoreLogs(ls []*raft.Log) error {
	if g.gate != nil {
		<-g.gate
	}
	return g.LogStore.StoreLogs(ls)
}

// TestStallLog: stalledFor is 0 with no write in progress, and grows
// with the oldest write in progress; the wrapper keeps
// raft.MonotonicLogStore, and only for a store that is one.
func TestStallLog(t *testing.T) {
	g := &gatedLog{LogStore: openStore(t, nil, t.TempDir()), gate: make(chan struct{})}
	defer closeStore(t, g.LogStore)
	wrapped, s := newStallLog(g)
	if _, ok := wrapped.(raft.MonotonicLogStore); !ok {
		t.Error("the wrapper of a monotonic store is not raft.MonotonicLogStore")
	}
	if _, ok := newStallLogOf(struct{ raft.LogStore }{g}).(raft.MonotonicLogStore); ok {
		t.Error("the wrapper of a store that is not monotonic claims to be")
	}
	if d := s.stalledFor(); d != 0 {
		t.Fatalf("stalledFor with no write: %v", d)
	}
	done := make(chan error, 1)
	go func() {
		done <- wrapped.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("x")}})
	}()
	for s.stalledFor() == 0 {
		time.Sleep(time.Millisecond) // until the write began
	}
	time.Sleep(30 * time.Millisecond)
	if d := s.stalledFor(); d < 30*time.Millisecond {
		t.Errorf("stalledFor 30 ms into a stalled write: %v", d)
	}
	close(g.gate)
	must(t, <-done)
	if d := s.stalledFor(); d != 0 {
		t.Errorf("stalledFor after the write returned: %v", d)
	}
	var l raft.Log
	must(t, wrapped.GetLog(1, &l))
	if string(l.Data) != "x" {
		t.Errorf("the stored entry reads %q", l.Data)
	}
}

// newStallLogOf is newStallLog's wrapper alone.
func newStallLogOf(ls raft.LogStore) raft.LogStore {
	w, _ := newStallLog(ls)
	return w
}

// TestFenceRefusesAppendEntries: while fenced, AppendEntries and a
// pipeline's requests fail with errDiskStalled and reach no one; other
// RPCs, and every request once the fence lifts, go through.
func TestFenceRefusesAppendEntries(t *testing.T) {
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	trans, c := newClampTransport(a)
	defer c.Close()
	var fenced bool
	c.fenced = func() bool { return fenced }
	served := make(chan string, 16)
	stop, stopped := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-stopped }()
	go func() {
		defer close(stopped)
		for {
			var rpc raft.RPC
			select {
			case rpc = <-b.Consumer():
			case <-stop:
				return
			}
			switch rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				served <- "append"
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case *raft.RequestVoteRequest:
				served <- "vote"
				rpc.Respond(&raft.RequestVoteResponse{}, nil)
			default:
				rpc.Respond(nil, errors.New("unexpected"))
			}
		}
	}()
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a")}, Term: 1}
	fenced = true
	if err := trans.AppendEntries("b", "b", req, &raft.AppendEntriesResponse{}); !errors.Is(err, errDiskStalled) {
		t.Errorf("fenced AppendEntries: %v, want errDiskStalled", err)
	}
	p, err := trans.AppendEntriesPipeline("b", "b")
	must(t, err)
	if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); !errors.Is(err, errDiskStalled) {
		t.Errorf("fenced pipeline AppendEntries: %v, want errDiskStalled", err)
	}
	must(t, trans.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 1}, &raft.RequestVoteResponse{}))
	if got := <-served; got != "vote" {
		t.Errorf("the first RPC served while fenced is %q, want the vote", got)
	}
	fenced = false
	must(t, trans.AppendEntries("b", "b", req, &raft.AppendEntriesResponse{}))
	if got := <-served; got != "append" {
		t.Errorf("after the fence: %q served", got)
	}
	f, err := p.AppendEntries(req, &raft.AppendEntriesResponse{})
	must(t, err)
	must(t, f.Error())
	if got := <-served; got != "append" {
		t.Errorf("after the fence, down the pipeline: %q served", got)
	}
	must(t, p.Close())
}

// TestDiskStallTimeoutDefault: 0 is a tenth of the heartbeat timeout, a
// negative value no fence.
func TestDiskStallTimeoutDefault(t *testing.T) {
	conf := raft.DefaultConfig()
	conf.HeartbeatTimeout = 500 * time.Millisecond
	for _, c := range []struct {
		set, want time.Duration
	}{{0, 50 * time.Millisecond}, {-1, 0}, {time.Second, time.Second}} {
		if got := diskStallTimeout(&Config{Raft: conf, DiskStallTimeout: c.set}); got != c.want {
			t.Errorf("DiskStallTimeout %v: %v, want %v", c.set, got, c.want)
		}
	}
}

// TestWriteContextEndsStalledCommit: a Write on a leader whose log store
// stopped answering returns an *AmbiguousError when its ctx ends; the
// node refuses the next Write with ErrNotReady before proposing it; once
// the disk answers, the first write's outcome is settled and a new Write
// commits.
func TestWriteContextEndsStalledCommit(t *testing.T) {
	t.Parallel()
	c := newFaultCluster(t, 3, nil)
	defer c.storeOps.unstallAll()
	ld := c.committingLeader()
	if _, err := put(context.Background(), ld, 1, "before"); err != nil {
		t.Fatal(err)
	}
	c.storeOps.stall(ld.id)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ld.node.Write(ctx, ld.metas[:1], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[0].Insert(txn, &item{ID: 2, Val: "stalled"})
		return err
	})
	if !errors.Is(err, ErrAmbiguous) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a Write whose commit waits on a stalled disk: %v, want ErrAmbiguous wrapping the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the Write returned %v after its 200 ms deadline", took)
	}
	// Past DiskStallTimeout: a commit is refused before it is proposed.
	// (A plain commit, of another table: Write retries ErrNotReady until
	// its ctx ends, and a retry in progress then is reported ambiguous;
	// and a commit of the first's table builds on it, still in the
	// database's commit queue.)
	txn := ld.db.WriteTxn(ld.metas[1])
	if _, _, err := ld.tables[1].Insert(txn, &item{ID: 3, Val: "refused"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrNotReady) || !errors.Is(err, errDiskStalled) {
		t.Errorf("a commit on a node whose log is stalled: %v, want ErrNotReady (stalled)", err)
	}
	// Write retries it until its ctx ends.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := ld.node.Write(ctx2, ld.metas[1:2], func(txn strata.WriteTxn) error {
		_, _, err := ld.tables[1].Insert(txn, &item{ID: 3, Val: "refused"})
		return err
	}); err == nil {
		t.Error("a Write on a node whose log is stalled succeeded")
	}
	c.storeOps.unstallAll()
	c.settleAll()
	nd := c.leader()
	if _, err := put(context.Background(), nd, 4, "after"); err != nil {
		t.Fatalf("a Write once the disk answers: %v", err)
	}
	c.settleAll()
	if has(ld, 1, 3) {
		t.Error("the refused write is applied")
	}
	c.checkEqual(true)
}

// TestStoreStallFences: on a durable leader whose persist store stopped
// answering (its log did not), the FSM stops at the entry whose store
// commit waits; the node fences itself as for a stalled log: a Write
// waiting there returns an *AmbiguousError when its ctx ends, a new
// commit is refused with ErrNotReady before it is proposed, and the
// followers elect another leader, which commits. Once the store answers,
// every member is equal, and every write acknowledged is there.
func TestStoreStallFences(t *testing.T) {
	t.Parallel()
	c := newFaultClusterOf(t, 3, nil, faultOpts{durable: true})
	defer c.storeOps.unstallAll() // first: a stalled member would not close
	ld := c.committingLeader()
	if _, err := put(context.Background(), ld, 1, "before"); err != nil {
		t.Fatal(err)
	}
	c.storeOps.stallState(ld.id)
	// The store takes commits until its memtable is full
	// (storeOps.stallState): write until one waits.
	var acked []uint64
	id := uint64(100)
	for {
		id++
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		done := make(chan error, 1)
		go func() { _, err := put(ctx, ld, id, "until stalled"); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(40 * faultElection):
			// unstallAll, deferred, lets it return.
			t.Fatalf("a Write with a 100 ms deadline on a leader whose store is stalled has not returned after %v", 40*faultElection)
		}
		cancel()
		if err == nil {
			acked = append(acked, id)
			if len(acked) > 2000 {
				t.Fatal("2000 writes acknowledged on a leader whose store is stalled")
			}
			continue
		}
		if !errors.Is(err, ErrAmbiguous) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a Write whose entry's apply waits on a stalled store: %v, want ErrAmbiguous wrapping the deadline", err)
		}
		break
	}
	t.Logf("%d writes acknowledged before the store's commit waited", len(acked))
	txn := ld.db.WriteTxn(ld.metas[1])
	if _, _, err := ld.tables[1].Insert(txn, &item{ID: 3, Val: "refused"}); err != nil {
		t.Fatal(err)
	}
	if !ld.node.diskStalled() {
		t.Error("the node's fence is off while its store's commit waits")
	}
	// Refused before it is proposed: the node fenced itself, or it lost
	// its lease meanwhile (its heartbeats are fenced) and stepped down.
	if _, err := txn.Commit(); !(errors.Is(err, ErrNotReady) && errors.Is(err, errDiskStalled)) && !errors.Is(err, ErrNotLeader) {
		t.Errorf("a commit on a node whose store is stalled: %v, want ErrNotReady (stalled) or ErrNotLeader", err)
	}
	// The followers elect another leader, which commits.
	var nd *rnode
	deadline := time.Now().Add(20 * faultElection)
	for nd == nil && time.Now().Before(deadline) {
		for _, f := range c.followers(ld) {
			if f.node.Raft().State() == raft.Leader {
				nd = f
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if nd == nil {
		t.Fatalf("no follower leads within %v of the store's stall", 20*faultElection)
	}
	if _, err := put(context.Background(), nd, 4, "elsewhere"); err != nil {
		t.Fatalf("a Write on the new leader: %v", err)
	}
	c.storeOps.unstallAll()
	c.settleAll()
	for _, id := range append(acked, 1, 4) {
		for _, m := range c.nodes {
			if !has(m, 0, id) {
				t.Errorf("%s does not hold the acknowledged write %d", m.id, id)
			}
		}
	}
	if has(ld, 1, 3) {
		t.Error("the refused write is applied")
	}
	c.checkEqual(true)
}
