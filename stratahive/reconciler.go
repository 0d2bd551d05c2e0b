package stratahive

import (
	"context"
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// ReconcilerParams are what RegisterReconciler needs from the hive, as
// statedb's reconciler.Params: take them as a parameter of an invoke
// function in the module that owns the reconciler, which provides the
// job.Group (job.Registry.NewGroup).
type ReconcilerParams struct {
	cell.In

	Log      *slog.Logger
	DB       *strata.DB
	JobGroup job.Group
	ModuleID cell.FullModuleID
	Metrics  *Metrics
	Registry *Registry
}

// RegisterReconciler creates a reconciler of table (reconciler.New, with
// the given functions and options) and adds it to the module's job group
// as a one-shot job named "reconcile-" and the reconciler's name (below):
// it starts when the hive starts, after the start hooks of the cells it
// depends on (a durable table is loaded by then), and stops when the hive
// stops, draining its operations in flight.
//
// The job's health (cell.Health, scope "job-reconcile-<name>") is the
// reconciler's: OK with the number of objects while it keeps up,
// Degraded with the failing keys and their errors while objects fail.
// A reconciler that refreshes periodically (reconciler.WithRefresh, on by
// default) has a second job, "refresh-<name>", as statedb's reconciler
// has: the refresh runs in the reconciler's loop, and the job reports it
// (reconciler.Reconciler.ReportRefresh) in the scope
// "job-refresh-<name>": OK "Next refresh in 29m59s" between passes,
// Degraded while the marks cannot be written.
// Its metrics are the Cell's (Config, or the program's) unless an option
// gives others; metrics that key figures by module, as statedb's do
// (reconciler.ModuleMetrics, such as reconciler.NewExpVarMetrics), are
// given the module's ID and the name the program gave. Its logs go to
// the module's logger. The reconciler/status script command reports on
// it.
//
// The reconciler's name is the one reconciler.WithName gives, which no
// other reconciler of the hive may have (ErrDuplicateReconciler, whose
// message suggests a free one). A reconciler given no name is named
// after its table; if a reconciler of the hive has that name already
// (statedb's programs run several unnamed reconcilers of one table, one
// per module), it is named after its table and its module
// ("objects-test2" for module "test2"; a nested module's dots are made
// dashes), and if that is taken too after its table and the first free
// number from 2 ("objects-2"), and the name is logged. The names depend
// only on the order in which the hive registers the reconcilers (the
// order of its cells), so a program names its reconcilers alike on every
// start; give WithName where the name matters (metrics, health checks,
// the reconciler/status command), so that adding a reconciler cannot
// change it.
//
// The arguments are statedb's reconciler.Register's, so that a statedb
// program ports by changing names; batchOps may be nil. The errors are
// reconciler.New's, and ErrDuplicateReconciler.
func RegisterReconciler[Obj any](
	params ReconcilerParams,
	table strata.RWTable[Obj],
	clone func(Obj) Obj,
	setStatus func(Obj, reconciler.Status) Obj,
	getStatus func(Obj) reconciler.Status,
	ops reconciler.Operations[Obj],
	batchOps reconciler.BatchOperations[Obj],
	options ...reconciler.Option,
) (*reconciler.Reconciler[Obj], error) {
	module := params.ModuleID.String()
	given, named := reconciler.NameOf(options...)
	name, err := params.Registry.claimName(given, named, table.Name(), module)
	if err != nil {
		return nil, err
	}
	if !named && name != table.Name() {
		params.Log.Info("Reconciler has no name and its table's is taken by another reconciler: named otherwise (reconciler.WithName chooses)",
			"table", table.Name(), "module", module, "name", name)
	}
	var m reconciler.Metrics = params.Metrics.Reconcilers
	if mm, ok := m.(reconciler.ModuleMetrics); ok {
		// statedb's layout: keyed by module and the name given.
		m = moduleMetrics{mm.ModuleReconciler(module, given)}
	}
	opts := []reconciler.Option{
		reconciler.WithLogger(params.Log),
		reconciler.WithMetrics(m),
	}
	opts = append(append(opts, options...), reconciler.WithName(name))
	r, err := reconciler.New(params.DB, reconciler.Config[Obj]{
		Table:           table,
		CloneObject:     clone,
		GetObjectStatus: getStatus,
		SetObjectStatus: setStatus,
		Operations:      ops,
		BatchOperations: batchOps,
	}, opts...)
	if err != nil {
		params.Registry.releaseName(name)
		return nil, err
	}
	params.Registry.addReconciler(&registeredReconciler{
		name:    r.Name(),
		module:  module,
		table:   table,
		inspect: r.Inspect,
		stats:   r.Stats,
	})
	params.JobGroup.Add(job.OneShot("reconcile-"+r.Name(), func(ctx context.Context, health cell.Health) error {
		return r.Run(ctx, health)
	}))
	if r.RefreshInterval() > 0 {
		params.JobGroup.Add(job.OneShot("refresh-"+r.Name(), func(ctx context.Context, health cell.Health) error {
			return r.ReportRefresh(ctx, health)
		}))
	}
	return r, nil
}

// Reconciler declares a reconciler as a cell: it takes the table
// (strata.RWTable[Obj]) and the operations (reconciler.Operations[Obj],
// and reconciler.BatchOperations[Obj] if some cell provides them) from
// the hive, registers the reconciler with RegisterReconciler, and
// provides it as *reconciler.Reconciler[Obj]. It is created even if no
// cell asks for it.
//
//	stratahive.Reconciler((*Memo).Clone, (*Memo).SetStatus, (*Memo).GetStatus,
//		reconciler.WithPruning(time.Minute))
func Reconciler[Obj any](
	clone func(Obj) Obj,
	setStatus func(Obj, reconciler.Status) Obj,
	getStatus func(Obj) reconciler.Status,
	options ...reconciler.Option,
) cell.Cell {
	type params struct {
		cell.In
		ReconcilerParams
		Table    strata.RWTable[Obj]
		Ops      reconciler.Operations[Obj]
		BatchOps reconciler.BatchOperations[Obj] `optional:"true"`
	}
	return cell.Group(
		cell.Provide(func(p params) (*reconciler.Reconciler[Obj], error) {
			return RegisterReconciler(p.ReconcilerParams, p.Table, clone, setStatus, getStatus, p.Ops, p.BatchOps, options...)
		}),
		cell.Invoke(func(*reconciler.Reconciler[Obj]) {}),
	)
}

// moduleMetrics is the Metrics of one reconciler whose handle a
// reconciler.ModuleMetrics gave, keyed by its module.
type moduleMetrics struct{ h reconciler.ReconcilerMetrics }

func (m moduleMetrics) Reconciler(string) reconciler.ReconcilerMetrics { return m.h }
