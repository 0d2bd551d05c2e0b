package reconciler

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
)

// batch is the work handed to a worker: objects to update or delete, or a
// prune. The worker fills in the outcomes and hands it back.
type batch[Obj any] struct {
	txn     strata.ReadTxn
	entries []entry[Obj]
	prune   *pruneJob[Obj]
	// took is how long the worker spent on the batch (mono ns).
	took int64
	// updates counts the entries that are updates.
	updates int
}

// entry is one object of a batch: a copy of what the worker needs, so that
// it never reads an item, and the outcome.
type entry[Obj any] struct {
	it  *item[Obj] // for the loop only
	key []byte     // the item's, which does not change while in flight
	gen uint32
	// obj is the object as read; work the clone given to Update, with
	// the new status set once the operation ended.
	obj, work Obj
	rev       strata.Revision
	deleted   bool
	attempts  uint32
	// retryKind, for retries and requeues, is the status kind Update is
	// shown (the object's status is the reconciler's Error or Done).
	retryKind StatusKind
	flightID  uint64
	lane      Lane
	queuedAt  int64

	// Set by the worker.
	err     error
	outcome Outcome
	next    outcomeKind // what the error asks for
	delay   time.Duration
	// abandoned: the reconciler is shutting down and the attempt was
	// cancelled (or not started); nothing is written for it.
	abandoned bool
	status    Status

	// Set by the status commit.
	written bool // the status (and work) is in the table, at newRev
	newRev  strata.Revision
}

// succeeded reports whether the operation succeeded.
func (e *entry[Obj]) succeeded() bool {
	return e.outcome == OutcomeOK || e.outcome == OutcomeRequeue
}

// worker runs operations; Run starts WithWorkers of them.
type worker[Obj any] struct {
	l  *loop[Obj]
	id int // its number, from 0
	// cur is the context of the operation that runs, for the loop's
	// watchdog (timeouts) and drain; nil between operations.
	cur atomic.Pointer[opCtx]
	// ctx is the context of the last operation, reused if untouched.
	ctx *opCtx

	dels, upds     []BatchEntry[Obj]
	delIdx, updIdx []int
}

func (w *worker[Obj]) run(wg *sync.WaitGroup) {
	defer wg.Done()
	l := w.l
	for b := range l.work {
		l.r.at(holdWorkerStart, w.id)
		w.runBatch(b)
		l.r.ctl.release()
		l.r.at(holdWorkerDone, w.id)
		l.committer.in <- b
		l.r.at(holdWorkerFree, w.id)
		l.freed <- struct{}{}
	}
}

func (w *worker[Obj]) runBatch(b *batch[Obj]) {
	r := w.l.r
	start := r.mono()
	switch {
	case b.prune != nil:
		w.runPrune(b)
	case r.cfg.BatchOperations != nil:
		w.runBatchOps(b)
	default:
		for i := range b.entries {
			w.runOne(b.txn, &b.entries[i])
		}
	}
	b.took = r.mono() - start
	if b.updates > 0 {
		w.setStatuses(b)
	}
}

// setStatuses sets the new status on the clones of the updates: one clock
// read and one draw of IDs for the whole batch.
func (w *worker[Obj]) setStatuses(b *batch[Obj]) {
	r := w.l.r
	now := time.Now()
	id := nextIDs(b.updates) | r.tag
	for i := range b.entries {
		e := &b.entries[i]
		if e.deleted || e.abandoned {
			continue
		}
		e.status = Status{Kind: StatusKindDone, UpdatedAt: now, ID: id}
		id++
		if !e.succeeded() {
			msg := e.err.Error()
			e.status.Kind = StatusKindError
			e.status.Error = &msg
			e.status.Attempts = e.attempts + 1
			e.status.Terminal = e.outcome == OutcomeTerminal
		}
		e.work = r.cfg.SetObjectStatus(e.work, e.status)
	}
}

