package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
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

// TestPruneStrangers: the helper deletes what the desired set lacks, goes
// on past a failed delete and reports it, stops once its context ends,
// and, in a prune of a reconciler with a budget, deletes nothing over the
// budget.
func TestPruneStrangers(t *testing.T) {
	objs := func(ids ...uint64) iter.Seq2[*testObj, strata.Revision] {
		return func(yield func(*testObj, strata.Revision) bool) {
			for _, id := range ids {
				if !yield(&testObj{ID: id}, 1) {
					return
				}
			}
		}
	}
	errGone := errors.New("cannot delete")
	var dels []string
	del := func(k string) error {
		dels = append(dels, k)
		if k == "4" {
			return errGone
		}
		return nil
	}
	n, err := reconciler.PruneStrangers(context.Background(), objs(1, 2), objKey, slices.Values([]string{"1", "2", "3", "4", "5"}), del)
	if n != 2 || !errors.Is(err, errGone) || !slices.Equal(dels, []string{"3", "4", "5"}) {
		t.Errorf("deleted %d (%v), err %v; want 2 of 3, 4 failing", n, dels, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dels = nil
	n, err = reconciler.PruneStrangers(ctx, objs(), objKey, slices.Values([]string{"1"}), del)
	if n != 0 || !errors.Is(err, context.Canceled) || len(dels) != 0 {
		t.Errorf("after its context ended: deleted %d (%v), err %v", n, dels, err)
	}

	// Within a reconciler's prune, the budget holds.
	synctest.Test(t, func(t *testing.T) {
		ops := &strangerOps{held: map[string]bool{"0": true, "1": true, "2": true, "3": true}}
		db, tbl, r, stop := startWith(t, ops, reconciler.WithPruning(time.Hour), reconciler.WithPruneBudget(0.5))
		defer stop()
		insertOne(t, db, tbl, &testObj{ID: 0, Status: reconciler.StatusPending()})
		r.Prune() // forced: no budget
		synctest.Wait()
		if got := ops.keys(); !slices.Equal(got, []string{"0"}) {
			t.Fatalf("a forced prune left %v, want [0]", got)
		}
		ops.set("1", "2")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := ops.keys(); !slices.Equal(got, []string{"0", "1", "2"}) || !errors.Is(ops.lastErr(), reconciler.ErrPruneBudget) {
			t.Errorf("a periodic prune of 2 of 3 with a budget of half left %v (%v); want nothing deleted", got, ops.lastErr())
		}
	})
}

// strangerOps is an outside world of keys that prunes with PruneStrangers.
type strangerOps struct {
	mu   sync.Mutex
	held map[string]bool
	err  error
}

func (o *strangerOps) Update(_ context.Context, _ strata.ReadTxn, _ strata.Revision, obj *testObj) error {
	o.set(objKey(obj))
	return nil
}

func (o *strangerOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}

func (o *strangerOps) Prune(ctx context.Context, _ strata.ReadTxn, desired iter.Seq2[*testObj, strata.Revision]) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, o.err = reconciler.PruneStrangers(ctx, desired, objKey, maps.Keys(o.held), func(k string) error {
		delete(o.held, k)
		return nil
	})
	return o.err
}

func (o *strangerOps) set(keys ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		o.held[k] = true
	}
}

func (o *strangerOps) keys() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.held))
}

func (o *strangerOps) lastErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// TestPruneBudgetNotAsked: a reconciler with a prune budget whose Prune
// never asks CheckPruneBudget cannot enforce it, and says so in a warning,
// once; one whose Prune asks (with nothing to delete too) does not warn,
// nor does one without a budget.
func TestPruneBudgetNotAsked(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget bool
		asks   bool
		warns  int
	}{
		{"budget/not-asked", true, false, 1},
		{"budget/asked", true, true, 0},
		{"no-budget", false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				opts := []reconciler.Option{reconciler.WithPruning(time.Minute),
					reconciler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
				if c.budget {
					opts = append(opts, reconciler.WithPruneBudget(0.1))
				}
				ops := &askingOps{asks: c.asks}
				_, _, _, stop := startWith(t, ops, opts...)
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				stop()
				if n := ops.prunes.Load(); n < 10 {
					t.Fatalf("%d prunes in 10 minutes at one a minute", n)
				}
				if n := strings.Count(logs.String(), "did not call CheckPruneBudget"); n != c.warns {
					t.Errorf("%d warnings, want %d:\n%s", n, c.warns, logs.String())
				}
			})
		})
	}
}

// askingOps prunes nothing, asking CheckPruneBudget if asks is set.
type askingOps struct {
	asks   bool
	prunes atomic.Int32
}

func (o *askingOps) Update(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}

func (o *askingOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}

func (o *askingOps) Prune(ctx context.Context, _ strata.ReadTxn, _ iter.Seq2[*testObj, strata.Revision]) error {
	o.prunes.Add(1)
	if o.asks {
		return reconciler.CheckPruneBudget(ctx, 0, 0)
	}
	return nil
}

// syncBuffer is a bytes.Buffer that several goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
