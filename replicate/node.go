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
	"github.com/strata-db/strata/persist"
)

// Config configures a Node.
type Config struct {
	// DB is the database whose bound tables the node replicates.
	DB *strata.DB
	// Tables are the tables the node replicates (Bind), at least one.
	// Every node of the cluster binds the same tables.
	Tables []Binding
	// NodeNumber is the node's number, unique in the cluster: the high
	// 16 bits of its change sets' ids (NewChangeSetID).
	NodeNumber uint16
	// Raft is raft's configuration (LocalID, the timeouts, and when to
	// take snapshots: SnapshotThreshold, SnapshotInterval, TrailingLogs).
	// A snapshot holds every bound table (snapshot.go); a node that falls
	// behind the log's first entry is sent one.
	Raft *raft.Config
	// LogStore, StableStore, Snapshots and Transport are raft's; the node
	// does not close them.
	LogStore    raft.LogStore
	StableStore raft.StableStore
	Snapshots   raft.SnapshotStore
	Transport   raft.Transport
	// MaxInFlight is the most entries the node has submitted to raft and
	// not yet seen the outcome of; 0 is 4. Change sets committed while
	// that many are in flight are combined into the next entry. NewNode
	// refuses a Raft.TrailingLogs below MaxInFlight+4 (ErrInvalidConfig;
	// see trailingError).
	MaxInFlight int
	// LeaderIndex is how a follower's ReadLinearizable learns the
	// leader's read index (Node.ReadIndex, on the leader). The node asks
	// it once it knows a leader, and again while it fails with an error
	// that says the leader took no read index (a *NotLeaderError,
	// ErrNotReady, ErrShutdown, an *UnreachableError), for up to
	// ForwardHold. Nil: through the Forwarder, or, without one, a
	// follower's ReadLinearizable fails with a *NotLeaderError.
	LeaderIndex LeaderIndexer
	// Forwarder carries Node.Write's change sets from a follower to the
	// leader (forward.go), and a follower's linearizable reads' read
	// index when LeaderIndex is nil. Nil: a Write on a follower fails
	// with a *NotLeaderError, as a plain WriteTxn.Commit always does.
	Forwarder Forwarder
	// Store, if not nil, keeps the bound tables durable (durable.go): NewNode
	// loads them from it (persist.Store.LoadApplied) and every entry
	// applied is written to it with its index, so that a node that starts
	// again replays only the log after that index; it restores a raft
	// snapshot only one newer than the store. Its commits of applied
	// entries are watched as the log store's writes are: one that takes
	// longer than DiskStallTimeout fences the node (diskstall.go). The
	// node does not close it.
	// Without a Store, the tables live in memory only, and a node that
	// starts again restores the latest snapshot and replays the log after
	// it.
	Store *persist.Store
	// ForwardHold is how long a forwarded Write (or read index) with no
	// leader to take it waits for one (an election) before it fails
	// with a *NotLeaderError; 0 is Raft.HeartbeatTimeout plus twice
	// Raft.ElectionTimeout.
	ForwardHold time.Duration
	// DiskStallTimeout is how long a write to the log store, or a
	// commit of an applied entry to Store, may take before the node
	// stops sending raft's heartbeats and refuses new writes
	// (ErrNotReady), so that a leader whose disk stopped answering is
	// replaced (diskstall.go); 0 is one tenth of Raft.HeartbeatTimeout,
	// and a negative value turns the fence off. A stall shorter than
	// this plus the followers' heartbeat timeout changes nothing.
	DiskStallTimeout time.Duration

	// hold is the tests' hook at the hold points (holds.go); nil in
	// production.
	hold func(p holdPoint, who int)
}

// defaultMaxInFlight is Config.MaxInFlight's default.
const defaultMaxInFlight = 4

// ErrInvalidConfig is NewNode's refusal of a Config it cannot run with;
// nothing was started.
var ErrInvalidConfig = errors.New("replicate: invalid config")

