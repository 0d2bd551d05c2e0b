package reconciler_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// TestNoStarvation saturates the changes lane (new objects arrive twice as
// fast as the one worker can reconcile them) and checks that retries and
// refreshes are still served, promptly, while changes wait.
func TestNoStarvation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			failing   = 1_000_000 // fails its first three attempts
			refreshed = 2_000_000 // Done long ago: refreshed at start
		)
		ops := newTimedOps(func(o *testObj, attempt int) error {
			time.Sleep(10 * time.Millisecond)
			if o.ID == failing && attempt <= 3 {
				return errUpdate
			}
			return nil
		})
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		old := &testObj{ID: refreshed, Status: reconciler.StatusDone()}
		old.Status.UpdatedAt = time.Now().Add(-time.Hour)
		insertOne(t, db, tbl, old)
		r, stop := startOn(t, db, tbl, ops, reconciler.WithRefresh(time.Hour, 100))
		defer stop()

		ctx, cancel := context.WithCancel(context.Background())
		produced := make(chan struct{})
		go func() {
			defer close(produced)
			id := uint64(0)
			for ctx.Err() == nil {
				wtxn := db.WriteTxn(tbl)
				for range 20 {
					mustInsert(t, tbl, wtxn, pending(id, "v"))
					id++
				}
				mustCommit(t, wtxn)
				time.Sleep(100 * time.Millisecond)
			}
		}()
		time.Sleep(50 * time.Millisecond)
		insertOne(t, db, tbl, pending(failing, "v"))
		time.Sleep(10 * time.Second)
		cancel()
		<-produced
		stats := r.Stats()
		if stats.Queued[reconciler.LaneChanges] < 500 {
			t.Fatalf("the changes lane holds %d: not saturated", stats.Queued[reconciler.LaneChanges])
		}
		if n := len(ops.at(refreshed)); n != 1 {
			t.Errorf("the stale object was refreshed %d times in 10s of saturation, want once", n)
		}
		if at := ops.at(refreshed); len(at) > 0 && at[0] > 3*time.Second {
			t.Errorf("the refresh waited until %s", at[0])
		}
		at := ops.at(failing)
		if len(at) != 4 {
			t.Fatalf("the failing object ran %d times, want 4 (3 failures and a success)", len(at))
		}
		// Each retry is due 100, 200, 400ms after the failure; it may
		// wait for the lanes' turn, never past the aging limit (2s).
		for i, g := range gaps(at) {
			backoff := 100 * time.Millisecond << i
			if g < backoff || g > backoff+2*time.Second+50*time.Millisecond {
				t.Errorf("retry %d came %s after the failure, want within [%s, %s+2s]", i+1, g, backoff, backoff)
			}
		}
		if st := getOne(t, db, tbl, failing).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("failing object: %+v", st)
		}
	})
}

// TestChangesFirst: with work in every lane, new changes get most of the
// worker, by the lanes' weights (8:2:1), and the other lanes some.
func TestChangesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		ops := newTimedOps(func(o *testObj, _ int) error {
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			order = append(order, o.Value)
			mu.Unlock()
			return nil
		})
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		wtxn := db.WriteTxn(tbl)
		for i := range 100 {
			// Failed before the start, due for a retry at once.
			s := reconciler.StatusError(errUpdate)
			s.UpdatedAt = time.Now().Add(-time.Hour)
			mustInsert(t, tbl, wtxn, &testObj{ID: 1000 + uint64(i), Value: "retry", Status: s})
			// Done before the start: refreshed.
			d := reconciler.StatusDone()
			d.UpdatedAt = time.Now().Add(-time.Minute)
			mustInsert(t, tbl, wtxn, &testObj{ID: 2000 + uint64(i), Value: "refresh", Status: d})
			mustInsert(t, tbl, wtxn, pending(uint64(i), "change"))
		}
		mustCommit(t, wtxn)
		r, err := reconciler.New(db, reconciler.Config[*testObj]{
			Table: tbl, CloneObject: (*testObj).Clone, GetObjectStatus: (*testObj).GetStatus,
			SetObjectStatus: (*testObj).SetStatus, Operations: ops,
		}, reconciler.WithoutPruning(), reconciler.WithRefresh(time.Hour, 10000), reconciler.WithJitter(0, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Pause(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx, nil) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		q := r.Stats().Queued
		if q[reconciler.LaneChanges] != 100 || q[reconciler.LaneRetries] != 100 || q[reconciler.LaneBackground] != 100 {
			t.Fatalf("queued %v, want 100 in each lane", q)
		}
		r.Resume()
		time.Sleep(550 * time.Millisecond)
		synctest.Wait()
		counts := map[string]int{}
		mu.Lock()
		defer mu.Unlock()
		for _, v := range order[:55] {
			counts[v]++
		}
		// 55 picks at 8:2:1: 40, 10, 5 (give or take two: the lanes'
		// oldest items waited a little differently).
		near := func(got, want int) bool { return got >= want-2 && got <= want+2 }
		if !near(counts["change"], 40) || !near(counts["retry"], 10) || !near(counts["refresh"], 5) {
			t.Errorf("the first 55 operations with all lanes full: %v; want change 40, retry 10, refresh 5", counts)
		}
	})
}
