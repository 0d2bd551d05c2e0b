package reconcilertest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type obj struct {
	Key    string
	Value  string
	Status reconciler.Status
}

func newWorld() *reconcilertest.World[*obj] {
	return reconcilertest.NewWorld(func(o *obj) string { return o.Key }).
		LogRefreshes(func(o *obj) reconciler.Status { return o.Status })
}

var ctx = context.Background()

func TestUpdateDeleteContents(t *testing.T) {
	w := newWorld()
	if err := w.Update(ctx, nil, 1, &obj{Key: "a", Value: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Update(ctx, nil, 2, &obj{Key: "b", Value: "2", Status: reconciler.StatusRefreshing()}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, nil, 3, &obj{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, nil, 4, &obj{Key: "zz"}); err != nil { // deleting what is not there is fine
		t.Fatal(err)
	}
	if got := w.Keys(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("keys %v", got)
	}
	if o, ok := w.Get("b"); !ok || o.Value != "2" {
		t.Errorf("Get(b) = %v, %v", o, ok)
	}
	if c := w.Contents(); len(c) != 1 || c["b"].Value != "2" {
		t.Errorf("contents %v", c)
	}
	if ops := w.Ops(); !slices.Equal(ops, []string{"update(a)", "update-refresh(b)", "delete(a)", "delete(zz)"}) {
		t.Errorf("ops %q", ops)
	}
	if ops := w.TakeOps(); len(ops) != 4 || len(w.Ops()) != 0 {
		t.Errorf("TakeOps %q, then %q", ops, w.Ops())
	}
	if u, d, p := w.Counts(); u != 2 || d != 2 || p != 0 {
		t.Errorf("counts %d %d %d", u, d, p)
	}
}

func TestFaults(t *testing.T) {
	w := newWorld()
	boom := errors.New("boom")
	w.FailNext("a", 2, boom)
	for i, want := range []error{boom, boom, nil} {
		if err := w.Update(ctx, nil, 1, &obj{Key: "a", Value: "x"}); !errors.Is(err, want) && err != want {
			t.Errorf("call %d: %v, want %v", i, err, want)
		}
	}
	if _, ok := w.Get("a"); !ok {
		t.Error("the successful update did not store the object")
	}
	w.FailNext("b", 1, nil)
	if err := w.Delete(ctx, nil, 1, &obj{Key: "b"}); !errors.Is(err, reconcilertest.ErrInjected) {
		t.Errorf("FailNext without an error: %v", err)
	}
	w.FailAlways("c", nil)
	for range 3 {
		if err := w.Update(ctx, nil, 1, &obj{Key: "c"}); !errors.Is(err, reconcilertest.ErrInjected) {
			t.Errorf("FailAlways: %v", err)
		}
	}
	w.Heal("c")
	if err := w.Update(ctx, nil, 1, &obj{Key: "c"}); err != nil {
		t.Errorf("after Heal: %v", err)
	}
	w.SetFaulty(boom)
	if err := w.Update(ctx, nil, 1, &obj{Key: "d"}); !errors.Is(err, boom) {
		t.Errorf("faulty: %v", err)
	}
	if err := w.Prune(ctx, nil, func(func(*obj, strata.Revision) bool) {}); !errors.Is(err, boom) {
		t.Errorf("faulty prune: %v", err)
	}
	w.SetFaulty(nil)
	w.PanicNext("e", 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("PanicNext did not panic")
			}
		}()
		_ = w.Update(ctx, nil, 1, &obj{Key: "e"}) // panics: the error is never returned
	}()
	if err := w.Update(ctx, nil, 1, &obj{Key: "e"}); err != nil {
		t.Errorf("after the panic: %v", err)
	}
	if w.Running() != 0 {
		t.Errorf("%d running after a panic", w.Running())
	}
	if !strings.Contains(strings.Join(w.Ops(), " "), "update(e) panic") {
		t.Errorf("ops %q", w.Ops())
	}
}

func TestDelayBlockConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.Delay("a", time.Second)
		start := time.Now()
		if err := w.Update(ctx, nil, 1, &obj{Key: "a"}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("delay %s", took)
		}
		// A delay gives way to the context.
		c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := w.Update(c, nil, 1, &obj{Key: "a"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("delayed update with a shorter context: %v", err)
		}
		w.Delay("a", 0)

		release := w.Block("k")
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Update(ctx, nil, 1, &obj{Key: "k"}); err != nil {
					t.Error(err)
				}
			}()
		}
		synctest.Wait()
		if n := w.Running(); n != 3 {
			t.Errorf("%d running while blocked", n)
		}
		if err := w.Update(ctx, nil, 1, &obj{Key: "other"}); err != nil {
			t.Error(err)
		}
		changed := w.Changed()
		if err := w.Prune(ctx, nil, func(func(*obj, strata.Revision) bool) {}); err != nil {
			t.Error(err)
		}
		release()
		release() // a second call does nothing
		wg.Wait()
		select {
		case <-changed:
		default:
			t.Error("Changed was not closed")
		}
		if n := w.MaxConcurrentPerKey(); n != 3 {
			t.Errorf("MaxConcurrentPerKey %d, want 3", n)
		}
		if n := w.MaxConcurrent(); n != 4 {
			t.Errorf("MaxConcurrent %d, want 4", n)
		}
		if !w.PruneOverlapped() {
			t.Error("a prune during operations was not reported")
		}
	})
}

