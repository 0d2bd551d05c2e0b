package reconciler_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// TestPruneNeverOverlaps: with many workers, slow operations, frequent
// changes and frequent prunes, no prune runs while an Update or Delete
// does.
func TestPruneNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithWorkers(8), reconciler.WithPruning(50*time.Millisecond))
		f.start()
		defer f.stop()
		for round := range 50 {
			var objs []*testObj
			for i := range 20 {
				id := uint64(round*7+i) % 100
				f.world.Delay(fmt.Sprint(id), time.Duration(i)*time.Millisecond)
				objs = append(objs, pending(id, fmt.Sprint(round)))
			}
			f.upsert(objs...)
			if round%5 == 0 {
				f.r.Prune()
			}
			time.Sleep(20 * time.Millisecond)
		}
		settle(time.Second)
		_, _, prunes := f.world.Counts()
		if prunes < 10 {
			t.Errorf("only %d prunes", prunes)
		}
		if f.world.PruneOverlapped() {
			t.Error("a prune overlapped an operation")
		}
		if err := f.converged(); err != nil {
			t.Error(err)
		}
	})
}

// TestPruneGuard: no prune while the guard objects, even when asked; the
// guard is asked again with backoff; once it agrees, the prune runs.
func TestPruneGuard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var ready atomic.Bool
		f := newFixture(t, fixtureConfig{}, reconciler.WithPruning(time.Hour),
			reconciler.WithPruneGuard(func(txn strata.ReadTxn) error {
				calls.Add(1)
				if !ready.Load() {
					return errors.New("the desired state is not complete yet")
				}
				return nil
			}))
		f.world.Drift("stranger", &testObj{ID: 9})
		f.start()
		defer f.stop()
		settle(10 * time.Second)
		f.r.Prune()
		settle(10 * time.Second)
		if _, _, prunes := f.world.Counts(); prunes != 0 {
			t.Fatalf("%d prunes while the guard objected", prunes)
		}
		if n := calls.Load(); n < 5 {
			t.Errorf("the guard was asked %d times in 20s", n)
		}
		ready.Store(true)
		settle(time.Minute)
		if _, _, prunes := f.world.Counts(); prunes != 1 {
			t.Errorf("%d prunes once the guard agreed, want 1", prunes)
		}
		if _, ok := f.world.Get("stranger"); ok {
			t.Error("the stranger survived")
		}
	})
}

// TestPruneBudget: a periodic prune that would delete more than the
// budget's fraction of the outside world is refused (nothing deleted,
// health Degraded, not retried until the next period); Prune forces it.
func TestPruneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{init: true}, reconciler.WithPruning(time.Hour), reconciler.WithPruneBudget(0.25),
			reconciler.WithMetrics(m))
		f.start()
		defer f.stop()
		var objs []*testObj
		for i := range 10 {
			objs = append(objs, pending(uint64(i), "v"))
		}
		f.upsert(objs...)
		settle(0)
		// Two strangers of twelve: within the budget.
		f.world.Drift("s1", &testObj{ID: 101})
		f.world.Drift("s2", &testObj{ID: 102})
		f.initDone()
		settle(0)
		if n := len(f.world.Contents()); n != 10 {
			t.Fatalf("world holds %d after a prune within budget, want 10", n)
		}
		// The desired state shrinks to one object: deleting 9 of 10 is
		// over the budget.
		f.remove(1, 2, 3, 4, 5, 6, 7, 8, 9)
		settle(0)
		for i := 1; i <= 9; i++ {
			f.world.Drift(fmt.Sprint(i), &testObj{ID: uint64(i)}) // the deletes did not reach the world
		}
		settle(time.Hour)
		if n := len(f.world.Contents()); n != 10 {
			t.Errorf("world holds %d after a prune over budget, want 10 (nothing deleted)", n)
		}
		l, _, err := f.health.get()
		if l != "Degraded" || !errors.Is(err, reconciler.ErrPruneBudget) {
			t.Errorf("health %s %v, want Degraded with ErrPruneBudget", l, err)
		}
		_, _, prunes := f.world.Counts()
		settle(30 * time.Minute)
		if _, _, p := f.world.Counts(); p != prunes {
			t.Errorf("a refused prune was retried %d times within the period", p-prunes)
		}
		if m.prunesOf(reconciler.OutcomeRefused) == 0 {
			t.Error("no refused prune counted")
		}
		f.r.Prune()
		settle(0)
		if keys := f.world.Keys(); strings.Join(keys, ",") != "0" {
			t.Errorf("after a forced prune the world holds %v, want [0]", keys)
		}
		f.expectHealth("OK", "")
	})
}

// TestPruneOnlyWhenInitialized: no prune before the table's initializers
// are done, even when asked.
func TestPruneOnlyWhenInitialized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{init: true}, reconciler.WithPruning(time.Minute))
		f.world.Drift("stranger", &testObj{ID: 1})
		f.start()
		defer f.stop()
		f.r.Prune()
		settle(time.Hour)
		if _, _, p := f.world.Counts(); p != 0 {
			t.Fatalf("%d prunes before the table was initialized", p)
		}
		f.initDone()
		settle(0)
		if _, _, p := f.world.Counts(); p != 1 {
			t.Errorf("%d prunes at initialization, want 1", p)
		}
		settle(time.Hour)
		if _, _, p := f.world.Counts(); p != 61 {
			t.Errorf("%d prunes after an hour at one a minute, want 61", p)
		}
	})
}
