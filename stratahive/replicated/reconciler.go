package replicated

import (
	"context"

	"github.com/cilium/hive/cell"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
)

// Reconciler declares a reconciler of a replicated table that runs on
// the leader only, as a cell: stratahive.Reconciler's arguments, taking
// the table (strata.RWTable[Obj]) and the operations
// (reconciler.Operations[Obj], and reconciler.BatchOperations[Obj] if some
// cell provides them) from the hive.
//
// A reconciler writes the objects' statuses, which on a replicated table
// only the leader can: so it runs in a leader-only job (LeaderJob) named
// "reconcile-" and its name, of the module's job.Group, a new
// reconciler.Reconciler each term the node leads (one runs only once).
// The statuses it commits are replicated: the next leader's reconciler
// starts from them, and does not redo what is Done. Its health is the
// job's: standby, then the reconciler's while it runs.
//
// Its metrics and logs are the Cell's and the module's, as
// stratahive.RegisterReconciler's; unlike that one's, it is not known to
// the reconciler/status script command. A configuration reconciler.New
// refuses fails the hive's construction with its error.
func Reconciler[Obj any](
	clone func(Obj) Obj,
	setStatus func(Obj, reconciler.Status) Obj,
	getStatus func(Obj) reconciler.Status,
	options ...reconciler.Option,
) cell.Cell {
	type params struct {
		cell.In
		stratahive.ReconcilerParams
		Replica  *Replica
		Table    strata.RWTable[Obj]
		Ops      reconciler.Operations[Obj]
		BatchOps reconciler.BatchOperations[Obj] `optional:"true"`
	}
	return cell.Invoke(func(p params) error {
		opts := append([]reconciler.Option{
			reconciler.WithLogger(p.Log),
			reconciler.WithMetrics(p.Metrics.Reconcilers),
		}, options...)
		cfg := reconciler.Config[Obj]{
			Table:           p.Table,
			CloneObject:     clone,
			GetObjectStatus: getStatus,
			SetObjectStatus: setStatus,
			Operations:      p.Ops,
			BatchOperations: p.BatchOps,
		}
		// The first term's, made now so that a bad configuration fails
		// the construction, and for the name.
		next, err := reconciler.New(p.DB, cfg, opts...)
		if err != nil {
			return err
		}
		p.JobGroup.Add(p.Replica.LeaderJob("reconcile-"+next.Name(), func(ctx context.Context, health cell.Health) error {
			r := next
			next = nil
			if r == nil {
				var err error
				if r, err = reconciler.New(p.DB, cfg, opts...); err != nil {
					return err
				}
			}
			return r.Run(ctx, health)
		}))
		return nil
	})
}