// trailingError refuses a raft.Config.TrailingLogs below least. A
// follower whose log reaches TrailingLogs or more past the snapshot its
// leader sends it (a deposed leader's entries that never committed)
// installs that snapshot again and again: raft v1.7.2 keeps the
// conflicting entries after an install (hashicorp/raft#697), and its
// leader, whose log no longer reaches back to where the two agree, can
// only send the snapshot again. Per term a deposed leader holds at most
// MaxInFlight such entries, raft's no-op, the leadership watcher's
// barrier and a configuration change; the floor stops the configurations
// that loop readily (TestNodeInterleavings/faults/snapshots found it at
// TrailingLogs 1 to 3), but a node led again and again without a commit
// adds a term's worth each time, so only a long log (raft's default,
// 10240) makes it remote (docs/interleavings.md). A follower that catches
// up loops too if TrailingLogs is below commits/s × (2 ×
// SnapshotInterval + the install's time): the floor cannot know the rate
// (docs/replication.md).
func trailingError(got, least uint64) error {
	return fmt.Errorf("%w: raft.Config.TrailingLogs is %d, below MaxInFlight+4 = %d: a deposed leader could install snapshots in a loop (hashicorp/raft#697)", ErrInvalidConfig, got, least)
}

// Node is one member of a replicated Strata database: a raft node whose
// state machine is the bound tables of Config.DB.
//
// On the leader, a commit that writes bound tables (through Node.Write or
// an ordinary WriteTxn.Commit) is proposed to raft: its change set goes in
// the log and Commit returns once it is applied, with the commit queue's
// early lock release (docs/early-lock-release.md) letting the next writers
// build on it meanwhile. On other nodes such a commit fails with a
// *NotLeaderError and changes nothing, except through Node.Write with a
// Config.Forwarder, which forwards it to the leader (forward.go). Every
// node applies the log's entries to its tables at the revisions the
// leader gave the writes, so
// that at the same applied index every node holds the same objects at the
// same revisions, and its change feeds deliver the same changes.
//
// An entry the node cannot apply (it does not decode, names a table the
// node has not bound, or its apply's commit fails) stops the node: raft
// cannot refuse a committed entry, and a node that skipped one would
// differ from the others. Apply returns a *StoppedError for it and for
// every later entry, without applying them; the applied index stays below
// the entry; Stopped reports it. The node must be rebuilt.
type Node struct {
	db     *strata.DB
	tables map[string]Binding
	raft   *raft.Raft
	fsm    *fsm
	j      *journal

	maxInFlight int

	// applied is the index of the last entry applied, published the
	// index up to which the database published every entry applied
	// (journalState.unpublished); appliedCh is closed and replaced each
	// time either moves (under appliedMu, a leaf lock).
	applied   atomic.Uint64
	published atomic.Uint64
	appliedMu sync.Mutex
	appliedCh chan struct{}

	// store keeps the bound tables durable (Config.Store), nil if not;
	// replayedTo is the index the node started at: raft replays the
	// entries up to it, which the tables hold already (durable.go).
	store      *persist.Applied
	replayedTo uint64

	// clamp carries raft's RPCs from the transport (commitclamp.go).
	clamp *clampTransport
	// stall times the writes to the log store and the durable store's
	// commits, and stallAfter is the fence's timeout, 0 for none
	// (diskstall.go).
	stall      *stallWatch
	stallAfter time.Duration

	logs        raft.LogStore
	leaderIndex LeaderIndexer
	verify      verifier // read.go

	fwd     Forwarder     // forward.go; nil: no forwarding
	fwdHold time.Duration // forwardHold

	// mu guards the journal's state (journal.go) and everything the FSM
	// and the proposer decide together.
	mu sync.Mutex
	st journalState

	wake     chan struct{} // the proposer's: something was queued
	inflight chan *proposal
	sem      chan struct{} // a token per entry in flight
	quit     chan struct{}
	wg       sync.WaitGroup

	// nextSeq is the sequence of the last change set's id (Enqueue);
	// seqBase is its first value, from which a committer's who at a hold
	// point counts.
	nextSeq atomic.Uint64
	seqBase uint64

	hold func(p holdPoint, who int) // holds.go

	stopErr atomic.Pointer[StoppedError]
	closed  atomic.Bool

	// lead is the leadership watch and what the leader knows of its
	// followers (membership.go).
	lead membership

	// entries and combined count the entries the node proposed and those
	// that carried more than one change set.
	entries, combined atomic.Uint64

	// The commit notices (notice.go): on the leader, the highest index to
	// announce and the announcer's wake-up; on a follower, the highest
	// index to ask the leader to announce, the noticer's wake-up, and
	// the cancel of its requests' context.
	noticeWant   atomic.Uint64
	noticeWake   chan struct{}
	noticeAsk    atomic.Uint64
	askWake      chan struct{}
	cancelNotice context.CancelFunc
}

