package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// Writes from any node (docs/replication.md, "Writes from any node").
//
// Node.Write on a follower runs fn in a write transaction of the node's
// published state, as on the leader. Its commit records the change set
// (the journal's batch, with each table's ReadRevision), and Enqueue,
// seeing that the node does not lead, refuses it with errForward: the
// database discards the transaction, so nothing publishes locally. Write
// then sends the change set to the leader through Config.Forwarder, and
// the leader's ApplyForwarded replays it as one of its own write
// transactions on its tip: it checks the change set's preconditions (the
// table's revision must be the one the follower read, so that the writes
// take exactly the revisions they carry), replays the writes at those
// revisions (strata.ApplyWrite) and commits; its journal records them as
// its own change set, which takes the leader's pipeline like any local
// commit, and its index goes back to the follower. The follower's Write
// returns once it published that index, so that the caller reads its own
// write on the node it wrote through.
//
// Only Node.Write forwards: a plain WriteTxn.Commit of bound tables on a
// follower fails with a *NotLeaderError, as the commit has no caller
// waiting to learn an index (the database would have to report the
// transaction as committed without publishing it).
//
// The outcomes a follower's Write can return:
//
//	index, nil          committed at index, and published on this node
//	index, ErrNotPublished
//	                    committed at index; ctx ended (or the node closed)
//	                    before this node published it
//	ErrConflict         a *ConflictError: the table (with ObjectConflicts,
//	                    an object written) changed between the follower's
//	                    read and the leader's check: nothing applied; run
//	                    it again
//	*NotLeaderError     no leader took the change set within the hold
//	                    (Config.ForwardHold), or ctx ended while waiting
//	                    for one (Err is ctx's): nothing was proposed
//	*AmbiguousError     the leader took it, and lost the lead, timed out or
//	                    could not be reached afterwards: it may commit
//	ErrShutdown         this node is closing: nothing was proposed
//	*StoppedError       this node, or the leader, stopped applying the log
//	ErrMixedWrite       fn wrote bound and unbound tables: nothing applied
//	*RemoteError        the leader refused the change set for another
//	                    reason: nothing was proposed
//
// A change set the leader refuses before proposing it (not leader, not
// ready, shutting down, unreachable) is sent again, to the leader the node
// learns next, until the hold ends; never one the leader may have
// proposed.

// Forwarder carries a follower's requests to the leader: its change sets
// (Node.Write), its linearizable reads' read index (ReadLinearizable) and
// its requests for commit notices (ReadAtLeast, notice.go); and any
// node's questions to another member (AppliedIndex, ClusterStatus).
// LocalForwarder is the in-process one, NetForwarder the one over TCP
// (ForwardServer on the leader).
//
// Its errors must say whether the leader may have received a change set:
// an *UnreachableError only when the request surely never reached it (it
// is sent again), an *AmbiguousError when it may have; the leader's own
// errors as ApplyForwarded returned them (their types cross the wire:
// ErrConflict, *NotLeaderError, *AmbiguousError, ErrShutdown,
// *StoppedError, ErrNotReady).
type Forwarder interface {
	// Forward asks the node at raft address leader to commit changes (an
	// entry of one change set, as AppendEntry encodes it) as
	// ApplyForwarded does, and returns the index it committed at.
	Forward(ctx context.Context, leader raft.ServerAddress, changes []byte) (uint64, error)
	// ReadIndex asks the node at raft address leader for its read index
	// (Node.ReadIndex).
	ReadIndex(ctx context.Context, leader raft.ServerAddress) (uint64, error)
	// NoticeCommit asks the node at raft address leader to announce the
	// commit of index at once (Node.AnnounceCommit), for a ReadAtLeast
	// that waits for it here (notice.go). It is a hint: an error only
	// makes the follower ask again.
	NoticeCommit(ctx context.Context, leader raft.ServerAddress, index uint64) error
	// AppliedIndex asks the node at raft address member, any member, for
	// its applied index (Node.AppliedIndex), for ClusterStatus.
	AppliedIndex(ctx context.Context, member raft.ServerAddress) (uint64, error)
}

