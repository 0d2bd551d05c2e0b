package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// The read modes (docs/replication.md, "Reads"):
//
//	stale        ReadTxn: the node's local state, a committed prefix of
//	             the log, monotonic per node; MaxStaleness refuses it on a
//	             follower that has not heard from a leader recently.
//	at least N   ReadAtLeast: waits until the node published every entry
//	             up to N (PublishedIndex), then reads locally: read your
//	             writes on any node, with the index Node.Write returned.
//	linearizable ReadLinearizable: on the leader, once ready in its term,
//	             wait until every entry committed when the read began is
//	             published, take the ReadTxn, then confirm the lead with
//	             raft's VerifyLeader (one round shared by the reads that
//	             arrived before it started); on a follower, learn the
//	             leader's read index (Config.LeaderIndex, the leader's
//	             ReadIndex) and ReadAtLeast it.
//
// Why PublishedIndex and not AppliedIndex: the FSM marks the leader's own
// commits applied before the commit queue publishes them (their Wait
// returns, then the database publishes), so a ReadTxn taken once
// AppliedIndex reached N may lack the commit at N. PublishedIndex moves
// only once the database published it (strata.SettledBatch.Settled(nil)),
// or, for the change sets the FSM applies itself, once its transaction's
// Commit returned (Node.advancePublished).
//
// Why the leader waits for its commit index rather than reading what it
// applied: a follower may apply and publish an entry before the leader's
// own FSM reaches it (it learns the commit index from the leader), and a
// read there that sees it may end before a read on the leader begins;
// the leader's read must then see it too. Entries without a command
// (raft's no-ops, barriers, configuration changes) never reach the state
// machine, so the index waited for is the last command entry at or below
// the commit index (Node.readIndex), found in the log store.

// ErrTooStale is what a *StaleError matches with errors.Is.
var ErrTooStale = errors.New("replicate: the node's state may be too stale")

// StaleError is ReadTxn's refusal of a read with MaxStaleness on a
// follower whose last contact with the leader is older than allowed, or
// on a node that knows no leader. It matches ErrTooStale.
type StaleError struct {
	// Staleness is how long ago the leader last contacted the node
	// (raft's LastContact); 0 with NoLeader.
	Staleness time.Duration
	// Max is the MaxStaleness asked for.
	Max time.Duration
	// NoLeader reports that the node knows no leader, or never heard
	// from one.
	NoLeader bool
}

func (e *StaleError) Error() string {
	if e.NoLeader {
		return fmt.Sprintf("replicate: the node knows no leader (max staleness %v)", e.Max)
	}
	return fmt.Sprintf("replicate: the leader last contacted the node %v ago, more than the max staleness %v", e.Staleness, e.Max)
}

// Is reports that e is an ErrTooStale.
func (e *StaleError) Is(target error) bool { return target == ErrTooStale }

// ReadOption is an option of Node.ReadTxn.
type ReadOption func(*readOptions)

type readOptions struct {
	maxStaleness time.Duration
}

// MaxStaleness refuses the read, with a *StaleError, on a follower whose
// last contact with the leader (raft's LastContact) is older than d, and
// on a node that knows no leader. The leader is never stale: it steps
// down once it has not heard from a quorum for raft's LeaderLeaseTimeout.
// d <= 0 means no bound.
func MaxStaleness(d time.Duration) ReadOption {
	return func(o *readOptions) { o.maxStaleness = d }
}

// LeaderIndexer returns the leader's read index (Node.ReadIndex, run on
// the leader): a follower's ReadLinearizable reads once it published
// every entry up to it. It fails with a *NotLeaderError when the node it
// asks does not lead.
type LeaderIndexer func(ctx context.Context) (uint64, error)

// ReadTxn returns a read transaction of the node's local state: a
// committed prefix of the log, never older than one an earlier ReadTxn of
// this node returned. It fails with ctx's error, the *StoppedError of a
// stopped node, or, with MaxStaleness, a *StaleError.
func (n *Node) ReadTxn(ctx context.Context, opts ...ReadOption) (strata.ReadTxn, error) {
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e := n.stopErr.Load(); e != nil {
		return nil, e
	}
	if o.maxStaleness > 0 && n.raft.State() != raft.Leader {
		if addr, _ := n.raft.LeaderWithID(); addr == "" {
			return nil, &StaleError{Max: o.maxStaleness, NoLeader: true}
		}
		last := n.raft.LastContact()
		if last.IsZero() {
			return nil, &StaleError{Max: o.maxStaleness, NoLeader: true}
		}
		if d := time.Since(last); d > o.maxStaleness {
			return nil, &StaleError{Staleness: d, Max: o.maxStaleness}
		}
	}
	return n.db.ReadTxn(), nil
}