// NewNode creates the node's raft node and attaches every bound table to
// the node's journal, in one write transaction. Start a cluster with
// Bootstrap, or have the leader add the node (AddVoter, AddNonvoter).
func NewNode(cfg Config) (*Node, error) {
	if cfg.DB == nil || len(cfg.Tables) == 0 || cfg.Raft == nil {
		return nil, fmt.Errorf("%w: NewNode needs DB, Tables and Raft", ErrInvalidConfig)
	}
	inFlight := cfg.MaxInFlight
	if inFlight <= 0 {
		inFlight = defaultMaxInFlight
	}
	if least := uint64(inFlight) + 4; cfg.Raft.TrailingLogs < least {
		return nil, trailingError(cfg.Raft.TrailingLogs, least)
	}
	n := &Node{
		db:          cfg.DB,
		tables:      make(map[string]Binding, len(cfg.Tables)),
		maxInFlight: cfg.MaxInFlight,
		logs:        cfg.LogStore,
		leaderIndex: cfg.LeaderIndex,
		fwd:         cfg.Forwarder,
		fwdHold:     forwardHold(&cfg),
		appliedCh:   make(chan struct{}),
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		noticeWake:  make(chan struct{}, 1),
		askWake:     make(chan struct{}, 1),
	}
	if n.maxInFlight <= 0 {
		n.maxInFlight = defaultMaxInFlight
	}
	switch {
	case n.leaderIndex != nil:
		n.leaderIndex = n.heldLeaderIndex(n.leaderIndex)
	case n.fwd != nil:
		n.leaderIndex = n.forwardReadIndex
	}
	n.inflight = make(chan *proposal, n.maxInFlight)
	n.sem = make(chan struct{}, n.maxInFlight)
	n.st.init(cfg.NodeNumber)
	// A restarted node must not reuse its predecessor's ids: start from
	// the time, 64 ids per millisecond (ChangeSetID).
	n.seqBase = uint64(time.Now().UnixMilli()) << 6
	n.nextSeq.Store(n.seqBase)
	n.hold = cfg.hold
	n.j = &journal{n: n}
	n.fsm = &fsm{n: n}
	metas := make([]strata.TableMeta, 0, len(cfg.Tables))
	for _, b := range cfg.Tables {
		name := string(b.Table().Name())
		if _, dup := n.tables[name]; dup {
			return nil, fmt.Errorf("replicate: table %q bound twice", name)
		}
		n.tables[name] = b
		metas = append(metas, b.Table())
	}
	if cfg.Store != nil {
		if err := n.loadStore(&cfg); err != nil {
			return nil, err
		}
	}
	txn := n.db.WriteTxn(metas[0], metas[1:]...)
	for _, b := range cfg.Tables {
		if err := b.attach(txn, n.j); err != nil {
			txn.Abort()
			return nil, err
		}
	}
	if _, err := txn.Commit(); err != nil {
		return nil, err
	}
	conf := cfg.Raft
	if n.store != nil {
		var err error
		if conf, err = n.startFromStore(&cfg); err != nil {
			n.closed.Store(true)
			return nil, err
		}
	}
	trans, clamp := newClampTransport(cfg.Transport)
	logs, stall := newStallLog(cfg.LogStore)
	n.stall, n.stallAfter = stall.stallWatch, diskStallTimeout(&cfg)
	clamp.fenced = n.diskStalled
	if n.hold != nil {
		clamp.hold = func(who int) { n.at(holdFence, who) }
	}
	r, err := raft.NewRaft(conf, n.fsm, logs, cfg.StableStore, cfg.Snapshots, trans)
	if err != nil {
		clamp.Close()
		// The tables stay attached: their commits fail with ErrShutdown.
		n.closed.Store(true)
		return nil, err
	}
	n.raft, n.clamp = r, clamp
	n.lead.init(cfg, r)
	var noticeCtx context.Context
	noticeCtx, n.cancelNotice = context.WithCancel(context.Background())
	n.wg.Add(5)
	go n.propose()
	go n.await()
	go n.watchLeadership()
	go n.announcer()
	go n.noticer(noticeCtx)
	return n, nil
}

