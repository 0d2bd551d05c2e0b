package replicate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// The linearizability tests: clients put, get, compare-and-swap and
// delete a few keys of one table of an in-process cluster while a nemesis
// partitions the leader, a follower or a minority with the leader, cuts
// the leader's links one way, makes links fail for milliseconds at a
// time, and crashes and restarts the leader. The history is checked with
// porcupine against linModel (linmodel_test.go), and, beside it:
//
//   - every acknowledged write's index, read with ReadAtLeast on a node
//     picked at random, shows the write (the client's token, below);
//   - stale reads (ReadTxn) never go back on a node: neither the
//     published index nor the table's revision;
//   - at the end every node holds the same objects at the same revisions
//     at the same applied and published index, and stopped on no entry;
//   - what each client's last write left (its token) is a write that was
//     acknowledged or ambiguous, never one reported as not made, and not
//     older than its last acknowledged one.
//
// How outcomes are recorded (errors.go, journal.go):
//
//	nil                      happened, between call and return
//	ErrEarlierCommitFailed   not happened: the commit was refused before
//	                         its change set was enqueued (strata's commit
//	                         queue fails the commits after a failed one
//	                         at enqueue; a commit the FSM marked applied
//	                         that the queue failed would stop the node,
//	                         which the test checks)
//	ErrAmbiguous             unknown: submitted, may or may not commit
//	ErrNotLeader             not happened: not proposed, never will be
//	ErrNotReady, ErrShutdown not happened: not proposed
//	ctx's error              not happened: the write transaction never
//	                         began, or ErrNotReady was being retried
//
// and a read that fails is left out (it changed nothing).
//
// Every write also writes the client's token (an object of its own,
// holding the client's operation counter) in the same transaction. The
// token is what ReadAtLeast reads back and the last-write check finds;
// and it makes every operation propose a change set, whose precondition
// (the table's revision it read) is checked when it applies, also a cas
// that finds another value and a delete of nothing. The first runs of
// this test, with half of the cas and delete operations writing no token,
// found that a Node.Write whose function writes nothing, or aborts, was
// not linearizable: on the leader its function could read the tip of a
// commit that never commits and abort (TestLinDirtyReadOfAbortedWrite);
// on a node that no longer leads, or never did, its commit of nothing
// returned nil with the node's stale state (TestLinReadOnlyWriteIsStale).
// Both are fixed (Node.settleTips, Node.confirmRead); the workload still
// writes a token with every operation.

var (
	linLong = flag.Duration("replicate.lin.long", 0,
		"run the linearizability tests' clients and random faults for this long (default: a short fixed schedule of faults)")
)

const (
	linKeys      = 4    // the keys 0..linKeys-1 of table a
	linTokenBase = 1000 // client c's token is the object linTokenBase+c
)

// linOutcome is how a write ended, for the token check.
type linOutcome uint8

const (
	linOK linOutcome = iota + 1
	linAmbiguous
	linNotDone
)

// linHarness runs the clients and the nemesis on a cluster and records
// the history.
type linHarness struct {
	t *testing.T
	c *rcluster
	// mu is held shared by every client operation and stale read, and
	// exclusively by the nemesis while it changes c.nodes or a node's
	// fields (crash, restart) or its links: the nodes' LeaderIndexer
	// (rcluster.leaderIndexer) reads c.nodes from inside the reads.
	mu sync.RWMutex
	t0 time.Time

	hmu     sync.Mutex
	history []porcupine.Operation
	// outcomes[c][n] is how client c's write n (its token value) ended.
	outcomes []map[int]linOutcome

	// Counters for the log and the checks that the run did something.
	writesOK, writesUnknown, writesNotDone atomic.Int64
	readsOK, readsFailed                   atomic.Int64
	readAtLeastChecked, staleReads         atomic.Int64
	faults                                 []string
	readErrors                             map[string]int // under hmu
}

// readErrorKind names the kind of a failed read's error, for the log.
func readErrorKind(err error) string {
	switch {
	case errors.Is(err, ErrNotLeader):
		return "not leader"
	case errors.Is(err, ErrNotReady):
		return "not ready"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, ErrShutdown):
		return "shut down"
	}
	return err.Error()
}

