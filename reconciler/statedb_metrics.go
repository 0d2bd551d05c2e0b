package reconciler

import (
	"expvar"
	"time"

	"github.com/strata-db/strata/internal/expvars"
)

// ExpVarMetrics reports reconcilers' measurements to package expvar in
// statedb v0.9.4's layout, so that a program or a test that reads
// statedb's figures reads the same ones: eight expvar.Maps, one per
// figure, each keyed by the reconciler's module and name ("module/name",
// or the module alone for a reconciler registered without a name, as
// stratahive.RegisterReconciler gives them; the name alone for a
// reconciler made by New). The figures:
//
//	reconciliation_count           rounds run
//	reconciliation_duration        seconds operations ran, keyed "key/update", "key/delete"
//	reconciliation_total_errors    operations that failed
//	reconciliation_current_errors  objects failing after the latest round
//	prune_count                    prunes run
//	prune_duration                 seconds prunes ran
//	prune_total_errors             prunes that failed
//	prune_current_errors           1 if the latest prune failed, else 0
//
// The maps are fields, as statedb's are. Strata's own figures, per
// reconciler and many more (queue waits, status commits, the time from
// change to Done), are ExpVar's (NewExpVar); stratahive's
// --strata-metrics=expvar publishes those. ExpVarMetrics is safe for
// concurrent use.
type ExpVarMetrics struct {
	root expvar.Map
	err  error

	ReconciliationCountVar         *expvar.Map
	ReconciliationDurationVar      *expvar.Map
	ReconciliationTotalErrorsVar   *expvar.Map
	ReconciliationCurrentErrorsVar *expvar.Map

	PruneCountVar         *expvar.Map
	PruneDurationVar      *expvar.Map
	PruneTotalErrorsVar   *expvar.Map
	PruneCurrentErrorsVar *expvar.Map
}

// NewExpVarMetrics returns an ExpVarMetrics whose eight maps are
// published with expvar.Publish, each under its figure's name, as
// statedb's are; a name that is taken (a second call) is not, and Err
// says which, where statedb panics.
func NewExpVarMetrics() *ExpVarMetrics { return newStatedbExpVar(true) }

// NewUnpublishedExpVarMetrics returns an ExpVarMetrics that is not
// published, for tests.
func NewUnpublishedExpVarMetrics() *ExpVarMetrics { return newStatedbExpVar(false) }

func newStatedbExpVar(publish bool) *ExpVarMetrics {
	m := &ExpVarMetrics{}
	m.root.Init()
	sub := func(name string) *expvar.Map {
		v := new(expvar.Map).Init()
		m.root.Set(name, v)
		if publish {
			if err := expvars.Publish("reconciler", name, v); err != nil && m.err == nil {
				m.err = err
			}
		}
		return v
	}
	m.ReconciliationCountVar = sub("reconciliation_count")
	m.ReconciliationDurationVar = sub("reconciliation_duration")
	m.ReconciliationTotalErrorsVar = sub("reconciliation_total_errors")
	m.ReconciliationCurrentErrorsVar = sub("reconciliation_current_errors")
	m.PruneCountVar = sub("prune_count")
	m.PruneDurationVar = sub("prune_duration")
	m.PruneTotalErrorsVar = sub("prune_total_errors")
	m.PruneCurrentErrorsVar = sub("prune_current_errors")
	return m
}

// Err returns the error of publishing, or nil.
func (m *ExpVarMetrics) Err() error { return m.err }

// Map returns the map of the eight figures' maps. Change nothing in it.
func (m *ExpVarMetrics) Map() *expvar.Map { return &m.root }

// String returns every figure as JSON (expvar.Var).
func (m *ExpVarMetrics) String() string { return m.root.String() }

// Reconciler returns the handle of a reconciler made by New: its figures
// are keyed by its name.
func (m *ExpVarMetrics) Reconciler(name string) ReconcilerMetrics {
	return &statedbFigures{m: m, key: name, updateKey: name + "/update", deleteKey: name + "/delete"}
}

// ModuleReconciler returns the handle of the reconciler that module
// registered under name ("" for one registered without a name): its
// figures are keyed "module/name", or "module" (statedb's keys).
// stratahive.RegisterReconciler calls it.
func (m *ExpVarMetrics) ModuleReconciler(module, name string) ReconcilerMetrics {
	key := module
	if name != "" {
		key += "/" + name
	}
	return m.Reconciler(key)
}

// ModuleMetrics is Metrics that key a reconciler's figures by the module
// that registered it as well as by its name, as statedb's do:
// stratahive.RegisterReconciler gives such metrics the module, and the
// name the program gave ("" if none), rather than calling Reconciler.
type ModuleMetrics interface {
	Metrics
	ModuleReconciler(module, name string) ReconcilerMetrics
}

// statedbFigures is one reconciler's handle on an ExpVarMetrics.
type statedbFigures struct {
	m                         *ExpVarMetrics
	key, updateKey, deleteKey string
}

func (f *statedbFigures) Operation(op Op, outcome Outcome, d time.Duration) {
	key := f.updateKey
	if op == OpDelete {
		key = f.deleteKey
	}
	f.m.ReconciliationDurationVar.AddFloat(key, d.Seconds())
	switch outcome {
	case OutcomeError, OutcomeTerminal, OutcomePanic, OutcomeTimeout:
		f.m.ReconciliationTotalErrorsVar.Add(f.key, 1)
	}
}

func (f *statedbFigures) Progress(s Stats) {
	f.m.ReconciliationCountVar.Add(f.key, 1)
	f.m.ReconciliationTotalErrorsVar.Add(f.key, 0) // present from the first round, as statedb's
	setInt(f.m.ReconciliationCurrentErrorsVar, f.key, int64(s.Failing))
}

func (f *statedbFigures) Prune(outcome Outcome, d time.Duration) {
	f.m.PruneDurationVar.AddFloat(f.key, d.Seconds())
	f.m.PruneCountVar.Add(f.key, 1)
	failing := int64(0)
	if outcome != OutcomeOK {
		f.m.PruneTotalErrorsVar.Add(f.key, 1)
		failing = 1
	}
	f.m.PruneTotalErrorsVar.Add(f.key, 0)
	setInt(f.m.PruneCurrentErrorsVar, f.key, failing)
}

func (f *statedbFigures) QueueWait(Lane, time.Duration)               {}
func (f *statedbFigures) Reconciled(time.Duration)                    {}
func (f *statedbFigures) StatusCommit(int, int, time.Duration, error) {}
func (f *statedbFigures) Refresh(int)                                 {}

// setInt sets m[key] to v, creating the expvar.Int on the first call.
func setInt(m *expvar.Map, key string, v int64) {
	if i, ok := m.Get(key).(*expvar.Int); ok {
		i.Set(v)
		return
	}
	i := new(expvar.Int)
	i.Set(v)
	m.Set(key, i)
}
