package reconciler

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Reconciler drives the outside world towards the objects of a table. It
// is created by New and runs in Run; its other methods are safe to call
// from any goroutine, before, during and after Run.
type Reconciler[Obj any] struct {
	db   *strata.DB
	cfg  Config[Obj]
	o    options
	name string

	// primaryKey and query read and look up primary keys (New checks the
	// table's primary index provides them).
	primaryKey func(Obj) index.KeySet
	query      func(index.Key) strata.Query[Obj]

	// tag marks the IDs of the statuses this reconciler writes, so that
	// it knows its own Done statuses when they come back through the
	// change feed without looking them up.
	tag uint64

	m         ReconcilerMetrics
	metricsOn bool
	log       *slog.Logger
	rand      *rand.Rand

	// epoch is the reconciler's zero of time: internal times are
	// nanoseconds since it, read from the monotonic clock (mono).
	epoch time.Time

	started atomic.Bool
	// hold, set by tests only, is called at each hold point (holds.go).
	hold func(p holdPoint, who int)
	// kick wakes the loop: Prune, Resume and Pause send to it.
	kick chan struct{}
	// pruneReq: Prune was called (1) and the loop has not taken it.
	pruneReq atomic.Bool
	// unaskedBudget: a prune with a budget returned without asking
	// CheckPruneBudget, and the warning was logged.
	unaskedBudget atomic.Bool

	ctl  control
	prog progress

	// mu guards s, and the loop's copies of what Stats reports.
	mu sync.Mutex
	s  work[Obj]
	// figures the loop keeps for Stats and Inspect, under mu.
	commitErr error // of the last status write, nil once one works
	// refreshRep is the refresh's state, for ReportRefresh.
	refreshRep refreshReport
	// running tells, for each worker, when its current operation
	// started; set by Run.
	running []func() (int64, bool)
}

// control is what Pause, Resume and the loop share: the pauses, and the
// batches out with workers.
type control struct {
	mu     sync.Mutex
	pauses int
	busy   int           // batches (or prunes) handed to workers and not returned
	idle   chan struct{} // closed when busy drops to 0; nil until waited for
}

// New returns a reconciler of cfg.Table, which must be registered with db.
// It starts nothing: call Run. A Config missing a required field, a table
// of another database and options out of range are reported as errors
// (ErrMissingConfig, ErrForeignTable, ErrInvalidOption).
func New[Obj any](db *strata.DB, cfg Config[Obj], opts ...Option) (*Reconciler[Obj], error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	missing := func(field string) error {
		return fmt.Errorf("reconciler: Config.%s is nil: %w", field, ErrMissingConfig)
	}
	switch {
	case db == nil:
		return nil, fmt.Errorf("reconciler: DB is nil: %w", ErrMissingConfig)
	case cfg.Table == nil:
		return nil, missing("Table")
	case cfg.CloneObject == nil:
		return nil, missing("CloneObject")
	case cfg.GetObjectStatus == nil:
		return nil, missing("GetObjectStatus")
	case cfg.SetObjectStatus == nil:
		return nil, missing("SetObjectStatus")
	case cfg.Operations == nil:
		return nil, missing("Operations")
	}
	registered := false
	for _, t := range db.Tables() {
		if t == strata.TableMeta(cfg.Table) {
			registered = true
		}
	}
	if !registered {
		return nil, fmt.Errorf("reconciler: table %q: %w", cfg.Table.Name(), ErrForeignTable)
	}
	pk, query, err := primaryKeyFuncs(cfg.Table)
	if err != nil {
		return nil, err
	}
	r := &Reconciler[Obj]{
		db: db, cfg: cfg, o: o, name: o.name,
		primaryKey: pk, query: query,
		log:   o.logger,
		rand:  o.rand,
		epoch: time.Now(),
		kick:  make(chan struct{}, 1),
		tag:   newTag(),
	}
	r.s.init()
	if r.name == "" {
		r.name = cfg.Table.Name()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("reconciler", r.name)
	if r.rand == nil {
		r.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	r.metricsOn = !isNop(o.metrics)
	if r.metricsOn {
		r.m = o.metrics.Reconciler(r.name)
	} else {
		r.m = nopReconcilerMetrics{}
	}
	return r, nil
}

// primaryKeyFuncs returns the functions that give an object's primary key
// and a query for a primary key. Every index of the public API is a
// strata.Index, whose FromObject and QueryKey do that.
func primaryKeyFuncs[Obj any](tbl strata.Table[Obj]) (func(Obj) index.KeySet, func(index.Key) strata.Query[Obj], error) {
	ix := tbl.PrimaryIndexer()
	q, ok := ix.(interface {
		QueryKey(index.Key) strata.Query[Obj]
	})
	if ok {
		if v := reflect.ValueOf(ix); v.Kind() == reflect.Struct {
			if f := v.FieldByName("FromObject"); f.IsValid() && f.CanInterface() {
				if fn, ok := f.Interface().(func(Obj) index.KeySet); ok && fn != nil {
					return fn, q.QueryKey, nil
				}
			}
		}
	}
	return nil, nil, fmt.Errorf("reconciler: table %q: %T: %w", tbl.Name(), ix, ErrUnsupportedIndex)
}

// mono returns the monotonic time since the reconciler's epoch, plus one,
// so that 0 can stand for "never".
func (r *Reconciler[Obj]) mono() int64 { return int64(time.Since(r.epoch)) + 1 }

// monoOf converts a time to mono time (which may be negative, for a time
// before the reconciler's epoch). A time read in this process compares by
// its monotonic clock reading; one decoded from storage, by the wall
// clock.
func (r *Reconciler[Obj]) monoOf(t time.Time) int64 { return int64(t.Sub(r.epoch)) + 1 }

// wall converts a mono time to a wall clock time.
func (r *Reconciler[Obj]) wall(t int64) time.Time { return r.epoch.Add(time.Duration(t - 1)) }

func (r *Reconciler[Obj]) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Name returns the reconciler's name (WithName, or the table's).
func (r *Reconciler[Obj]) Name() string { return r.name }

// Prune asks for a prune now, without the prune budget. It happens once
// the table is initialized and no operation is in flight; several calls
// before it starts make one prune, and a call while a prune runs makes
// another after it (the running one may have read its snapshot before the
// call).
func (r *Reconciler[Obj]) Prune() {
	r.pruneReq.Store(true)
	r.wake()
}

// WaitUntilReconciled waits until every change of the table up to
// untilRevision was attempted at least once, and returns the revision so
// reached and the lowest revision of an object whose last attempt failed
// (0 if none). Objects are reconciled up to untilRevision when revision >=
// untilRevision and retryLowWatermark is 0 or above untilRevision. It
// returns ctx's error if ctx ends first.
func (r *Reconciler[Obj]) WaitUntilReconciled(ctx context.Context, untilRevision strata.Revision) (revision, retryLowWatermark strata.Revision, err error) {
	return r.prog.wait(ctx, untilRevision)
}

// Pause stops the reconciler from starting operations, and returns once
// none is in flight (a prune included), or with ctx's error, in which
// case the pause is undone. Each Pause is undone by one Resume. While
// paused, changes are still read and queued, and statuses written.
func (r *Reconciler[Obj]) Pause(ctx context.Context) error {
	c := &r.ctl
	c.mu.Lock()
	c.pauses++
	if c.busy == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		r.Resume()
		return ctx.Err()
	}
}