func newLinHarness(t *testing.T, nodes, clients int) *linHarness {
	h := &linHarness{t: t, c: newRCluster(t, nodes), t0: time.Now(), readErrors: map[string]int{}}
	for range clients {
		h.outcomes = append(h.outcomes, map[int]linOutcome{})
	}
	return h
}

// now is the history's clock: monotonic nanoseconds since the start.
func (h *linHarness) now() int64 { return int64(time.Since(h.t0)) }

func (h *linHarness) record(op porcupine.Operation) {
	h.hmu.Lock()
	h.history = append(h.history, op)
	h.hmu.Unlock()
}

// findLeader returns a live node that believes it leads, or nil. h.mu
// is held (shared or not) or the caller is the nemesis.
func (h *linHarness) findLeader() *rnode {
	for _, nd := range h.c.live() {
		if nd.node.Raft().State() == raft.Leader {
			return nd
		}
	}
	return nil
}

// linClient is one client: it runs one operation at a time.
type linClient struct {
	id     int
	rng    *rand.Rand
	target raft.ServerAddress // the node it writes through
	n      int                // its next operation's counter
	seen   [linKeys]string    // the last value it saw per key, for cas
}

func (h *linHarness) runClient(cl *linClient, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := uint64(cl.rng.IntN(linKeys))
		var backOff bool
		switch r := cl.rng.IntN(100); {
		case r < 40:
			backOff = h.get(cl, key)
		case r < 65:
			backOff = h.write(cl, linInput{Op: linPut, Key: key, Val: fmt.Sprintf("%d.%d", cl.id, cl.n)})
		case r < 85:
			old := cl.seen[key]
			if cl.rng.IntN(5) == 0 {
				old = fmt.Sprintf("%d.%d", cl.rng.IntN(len(h.outcomes)), cl.rng.IntN(cl.n+1))
			}
			backOff = h.write(cl, linInput{Op: linCAS, Key: key, Old: old, Val: fmt.Sprintf("%d.%d", cl.id, cl.n)})
		default:
			backOff = h.write(cl, linInput{Op: linDelete, Key: key})
		}
		if backOff {
			time.Sleep(5 * time.Millisecond) // no leader yet, most likely
		}
	}
}

// get reads key with ReadLinearizable on a live node picked at random,
// and reports whether the read failed.
func (h *linHarness) get(cl *linClient, key uint64) (failed bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	live := h.c.live()
	nd := live[cl.rng.IntN(len(live))]
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	call := h.now()
	txn, err := nd.node.ReadLinearizable(ctx)
	if err != nil {
		if errors.Is(err, ErrStopped) {
			h.t.Errorf("client %d: read on %s: %v", cl.id, nd.id, err)
		}
		h.readsFailed.Add(1)
		h.hmu.Lock()
		h.readErrors[readErrorKind(err)]++
		h.hmu.Unlock()
		return true
	}
	val := get(nd, txn, key)
	ret := h.now()
	cl.seen[key] = val
	h.readsOK.Add(1)
	h.record(porcupine.Operation{ClientId: cl.id, Input: linInput{Op: linGet, Key: key}, Call: call, Output: linOutput{Val: val}, Return: ret})
	return false
}

// writer returns the node cl writes through: the one it was sent to, or
// the leader; nil if no live node leads.
func (h *linHarness) writer(cl *linClient) *rnode {
	for _, nd := range h.c.live() {
		if nd.addr == cl.target {
			return nd
		}
	}
	if nd := h.findLeader(); nd != nil {
		cl.target = nd.addr
		return nd
	}
	return nil
}

