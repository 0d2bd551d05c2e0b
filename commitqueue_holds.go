package strata

// Hold points of the commit queue (early lock release, commitqueue.go).
// Every hand-off between the goroutines that commit through the queue
// passes through one: a call of dbShared.hold, which a test sets to hold
// the goroutine that reached the point and let it go on in an order of
// its choosing. The model test (commitqueue_model_test.go) drives them in
// many seeded orders under testing/synctest and checks the invariants of
// commitqueue.go whatever the order; see docs/interleavings.md.
//
// In production hold is nil and a point costs one predictable branch, a
// few times per commit (never per object): the benchmarks do not see
// them (BenchmarkDB_WriteTxn_*, BenchmarkDB_WriteTxn_Queued_1).
//
// A point is never inside queue.mu or db.mu: a goroutine held there would
// block the others in a way testing/synctest cannot see as durable. The
// table locks are held at cqBegin, cqDropTip and cqEnqueue, as they are
// through the whole transaction; a test's writers wait for them with
// WriteTxnContext, which blocks on a channel.

// cqPoint names a hold point of the commit queue.
type cqPoint uint8

const (
	// cqBegin: a writer locked its tables and read their tips (its
	// transaction depends on those that had one), and is about to read
	// the published root, the rest of its view (takeTips).
	cqBegin cqPoint = iota
	// cqDropTip: a writer locked a table whose tip failed and is about to
	// drop it, cutting the change log back to the published end
	// (dropFailedTip).
	cqDropTip
	// cqEnqueue: a commit built its states and its record and is about
	// to enter the queue (commitQueue.enqueue): the journal's order, the
	// tips of its tables, or the rejection of a commit behind a failure.
	cqEnqueue
	// cqEnqueued: the commit is in the queue; if it released its locks
	// early, the tables are unlocked and the next writers may begin from
	// its tips. It is about to wait for its record (QueuedBatch.Wait).
	cqEnqueued
	// cqDurable: the commit's record is durable, or failed (Wait
	// returned), and it is about to settle the head of the queue
	// (commitQueue.finish): publish, in order, every commit there whose
	// record is durable, its own or others', or fail them.
	cqDurable
	// cqSettled: the commit was settled, by its own goroutine or by the
	// one that published the head of the queue, or rejected at enqueue;
	// it is about to close the watch channels it owes and return.
	cqSettled
	numCQPoints
)

var cqPointNames = [numCQPoints]string{
	"begin", "drop-tip", "enqueue", "enqueued", "durable", "settled",
}

// String returns the point's name, as the model test logs it.
func (p cqPoint) String() string {
	if p < numCQPoints {
		return cqPointNames[p]
	}
	return "cq-point-?"
}

// at passes the hold point p with the transaction w: it calls the test's
// hook, if one is set.
func (db *DB) at(p cqPoint, w *txnCore) {
	if h := db.hold; h != nil {
		h(p, w)
	}
}