func (w *worker[Obj]) runOne(txn strata.ReadTxn, e *entry[Obj]) {
	r := w.l.r
	ctx := w.begin()
	if ctx == nil {
		e.abandoned = true
		return
	}
	var err error
	if e.deleted {
		err = w.callDelete(ctx, txn, e)
	} else {
		e.work = w.clone(e)
		err = w.callUpdate(ctx, txn, e)
	}
	w.end()
	w.settle(e, err, ctx)
	if r.metricsOn {
		op := OpUpdate
		if e.deleted {
			op = OpDelete
		}
		start := ctx.started()
		r.m.QueueWait(e.lane, time.Duration(start-e.queuedAt))
		r.m.Operation(op, e.outcome, time.Duration(r.mono()-start))
	}
}

// clone returns the copy of e's object that Update gets. A retry shows the
// status that made the first attempt (Pending or Refreshing), as the
// object it retries has the reconciler's own Error (or Done) status.
func (w *worker[Obj]) clone(e *entry[Obj]) Obj {
	cfg := &w.l.r.cfg
	c := cfg.CloneObject(e.obj)
	if e.retryKind != StatusKindUnset {
		st := cfg.GetObjectStatus(c)
		c = cfg.SetObjectStatus(c, Status{Kind: e.retryKind, UpdatedAt: st.UpdatedAt, ID: st.ID, Attempts: st.Attempts})
	}
	return c
}

func (w *worker[Obj]) callUpdate(ctx *opCtx, txn strata.ReadTxn, e *entry[Obj]) (err error) {
	defer w.recoverPanic(&err)
	return w.l.r.cfg.Operations.Update(ctx, txn, e.rev, e.work)
}

func (w *worker[Obj]) callDelete(ctx *opCtx, txn strata.ReadTxn, e *entry[Obj]) (err error) {
	defer w.recoverPanic(&err)
	return w.l.r.cfg.Operations.Delete(ctx, txn, e.rev, e.obj)
}

// panicError is the error of an operation that panicked.
type panicError struct {
	value any
}

func (p *panicError) Error() string { return fmt.Sprintf("%v: %v", ErrPanic, p.value) }
func (p *panicError) Unwrap() error { return ErrPanic }

func (w *worker[Obj]) recoverPanic(err *error) {
	if v := recover(); v != nil {
		w.l.r.log.Error("Operation panicked", "panic", v, "stack", string(debug.Stack()))
		*err = &panicError{v}
	}
}

// settle records the outcome of an operation that returned err, run with
// ctx.
func (w *worker[Obj]) settle(e *entry[Obj], err error, ctx *opCtx) {
	e.err, e.outcome = err, OutcomeOK
	if err == nil {
		return
	}
	var pe *panicError
	switch cause := ctx.cause(); {
	case errors.As(err, &pe):
		e.outcome = OutcomePanic
		return
	case cause == errShutdown:
		e.abandoned = true
		return
	case cause == errOpTimeout:
		e.outcome = OutcomeTimeout
		e.err = fmt.Errorf("%w after %s: %w", ErrTimeout, w.l.r.o.opTimeout, err)
		return
	}
	e.next, e.delay = classify(err)
	switch e.next {
	case kindTerminal:
		e.outcome = OutcomeTerminal
	case kindRequeue:
		e.outcome, e.err = OutcomeRequeue, nil
	default:
		e.outcome = OutcomeError
	}
}

// runBatchOps runs the batch through BatchOperations: the deletes first,
// then the updates, one call each.
func (w *worker[Obj]) runBatchOps(b *batch[Obj]) {
	w.dels, w.upds = w.dels[:0], w.upds[:0]
	w.delIdx, w.updIdx = w.delIdx[:0], w.updIdx[:0]
	for i := range b.entries {
		e := &b.entries[i]
		if e.deleted {
			w.dels = append(w.dels, BatchEntry[Obj]{Object: e.obj, Revision: e.rev})
			w.delIdx = append(w.delIdx, i)
		} else {
			e.work = w.clone(e)
			w.upds = append(w.upds, BatchEntry[Obj]{Object: e.work, Revision: e.rev})
			w.updIdx = append(w.updIdx, i)
		}
	}
	w.callBatch(b, w.dels, w.delIdx, true)
	w.callBatch(b, w.upds, w.updIdx, false)
	clear(w.dels)
	clear(w.upds)
}

