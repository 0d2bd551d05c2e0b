package reconciler

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/strata-db/strata"
)

// The prune budget (WithPruneBudget) bounds what a periodic prune may
// delete. The reconciler does not see what a Prune operation deletes, so
// the budget holds only where the operation asks: CheckPruneBudget says
// whether deleting so many objects of so many is allowed, and
// PruneStrangers, a Prune body for outside worlds that can list what they
// hold, asks it before deleting anything. A reconciler with a budget whose
// Prune returns without asking logs a warning, once: its budget is not
// enforced.

// pruneBudget is what a prune's context carries: the largest fraction of
// the outside world it may delete, unless forced, and whether the prune
// asked (CheckPruneBudget).
type pruneBudget struct {
	fraction float64
	forced   bool
	asked    atomic.Bool
}

type pruneBudgetKey struct{}

// CheckPruneBudget tells a Prune operation whether it may delete deletes
// of the total objects the outside world holds. It returns nil if the
// reconciler has no prune budget (WithPruneBudget), if the prune was forced
// by Reconciler.Prune, or if deletes is within the budget; otherwise an
// error wrapping ErrPruneBudget, which Prune should return without
// deleting anything.
//
// A Prune of a reconciler with a budget must call it on every prune, with
// nothing to delete too (deletes 0 is always allowed): the budget is
// enforced only through it, and the reconciler warns if a prune did not
// ask. PruneStrangers asks for its callers.
func CheckPruneBudget(ctx context.Context, deletes, total int) error {
	b, ok := ctx.Value(pruneBudgetKey{}).(*pruneBudget)
	if !ok {
		return nil
	}
	b.asked.Store(true)
	if b.forced || deletes <= 0 {
		return nil
	}
	if float64(deletes) <= b.fraction*float64(total) {
		return nil
	}
	return fmt.Errorf("reconciler: prune would delete %d of %d objects, budget %.0f%%: %w",
		deletes, total, 100*b.fraction, ErrPruneBudget)
}

// PruneStrangers is the body of a Prune operation for an outside world
// that can list what it holds: it deletes, with del, every key of held
// that no object of desired has (a stranger), once CheckPruneBudget allows
// deleting that many of all of held. Over the budget it deletes nothing
// and returns the budget's error (wrapping ErrPruneBudget), which Prune
// returns as it is.
//
// It returns the number of strangers deleted. A delete that fails does
// not stop the others: their errors are returned joined. Once ctx is done
// it deletes no more and returns ctx's error with the others.
//
//	func (d *dir) Prune(ctx context.Context, _ strata.ReadTxn, desired iter.Seq2[*File, strata.Revision]) error {
//		names, err := d.list()
//		if err != nil {
//			return err
//		}
//		_, err = reconciler.PruneStrangers(ctx, desired, (*File).FileName, slices.Values(names), d.remove)
//		return err
//	}
func PruneStrangers[Obj any, K comparable](ctx context.Context, desired iter.Seq2[Obj, strata.Revision], key func(Obj) K,
	held iter.Seq[K], del func(K) error) (deleted int, err error) {
	want := make(map[K]struct{})
	for o := range desired {
		want[key(o)] = struct{}{}
	}
	var strangers []K
	total := 0
	for k := range held {
		total++
		if _, ok := want[k]; !ok {
			strangers = append(strangers, k)
		}
	}
	if err := CheckPruneBudget(ctx, len(strangers), total); err != nil {
		return 0, err
	}
	var errs []error
	for _, k := range strangers {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if err := del(k); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}