// Raft returns the node's raft node, for what membership.go does not
// offer. The node consumes its LeaderCh: follow leadership with Leading
// (or raft.Config.NotifyCh, LeadershipObservation).
func (n *Node) Raft() *raft.Raft { return n.raft }

// Close shuts the raft node down and stops the node's goroutines, but
// for one that raft v1.7.2 may hold for good: the one that waits for the
// futures of the node's entries, when raft drops the future of an entry it
// committed and had not applied at shutdown (hashicorp/raft#498). Close
// does not wait for it. Commits
// in flight end with an *AmbiguousError (submitted) or ErrShutdown (not);
// later commits of the bound tables fail with ErrShutdown, as the tables
// stay attached to the node's journal. The stores and the transport are
// the caller's to close.
func (n *Node) Close() error {
	if n.closed.Swap(true) {
		return nil
	}
	// Before raft stops: a VerifyLeader that meets Shutdown may never be
	// answered (verifier, read.go).
	n.verify.close()
	err := n.raft.Shutdown().Error()
	n.clamp.Close()
	close(n.quit)
	n.cancelNotice()
	n.wg.Wait()
	n.mu.Lock()
	n.st.failAll(ErrShutdown)
	n.mu.Unlock()
	return err
}

// AppliedIndex returns the index of the last log entry the node applied.
// On the leader, the node's own commits at or below it may not be
// published yet: each is once its Commit returns. PublishedIndex is the
// index a ReadTxn is sure to hold.
func (n *Node) AppliedIndex() uint64 { return n.applied.Load() }

// PublishedIndex returns the index up to which every log entry the node
// applied is published: a ReadTxn taken after it returns holds every
// entry up to it (and maybe more). It never exceeds AppliedIndex by more
// than the moment between the database publishing the node's own commit
// and the FSM recording the entry applied, and trails it only while the
// node's own commits of applied entries wait for their publication.
// Entries that carry no command (raft's no-ops, barriers, configuration
// changes) never reach the state machine: PublishedIndex is always the
// index of a command entry (or 0).
func (n *Node) PublishedIndex() uint64 { return n.published.Load() }

// WaitApplied returns once the node applied the entry at index, or with
// ctx's error, the *StoppedError of a stopped node, or ErrShutdown once
// the node closes.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.waitIndex(ctx, &n.applied, index)
}

// waitIndex waits, on the channel that moves with the applied and
// published indexes, until idx (one of them) is at least index, or the
// node stops (its *StoppedError) or closes (ErrShutdown), or ctx ends.
func (n *Node) waitIndex(ctx context.Context, idx *atomic.Uint64, index uint64) error {
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if idx.Load() >= index {
			return nil
		}
		if e := n.stopErr.Load(); e != nil {
			return e
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.quit:
			if idx.Load() >= index {
				return nil
			}
			return ErrShutdown
		}
	}
}

// setApplied records that the entry at index is applied, with
// unpublished of the node's own batches in it that the database has not
// published yet (Settled). n.mu is held.
func (n *Node) setApplied(index uint64, unpublished int) {
	n.st.unpublished = append(n.st.unpublished, pendingPublish{index: index, left: unpublished})
	n.applied.Store(index)
	n.advancePublished()
}

// advancePublished moves the published index past the applied entries
// whose batches are all published, and wakes the waiters. n.mu is held.
//
// The rule: an applied entry is published once every batch of it that
// the FSM marked applied (the node's own commits, whose writes the commit
// queue publishes) is settled with nil, and, for the change sets the FSM
// applies itself, once its transaction's Commit returned (it returns once
// published). Entries are published in log order: the commit queue settles
// in queue order, which is log order (the proposer submits the queued
// batches in order, and the FSM's own transactions queue behind the tips
// of the batches it marked), and published never passes an entry that is
// not.
func (n *Node) advancePublished() {
	q := n.st.unpublished
	k := 0
	for k < len(q) && q[k].left == 0 {
		k++
	}
	if k > 0 {
		n.published.Store(q[k-1].index)
		m := copy(q, q[k:])
		n.st.unpublished = q[:m]
	}
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
}

// Stopped returns the error that stopped the node applying the log, or
// nil.
func (n *Node) Stopped() error {
	if e := n.stopErr.Load(); e != nil {
		return e
	}
	return nil
}

