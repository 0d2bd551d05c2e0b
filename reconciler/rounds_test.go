package reconciler_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
)

// roundLog is a World's batch operations that note when each call came
// (fake time since the log was made) and how many objects it had: with
// batch operations a round is one call (two if it holds both updates and
// deletes, at one time).
type roundLog struct {
	world *reconcilertest.World[*testObj]
	start time.Time

	mu    sync.Mutex
	at    []time.Duration
	sizes []int
}

func newRoundLog(world *reconcilertest.World[*testObj]) *roundLog {
	return &roundLog{world: world, start: time.Now()}
}

func (l *roundLog) note(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.start))
	l.sizes = append(l.sizes, n)
}

func (l *roundLog) UpdateBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[*testObj]) {
	l.note(len(batch))
	l.world.UpdateBatch(ctx, txn, batch)
}

func (l *roundLog) DeleteBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[*testObj]) {
	l.note(len(batch))
	l.world.DeleteBatch(ctx, txn, batch)
}

func (l *roundLog) calls() ([]time.Duration, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at), slices.Clone(l.sizes)
}

// newRoundFixture is newFixture with batch operations that log their
// rounds.
func newRoundFixture(t *testing.T, opts ...reconciler.Option) (*fixture, *roundLog) {
	t.Helper()
	db := strata.New()
	tbl := strata.MustNewTable(db, "objects", idIndex)
	f := &fixture{t: t, db: db, tbl: tbl, health: &testHealth{}}
	f.world = reconcilertest.NewWorld(objKey)
	log := newRoundLog(f.world)
	r, err := reconciler.New(db, reconciler.Config[*testObj]{
		Table: tbl, CloneObject: (*testObj).Clone,
		GetObjectStatus: (*testObj).GetStatus, SetObjectStatus: (*testObj).SetStatus,
		Operations: f.world, BatchOperations: log,
	}, append([]reconciler.Option{reconciler.WithJitter(0, nil), reconciler.WithoutRefresh(), reconciler.WithoutPruning()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	return f, log
}

// TestRoundRateLimit: with WithRoundRateLimit(10, 3) and rounds of one
// object, 23 objects written at once are reconciled in 23 rounds: three
// at once (the burst), then one every 100ms (the rate), so 12 rounds in
// the first virtual second, 10 in the second, and the last at 2s; with
// four workers as with one (the limit is the reconciler's). Every object
// is reconciled, once.
func TestRoundRateLimit(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(map[int]string{1: "one worker", 4: "four workers"}[workers], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, log := newRoundFixture(t, reconciler.WithRoundRateLimit(10, 3),
					reconciler.WithRoundSize(1), reconciler.WithWorkers(workers))
				f.start()
				defer f.stop()
				var objs []*testObj
				for i := range 23 {
					objs = append(objs, pending(uint64(i), "v"))
				}
				rev := f.upsert(objs...)
				settle(3 * time.Second)

				at, sizes := log.calls()
				var want []time.Duration
				for i := range 23 {
					want = append(want, time.Duration(max(0, i-2))*100*time.Millisecond)
				}
				if !slices.Equal(at, want) {
					t.Errorf("rounds at %v\nwant        %v", at, want)
				}
				perSecond := map[time.Duration]int{}
				for _, a := range at {
					perSecond[a.Truncate(time.Second)]++
				}
				if perSecond[0] != 12 || perSecond[time.Second] != 10 || perSecond[2*time.Second] != 1 {
					t.Errorf("rounds per virtual second: %v, want 12 (a burst of 3, then 10/s), 10, 1", perSecond)
				}
				if slices.ContainsFunc(sizes, func(n int) bool { return n != 1 }) {
					t.Errorf("round sizes %v, want 1 each", sizes)
				}
				if got, wm, err := f.r.WaitUntilReconciled(context.Background(), rev); err != nil || got < rev || wm != 0 {
					t.Errorf("WaitUntilReconciled = %d, %d, %v", got, wm, err)
				}
				if err := f.converged(); err != nil {
					t.Error(err)
				}
				if up, del, _ := f.world.Counts(); up != 23 || del != 0 {
					t.Errorf("%d updates, %d deletes; want 23, 0", up, del)
				}
			})
		})
	}
}

