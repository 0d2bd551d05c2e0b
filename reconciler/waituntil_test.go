package reconciler_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/strata-db/strata/reconciler"
)

// TestWaitUntilReconciledAsMigratingSays: what MIGRATING.md says of
// WaitUntilReconciled's revision: the one the reconciler read to, past
// untilRevision once it read its own status write of a failed object
// (statedb's returned untilRevision itself), with the failed object's
// revision as the low watermark.
func TestWaitUntilReconciledAsMigratingSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ops := newTimedOps(func(o *testObj, _ int) error {
			if o.Value == "bad" {
				return reconciler.Terminal(errors.New("no such thing"))
			}
			return nil
		})
		db, tbl, r, stop := startWith(t, ops)
		defer stop()
		rev := insertOne(t, db, tbl, pending(1, "bad"))
		synctest.Wait()
		got, low, err := r.WaitUntilReconciled(context.Background(), rev)
		if err != nil || low != rev || got <= rev || got != tbl.Revision(db.ReadTxn()) {
			t.Errorf("WaitUntilReconciled(%d) = %d, %d, %v; want the table's revision %d (past %d: the status write), low watermark %d",
				rev, got, low, err, tbl.Revision(db.ReadTxn()), rev, rev)
		}
	})
}