// Resume undoes one Pause. Without a Pause to undo it does nothing.
func (r *Reconciler[Obj]) Resume() {
	c := &r.ctl
	c.mu.Lock()
	if c.pauses > 0 {
		c.pauses--
	}
	c.mu.Unlock()
	r.wake()
}

// reserve takes a worker slot for a batch, unless paused.
func (c *control) reserve() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pauses > 0 {
		return false
	}
	c.busy++
	return true
}

// release returns a slot reserve took.
func (c *control) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy--
	if c.busy == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

func (c *control) paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pauses > 0
}

// Stats returns the reconciler's figures.
func (r *Reconciler[Obj]) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statsLocked(r.mono())
}

func (r *Reconciler[Obj]) statsLocked(now int64) Stats {
	s := &r.s
	st := Stats{
		Queued:            s.laneLen,
		Parked:            s.parked,
		Delayed:           s.delayed.len(),
		InFlight:          s.inflight,
		Failing:           s.failing.len(),
		Revision:          s.progressRevision(),
		RetryLowWatermark: s.retryLowWatermark(),
		LongestRunning:    time.Duration(r.longestRunningLocked(now)),
		Paused:            r.ctl.paused(),
		CommitFailing:     r.commitErr != nil,
	}
	if st.Revision < s.feedRev {
		st.Lag = s.feedRev - st.Revision
	}
	if e := s.oldestPending(); e != nil {
		st.OldestPending = time.Duration(now - e.at)
	}
	return st
}

func (r *Reconciler[Obj]) longestRunningLocked(now int64) int64 {
	var longest int64
	for _, started := range r.running {
		if start, ok := started(); ok {
			longest = max(longest, now-start)
		}
	}
	return longest
}

// Inspect returns what the reconciler knows about the object with the
// given primary key (encoded, as the primary index's FromKey does), and
// false if it knows nothing: no work for it and no such object in the
// table.
func (r *Reconciler[Obj]) Inspect(key index.Key) (Inspection, bool) {
	r.mu.Lock()
	if it := r.s.items.get(key); it != nil {
		in := r.inspectLocked(it)
		r.mu.Unlock()
		return in, true
	}
	r.mu.Unlock()
	obj, rev, found := r.cfg.Table.Get(r.db.ReadTxn(), r.query(key))
	if !found {
		return Inspection{Phase: PhaseAbsent}, false
	}
	st := r.cfg.GetObjectStatus(obj)
	in := Inspection{Phase: PhaseIdle, Revision: rev, Status: st}
	switch st.Kind {
	case StatusKindPending, StatusKindRefreshing, StatusKindError:
		// Not read yet (an Error without an item is one written before
		// the reconciler started, or by someone else).
		in.Phase = PhaseUnseen
		in.Attempts = st.Attempts
	}
	return in, true
}

func (r *Reconciler[Obj]) inspectLocked(it *item[Obj]) Inspection {
	in := Inspection{
		Phase:     it.phase,
		Lane:      it.lane,
		Revision:  it.rev,
		Deleted:   it.deleted,
		Attempts:  it.attempts,
		LastError: it.lastErr,
	}
	if !it.deleted {
		in.Status = r.cfg.GetObjectStatus(it.obj)
	}
	switch it.phase {
	case PhaseBackoff, PhaseRequeued:
		in.NextAttempt = r.wall(it.dueAt)
	case PhaseQueued, PhaseParked:
		in.Waiting = time.Duration(r.mono() - it.queuedAt)
	}
	return in
}
