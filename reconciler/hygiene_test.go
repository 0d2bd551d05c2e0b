package reconciler_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// TestOpTimeout: an operation that does not return is cancelled at the
// operation timeout (1 minute by default), fails with ErrTimeout, and is
// retried; the context reports the deadline.
func TestOpTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []reconciler.Option
		timeout time.Duration
	}{
		{"default", nil, time.Minute},
		{"5s", []reconciler.Option{reconciler.WithOpTimeout(5 * time.Second)}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var deadlines []time.Duration
				ops := newTimedOps(nil)
				ops.fn = func(o *testObj, attempt int) error { return nil }
				hang := &ctxOps{timedOps: ops, hangs: 1, deadlines: &deadlines}
				db, tbl, r, stop := startWith(t, hang, tc.opts...)
				defer stop()
				start := time.Now()
				insertOne(t, db, tbl, pending(1, "v"))
				synctest.Wait()
				if in, _ := r.Inspect(index.Uint64(1)); in.Phase != reconciler.PhaseInFlight {
					t.Fatalf("Inspect: %+v", in)
				}
				time.Sleep(tc.timeout / 2)
				synctest.Wait()
				if s := r.Stats(); s.LongestRunning < tc.timeout/2-time.Second {
					t.Errorf("LongestRunning %s, want about %s", s.LongestRunning, tc.timeout/2)
				}
				time.Sleep(tc.timeout/2 + time.Millisecond)
				synctest.Wait()
				st := getOne(t, db, tbl, 1).Status
				if st.Kind != reconciler.StatusKindError || !strings.Contains(st.GetError(), reconciler.ErrTimeout.Error()) {
					t.Fatalf("status after the timeout: %+v", st)
				}
				hang.mu.Lock()
				if hang.cancelledAfter != tc.timeout {
					t.Errorf("cancelled after %s, want %s", hang.cancelledAfter, tc.timeout)
				}
				if len(deadlines) == 0 || deadlines[0] != tc.timeout {
					t.Errorf("deadline %v, want %s after the start", deadlines, tc.timeout)
				}
				hang.mu.Unlock()
				time.Sleep(time.Second)
				synctest.Wait()
				if st := getOne(t, db, tbl, 1).Status; st.Kind != reconciler.StatusKindDone {
					t.Errorf("the retry: %+v", st)
				}
				_ = start
			})
		})
	}
}

// ctxOps hangs its first hangs Updates until their context is done.
type ctxOps struct {
	*timedOps
	mu             sync.Mutex
	hangs          int
	deadlines      *[]time.Duration
	cancelledAfter time.Duration
}

func (o *ctxOps) Update(ctx context.Context, txn strataReadTxn, rev strataRevision, obj *testObj) error {
	start := time.Now()
	o.mu.Lock()
	if d, ok := ctx.Deadline(); ok {
		*o.deadlines = append(*o.deadlines, d.Sub(start))
	}
	hang := o.hangs > 0
	o.hangs--
	o.mu.Unlock()
	if hang {
		<-ctx.Done()
		o.mu.Lock()
		o.cancelledAfter = time.Since(start)
		o.mu.Unlock()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errors.New("cancelled, but not by a deadline")
		}
		return ctx.Err()
	}
	return o.timedOps.Update(ctx, txn, rev, obj)
}

// TestPanicIsAnError: a panicking operation fails (ErrPanic), is counted,
// and the reconciler goes on: the retry succeeds, other objects are
// reconciled.
func TestPanicIsAnError(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "batch"}[batch], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newRecordingMetrics()
				f := newFixture(t, fixtureConfig{batch: batch}, reconciler.WithMetrics(m))
				f.start()
				defer f.stop()
				f.world.PanicNext("1", 1)
				f.upsert(pending(1, "v"))
				settle(0)
				st := f.get(1).Status
				if st.Kind != reconciler.StatusKindError || !strings.Contains(st.GetError(), reconciler.ErrPanic.Error()) {
					t.Fatalf("status after a panic: %+v", st)
				}
				if n := m.count("update", "panic"); n != 1 {
					t.Errorf("%d panics counted", n)
				}
				f.upsert(pending(2, "v"))
				settle(time.Second)
				if err := f.converged(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// TestDrain: at shutdown Run waits for the operations in flight (up to
// the drain timeout), writes their statuses, and returns; past the drain
// timeout it cancels them, and leaves their objects Pending for the next
// run.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithWorkers(2), reconciler.WithDrainTimeout(20*time.Second))
		f.start()
		f.world.Delay("1", 10*time.Second)
		release := f.world.Block("2")
		defer release()
		f.upsert(pending(1, "v"), pending(2, "v"))
		settle(time.Second)
		start := time.Now()
		f.stop()
		if took := time.Since(start); took != 20*time.Second {
			t.Errorf("Run returned after %s, want the drain timeout (20s)", took)
		}
		if st := f.get(1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("the operation that finished during the drain: %+v", st)
		}
		if st := f.get(2).Status; st.Kind != reconciler.StatusKindPending {
			t.Errorf("the cancelled operation: %+v, want Pending", st)
		}
		if _, ok := f.world.Get("2"); ok {
			t.Error("the cancelled operation changed the world")
		}
	})
}

// TestDrainQuick: without slow operations, Run returns at once.
func TestDrainQuick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.start()
		f.world.Delay("1", 3*time.Second)
		f.upsert(pending(1, "v"))
		settle(time.Second)
		start := time.Now()
		f.stop()
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("Run returned after %s, want the rest of the operation (2s)", took)
		}
		if st := f.get(1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("status %+v", st)
		}
	})
}

// TestPauseResume: Pause returns once no operation runs, and none starts
// until Resume; changes meanwhile are queued.
func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithWorkers(4))
		f.start()
		defer f.stop()
		f.world.Delay("1", 10*time.Second)
		f.upsert(pending(1, "v"))
		settle(time.Second)
		start := time.Now()
		if err := f.r.Pause(context.Background()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 9*time.Second {
			t.Errorf("Pause returned after %s, want when the operation ended (9s)", took)
		}
		if n := f.world.Running(); n != 0 {
			t.Errorf("%d operations run after Pause", n)
		}
		f.upsert(pending(2, "v"), pending(3, "v"))
		settle(time.Hour)
		f.world.TakeOps()
		if up, _, _ := f.world.Counts(); up != 1 {
			t.Errorf("%d updates while paused", up)
		}
		if s := f.r.Stats(); !s.Paused || s.Queued[reconciler.LaneChanges] != 2 {
			t.Errorf("stats while paused: %+v", s)
		}
		// A second Pause needs a second Resume.
		if err := f.r.Pause(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.r.Resume()
		settle(time.Second)
		if up, _, _ := f.world.Counts(); up != 1 {
			t.Errorf("%d updates with one Pause left", up)
		}
		f.r.Resume()
		settle(time.Second)
		f.expectOpsAnyOrder("update(2)", "update(3)")
		if err := f.converged(); err != nil {
			t.Error(err)
		}
		// A Pause whose context ends first undoes itself.
		release := f.world.Block("4")
		f.upsert(pending(4, "v"))
		settle(0)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := f.r.Pause(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Pause with a blocked operation: %v", err)
		}
		release()
		f.upsert(pending(5, "v"))
		settle(time.Second)
		if f.r.Stats().Paused {
			t.Error("a failed Pause left the reconciler paused")
		}
		if err := f.converged(); err != nil {
			t.Error(err)
		}
	})
}
