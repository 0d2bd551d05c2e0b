package persist

// Hold points. Every hand-off between the goroutines of the group commit
// (group.go: the writers that lead a group or follow in one) and the
// Buffered mode's periodic sync (store.go) passes through a hold point: a
// call of groupCommit.hold, which a test sets to hold the goroutine that
// reached the point and let it go on in an order of its choosing. The
// interleaving test (group_model_test.go) drives them in many seeded
// orders and checks what must hold whatever the order; see
// docs/interleavings.md.
//
// In production hold is nil and a point costs one predictable branch, a
// few per group (never per object): BenchmarkConcurrentWriters and
// BenchmarkCommit do not see them.
//
// A point is never inside a lock (groupCommit.mu, closeMu held for
// writing, a table's lock): a goroutine held there would block the others
// in a way that testing/synctest cannot see as durable. (A commit holds
// closeMu for reading from Enqueue to Wait's end; only Close takes it for
// writing, after the writers are done.)

// holdPoint names a hold point.
type holdPoint uint8

const (
	// holdEnqueued: a commit's batch was enqueued (Enqueue: it leads the
	// next group, or queued for a later one), and it is about to wait for
	// its group (a follower) or lead (a leader).
	holdEnqueued holdPoint = iota
	// holdWoken: a follower received from its leader its group's result,
	// or the lead, and is about to return it or lead.
	holdWoken
	// holdLead: a commit took the lead, before its bounded wait for the
	// members it expects.
	holdLead
	// holdMemberWait: the leader is waiting for members, at each turn of
	// the wait (before it yields).
	holdMemberWait
	// holdGathered: the leader's wait for members ended (they came, or its
	// time ran out, or it expected none), before it takes the queue: the
	// commits queued until then are its members.
	holdGathered
	// holdApply: the leader is about to commit a batch of its group (the
	// merged batch, or one of them if they do not merge) to Pebble.
	holdApply
	// holdSynced: Pebble's commit of that batch returned (applied and its
	// log synced, or failed), before the leader hands its result to the
	// members.
	holdSynced
	// holdHandOver: the leader handed the results out (its own is its
	// Wait's, which it returns next) and is about to hand the lead to the first commit that queued meanwhile, or to give
	// it up if none did.
	holdHandOver
	// holdSyncStart: Buffered mode's sync loop ticked and is about to
	// check for unsynced commits and sync the log.
	holdSyncStart
	// holdSyncEnd: the periodic sync returned (or found nothing to sync).
	holdSyncEnd
	numHoldPoints
)

var holdPointNames = [numHoldPoints]string{
	"enqueued", "woken", "lead", "member-wait", "gathered", "apply", "synced",
	"hand-over", "sync-start", "sync-end",
}

// String returns the point's name, as the test logs it.
func (p holdPoint) String() string {
	if p < numHoldPoints {
		return holdPointNames[p]
	}
	return "hold-point-?"
}

// holdSyncer is the who of the periodic sync's goroutine; a commit's is
// its batch's (journalBatch.who), which the test sets through
// groupCommit.who.
const holdSyncer = -1

// at passes the hold point p, reached by who: it calls the test's hook,
// if one is set.
func (g *groupCommit) at(p holdPoint, who int) {
	if h := g.hold; h != nil {
		h(p, who, nil)
	}
}

// atResult passes the hold point p, reached by who carrying the result
// err: a follower's result from its leader (holdWoken), a Pebble commit's
// (holdSynced), the leader's own (holdHandOver). The test checks that a
// nil result is durable.
func (g *groupCommit) atResult(p holdPoint, who int, err error) {
	if h := g.hold; h != nil {
		h(p, who, err)
	}
}