// ReadAtLeast waits until the node published every entry up to index
// (PublishedIndex), and returns a read transaction that holds them: with
// the index Node.Write returned, it reads that write on any node. It
// fails with ctx's error, the *StoppedError of a stopped node, or
// ErrShutdown once the node closes. index should be a command entry's
// (Write's, ReadIndex's): one of an entry without a command (a no-op, a
// barrier) is reached only with the next command.
func (n *Node) ReadAtLeast(ctx context.Context, index uint64) (strata.ReadTxn, error) {
	if n.published.Load() < index && n.raft.State() != raft.Leader {
		n.askNotice(index)
	}
	if err := n.waitPublished(ctx, index); err != nil {
		return nil, err
	}
	return n.db.ReadTxn(), nil
}

// waitPublished waits until PublishedIndex is at least index.
func (n *Node) waitPublished(ctx context.Context, index uint64) error {
	return n.waitIndex(ctx, &n.published, index)
}

// ReadLinearizable returns a read transaction that holds every write
// acknowledged before it was called, on any node, and nothing older than
// what any read that returned before it was called saw.
//
// On the leader: once it is ready in its term (its barrier applied), it
// waits until every entry committed when the read began is published,
// takes the ReadTxn, and only then confirms that it still leads with
// raft's VerifyLeader: the state it read was then current at a moment
// when it led (the other order could read a state from after it lost the
// lead). Reads share VerifyLeader rounds. A leader that cannot confirm
// its lead (a partition, a newer term) fails with a *NotLeaderError, and
// returns nothing it read.
//
// On a follower: it asks the leader for its read index
// (Config.LeaderIndex) and reads once it published every entry up to it
// (ReadAtLeast). Without Config.LeaderIndex it fails with a
// *NotLeaderError naming the leader.
//
// A leader not ready yet is waited for, until ctx is done.
func (n *Node) ReadLinearizable(ctx context.Context) (strata.ReadTxn, error) {
	if n.raft.State() != raft.Leader {
		if n.leaderIndex == nil {
			return nil, n.notLeader(nil)
		}
		index, err := n.leaderIndex(ctx)
		if err != nil {
			return nil, err
		}
		return n.ReadAtLeast(ctx, index)
	}
	term, err := n.awaitReady(ctx)
	if err != nil {
		return nil, err
	}
	index, err := n.readIndex(n.raft.CommitIndex())
	if err != nil {
		return nil, err
	}
	if err := n.waitPublished(ctx, index); err != nil {
		return nil, err
	}
	txn := n.db.ReadTxn() // first: then VerifyLeader
	if err := n.verifyLeader(ctx, term); err != nil {
		return nil, err
	}
	return txn, nil
}

// ReadIndex is the leader's side of a follower's ReadLinearizable (what a
// LeaderIndexer returns): once the node is ready in its term, it notes
// its commit index, confirms its lead with VerifyLeader (a shared round,
// as the leader's own linearizable reads), and returns the index of the
// last command entry at or below that commit index. A follower that read
// once it published up to it holds every write acknowledged before
// ReadIndex was called. On a follower it fails with a *NotLeaderError.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	term, err := n.awaitReady(ctx)
	if err != nil {
		return 0, err
	}
	commit := n.raft.CommitIndex()
	if err := n.verifyLeader(ctx, term); err != nil {
		return 0, err
	}
	index, err := n.readIndex(commit)
	if err == nil {
		n.announce(commit) // the follower waits to publish index
	}
	return index, err
}