// liveErr returns ErrShutdown once the node closed, the *StoppedError of
// a stopped node, or nil.
func (n *Node) liveErr() error {
	if n.closed.Load() {
		return ErrShutdown
	}
	if e := n.stopErr.Load(); e != nil {
		return e
	}
	return nil
}

// Entries returns how many entries the node proposed, and how many of
// them carried more than one change set.
func (n *Node) Entries() (entries, combined uint64) {
	return n.entries.Load(), n.combined.Load()
}

// Write runs fn in a write transaction of tables and commits it, and
// returns the raft index its change set committed at (0 if fn wrote no
// bound table). fn's error aborts the transaction and is returned. A
// commit refused with ErrNotReady (nothing proposed) is retried, with fn
// run again, until ctx is done; every other error is returned as Commit
// returned it. A ctx that ends while the commit is in progress does not
// end the Write, whose outcome comes within raft's bounds (it commits, or
// the leader loses its lease), unless the node's log store stalled
// (diskstall.go): then the Write returns an *AmbiguousError wrapping
// ctx's error, as the change set may still commit once the disk answers.
//
// On the leader, the outcomes are:
//
//	index, nil          committed at index, and published on this node
//	*AmbiguousError     submitted to raft, then leadership lost, the node
//	                    shut down, or ctx ended with the log store
//	                    stalled: it may commit
//	*NotLeaderError     this node no longer leads: nothing was proposed
//	ErrNotReady         retried until ctx ends, then returned (an
//	                    election, a failed proposal being settled, a
//	                    stalled log store): nothing was proposed
//	ErrNotReady and strata.ErrEarlierCommitFailed
//	                    queued behind a commit whose proposal failed,
//	                    which took this one down with it before it was
//	                    proposed: nothing applied; Write returns it as
//	                    Commit did, and the caller may run it again
//	ErrEntryTooLarge    the change set alone exceeds MaxEntrySize
//	ErrShutdown         the node is closing: nothing was proposed
//	*StoppedError       the node stopped applying the log
//
// On a follower with a Config.Forwarder, fn runs on the node's state and
// its change set goes to the leader, which commits it if the tables it
// wrote did not change since (else ErrConflict); Write returns once this
// node published the index, so that a read here sees the write. The
// errors are listed in forward.go. Without a Forwarder, Write on a
// follower fails with a *NotLeaderError. ObjectConflicts relaxes what a
// forwarded write conflicts with.
func (n *Node) Write(ctx context.Context, tables []strata.TableMeta, fn func(strata.WriteTxn) error, opts ...WriteOption) (uint64, error) {
	mode := writeMode{forward: n.fwd != nil}
	for _, o := range opts {
		o(&mode)
	}
	if len(tables) == 0 {
		return 0, errors.New("replicate: Write of no table")
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		index, _, err := n.write(ctx, tables, fn, mode)
		if errors.Is(err, errReread) {
			// fn's reads were not confirmed current (confirmRead):
			// again, on a state that is.
			if ctx.Err() != nil {
				return 0, fmt.Errorf("replicate: %w: the write function's reads could not be confirmed current", ctx.Err())
			}
			continue
		}
		if !errors.Is(err, ErrNotReady) || errors.Is(err, strata.ErrEarlierCommitFailed) {
			return index, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return 0, err
		}
	}
}

// write runs fn and commits, once; with mode.forward, a change set this
// node cannot propose is forwarded to the leader. It returns the commit's
// batch, if it had one.
// errReread is what write returns when fn's reads could not be confirmed
// current: Write runs fn again.
var errReread = errors.New("replicate: the write function's reads were not current")

// settleTips waits until the commits a transaction of tables read from
// (their tables' tips: commits enqueued, not yet published) are settled,
// with an empty commit of the same tables, which the commit queue settles
// after them. If one failed, the transaction may have read writes that
// never commit: errReread.
func (n *Node) settleTips(ctx context.Context, tables []strata.TableMeta) error {
	txn, err := n.db.WriteTxnContext(ctx, tables[0], tables[1:]...)
	if err != nil {
		return err
	}
	if _, err := txn.Commit(); err != nil {
		if errors.Is(err, strata.ErrEarlierCommitFailed) {
			return errReread
		}
		return err
	}
	return nil
}