var (
	// ErrMixedWrite is returned by Node.Write on a follower whose fn wrote
	// bound and unbound tables: the unbound tables' writes cannot go
	// through the leader, and the bound ones cannot publish here. Nothing
	// is applied.
	ErrMixedWrite = errors.New("replicate: a forwarded write wrote bound and unbound tables")

	// ErrInvalidForward is what ApplyForwarded returns, with nothing
	// applied, for changes that are not an entry of exactly one change set
	// of bound tables.
	ErrInvalidForward = errors.New("replicate: invalid forwarded change set")

	// errForward is what the journal's Enqueue returns for the batch of a
	// Node.Write on a node that does not lead: the database discards the
	// commit, and Write forwards the change set the batch recorded.
	errForward = errors.New("replicate: forwarded to the leader")

	// errRerun is what a forward returns when this node leads now: the
	// transaction must run again here (Node.Write retries ErrNotReady).
	errRerun = fmt.Errorf("%w: this node leads now", ErrNotReady)
)

// UnreachableError reports that a Forwarder could not reach the leader,
// and that the request surely did not reach it (a refused connection, no
// address for it, a node not registered). A forward sends the change set
// again, to the leader it learns next, until its hold ends; it then
// returns a *NotLeaderError whose Err is this error.
type UnreachableError struct {
	Leader raft.ServerAddress // the raft address of the node asked
	Err    error              // why it was not reached
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("replicate: leader %s unreachable: %v", e.Leader, e.Err)
}

// Unwrap returns the cause.
func (e *UnreachableError) Unwrap() error { return e.Err }

// ConflictError is the leader's refusal of a forwarded change set whose
// preconditions do not hold on its tip: the tables it wrote changed since
// the follower's transaction read them. Nothing of it applied. It matches
// ErrConflict.
//
// Table and Revision say what the leader found: the table whose
// precondition failed and its revision there (in the leader's tip, which
// may hold commits not yet applied anywhere). The follower's Write waits
// until its own state holds that revision of the table (within the hold)
// before it returns the error, so that the transaction run again reads a
// state at least that new rather than the same stale one.
type ConflictError struct {
	Table    string
	Revision uint64
	Err      error // the precondition that failed
}

func (e *ConflictError) Error() string {
	return "replicate: conflict: " + e.Err.Error()
}

// Is reports that e is an ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the precondition that failed.
func (e *ConflictError) Unwrap() error { return e.Err }

// RemoteError is an error of the leader's that has no type of this
// package: it refused the change set for that reason, before proposing it.
type RemoteError struct {
	Msg string // the leader's error text
}

func (e *RemoteError) Error() string { return "replicate: the leader refused the change set: " + e.Msg }

// forwardHold returns how long a Write with no leader to take its change
// set waits for one: Config.ForwardHold, or by default the heartbeat
// timeout (a follower's time to notice a lost leader) and two election
// timeouts (raft's randomised election wait is up to one).
func forwardHold(cfg *Config) time.Duration {
	if cfg.ForwardHold > 0 {
		return cfg.ForwardHold
	}
	return cfg.Raft.HeartbeatTimeout + 2*cfg.Raft.ElectionTimeout
}

// WriteOption is an option of Node.Write.
type WriteOption func(*writeMode)

// writeMode is how Node.write commits.
type writeMode struct {
	forward bool // forward a change set this node cannot propose
	objects bool // ObjectConflicts
	// replay: the leader's replay of a forwarded change set
	// (ApplyForwarded), whose function is the node's own: its refusal
	// is a conflict, which the follower retries, and a commit of nothing
	// reports nothing read, so neither is confirmed (Node.confirmRead).
	replay bool
}

// ObjectConflicts makes a forwarded Write conflict only with writes to
// the objects it wrote, rather than with every write to the tables it
// wrote: per table, the change set carries the revision of each object it
// writes or deletes as the transaction found it (Reads, CompareAndSwap's
// semantics) instead of the table's revision, and the leader writes it on
// its tip at the next revisions if those objects did not change. Writers
// of one table through a follower then conflict only when they write the
// same objects. The price: reads fn made of other objects are not
// checked (a write decided on them may apply after they changed), and a
// table part that deletes every object keeps the table's revision as its
// precondition. It changes nothing on the leader, whose commits build on
// its tip and never conflict.
func ObjectConflicts() WriteOption { return func(m *writeMode) { m.objects = true } }

