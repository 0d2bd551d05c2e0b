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
// as a one-shot job named "reconcile-" and the reconciler's name
// (reconciler.WithName, by default the table's): it starts when the hive
// starts, after the start hooks of the cells it depends on (a durable
// table is loaded by then), and stops when the hive stops, draining its
// operations in flight.
//
// The job's health (cell.Health, scope "job-reconcile-<name>") is the
// reconciler's: OK with the number of objects while it keeps up,
// Degraded with the failing keys and their errors while objects fail.
// Its metrics are the Cell's (Config, or the program's) unless an option
// gives others, and its logs go to the module's logger. The
// reconciler/status script command reports on it.
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
	opts := []reconciler.Option{
		reconciler.WithLogger(params.Log),
		reconciler.WithMetrics(params.Metrics.Reconcilers),
	}
	r, err := reconciler.New(params.DB, reconciler.Config[Obj]{
		Table:           table,
		CloneObject:     clone,
		GetObjectStatus: getStatus,
		SetObjectStatus: setStatus,
		Operations:      ops,
		BatchOperations: batchOps,
	}, append(opts, options...)...)
	if err != nil {
		return nil, err
	}
	err = params.Registry.addReconciler(&registeredReconciler{
		name:    r.Name(),
		module:  params.ModuleID.String(),
		table:   table,
		inspect: r.Inspect,
		stats:   r.Stats,
	})
	if err != nil {
		return nil, err
	}
	params.JobGroup.Add(job.OneShot("reconcile-"+r.Name(), func(ctx context.Context, health cell.Health) error {
		return r.Run(ctx, health)
	}))
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
