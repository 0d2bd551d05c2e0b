package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// timedOps records when each Update ran, and returns what fn says.
type timedOps struct {
	mu    sync.Mutex
	start time.Time
	times map[uint64][]time.Duration
	fn    func(o *testObj, attempt int) error
}

func newTimedOps(fn func(o *testObj, attempt int) error) *timedOps {
	return &timedOps{start: time.Now(), times: map[uint64][]time.Duration{}, fn: fn}
}

func (o *timedOps) Update(_ context.Context, _ strata.ReadTxn, _ strata.Revision, obj *testObj) error {
	o.mu.Lock()
	o.times[obj.ID] = append(o.times[obj.ID], time.Since(o.start))
	n := len(o.times[obj.ID])
	o.mu.Unlock()
	return o.fn(obj, n)
}

func (o *timedOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}
func (o *timedOps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*testObj, strata.Revision]) error {
	return nil
}

func (o *timedOps) at(id uint64) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.times[id])
}

// startWith runs a reconciler of a new table with ops.
func startWith(t *testing.T, ops reconciler.Operations[*testObj], opts ...reconciler.Option) (*strata.DB, strata.RWTable[*testObj], *reconciler.Reconciler[*testObj], func()) {
	t.Helper()
	db := strata.New()
	tbl := strata.MustNewTable(db, "objects", idIndex)
	r, stop := startOn(t, db, tbl, ops, opts...)
	return db, tbl, r, stop
}

func startOn(t *testing.T, db *strata.DB, tbl strata.RWTable[*testObj], ops reconciler.Operations[*testObj], opts ...reconciler.Option) (*reconciler.Reconciler[*testObj], func()) {
	t.Helper()
	r, err := reconciler.New(db, reconciler.Config[*testObj]{
		Table: tbl, CloneObject: (*testObj).Clone, GetObjectStatus: (*testObj).GetStatus,
		SetObjectStatus: (*testObj).SetStatus, Operations: ops,
	}, append([]reconciler.Option{reconciler.WithoutPruning(), reconciler.WithoutRefresh(), reconciler.WithJitter(0, nil)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()
	return r, func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func insertOne(t testing.TB, db *strata.DB, tbl strata.RWTable[*testObj], o *testObj) strata.Revision {
	t.Helper()
	wtxn := db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, o)
	rev := tbl.Revision(wtxn)
	mustCommit(t, wtxn)
	return rev
}

func getOne(t testing.TB, db *strata.DB, tbl strata.RWTable[*testObj], id uint64) *testObj {
	t.Helper()
	o, _, ok := tbl.Get(db.ReadTxn(), idIndex.Query(id))
	if !ok {
		t.Fatalf("no object %d", id)
	}
	return o
}

func gaps(times []time.Duration) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(times); i++ {
		out = append(out, times[i]-times[i-1])
	}
	return out
}

// TestBackoff: a failing object is retried after 100ms, 200ms, 400ms, ...
// up to a minute; its status counts the attempts; a change of the object
// starts the backoff over.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ops := newTimedOps(func(o *testObj, _ int) error {
			if o.Value == "bad" {
				return errUpdate
			}
			return nil
		})
		db, tbl, _, stop := startWith(t, ops)
		defer stop()
		insertOne(t, db, tbl, pending(1, "bad"))
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200}
		for i := range want {
			want[i] *= time.Millisecond
		}
		g := gaps(ops.at(1))
		if len(g) < len(want)+2 || !slices.Equal(g[:len(want)], want) || g[len(want)] != time.Minute || g[len(want)+1] != time.Minute {
			t.Fatalf("retry gaps %v, want %v then 1m", g, want)
		}
		st := getOne(t, db, tbl, 1).Status
		if st.Kind != reconciler.StatusKindError || int(st.Attempts) != len(g)+1 || st.GetError() != "update fail" {
			t.Errorf("status %+v after %d attempts", st, len(g)+1)
		}

		// A change resets the backoff.
		n := len(ops.at(1))
		insertOne(t, db, tbl, pending(1, "bad"))
		time.Sleep(350 * time.Millisecond)
		synctest.Wait()
		if g := gaps(ops.at(1)[n:]); !slices.Equal(g, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
			t.Errorf("after a change, gaps %v, want [100ms 200ms]", g)
		}
		if st := getOne(t, db, tbl, 1).Status; st.Attempts != 3 {
			t.Errorf("after a change and 3 attempts, status counts %d", st.Attempts)
		}
		insertOne(t, db, tbl, pending(1, "good"))
		synctest.Wait()
		if st := getOne(t, db, tbl, 1).Status; st.Kind != reconciler.StatusKindDone || st.Attempts != 0 {
			t.Errorf("after success: %+v", st)
		}
	})
}