// objectPreconditions replaces cs's table preconditions by preconditions
// on the objects it writes (ObjectConflicts), found in the node's
// published state, for each table that state holds at the revision the
// transaction read, and that has no OpDeleteAll. Enqueue calls it while
// the transaction still holds its tables' locks, so that the FSM (on a
// node that does not lead, the only writer of bound tables) cannot have
// written them since: the published state differs only if the
// transaction read an FSM commit not yet published, and the table's
// revision then stays the precondition.
func (n *Node) objectPreconditions(cs *ChangeSet) {
	txn := n.db.ReadTxn()
	for j := range cs.Tables {
		tc := &cs.Tables[j]
		b := n.tables[tc.Table]
		if uint64(b.Table().Revision(txn)) != tc.ReadRevision || len(tc.Reads) > 0 {
			continue
		}
		if slices.ContainsFunc(tc.Ops, func(op Op) bool { return op.Kind == OpDeleteAll }) {
			continue
		}
		seen := map[string]bool{}
		var reads []ObjectRead
		for _, op := range tc.Ops {
			if (op.Kind == OpUpsert || op.Kind == OpDelete) && !seen[string(op.Key)] {
				seen[string(op.Key)] = true
				reads = append(reads, ObjectRead{Key: op.Key, Revision: b.revisionOf(txn, op.Key)})
			}
		}
		if len(reads) > 0 {
			tc.ReadRevision, tc.Reads = 0, reads
		}
	}
}

// forward sends the change set cs, which a Write on this node recorded
// and did not publish, to the leader, and waits until this node published
// the index it committed at.
func (n *Node) forward(ctx context.Context, cs ChangeSet) (uint64, error) {
	cs.ID = NewChangeSetID(n.st.node, n.nextSeq.Add(1))
	data, err := AppendEntry(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{cs}})
	if err != nil {
		return 0, err
	}
	n.atForward(holdForward, cs.ID)
	index, err := n.withLeader(ctx, func(leader raft.ServerAddress) (uint64, error) {
		return n.fwd.Forward(ctx, leader, data)
	})
	n.atForward(holdForwarded, cs.ID)
	var ce *ConflictError
	if errors.As(err, &ce) {
		// Run again on this state, it would conflict again.
		n.waitRevision(ctx, ce.Table, ce.Revision)
	}
	if err != nil {
		return 0, err
	}
	if n.published.Load() >= index {
		return index, nil
	}
	// Until ctx ends or the node closes.
	if err := n.waitPublished(ctx, index); err != nil {
		if n.closed.Load() {
			err = errors.New("the node closed") // not ErrShutdown: committed
		}
		// Committed: never report it as failed.
		return index, fmt.Errorf("%w: committed at index %d: %w", ErrNotPublished, index, err)
	}
	return index, nil
}

// waitRevision waits, at most for the hold, until the node's published
// state holds revision rev of table name (a bound table).
func (n *Node) waitRevision(ctx context.Context, name string, rev uint64) {
	b, ok := n.tables[name]
	if !ok {
		return
	}
	timer := time.NewTimer(n.fwdHold)
	defer timer.Stop()
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if b.Table().Revision(n.db.ReadTxn()) >= rev || n.stopErr.Load() != nil {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		case <-n.quit:
			return
		}
	}
}

// forwardReadIndex is a follower's LeaderIndexer over the Forwarder.
func (n *Node) forwardReadIndex(ctx context.Context) (uint64, error) {
	return n.heldReadIndex(ctx, func(leader raft.ServerAddress) (uint64, error) {
		return n.fwd.ReadIndex(ctx, leader)
	})
}

// heldLeaderIndex returns f (Config.LeaderIndex) held as the Forwarder's
// read index is: asked once this node knows a leader, and again while it
// fails with an error that says no read index was taken (retryable),
// until the hold ends.
func (n *Node) heldLeaderIndex(f LeaderIndexer) LeaderIndexer {
	return func(ctx context.Context) (uint64, error) {
		return n.heldReadIndex(ctx, func(raft.ServerAddress) (uint64, error) { return f(ctx) })
	}
}

// heldReadIndex asks for the leader's read index through withLeader, and
// of this node itself when it leads now.
func (n *Node) heldReadIndex(ctx context.Context, ask func(raft.ServerAddress) (uint64, error)) (uint64, error) {
	index, err := n.withLeader(ctx, ask)
	if err == errRerun {
		return n.ReadIndex(ctx) // this node leads now
	}
	return index, err
}