func TestPruneAndDrift(t *testing.T) {
	w := newWorld()
	if err := w.Update(ctx, nil, 1, &obj{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	w.Drift("stranger", &obj{Key: "stranger"})
	w.Drift("a", &obj{Key: "a", Value: "drifted"})
	if o, _ := w.Get("a"); o.Value != "drifted" {
		t.Error("Drift did not change the world")
	}
	desired := func(yield func(*obj, strata.Revision) bool) { yield(&obj{Key: "a"}, 1) }
	if err := w.Prune(ctx, nil, desired); err != nil {
		t.Fatal(err)
	}
	if keys := w.Keys(); !slices.Equal(keys, []string{"a"}) {
		t.Errorf("after prune %v", keys)
	}
	if w.PruneOverlapped() {
		t.Error("a lone prune reported as overlapping")
	}
	w.DriftDelete("a")
	if len(w.Contents()) != 0 {
		t.Error("DriftDelete")
	}
	w.FailNextPrunes(1, nil)
	if err := w.Prune(ctx, nil, desired); !errors.Is(err, reconcilertest.ErrInjected) {
		t.Errorf("FailNextPrunes: %v", err)
	}
	if ops := w.Ops(); ops[len(ops)-1] != "prune(n=1) fail" {
		t.Errorf("ops %q", ops)
	}
}

// TestPruneBudget: the world's Prune asks reconciler.CheckPruneBudget, so
// a budget in its context (as the reconciler puts there) holds it back.
func TestPruneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", strata.Index[*obj, string]{
			Name: "key", FromObject: func(o *obj) indexKeySet { return keySet(o.Key) }, FromKey: keyOf, Unique: true,
		})
		w := newWorld()
		for _, k := range []string{"a", "b", "c", "d"} {
			w.Drift(k, &obj{Key: k})
		}
		r, err := reconciler.New(db, reconciler.Config[*obj]{
			Table: tbl, CloneObject: func(o *obj) *obj { c := *o; return &c },
			GetObjectStatus: func(o *obj) reconciler.Status { return o.Status },
			SetObjectStatus: func(o *obj, s reconciler.Status) *obj { o.Status = s; return o },
			Operations:      w,
		}, reconciler.WithPruneBudget(0.5), reconciler.WithPruning(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- r.Run(c, nil) }()
		synctest.Wait()
		if n := len(w.Contents()); n != 4 {
			t.Errorf("a prune of 4 of 4 with a budget of half left %d", n)
		}
		r.Prune()
		synctest.Wait()
		if n := len(w.Contents()); n != 0 {
			t.Errorf("a forced prune left %d", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if ops := w.Ops(); !slices.Equal(ops, []string{"prune(n=0) fail", "prune(n=0)"}) {
			t.Errorf("ops %q", ops)
		}
	})
}

type indexKeySet = index.KeySet

func keySet(s string) index.KeySet { return index.NewKeySet(index.String(s)) }
func keyOf(s string) index.Key     { return index.String(s) }