// TestBackoffJitter: with jitter, the retries of many objects spread
// around the backoff, within its bounds, deterministically for a seed.
func TestBackoffJitter(t *testing.T) {
	run := func(seed uint64) [][]time.Duration {
		var out [][]time.Duration
		synctest.Test(t, func(t *testing.T) {
			ops := newTimedOps(func(*testObj, int) error { return errUpdate })
			db, tbl, _, stop := startWith(t, ops, reconciler.WithJitter(0.2, rand.New(rand.NewPCG(seed, 1))))
			defer stop()
			wtxn := db.WriteTxn(tbl)
			for i := range 20 {
				mustInsert(t, tbl, wtxn, pending(uint64(i), "v"))
			}
			mustCommit(t, wtxn)
			time.Sleep(2 * time.Second)
			synctest.Wait()
			for i := range 20 {
				g := gaps(ops.at(uint64(i)))
				if len(g) < 3 {
					t.Fatalf("object %d: gaps %v", i, g)
				}
				for j, d := range g[:3] {
					base := 100 * time.Millisecond << j
					if d < base*8/10 || d > base*12/10 {
						t.Errorf("object %d retry %d after %s, want within 20%% of %s", i, j, d, base)
					}
				}
				out = append(out, g[:3])
			}
		})
		return out
	}
	a, b, c := run(1), run(1), run(2)
	distinct := map[time.Duration]bool{}
	for _, g := range a {
		distinct[g[0]] = true
	}
	if len(distinct) < 10 {
		t.Errorf("first retries of 20 objects take %d distinct delays: jitter does not spread them", len(distinct))
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave different jitter")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds gave the same jitter")
	}
}

// TestTerminal: a Terminal error is not retried until the object changes.
func TestTerminal(t *testing.T) {
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
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(ops.at(1)); n != 1 {
			t.Errorf("a terminal failure ran %d times in an hour", n)
		}
		st := getOne(t, db, tbl, 1).Status
		if st.Kind != reconciler.StatusKindError || !st.Terminal || st.GetError() != "no such thing" || st.Attempts != 1 {
			t.Errorf("status %+v", st)
		}
		if _, low, _ := r.WaitUntilReconciled(context.Background(), rev); low != rev {
			t.Errorf("retry low watermark %d, want the failed revision %d", low, rev)
		}
		in, ok := r.Inspect(index.Uint64(1))
		if !ok || in.Phase != reconciler.PhaseFailed || in.Attempts != 1 || in.LastError == nil {
			t.Errorf("Inspect = %+v", in)
		}
		insertOne(t, db, tbl, pending(1, "good"))
		synctest.Wait()
		if n := len(ops.at(1)); n != 2 {
			t.Errorf("after a change: %d attempts, want 2", n)
		}
		if st := getOne(t, db, tbl, 1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("status %+v", st)
		}
	})
}

// TestRetryAfter: RetryAfter's delay replaces the backoff, even with an
// error (controller-runtime#1720 dropped it).
func TestRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ops := newTimedOps(func(_ *testObj, attempt int) error {
			if attempt < 3 {
				return reconciler.RetryAfter(7*time.Second, errors.New("busy"))
			}
			return nil
		})
		db, tbl, _, stop := startWith(t, ops)
		defer stop()
		insertOne(t, db, tbl, pending(1, "v"))
		time.Sleep(time.Minute)
		synctest.Wait()
		if g := gaps(ops.at(1)); !slices.Equal(g, []time.Duration{7 * time.Second, 7 * time.Second}) {
			t.Errorf("gaps %v, want [7s 7s]", g)
		}
		if st := getOne(t, db, tbl, 1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("status %+v", st)
		}
	})
}