func (w *worker[Obj]) callBatch(b *batch[Obj], batch []BatchEntry[Obj], idx []int, deletes bool) {
	if len(batch) == 0 {
		return
	}
	r := w.l.r
	ctx := w.begin()
	if ctx == nil {
		for _, i := range idx {
			b.entries[i].abandoned = true
		}
		return
	}
	var panicked error
	func() {
		defer w.recoverPanic(&panicked)
		if deletes {
			r.cfg.BatchOperations.DeleteBatch(ctx, b.txn, batch)
		} else {
			r.cfg.BatchOperations.UpdateBatch(ctx, b.txn, batch)
		}
	}()
	w.end()
	start := ctx.started()
	took := time.Duration(r.mono() - start)
	for j, i := range idx {
		e := &b.entries[i]
		err := batch[j].Result
		if panicked != nil {
			err = panicked
		}
		if !deletes {
			e.work = batch[j].Object
		}
		w.settle(e, err, ctx)
		if r.metricsOn {
			op := OpUpdate
			if deletes {
				op = OpDelete
			}
			r.m.QueueWait(e.lane, time.Duration(start-e.queuedAt))
			r.m.Operation(op, e.outcome, took)
		}
	}
}

// begin starts an operation: its context, published for the watchdog.
// It returns nil if the reconciler is shutting down and operations are
// cancelled.
//
// The context of the previous operation is reused if nothing asked for its
// Done channel and it was not cancelled, which saves an allocation per
// operation for the many that never look at it (BenchmarkReconciler/B1 in
// bench/compare). Operations must not keep their context after returning
// (Operations says so).
func (w *worker[Obj]) begin() *opCtx {
	l := w.l
	if l.abandon.Load() {
		return nil
	}
	c := w.ctx
	now := l.r.mono()
	if c == nil || !c.restart(now) {
		c = &opCtx{parent: l.values, start: now, timeout: l.r.o.opTimeout, epoch: l.r.epoch}
		w.ctx = c
	}
	w.cur.Store(c)
	// The loop sets abandon before it cancels the operations in flight:
	// either it saw c, or this sees abandon.
	if l.abandon.Load() {
		c.cancel(now, errShutdown)
	}
	return c
}

func (w *worker[Obj]) end() { w.cur.Store(nil) }

// running returns when the worker's current operation started, if one
// runs.
func (w *worker[Obj]) running() (int64, bool) {
	if c := w.cur.Load(); c != nil {
		return c.started(), true
	}
	return 0, false
}

// opCtx is an operation's context: cancelled when the operation timeout
// passes (by the loop's watchdog: no timer per operation) or when a
// shutdown gives up waiting. Its Done channel is made only if asked for.
type opCtx struct {
	parent  context.Context // for Value only
	timeout time.Duration
	epoch   time.Time

	mu sync.Mutex
	// start is when the operation started (mono); a cancel names the
	// start it means, so that it cannot hit the next operation that
	// reuses the context.
	start int64
	done  chan struct{}
	why   error // errOpTimeout or errShutdown once cancelled
}

var (
	errOpTimeout = errors.New("operation timeout")
	errShutdown  = errors.New("reconciler shutting down")
)

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// restart readies c for another operation starting at now, if nothing
// used it: no Done channel was made and it was not cancelled.
func (c *opCtx) restart(now int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil || c.why != nil {
		return false
	}
	c.start = now
	return true
}

// started returns when the current operation started.
func (c *opCtx) started() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start
}

// Deadline returns when the operation timeout passes.
func (c *opCtx) Deadline() (time.Time, bool) {
	return c.epoch.Add(time.Duration(c.started()-1) + c.timeout), true
}

// Done returns a channel closed once the context is cancelled.
func (c *opCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.why != nil {
			c.done = closedChan
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

// Err returns context.DeadlineExceeded after the timeout,
// context.Canceled after a shutdown, and nil before.
func (c *opCtx) Err() error {
	switch c.cause() {
	case nil:
		return nil
	case errOpTimeout:
		return context.DeadlineExceeded
	default:
		return context.Canceled
	}
}

// Value returns the value of Run's context for key.
func (c *opCtx) Value(key any) any { return c.parent.Value(key) }

func (c *opCtx) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// cancel cancels the operation that started at start, if it still runs.
func (c *opCtx) cancel(start int64, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why != nil || c.start != start {
		return
	}
	c.why = why
	if c.done != nil {
		close(c.done)
	}
}