// TestRoundRateLimitLosesNothing: objects inserted, changed and deleted
// one a millisecond for a virtual second, under a limit of 50 rounds a
// second with no burst, end up all in the world as in the table: the
// rounds come at multiples of 20ms, never two at one time, and take what
// queued meanwhile (far fewer rounds than changes).
func TestRoundRateLimitLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, log := newRoundFixture(t, reconciler.WithRoundRateLimit(50, 1), reconciler.WithWorkers(4))
		f.start()
		defer f.stop()
		var rev strata.Revision
		for i := range 1000 {
			id := uint64(i % 300)
			switch {
			case i%7 == 3 && i > 300:
				if _, _, ok := f.tbl.Get(f.db.ReadTxn(), idIndex.Query(id)); ok {
					rev = f.remove(id)
				}
			default:
				rev = f.upsert(pending(id, "v"+string(rune('a'+i%26))))
			}
			time.Sleep(time.Millisecond)
		}
		settle(time.Second)
		if got, wm, err := f.r.WaitUntilReconciled(context.Background(), rev); err != nil || got < rev || wm != 0 {
			t.Fatalf("WaitUntilReconciled = %d, %d, %v", got, wm, err)
		}
		if err := f.converged(); err != nil {
			t.Error(err)
		}
		at, _ := log.calls()
		times := slices.Compact(slices.Clone(at))
		for i, a := range times {
			if a%(20*time.Millisecond) != 0 {
				t.Fatalf("a round at %v, not at a multiple of 20ms: %v", a, times)
			}
			if i > 0 && a-times[i-1] < 20*time.Millisecond {
				t.Fatalf("rounds at %v and %v: closer than 1/50s with no burst", times[i-1], a)
			}
		}
		if len(times) < 20 {
			t.Errorf("%d rounds: %v", len(times), times)
		}
		up, del, _ := f.world.Counts()
		if up+del <= 2*len(times) {
			t.Errorf("%d operations in %d rounds: the rounds did not gather the changes that queued", up+del, len(times))
		}
	})
}

// TestRoundRateLimitInvalid: a rate that is not positive and finite, or a
// burst below 1, makes New fail with ErrInvalidOption, naming the option.
func TestRoundRateLimitInvalid(t *testing.T) {
	db := strata.New()
	tbl := strata.MustNewTable(db, "objects", idIndex)
	cfg := reconciler.Config[*testObj]{
		Table: tbl, CloneObject: (*testObj).Clone,
		GetObjectStatus: (*testObj).GetStatus, SetObjectStatus: (*testObj).SetStatus,
		Operations: reconcilertest.NewWorld(objKey),
	}
	for _, tc := range []struct {
		rate  float64
		burst int
	}{{0, 1}, {-5, 1}, {math.NaN(), 1}, {math.Inf(1), 1}, {math.Inf(-1), 1}, {10, 0}, {10, -1}} {
		r, err := reconciler.New(db, cfg, reconciler.WithRoundRateLimit(tc.rate, tc.burst))
		if !errors.Is(err, reconciler.ErrInvalidOption) || r != nil {
			t.Errorf("WithRoundRateLimit(%g, %d): New = %v, %v; want ErrInvalidOption", tc.rate, tc.burst, r, err)
		} else if want := "WithRoundRateLimit("; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the option", err)
		}
	}
	if _, err := reconciler.New(db, cfg, reconciler.WithRoundRateLimit(0.5, 1)); err != nil {
		t.Errorf("WithRoundRateLimit(0.5, 1): %v", err)
	}
}