// write makes in through the node cl writes through, with cl's token,
// records it, and reads the token back with ReadAtLeast on a node picked
// at random. It reports whether it found no node to write through, or
// the write was not made.
func (h *linHarness) write(cl *linClient, in linInput) (failed bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	nd := h.writer(cl)
	if nd == nil {
		return true
	}
	counter := cl.n
	cl.n++
	tbl := nd.tables[0]
	var swapped bool
	var found string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	call := h.now()
	index, err := nd.node.Write(ctx, nd.metas[:1], func(txn strata.WriteTxn) error {
		// Run again on ErrNotReady: what the last run decided counts.
		found, swapped = "", true
		if o, _, ok := tbl.Get(txn, itemByID.Query(in.Key)); ok {
			found = o.Val
		}
		switch in.Op {
		case linPut:
			if _, _, err := tbl.Insert(txn, &item{ID: in.Key, Val: in.Val}); err != nil {
				return err
			}
		case linDelete:
			if _, _, err := tbl.Delete(txn, &item{ID: in.Key}); err != nil {
				return err
			}
		case linCAS:
			if found != in.Old {
				swapped = false // the token is written: see the comment at the top
				break
			}
			if _, _, err := tbl.Insert(txn, &item{ID: in.Key, Val: in.Val}); err != nil {
				return err
			}
		}
		_, _, err := tbl.Insert(txn, &item{ID: linTokenBase + uint64(cl.id), Val: strconv.Itoa(counter)})
		return err
	})
	ret := h.now()
	var outcome linOutcome
	var nl *NotLeaderError
	switch {
	case err == nil:
		outcome = linOK
	case errors.Is(err, strata.ErrEarlierCommitFailed):
		outcome = linNotDone
	case errors.Is(err, ErrAmbiguous):
		outcome = linAmbiguous
	case errors.As(err, &nl):
		outcome = linNotDone
		cl.target = nl.Leader // "" if it knows none: the leader, next time
	case errors.Is(err, ErrNotReady), errors.Is(err, ErrShutdown),
		errors.Is(err, context.DeadlineExceeded):
		outcome = linNotDone
	default:
		h.t.Errorf("client %d: %v through %s: %v", cl.id, in.Op, nd.id, err)
		return true
	}
	h.hmu.Lock()
	h.outcomes[cl.id][counter] = outcome
	h.hmu.Unlock()
	op := porcupine.Operation{ClientId: cl.id, Input: in, Call: call, Output: linOutput{}, Return: ret}
	switch outcome {
	case linNotDone:
		h.writesNotDone.Add(1)
		if nd.node.Raft().State() != raft.Leader {
			cl.target = ""
		}
		return true
	case linAmbiguous:
		h.writesUnknown.Add(1)
		cl.target = ""
		if in.Op == linCAS && !swapped {
			// No effect on the key either way.
			return false
		}
		op.Output, op.Return = linOutput{Unknown: true}, linUnknownReturn
		h.record(op)
		return false
	}
	h.writesOK.Add(1)
	switch in.Op {
	case linPut:
		cl.seen[in.Key] = in.Val
	case linDelete:
		cl.seen[in.Key] = ""
	case linCAS:
		op.Output = linOutput{Swapped: swapped}
		if swapped {
			cl.seen[in.Key] = in.Val
		} else {
			op.Output = linOutput{Val: found}
			cl.seen[in.Key] = found
		}
	}
	h.record(op)

	// Read your write on any node: its token, which no other write of
	// this client can have overwritten yet (an earlier ambiguous one is
	// before it in the log, if it is there at all).
	live := h.c.live()
	other := live[cl.rng.IntN(len(live))]
	rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer rcancel()
	txn, err := other.node.ReadAtLeast(rctx, index)
	switch {
	case err == nil:
		h.readAtLeastChecked.Add(1)
		if got, want := get(other, txn, linTokenBase+uint64(cl.id)), strconv.Itoa(counter); got != want {
			h.t.Errorf("client %d: ReadAtLeast(%d) on %s after its write %d through %s: token %q, want %q",
				cl.id, index, other.id, counter, nd.id, got, want)
		}
	case errors.Is(err, ErrStopped):
		h.t.Errorf("client %d: ReadAtLeast on %s: %v", cl.id, other.id, err)
	}
	// Else the node is cut off, or restarting, and behind: it is not
	// the node's fault that it cannot be read from yet.
	return false
}

// staleReader reads the table with ReadTxn on node i in a loop, and
// fails the test if the published index or the table's revision goes
// back between two reads of one incarnation of the node.
func (h *linHarness) staleReader(i int, stop <-chan struct{}) {
	var (
		last     *Node
		lastPub  uint64
		lastRevs strata.Revision
	)
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
		h.mu.RLock()
		nd := h.c.nodes[i]
		if !nd.closed {
			if nd.node != last {
				last, lastPub, lastRevs = nd.node, 0, 0
			}
			pub := nd.node.PublishedIndex()
			txn, err := nd.node.ReadTxn(context.Background())
			if err != nil {
				h.t.Errorf("%s: ReadTxn: %v", nd.id, err)
			} else {
				rev := nd.tables[0].Revision(txn)
				if pub < lastPub || rev < lastRevs {
					h.t.Errorf("%s: a stale read went back: published %d after %d, revision %d after %d", nd.id, pub, lastPub, rev, lastRevs)
				}
				lastPub, lastRevs = pub, rev
				h.staleReads.Add(1)
			}
		}
		h.mu.RUnlock()
	}
}

