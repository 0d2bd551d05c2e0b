package reconciler

// Hold points. Every hand-off between the reconciler's goroutines (Run's
// loop, the workers, the committer) and every step of the loop that acts
// on what another goroutine handed it passes through a hold point: a call
// of Reconciler.hold, which a test sets to hold the goroutine that reached
// the point and let it go on in an order of the test's choosing. The
// model test (model_test.go) drives them in many seeded orders under
// testing/synctest and checks what must hold whatever the order; see
// docs/interleavings.md.
//
// In production hold is nil and a point costs one predictable branch,
// once per round, batch or commit (never per object): the benchmarks of
// bench_test.go and bench/compare do not see them.
//
// A point is never inside a lock (Reconciler.mu, a table's write lock):
// a goroutine held there would block the others in a way that
// testing/synctest cannot see as durable.

// holdPoint names a hold point.
type holdPoint uint8

const (
	// holdFeedRead: the loop is about to read the change feed, whose
	// watch channel says the table changed.
	holdFeedRead holdPoint = iota
	// holdDispatch: the loop is about to hand a round of objects to a
	// worker.
	holdDispatch
	// holdPruneDispatch: the loop is about to hand a prune to a worker.
	holdPruneDispatch
	// holdWorkerStart: a worker took a round (or a prune) and is about to
	// run its operations.
	holdWorkerStart
	// holdWorkerDone: a worker ran its round and is about to hand it to
	// the committer.
	holdWorkerDone
	// holdWorkerFree: a worker handed its round to the committer and is
	// about to tell the loop it is free.
	holdWorkerFree
	// holdCommit: the committer is about to write the statuses of the
	// rounds it holds.
	holdCommit
	// holdCommitted: the committer wrote the statuses and is about to hand
	// the rounds to the loop.
	holdCommitted
	// holdOutcome: the loop took a round back from the committer and is
	// about to decide what comes next for its objects (and to release
	// their ordering groups).
	holdOutcome
	// holdPromote: the loop is about to move objects whose backoff or
	// requeue delay passed to the retries lane.
	holdPromote
	// holdRefresh: the loop is about to mark objects for refresh.
	holdRefresh
	// holdPublish: the loop is about to publish its progress (for
	// WaitUntilReconciled) and health.
	holdPublish
	numHoldPoints
)

var holdPointNames = [numHoldPoints]string{
	"feed-read", "dispatch", "prune-dispatch", "worker-start", "worker-done",
	"worker-free", "commit", "committed", "outcome", "promote", "refresh", "publish",
}

// String returns the point's name, as the model test logs it.
func (p holdPoint) String() string {
	if p < numHoldPoints {
		return holdPointNames[p]
	}
	return "hold-point-?"
}

// Who reaches a hold point: a worker (its number, from 0), or these.
const (
	holdLoop      = -1
	holdCommitter = -2
)

// at passes the hold point p, reached by who: it calls the test's hook,
// if one is set.
func (r *Reconciler[Obj]) at(p holdPoint, who int) {
	if h := r.hold; h != nil {
		h(p, who)
	}
}
