package reconciler

import (
	"expvar"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/expvars"
)

// ExpVar reports reconcilers' measurements to package expvar: one
// expvar.Map holding, per reconciler name, a map of its figures, which its
// String method (and, if published, the /debug/vars page) shows as JSON.
// The figures of a reconciler are:
//
//	update_ok, update_error, update_terminal, update_panic, update_timeout,
//	update_requeue, delete_ok, delete_error, ...
//	                                     counters of operations by outcome
//	op_ns_total, op_ns_max               time operations ran
//	update_ns_total, delete_ns_total     the same, by operation
//	queue_waits, queue_wait_ns_total     objects started, and their wait in a lane
//	reconciled, reconciled_ns_total      objects that became Done, and their time from
//	                                     the change (its Pending status's UpdatedAt)
//	                                     to the commit of the Done status
//	status_commits, status_commit_errors write transactions of statuses
//	statuses_written, status_conflicts   statuses written, and objects changed meanwhile
//	prunes_ok, prunes_error, prunes_refused, prune_ns_total
//	prune_failing                        1 if the latest prune did not succeed, else 0
//	refresh_marked                       objects marked for refresh
//	lag, queued_changes, queued_retries, queued_background, parked, delayed,
//	in_flight, failing, oldest_pending_ns, longest_running_ns
//	                                     gauges after the latest round (Stats)
//
// Each value is allocated once, by Reconciler, and updated in place
// without allocating. ExpVar is safe for concurrent use.
type ExpVar struct {
	m    expvar.Map
	err  error
	mu   sync.Mutex
	recs map[string]*expvarReconciler
}

// ErrPublished: NewExpVar was asked to publish under a name that is
// taken. It is metrics.ErrPublished too.
var ErrPublished = expvars.ErrPublished

// NewExpVar returns an ExpVar. If publish is true, it is published with
// expvar.Publish under name; if that name is taken, it is not, and Err
// says why (instead of expvar.Publish's panic).
func NewExpVar(name string, publish bool) *ExpVar {
	e := &ExpVar{recs: make(map[string]*expvarReconciler)}
	e.m.Init()
	if publish {
		e.err = expvars.Publish("reconciler", name, &e.m)
	}
	return e
}

// Err returns the error of publishing, or nil.
func (e *ExpVar) Err() error { return e.err }

// String returns the figures of every reconciler as JSON (expvar.Var).
func (e *ExpVar) String() string { return e.m.String() }

// Map returns the map of figures, by reconciler name; each value is an
// *expvar.Map. Change nothing in it.
func (e *ExpVar) Map() *expvar.Map { return &e.m }

// Reconciler returns the handle of the reconciler name, creating its
// figures on the first call. Reconcilers of the same name share them.
func (e *ExpVar) Reconciler(name string) ReconcilerMetrics {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.recs[name]; ok {
		return r
	}
	r := &expvarReconciler{}
	r.vars.Init()
	for op := range numOps {
		for o := range numOutcomes {
			r.vars.Set(op.String()+"_"+o.String(), &r.ops[op][o])
		}
	}
	for o := range numOutcomes {
		r.vars.Set("prunes_"+o.String(), &r.prunes[o])
	}
	for _, kv := range []struct {
		key string
		v   expvar.Var
	}{
		{"op_ns_total", &r.opTotal}, {"op_ns_max", &r.opMax},
		{"update_ns_total", &r.opNs[OpUpdate]}, {"delete_ns_total", &r.opNs[OpDelete]},
		{"queue_waits", &r.waits}, {"queue_wait_ns_total", &r.waitTotal},
		{"reconciled", &r.reconciled}, {"reconciled_ns_total", &r.reconciledTotal},
		{"status_commits", &r.commits}, {"status_commit_errors", &r.commitErrors},
		{"statuses_written", &r.written}, {"status_conflicts", &r.conflicts},
		{"prune_ns_total", &r.pruneTotal}, {"prune_failing", &r.pruneFailing},
		{"refresh_marked", &r.marked},
		{"lag", &r.lag}, {"queued_changes", &r.queued[LaneChanges]},
		{"queued_retries", &r.queued[LaneRetries]}, {"queued_background", &r.queued[LaneBackground]},
		{"parked", &r.parked}, {"delayed", &r.delayed}, {"in_flight", &r.inFlight},
		{"failing", &r.failing}, {"oldest_pending_ns", &r.oldest}, {"longest_running_ns", &r.longest},
	} {
		r.vars.Set(kv.key, kv.v)
	}
	e.recs[name] = r
	e.m.Set(name, &r.vars)
	return r
}

// expvarReconciler is one reconciler's figures, as fields that its
// expvar.Map points at.
type expvarReconciler struct {
	ops                   [numOps][numOutcomes]expvar.Int
	prunes                [numOutcomes]expvar.Int
	opTotal, waits        expvar.Int
	opNs                  [numOps]expvar.Int
	waitTotal             expvar.Int
	opMax                 expvars.Max
	reconciled            expvar.Int
	reconciledTotal       expvar.Int
	commits, commitErrors expvar.Int
	written, conflicts    expvar.Int
	pruneTotal, marked    expvar.Int
	pruneFailing          expvar.Int
	lag                   expvar.Int
	queued                [numLanes]expvar.Int
	parked, delayed       expvar.Int
	inFlight, failing     expvar.Int
	oldest, longest       expvar.Int
	vars                  expvar.Map
}

func (r *expvarReconciler) Operation(op Op, outcome Outcome, d time.Duration) {
	r.ops[op][outcome].Add(1)
	r.opTotal.Add(int64(d))
	r.opNs[op].Add(int64(d))
	r.opMax.Observe(int64(d))
}

func (r *expvarReconciler) QueueWait(_ Lane, d time.Duration) {
	r.waits.Add(1)
	r.waitTotal.Add(int64(d))
}

func (r *expvarReconciler) Reconciled(d time.Duration) {
	r.reconciled.Add(1)
	r.reconciledTotal.Add(int64(d))
}

func (r *expvarReconciler) StatusCommit(written, conflicts int, _ time.Duration, err error) {
	r.commits.Add(1)
	if err != nil {
		r.commitErrors.Add(1)
		return
	}
	r.written.Add(int64(written))
	r.conflicts.Add(int64(conflicts))
}

func (r *expvarReconciler) Progress(s Stats) {
	expvars.SetIfChanged(&r.lag, int64(s.Lag))
	for l := range numLanes {
		expvars.SetIfChanged(&r.queued[l], int64(s.Queued[l]))
	}
	expvars.SetIfChanged(&r.parked, int64(s.Parked))
	expvars.SetIfChanged(&r.delayed, int64(s.Delayed))
	expvars.SetIfChanged(&r.inFlight, int64(s.InFlight))
	expvars.SetIfChanged(&r.failing, int64(s.Failing))
	expvars.SetIfChanged(&r.oldest, int64(s.OldestPending))
	expvars.SetIfChanged(&r.longest, int64(s.LongestRunning))
}

func (r *expvarReconciler) Prune(outcome Outcome, d time.Duration) {
	r.prunes[outcome].Add(1)
	r.pruneTotal.Add(int64(d))
	failing := int64(0)
	if outcome != OutcomeOK {
		failing = 1
	}
	r.pruneFailing.Set(failing)
}

func (r *expvarReconciler) Refresh(marked int) { r.marked.Add(int64(marked)) }