// readIndex returns the index of the last command entry at or below
// commit, which the node has in its log (it committed it), or the
// published index when it is higher, or when no command lies between it
// and commit: every command at or below commit is then published.
func (n *Node) readIndex(commit uint64) (uint64, error) {
	pub := n.published.Load()
	if pub >= commit {
		return pub, nil
	}
	var l raft.Log
	for i := commit; i > pub; i-- {
		if err := n.logs.GetLog(i, &l); err != nil {
			return 0, fmt.Errorf("replicate: read index: entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	return pub, nil
}

// awaitReady waits until the node leads and is ready in its term, and
// returns the term; a node that does not lead fails with a
// *NotLeaderError.
func (n *Node) awaitReady(ctx context.Context) (uint64, error) {
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if n.closed.Load() {
			return 0, ErrShutdown
		}
		if e := n.stopErr.Load(); e != nil {
			return 0, e
		}
		if n.raft.State() != raft.Leader {
			return 0, n.notLeader(nil)
		}
		term := n.raft.CurrentTerm()
		n.mu.Lock()
		ready := n.st.ready && n.st.readyTerm == term
		n.mu.Unlock()
		if ready {
			return term, nil
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", ErrNotReady, ctx.Err())
		}
	}
}

// verifyLeader waits for a VerifyLeader round that starts after the call
// and ends with the node leading in term throughout: an error otherwise
// (a *NotLeaderError, or ctx's).
func (n *Node) verifyLeader(ctx context.Context, term uint64) error {
	r := n.verify.join(n)
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err == nil && r.termBefore == term && r.termAfter == term {
		return nil
	}
	if r.err == ErrShutdown {
		return ErrShutdown
	}
	addr, _ := n.raft.LeaderWithID()
	err := r.err
	if err == nil {
		err = raft.ErrNotLeader // the term moved on
	}
	return &NotLeaderError{Leader: addr, Err: err}
}

// verifier batches VerifyLeader calls: one round at a time, shared by
// every read that joined it.
//
// A read joins the next round, never the one in flight: a round proves
// that the node led when a quorum answered its heartbeats, which may be
// before the read was asked for (the round started before it), and so
// not that the state the read took was current after it was asked for.
// Only a round that starts after the read joined does. Reads that arrive
// while a round is in flight share the round after it.
//
// Node.Close stops the verifier (close) before it shuts raft down, and
// waits for the round in flight: raft v1.7.2 may never answer a
// VerifyLeader that meets its Shutdown (the future goes into verifyCh's
// buffer, which the stopped main loop no longer drains, and a
// verifyFuture has no shutdown channel to give up on), and the goroutine
// waiting for it would be left behind. A round raft runs is answered, if
// only when the leader's lease lapses. TestLinVerifierOutlivesClose
// found it: 5 closes of 20 with reads in flight left the goroutine.
type verifier struct {
	mu      sync.Mutex
	running bool
	closed  bool
	ended   chan struct{} // closed when run returns, if it runs
	next    *verifyRound
	rounds  atomic.Uint64 // VerifyLeader calls made, for tests
	joins   atomic.Uint64 // reads that joined a round, for tests
	hook    func()        // tests: called before each round; nil
}

type verifyRound struct {
	done                  chan struct{}
	err                   error
	termBefore, termAfter uint64
}

// join returns the round that starts next, and starts the goroutine that
// runs rounds if none runs. The goroutine ends once no read waits.
func (v *verifier) join(n *Node) *verifyRound {
	v.joins.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		r := &verifyRound{done: make(chan struct{}), err: ErrShutdown}
		close(r.done)
		return r
	}
	if v.next == nil {
		v.next = &verifyRound{done: make(chan struct{})}
	}
	r := v.next
	if !v.running {
		v.running = true
		v.ended = make(chan struct{})
		go v.run(n)
	}
	return r
}

// close stops the verifier: the round in flight ends (raft still runs),
// the next fails with ErrShutdown, and so do later joins. It returns once
// the goroutine that runs rounds has ended.
func (v *verifier) close() {
	v.mu.Lock()
	v.closed = true
	ended, running := v.ended, v.running
	v.mu.Unlock()
	if running {
		<-ended
	}
}

func (v *verifier) run(n *Node) {
	for {
		v.mu.Lock()
		r := v.next
		v.next = nil
		if r == nil || v.closed {
			v.running = false
			close(v.ended)
			v.mu.Unlock()
			if r != nil {
				r.err = ErrShutdown
				close(r.done)
			}
			return
		}
		v.mu.Unlock()
		v.rounds.Add(1)
		if v.hook != nil {
			v.hook()
		}
		r.termBefore = n.raft.CurrentTerm()
		r.err = n.raft.VerifyLeader().Error()
		r.termAfter = n.raft.CurrentTerm()
		close(r.done)
	}
}
