package replicate

// Hold points. Every hand-off between the goroutines of a Node passes
// through a hold point: a call of Node.at, which a test sets (Config.hold)
// to hold the goroutine that reached the point and let it go on in an
// order of its choosing. The goroutines are:
//
//   - committers: the callers of WriteTxn.Commit (and Node.Write), whose
//     batch (journal.go) the commit queue enqueued and now waits for;
//   - the proposer (Node.propose), which takes queued batches and submits
//     their entry to raft;
//   - the awaiter (Node.await), which waits for each entry's future and
//     settles the batches of an entry that failed;
//   - raft's FSM goroutine, in fsm.Apply: it marks the node's own change
//     sets applied (on a durable node, writing them to its store outside
//     Node.mu first), or fails the pending ones and applies a change set
//     of another node;
//   - the leadership watcher (Node.watchLeadership), which decides when
//     the node may propose (journalState.ready);
//   - raft's FSM goroutine again, in fsm.Snapshot, which waits for the
//     node's own commits of applied entries to be published, and in
//     fsm.Restore, which fails the pending batches and waits for the
//     database to settle them before it replaces the tables; and raft's
//     snapshot goroutine, which writes a snapshot taken (Persist);
//   - a forwarding writer: Node.Write on a node that does not lead sends
//     its change set to the leader (Node.forward) and waits for its index
//     to be published here; on the leader, ApplyForwarded replays it as a
//     commit of its own (a committer, above);
//   - the commit notices (notice.go): the leader's announcer, which
//     appends a barrier when a follower waits for a commit, and a
//     follower's noticer, which asks the leader for one;
//   - raft's replication and heartbeat goroutines, in the node's
//     transport (clampTransport): the disk stall fence (diskstall.go)
//     decides whether their AppendEntries go out, on the stallWatch the
//     log store's writers and the FSM's store commits update.
//
// The interleaving test (node_interleave_test.go) drives them in many
// seeded orders, with raft inside a testing/synctest bubble, and checks
// what must hold whatever the order; see docs/interleavings.md.
//
// In production hold is nil and a point costs one predictable branch, a
// few per commit and per entry (never per object).
//
// A point is never inside Node.mu, the commit queue's lock (Enqueue and
// Settled run under it) or a table's lock: a goroutine held there would
// block the others in a way that testing/synctest cannot see as durable.

// holdPoint names a hold point.
type holdPoint uint8

const (
	// holdWait: a committer's batch is queued for the proposer (the
	// commit queue released the tables' locks), and the committer is
	// about to wait for the batch's outcome (batch.Wait).
	holdWait holdPoint = iota
	// holdWaited: the committer has its batch's outcome and is about to
	// return it to the commit queue, which publishes or fails the commit.
	holdWaited
	// holdTake: the proposer has a token for one more entry in flight and
	// is about to take the queued batches (they become proposed).
	holdTake
	// holdSubmit: the proposer took the batches and is about to submit
	// their entry (raft.Apply).
	holdSubmit
	// holdSubmitted: the entry is submitted, and the proposer is about to
	// hand its future to the awaiter.
	holdSubmitted
	// holdFuture: the awaiter has an entry's outcome (its future
	// returned), before it settles the batches the FSM did not.
	holdFuture
	// holdApply: raft's FSM goroutine is about to apply a command entry.
	holdApply
	// holdForeign: the FSM failed the pending batches before a change set
	// this node does not wait for, and is about to apply it.
	holdForeign
	// holdApplied: the FSM applied an entry and is about to return to
	// raft (which then completes the entry's future).
	holdApplied
	// holdLeadership: the leadership watcher received a change of
	// leadership, before the barrier that makes a new leader ready.
	holdLeadership
	// holdReady: the watcher's barrier returned (or was not needed), and
	// it is about to set or clear ready.
	holdReady
	// holdForward: a Write on a node that does not lead recorded its
	// change set and is about to send it to the leader (Node.forward).
	holdForward
	// holdReplay: the leader received a forwarded change set and is about
	// to replay it as its own commit (ApplyForwarded).
	holdReplay
	// holdForwarded: the forwarding Write has the leader's answer and is
	// about to wait until its index is published on its node.
	holdForwarded
	// holdSnapshot: raft asked the FSM for a snapshot, and it is about
	// to wait until the node published what it applied (fsm.Snapshot).
	holdSnapshot
	// holdPersist: raft's snapshot goroutine is about to write a
	// snapshot taken (nodeSnapshot.Persist).
	holdPersist
	// holdRestore: the FSM read and verified a snapshot to install, and
	// is about to fail the pending batches and wait for them to settle
	// (fsm.Restore).
	holdRestore
	// holdFence: the disk stall fence decided to refuse an AppendEntries
	// (clampTransport.AppendEntries, or a pipeline's: its who is
	// holdSender or holdPipeline) as the node's disk stalled, and is
	// about to return errDiskStalled. Reached only while a disk write
	// waits past DiskStallTimeout, so only by the stall tests
	// (TestFenceHoldStallEnds), not by TestNodeInterleavings.
	holdFence
	// holdStore: the FSM marked the node's own batches of an entry
	// applying, released Node.mu, and is about to write the entry to the
	// durable store (fsm.Apply; Config.Store only): the window in which
	// the batches are settled by nothing but this goroutine.
	holdStore
	// holdAnnounce: the leader's announcer is about to append a barrier
	// that makes the followers learn its commit index (notice.go).
	holdAnnounce
	// holdNotice: a follower's noticer is about to ask the leader to
	// announce the commit of an index a ReadAtLeast waits for
	// (notice.go).
	holdNotice
	numHoldPoints
)

var holdPointNames = [numHoldPoints]string{
	"wait", "waited", "take", "submit", "submitted", "future", "apply",
	"foreign", "applied", "leadership", "ready", "forward", "replay",
	"forwarded", "snapshot", "persist", "restore", "fence", "store",
	"announce", "notice",
}

// String returns the point's name, as the test logs it.
func (p holdPoint) String() string {
	if p < numHoldPoints {
		return holdPointNames[p]
	}
	return "hold-point-?"
}

// The who of the node's own goroutines at a hold point; a committer's is
// its batch's sequence number relative to the node's first (seq - base),
// which is 1 or more.
const (
	holdProposer = -1 - iota
	holdAwaiter
	holdFSM
	holdWatcher
	holdSnapshotter
	// holdSender and holdPipeline: raft's goroutine that sends an
	// AppendEntries (a heartbeat, or entries) alone, or down a pipeline.
	holdSender
	holdPipeline
	// holdAnnouncer and holdNoticer: the goroutines of the commit
	// notices (notice.go).
	holdAnnouncer
	holdNoticer
)

// at passes the hold point p, reached by who: it calls the test's hook,
// if one is set.
func (n *Node) at(p holdPoint, who int) {
	if h := n.hold; h != nil {
		h(p, who)
	}
}

// atForward passes the hold point p, reached by the Write of the change
// set id: forwarded by this node (its who is a committer's, relative to
// the node's first sequence number), or replayed for another.
func (n *Node) atForward(p holdPoint, id ChangeSetID) {
	if h := n.hold; h != nil {
		if id.Node() == n.st.node {
			h(p, int(id.Seq()-n.seqBase))
		} else {
			h(p, int(id.Node())<<20|int(id.Seq()&(1<<20-1)))
		}
	}
}

// atBatch passes the hold point p, reached by the committer of b.
func (n *Node) atBatch(p holdPoint, b *batch) {
	if h := n.hold; h != nil {
		h(p, int(b.seq-n.seqBase))
	}
}