// withLeader calls ask with the leader's address, again while no leader
// takes it (none known, a refusal before proposing, unreachable) until
// the hold ends, and returns ask's index or its final error.
func (n *Node) withLeader(ctx context.Context, ask func(raft.ServerAddress) (uint64, error)) (uint64, error) {
	deadline := time.Now().Add(n.fwdHold)
	var last error
	var addr raft.ServerAddress
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		if n.closed.Load() {
			return 0, ErrShutdown
		}
		if e := n.stopErr.Load(); e != nil {
			return 0, e
		}
		if n.raft.State() == raft.Leader {
			return 0, errRerun
		}
		if addr, _ = n.raft.LeaderWithID(); addr != "" {
			index, err := ask(addr)
			if err == nil || !retryable(err) {
				return index, err
			}
			last = err
		}
		if !time.Now().Before(deadline) {
			if last == nil {
				last = errors.New("no leader known")
			}
			return 0, &NotLeaderError{Leader: addr, Err: errors.New(last.Error())}
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, &NotLeaderError{Leader: addr, Err: ctx.Err()}
		}
	}
}

// retryable reports whether err, a forward's, says the leader surely did
// not propose the change set, so that it may be sent again.
func retryable(err error) bool {
	var u *UnreachableError
	switch {
	case errors.As(err, &u):
		return true
	case errors.Is(err, ErrAmbiguous), errors.Is(err, ErrStopped), errors.Is(err, ErrConflict):
		return false
	}
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNotReady) || errors.Is(err, ErrShutdown)
}

// ApplyForwarded is the leader's side of a follower's Write: it commits
// changes, an entry of one change set as AppendEntry encodes it, as one of
// this node's own write transactions, and returns the raft index it
// committed at. It checks the change set's preconditions against the
// node's tip (the tables' revisions and the objects read), replays its
// writes at the revisions they carry (strata.ApplyWrite), and commits
// through the node's journal, so that it shares the leader's pipeline
// with local commits. A table part with object preconditions and no
// table revision (ObjectConflicts) has its writes moved to the tip's
// next revisions, keeping their spacing.
//
// A precondition that does not hold, or a write that does not follow the
// tip, is ErrConflict; changes that do not decode, hold more or fewer
// than one change set, or name a table the node has not bound are
// ErrInvalidForward; a node that does not lead returns a *NotLeaderError.
// None of these proposed anything. Other errors are Node.Write's, with
// one difference: a commit whose change set was submitted to raft and
// then failed is always an *AmbiguousError.
//
// Forwarders call it on the leader (ForwardServer, LocalForwarder); it
// may be called by another transport.
func (n *Node) ApplyForwarded(ctx context.Context, changes []byte) (uint64, error) {
	var e Entry
	if err := DecodeEntryInto(&e, changes); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidForward, err)
	}
	if e.Kind != KindChanges || len(e.Changes) != 1 {
		return 0, fmt.Errorf("%w: an entry of kind %d with %d change sets", ErrInvalidForward, e.Kind, len(e.Changes))
	}
	cs := &e.Changes[0]
	var binds []Binding
	for j := range cs.Tables {
		b, ok := n.tables[cs.Tables[j].Table]
		if !ok {
			return 0, fmt.Errorf("%w: table %q is not bound", ErrInvalidForward, cs.Tables[j].Table)
		}
		if !slices.Contains(binds, b) {
			binds = append(binds, b)
		}
	}
	if len(binds) == 0 {
		return 0, fmt.Errorf("%w: a change set of no table", ErrInvalidForward)
	}
	n.atForward(holdReplay, cs.ID)
	if n.raft.State() != raft.Leader {
		return 0, n.notLeader(nil)
	}
	metas := make([]strata.TableMeta, len(binds))
	for i, b := range binds {
		metas[i] = b.Table()
	}
	replay := func(txn strata.WriteTxn) error {
		for j := range cs.Tables {
			tc := &cs.Tables[j]
			b := n.tables[tc.Table]
			if tc.ReadRevision == 0 && len(tc.Reads) > 0 {
				// Object preconditions only (ObjectConflicts): the
				// writes take the tip's next revisions.
				tc = rebase(tc, uint64(b.Table().Revision(txn)))
			}
			if err := b.check(txn, tc); err != nil {
				return &ConflictError{Table: tc.Table, Revision: b.Table().Revision(txn), Err: err}
			}
			if err := b.apply(txn, tc); err != nil {
				return &ConflictError{Table: tc.Table, Revision: b.Table().Revision(txn), Err: err}
			}
		}
		return nil
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		index, b, err := n.write(ctx, metas, replay, writeMode{replay: true})
		if err == nil {
			n.announce(index) // the follower waits to publish it
			return index, nil
		}
		if b != nil {
			n.mu.Lock()
			proposed, berr := b.proposed, b.err
			n.mu.Unlock()
			if proposed {
				// The commit may have failed in the database's queue
				// behind an earlier one (strata.ErrEarlierCommitFailed)
				// while its entry is in the log.
				switch {
				case errors.Is(berr, ErrAmbiguous):
					return 0, berr
				case errors.Is(err, ErrAmbiguous):
					return 0, err
				}
				return 0, &AmbiguousError{Err: err}
			}
		}
		if !errors.Is(err, ErrNotReady) || errors.Is(err, strata.ErrEarlierCommitFailed) || errors.Is(err, errDiskStalled) {
			// A stalled log: the follower asks again, of the leader its
			// cluster elects meanwhile (diskstall.go).
			return 0, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, err
		}
	}
}