// confirmRead confirms that what a Write's transaction read, which
// committed nothing (fn wrote no bound table, or failed), was the
// cluster's state at a moment within the call: a Write is linearizable
// even when it only reads. A Write that commits needs no more: its
// preconditions are checked against the log. The transaction's tips are
// settled already.
//
// On a node that led (ready in term) when the transaction began, its state
// then held every entry committed before (the earlier terms' by the
// barrier that made it ready, its own in the tips): a VerifyLeader round
// that starts now confirms that no other leader committed since. On
// another node, the leader's read index, asked for now, must not exceed
// the index the node had published before the transaction began; if it
// does, the node waits until it published it and fn runs again
// (errReread). A node that cannot learn the read index, or does not reach
// it within the forward hold (Config.ForwardHold), returns a
// *NotLeaderError. (Tests: TestLinDirtyReadOfAbortedWrite,
// TestLinReadOnlyWriteIsStale.)
func (n *Node) confirmRead(ctx context.Context, published uint64, leading bool, term uint64) error {
	if leading {
		err := n.verifyLeader(ctx, term)
		if errors.Is(err, ErrNotLeader) {
			return errReread // as a follower, the next time
		}
		return err
	}
	if n.leaderIndex == nil {
		return n.notLeader(nil)
	}
	index, err := n.leaderIndex(ctx)
	if err != nil {
		return err
	}
	if index <= published {
		return nil
	}
	// Behind: catch up, for as long as a forwarded write may wait for
	// a leader. A node cut off from the leader's log would wait for good.
	wctx, cancel := context.WithTimeout(ctx, n.fwdHold)
	defer cancel()
	if err := n.waitPublished(wctx, index); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return n.notLeader(fmt.Errorf("the node did not reach the leader's read index %d within %v (at %d)", index, n.fwdHold, n.published.Load()))
	}
	return errReread
}

func (n *Node) write(ctx context.Context, tables []strata.TableMeta, fn func(strata.WriteTxn) error, mode writeMode) (uint64, *batch, error) {
	// What confirmRead needs of the state the transaction reads: the
	// published index before it began, and whether the node led.
	published := n.published.Load()
	n.mu.Lock()
	leading, term := n.st.ready, n.st.readyTerm
	n.mu.Unlock()
	txn, err := n.db.WriteTxnContext(ctx, tables[0], tables[1:]...)
	if err != nil {
		return 0, nil, err
	}
	before := make([]strata.Revision, len(tables))
	for i, t := range tables {
		before[i] = t.Revision(txn)
	}
	if err := fn(txn); err != nil {
		txn.Abort()
		if mode.replay {
			return 0, nil, err
		}
		// fn may have decided on what it read (a compare-and-swap that
		// found another value): that must have been current.
		if cerr := n.settleTips(ctx, tables); cerr != nil {
			return 0, nil, cerr
		}
		if cerr := n.confirmRead(ctx, published, leading, term); cerr != nil {
			return 0, nil, cerr
		}
		return 0, nil, err
	}
	// The commit's batch records each table's revision after it
	// (SetRevision): find it by the first bound table written.
	var s *slot
	unbound := false // fn wrote an unbound table
	for i, t := range tables {
		name := string(t.Name())
		rev := t.Revision(txn)
		if _, bound := n.tables[name]; !bound {
			unbound = unbound || rev != before[i]
			continue
		}
		if rev != before[i] && s == nil {
			s = n.want(name, rev, mode.forward, mode.objects)
		}
	}
	err = n.commitContext(ctx, txn)
	if s == nil {
		// No bound table written: nothing is proposed, and the caller
		// learns only what fn read. The commit waited for the tips the
		// transaction read; a failed one may be in what fn read.
		if mode.replay {
			return 0, nil, err
		}
		if errors.Is(err, strata.ErrEarlierCommitFailed) {
			return 0, nil, errReread
		}
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, n.confirmRead(ctx, published, leading, term)
	}
	n.unwant(s)
	n.mu.Lock()
	b := s.b
	n.mu.Unlock()
	if err != nil {
		if b != nil && errors.Is(err, errForward) {
			// Discarded here: the leader commits it (forward.go).
			if unbound {
				return 0, nil, ErrMixedWrite
			}
			index, err := n.forward(ctx, b.cs)
			return index, nil, err
		}
		return 0, b, err
	}
	if b == nil {
		return 0, nil, nil
	}
	return b.index, b, nil
}