// The nemesis's faults. Each waits for its effect (a new leader among
// the majority) or holds for a while, then heals, and waits for a
// leader again.
type linFault int

const (
	faultPartitionLeader   linFault = iota // the leader cut off both ways
	faultPartitionFollower                 // a follower cut off both ways
	faultOneWay                            // the leader cannot send to anyone; it hears them
	faultCrashLeader                       // the leader's node closed, and restarted on its log
	faultSplitMinority                     // the leader and one follower cut off from the rest (5 nodes)
	faultFlakyLinks                        // links cut one way and restored at random, every few ms
)

func (f linFault) String() string {
	return [...]string{"partition leader", "partition follower", "one-way leader", "crash+restart leader", "split minority", "flaky links"}[f]
}

// waitNewLeader waits until a live node other than the ones in old
// leads, and returns it: of those that believe they lead, the one of the
// highest term (a deposed leader cut off from the others believes it
// until its lease runs out).
func (h *linHarness) waitNewLeader(old ...*rnode) *rnode {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		var best *rnode
		var bestTerm uint64
		for _, nd := range h.c.live() {
			if slices.Contains(old, nd) || nd.node.Raft().State() != raft.Leader {
				continue
			}
			if term := nd.node.Raft().CurrentTerm(); best == nil || term > bestTerm {
				best, bestTerm = nd, term
			}
		}
		if best != nil {
			return best
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("no new leader elected (old: %d nodes)", len(old))
	return nil
}

// waitLeader waits until some live node leads.
func (h *linHarness) waitLeader() *rnode {
	h.t.Helper()
	return h.waitNewLeader()
}

// cut stops every message between the nodes of a and those of b (both
// ways).
func (h *linHarness) cut(a, b []*rnode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			x.trans.Disconnect(y.addr)
			y.trans.Disconnect(x.addr)
		}
	}
}

// healAll connects every live node with every other.
func (h *linHarness) healAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, nd := range h.c.live() {
		h.c.heal(nd)
	}
}