// TestRequeue: Requeue succeeds (Done) and runs the operation again after
// its delay, as a refresh.
func TestRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var kinds []reconciler.StatusKind
		ops := newTimedOps(func(o *testObj, attempt int) error {
			mu.Lock()
			kinds = append(kinds, o.Status.Kind)
			mu.Unlock()
			if attempt < 3 {
				return reconciler.Requeue(30 * time.Second)
			}
			return nil
		})
		db, tbl, _, stop := startWith(t, ops)
		defer stop()
		insertOne(t, db, tbl, pending(1, "v"))
		synctest.Wait()
		if st := getOne(t, db, tbl, 1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("after a requeue, status %+v, want Done", st)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if g := gaps(ops.at(1)); !slices.Equal(g, []time.Duration{30 * time.Second, 30 * time.Second}) {
			t.Errorf("gaps %v, want [30s 30s]", g)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(kinds, []reconciler.StatusKind{reconciler.StatusKindPending, reconciler.StatusKindRefreshing, reconciler.StatusKindRefreshing}) {
			t.Errorf("Update saw %v", kinds)
		}
	})
}

// TestRestartResumesBackoff: a new reconciler finds objects in Error and
// retries them with the backoff of their attempts, not at once and not
// never (statedb forgets them).
func TestRestartResumesBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		fail := func(*testObj, int) error { return errUpdate }
		ops1 := newTimedOps(fail)
		r1, stop1 := startOn(t, db, tbl, ops1)
		insertOne(t, db, tbl, pending(1, "v"))
		// Attempts at 0, 100, 300, 700ms: four, the next due 800ms later.
		time.Sleep(750 * time.Millisecond)
		synctest.Wait()
		stop1()
		_ = r1
		st := getOne(t, db, tbl, 1).Status
		if st.Kind != reconciler.StatusKindError || st.Attempts != 4 {
			t.Fatalf("before restart: %+v", st)
		}
		failedAt := st.UpdatedAt

		// Objects that failed long ago, with their backoff long passed.
		wtxn := db.WriteTxn(tbl)
		for i := uint64(100); i < 200; i++ {
			s := reconciler.StatusError(errUpdate)
			s.Attempts, s.UpdatedAt = 6, time.Now().Add(-time.Hour) // backoff 3.2s
			mustInsert(t, tbl, wtxn, &testObj{ID: i, Status: s})
		}
		mustCommit(t, wtxn)

		ops2 := newTimedOps(func(o *testObj, _ int) error {
			if o.ID == 1 {
				return errUpdate
			}
			return nil
		})
		r2, stop2 := startOn(t, db, tbl, ops2)
		defer stop2()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		first := ops2.at(1)
		if len(first) == 0 {
			t.Fatal("the object in Error was not retried after the restart")
		}
		if got, want := ops2.start.Add(first[0]), failedAt.Add(800*time.Millisecond); got.Before(want) {
			t.Errorf("first retry after restart at %s, before its backoff ended at %s", got.Sub(failedAt), want.Sub(failedAt))
		}
		if st := getOne(t, db, tbl, 1).Status; st.Attempts < 5 {
			t.Errorf("attempts went from 4 to %d: the count was not resumed", st.Attempts)
		}
		// The old failures are spread over their backoff, not all at once.
		var at []time.Duration
		for i := uint64(100); i < 200; i++ {
			ts := ops2.at(i)
			if len(ts) != 1 {
				t.Fatalf("object %d retried %d times", i, len(ts))
			}
			at = append(at, ts[0])
		}
		slices.Sort(at)
		if at[len(at)-1]-at[0] < time.Second {
			t.Errorf("100 old failures retried within %s: all at once", at[len(at)-1]-at[0])
		}
		if at[len(at)-1] > 3200*time.Millisecond {
			t.Errorf("an old failure waited %s, more than its backoff", at[len(at)-1])
		}
		if in, ok := r2.Inspect(index.Uint64(1)); !ok || in.Phase != reconciler.PhaseBackoff || in.NextAttempt.IsZero() {
			t.Errorf("Inspect = %+v", in)
		}
	})
}