// rebase returns a copy of tc whose writes follow revision cur: each
// revision moved by the distance between cur and the revision tc's writes
// followed (the first write's, less one), so that the writes keep their
// spacing (a revision a transaction skipped stays skipped). A tc whose
// writes followed a revision above cur is returned as it is: check
// refuses it.
func rebase(tc *TableChanges, cur uint64) *TableChanges {
	if len(tc.Ops) == 0 {
		return tc
	}
	base := tc.Ops[0].Revision
	if tc.Ops[0].Kind != OpSetRevision {
		base--
	}
	if base > cur {
		return tc
	}
	c := *tc
	c.Ops = slices.Clone(tc.Ops)
	for i := range c.Ops {
		c.Ops[i].Revision += cur - base
	}
	return &c
}

// LocalForwarder is the Forwarder of an in-process cluster: it calls the
// leader's ApplyForwarded and ReadIndex directly. Errors take the same
// form as over the network (they go through the wire's encoding), so
// that what a follower sees does not depend on the forwarder.
type LocalForwarder struct {
	mu    sync.RWMutex
	nodes map[raft.ServerAddress]*Node
}

// NewLocalForwarder returns a LocalForwarder that knows no node.
func NewLocalForwarder() *LocalForwarder {
	return &LocalForwarder{nodes: make(map[raft.ServerAddress]*Node)}
}

// Register makes n reachable at raft address addr.
func (f *LocalForwarder) Register(addr raft.ServerAddress, n *Node) {
	f.mu.Lock()
	f.nodes[addr] = n
	f.mu.Unlock()
}

// Unregister makes addr unreachable: requests to it fail with an
// *UnreachableError.
func (f *LocalForwarder) Unregister(addr raft.ServerAddress) {
	f.mu.Lock()
	delete(f.nodes, addr)
	f.mu.Unlock()
}

func (f *LocalForwarder) node(addr raft.ServerAddress) (*Node, error) {
	f.mu.RLock()
	n := f.nodes[addr]
	f.mu.RUnlock()
	if n == nil {
		return nil, &UnreachableError{Leader: addr, Err: errors.New("no node registered at this address")}
	}
	return n, nil
}

// Forward calls ApplyForwarded on the node registered at leader.
func (f *LocalForwarder) Forward(ctx context.Context, leader raft.ServerAddress, changes []byte) (uint64, error) {
	n, err := f.node(leader)
	if err != nil {
		return 0, err
	}
	// The leader's decoded change set aliases its input: a copy, as the
	// network would hand it one.
	index, err := n.ApplyForwarded(ctx, bytes.Clone(changes))
	return decodeResult(encodeResult(nil, index, err))
}

// ReadIndex calls ReadIndex on the node registered at leader.
func (f *LocalForwarder) ReadIndex(ctx context.Context, leader raft.ServerAddress) (uint64, error) {
	n, err := f.node(leader)
	if err != nil {
		return 0, err
	}
	index, err := n.ReadIndex(ctx)
	return decodeResult(encodeResult(nil, index, err))
}

// AppliedIndex returns the applied index of the node registered at
// member: ErrShutdown once it closed, its *StoppedError if it stopped.
func (f *LocalForwarder) AppliedIndex(ctx context.Context, member raft.ServerAddress) (uint64, error) {
	n, err := f.node(member)
	if err != nil {
		return 0, err
	}
	return decodeResult(encodeResult(nil, n.AppliedIndex(), n.liveErr()))
}

// NoticeCommit calls AnnounceCommit on the node registered at leader.
func (f *LocalForwarder) NoticeCommit(ctx context.Context, leader raft.ServerAddress, index uint64) error {
	n, err := f.node(leader)
	if err != nil {
		return err
	}
	_, err = decodeResult(encodeResult(nil, 0, n.AnnounceCommit(ctx, index)))
	return err
}
