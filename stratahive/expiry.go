package stratahive

import (
	"context"
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
)

// ExpirerJobName is the name of the Expirer cell's job; its health scope
// is "job-" and this.
const ExpirerJobName = "expire"

// Expirer declares the database's strata.Expirer (strata.NewExpirer with
// opts) as a cell: it runs as a one-shot job of the module's job.Group,
// named ExpirerJobName, from the hive's start (after the start hooks of
// the cells it depends on: a durable table is loaded by then, expired
// objects and all) to its stop, and is provided as *strata.Expirer. Use
// one per database, in the module that owns the tables that expire (or,
// with opts.Tables empty, any module: it expires every table with an
// ExpiryIndex).
//
//	cell.Module("app", "The application",
//		stratahive.Table("sessions", sessionByID, sessionByExpiry),
//		cell.Provide(job.Registry.NewGroup),
//		stratahive.Expirer(strata.ExpirerOptions{}),
//	)
//
// Its health (cell.Health, scope "job-expire") is OK, with the number of
// objects expired so far, after a pass that succeeded, and Degraded with
// the error of a pass that failed. opts.OnPass, if set, is called too.
// The errors are strata.NewExpirer's.
func Expirer(opts strata.ExpirerOptions) cell.Cell {
	type params struct {
		cell.In
		DB       *strata.DB
		JobGroup job.Group
	}
	return cell.Group(
		cell.Provide(func(p params) (*strata.Expirer, error) {
			// health is the job's, set before Run calls OnPass, on
			// the same goroutine.
			var health cell.Health
			var e *strata.Expirer
			o := opts
			o.OnPass = func(n int, err error) {
				if opts.OnPass != nil {
					opts.OnPass(n, err)
				}
				if err != nil {
					health.Degraded("expiry failed", err)
				} else {
					health.OK(fmt.Sprintf("OK, %d object(s) expired", e.Expired()))
				}
			}
			e, err := strata.NewExpirer(p.DB, o)
			if err != nil {
				return nil, err
			}
			p.JobGroup.Add(job.OneShot(ExpirerJobName, func(ctx context.Context, h cell.Health) error {
				health = h
				if err := e.Run(ctx); err != nil && ctx.Err() == nil {
					return err
				}
				return nil
			}))
			return e, nil
		}),
		cell.Invoke(func(*strata.Expirer) {}),
	)
}