// crash closes nd's node, as a crash of its process would end it (its
// commits in flight end ambiguous), and cuts it off; its log store stays
// open for restart, as on disk.
func (h *linHarness) crash(nd *rnode) {
	h.t.Helper()
	// With reads and writes in flight: Close stops the VerifyLeader
	// rounds first (TestLinVerifierOutlivesClose).
	if err := nd.node.Close(); err != nil {
		h.t.Errorf("close %s: %v", nd.id, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	nd.closed = true
	for _, o := range h.c.nodes {
		if o != nd {
			o.trans.Disconnect(nd.addr)
		}
	}
	nd.trans.DisconnectAll()
	for _, it := range nd.feeds {
		it.Close()
	}
	nd.feeds = nil
	must(h.t, nd.trans.Close())
}

// restart starts a node in the place of the crashed nd: a new database
// whose tables start empty, on nd's log store (raft's log, term and
// vote), which raft replays into them.
func (h *linHarness) restart(old *rnode) *rnode {
	h.t.Helper()
	i := slices.Index(h.c.nodes, old)
	nd := &rnode{id: old.id, addr: old.addr, num: uint16(i + 1), db: strata.New(), store: old.store, snaps: testSnapshots(h.t)}
	var binds []Binding
	for _, name := range tableNames {
		tbl, err := strata.NewTable(nd.db, name, itemByID, itemByTag, strata.RevisionIndex[*item]())
		must(h.t, err)
		nd.tables = append(nd.tables, tbl)
		nd.metas = append(nd.metas, tbl)
		binds = append(binds, Bind(tbl, persist.JSON[*item]()))
	}
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	var err error
	nd.node, err = NewNode(nd.config(binds, testRaftConfig(nd.id), withLeaderIndex(h.c.leaderIndexer(nd))))
	must(h.t, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c.nodes[i] = nd
	h.c.heal(nd)
	return nd
}

// inject runs one fault from start to healed.
func (h *linHarness) inject(f linFault, rng *rand.Rand) {
	h.t.Helper()
	hold := func() { time.Sleep(time.Duration(50+rng.IntN(200)) * time.Millisecond) }
	ld := h.waitLeader()
	h.faults = append(h.faults, f.String())
	switch f {
	case faultPartitionLeader:
		h.cut([]*rnode{ld}, h.c.followers(ld))
		h.waitNewLeader(ld)
		hold()
		h.healAll()
	case faultPartitionFollower:
		fs := h.c.followers(ld)
		f := fs[rng.IntN(len(fs))]
		h.cut([]*rnode{f}, h.c.followers(f))
		hold()
		hold()
		h.healAll()
	case faultOneWay:
		h.mu.Lock()
		for _, o := range h.c.followers(ld) {
			ld.trans.Disconnect(o.addr)
		}
		h.mu.Unlock()
		h.waitNewLeader(ld)
		hold()
		h.healAll()
	case faultCrashLeader:
		h.crash(ld)
		h.waitNewLeader(ld)
		hold()
		h.restart(ld)
	case faultSplitMinority:
		fs := h.c.followers(ld)
		minority := []*rnode{ld, fs[rng.IntN(len(fs))]}
		var majority []*rnode
		for _, nd := range h.c.live() {
			if !slices.Contains(minority, nd) {
				majority = append(majority, nd)
			}
		}
		h.cut(minority, majority)
		h.waitNewLeader(minority...)
		hold()
		h.healAll()
	case faultFlakyLinks:
		// The in-memory transport cannot delay a message; a link that
		// fails for a few milliseconds at a time loses the RPCs sent
		// meanwhile, which raft sends again (heartbeats, appends, votes)
		// later: delays, losses, and now and then an election.
		live := h.c.live()
		for end := time.Now().Add(time.Duration(300+rng.IntN(400)) * time.Millisecond); time.Now().Before(end); {
			a, b := live[rng.IntN(len(live))], live[rng.IntN(len(live))]
			if a == b {
				continue
			}
			h.mu.Lock()
			a.trans.Disconnect(b.addr)
			h.mu.Unlock()
			time.Sleep(time.Duration(1+rng.IntN(10)) * time.Millisecond)
			h.mu.Lock()
			a.trans.Connect(b.addr, b.trans)
			h.mu.Unlock()
		}
		h.healAll()
	}
	h.waitLeader()
	hold() // the clients work on a whole cluster for a while
}

// runLin runs clients against a cluster of nodes under the faults (in
// order; with -replicate.lin.long, random ones of them for that long),
// then checks the history and the cluster.
func runLin(t *testing.T, nodes, clients int, faults []linFault) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	h := newLinHarness(t, nodes, clients)
	h.waitLeader()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopAll()
	for c := range clients {
		cl := &linClient{id: c, rng: rand.New(rand.NewPCG(seed, uint64(c+1)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.runClient(cl, stop)
		}()
	}
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.staleReader(i, stop)
		}()
	}

	time.Sleep(200 * time.Millisecond)
	if *linLong > 0 {
		for deadline := time.Now().Add(*linLong); time.Now().Before(deadline); {
			h.inject(faults[rng.IntN(len(faults))], rng)
		}
	} else {
		for _, f := range faults {
			h.inject(f, rng)
		}
	}
	stopAll()

	// Whole again: every node holds the same, at the same index.
	h.healAll()
	target := h.c.converge()
	h.c.checkEqual(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, nd := range h.c.live() {
		if err := nd.node.Stopped(); err != nil {
			t.Errorf("%s: %v", nd.id, err)
		}
		if _, err := nd.node.ReadAtLeast(ctx, nd.node.AppliedIndex()); err != nil {
			t.Fatalf("%s: published %d, applied %d: %v", nd.id, nd.node.PublishedIndex(), nd.node.AppliedIndex(), err)
		}
		if a, p := nd.node.AppliedIndex(), nd.node.PublishedIndex(); a != target || p != target {
			t.Errorf("%s: applied %d, published %d; the cluster at %d", nd.id, a, p, target)
		}
	}

	// The last value of every key, read on every node, ends the history.
	for i, nd := range h.c.live() {
		for key := range uint64(linKeys) {
			call := h.now()
			txn := readLinearizable(t, ctx, nd)
			h.record(porcupine.Operation{ClientId: clients + i, Input: linInput{Op: linGet, Key: key},
				Call: call, Output: linOutput{Val: get(nd, txn, key)}, Return: h.now()})
		}
	}

	// Each client's token: the last of its writes that applied.
	ld := h.waitLeader()
	txn := ld.db.ReadTxn()
	for c, outcomes := range h.outcomes {
		lastOK := -1
		for n, o := range outcomes {
			if o == linOK && n > lastOK {
				lastOK = n
			}
		}
		tok := get(ld, txn, linTokenBase+uint64(c))
		n, err := strconv.Atoi(tok)
		switch {
		case tok == "" && lastOK < 0:
		case err != nil:
			t.Errorf("client %d: token %q", c, tok)
		case outcomes[n] == linNotDone:
			t.Errorf("client %d: its write %d, reported as not made (not proposed), applied", c, n)
		case outcomes[n] == 0:
			t.Errorf("client %d: token %d, a write it never made", c, n)
		case n < lastOK:
			t.Errorf("client %d: its write %d was acknowledged, and the last that applied is %d", c, lastOK, n)
		}
	}

	t.Logf("faults %q; %d ops in the history: writes %d ok, %d unknown, %d not made; linearizable reads %d ok, %d failed %v; %d ReadAtLeast checks, %d stale reads; applied index %d",
		h.faults, len(h.history), h.writesOK.Load(), h.writesUnknown.Load(), h.writesNotDone.Load(),
		h.readsOK.Load(), h.readsFailed.Load(), h.readErrors, h.readAtLeastChecked.Load(), h.staleReads.Load(), target)
	if h.writesOK.Load() == 0 || h.readsOK.Load() == 0 || h.readAtLeastChecked.Load() == 0 || h.staleReads.Load() == 0 {
		t.Errorf("the clients did too little to check")
	}

	start := time.Now()
	timeout := time.Minute
	if *linLong > 0 {
		timeout = 10 * time.Minute
	}
	res := linCheck(t, h.history, timeout)
	t.Logf("porcupine: %v for %d ops in %v", res, len(h.history), time.Since(start).Round(time.Millisecond))
}

// readLinearizable reads on nd with ReadLinearizable, again while it
// fails with ErrNotLeader or ErrNotReady: after a fault, a node may
// still name the old leader for a moment.
func readLinearizable(t *testing.T, ctx context.Context, nd *rnode) strata.ReadTxn {
	t.Helper()
	for {
		txn, err := nd.node.ReadLinearizable(ctx)
		switch {
		case err == nil:
			return txn
		case ctx.Err() == nil && (errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNotReady)):
			time.Sleep(10 * time.Millisecond)
		default:
			t.Fatalf("%s: ReadLinearizable: %v", nd.id, err)
		}
	}
}

// TestLinearizable3: a 3-node cluster, 5 clients, under each fault of a
// single node in turn (with -short, two of them; with
// -replicate.lin.long, random ones, and flaky links).
func TestLinearizable3(t *testing.T) {
	t.Parallel()
	faults := []linFault{faultPartitionLeader, faultOneWay, faultCrashLeader, faultPartitionFollower}
	if testing.Short() && *linLong == 0 {
		faults = []linFault{faultPartitionLeader, faultCrashLeader}
	}
	if *linLong > 0 {
		faults = append(faults, faultFlakyLinks)
	}
	runLin(t, 3, 5, faults)
}

// TestLinearizable5: a 5-node cluster, 5 clients, with the leader cut
// off with one follower, a follower cut off, and flaky links (with
// -short, the first); with -replicate.lin.long, crashes and the faults
// of TestLinearizable3 too.
func TestLinearizable5(t *testing.T) {
	t.Parallel()
	faults := []linFault{faultSplitMinority, faultPartitionFollower, faultFlakyLinks}
	if testing.Short() && *linLong == 0 {
		faults = faults[:1]
	}
	if *linLong > 0 {
		faults = append(faults, faultCrashLeader, faultPartitionLeader, faultOneWay)
	}
	runLin(t, 5, 5, faults)
}
