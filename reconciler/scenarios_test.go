package reconciler_test

// The scenarios of cilium/statedb's reconciler script tests
// (reconciler/testdata/*.txtar in statedb v0.9.4: incremental, batching,
// pruning, prune_empty, refresh), as Go tests with the same meaning, in
// fake time. Where Strata's reconciler does more (it retries a failed
// prune by itself), the scenario checks that too.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/reconciler"
)

// scenarioOptions are those of statedb's start-reconciler: retries every
// 50ms.
func scenarioOptions(extra ...reconciler.Option) []reconciler.Option {
	return append([]reconciler.Option{reconciler.WithRetry(50*time.Millisecond, 50*time.Millisecond)}, extra...)
}

// TestScenarioIncremental is incremental.txtar; with batch operations, it
// is batching.txtar.
func TestScenarioIncremental(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { scenarioIncremental(t, batch) })
		})
	}
}

func scenarioIncremental(t *testing.T, batch bool) {
	expvar := reconciler.NewExpVar("", false)
	f := newFixture(t, fixtureConfig{batch: batch}, scenarioOptions(reconciler.WithMetrics(expvar))...)
	f.start()
	defer f.stop()

	// Step 1: three healthy objects are updated.
	f.upsert(pending(1, "a"))
	f.upsert(pending(2, "b"))
	f.upsert(pending(3, "c"))
	settle(0)
	f.expectOps("update(1)", "update(2)", "update(3)")
	expectStatuses(t, f, "1:Done", "2:Done", "3:Done")
	f.expectHealth("OK", "OK, 3 object(s)")

	// Step 2: object 1 becomes faulty: it fails and is retried.
	f.world.FailAlways("1", errUpdate)
	f.upsert(pending(1, "a-faulty"))
	settle(60 * time.Millisecond)
	f.expectOps("update(1) fail", "update(1) fail")
	expectStatuses(t, f, "1:Error", "2:Done", "3:Done")
	if got := f.get(1).Status.GetError(); got != "update fail" {
		t.Errorf("status error = %q", got)
	}
	f.expectHealth("Degraded", "1 error(s)")

	// Step 3: back to healthy.
	f.world.Heal("1")
	f.upsert(pending(1, "a"))
	settle(0)
	f.expectOps("update(1)")
	expectStatuses(t, f, "1:Done", "2:Done", "3:Done")
	f.expectHealth("OK", "OK, 3 object(s)")

	// Step 4: delete 1 and 2.
	f.remove(1)
	f.remove(2)
	settle(0)
	f.expectOps("delete(1)", "delete(2)")
	expectStatuses(t, f, "3:Done")

	// Step 5: deleting 3 from a faulty world fails, and is retried.
	f.world.SetFaulty(errors.New("faulty"))
	f.remove(3)
	settle(0)
	f.expectOps("delete(3) fail")
	expectStatuses(t, f)
	f.expectHealth("Degraded", "1 error(s)")

	// Step 6: the world heals; the retry deletes 3.
	f.world.SetFaulty(nil)
	settle(60 * time.Millisecond)
	f.expectOps("delete(3)")
	f.expectHealth("OK", "OK, 0 object(s)")
	if err := f.converged(); err != nil {
		t.Fatal(err)
	}

	// The metrics saw it all.
	out := expvar.String()
	for _, want := range []string{`"failing": 0`, `"delete_error": 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("expvar lacks %s:\n%s", want, out)
		}
	}
	for _, nonzero := range []string{"update_ok", "update_error", "delete_ok", "status_commits", "statuses_written"} {
		if strings.Contains(out, `"`+nonzero+`": 0`) {
			t.Errorf("expvar has %s 0:\n%s", nonzero, out)
		}
	}
}

// waitOps advances fake time, a second at a time, until the world logged
// n operations, for at most limit.
func waitOps(f *fixture, n int, limit time.Duration) {
	f.t.Helper()
	settle(0)
	for waited := time.Duration(0); len(f.world.Ops()) < n; waited += time.Second {
		if waited >= limit {
			f.t.Fatalf("after %s: ops %q, want %d", limit, f.world.Ops(), n)
		}
		settle(time.Second)
	}
}

func expectStatuses(t *testing.T, f *fixture, want ...string) {
	t.Helper()
	got := f.statuses()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("statuses = %v, want %v", got, want)
	}
}

// TestScenarioPruning is pruning.txtar.
func TestScenarioPruning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		expvar := reconciler.NewExpVar("", false)
		f := newFixture(t, fixtureConfig{init: true}, scenarioOptions(reconciler.WithPruning(time.Hour), reconciler.WithMetrics(expvar))...)
		f.start()
		defer f.stop()

		// Before the table is initialized, Prune does nothing.
		f.upsert(pending(1, "a"))
		settle(0)
		f.expectOps("update(1)")
		f.r.Prune()
		f.upsert(pending(2, "b"))
		settle(0)
		f.expectOps("update(2)")

		// Once it is, it prunes at once (the Prune asked for before too:
		// one prune).
		f.world.Drift("stranger", &testObj{ID: 99})
		f.initDone()
		settle(0)
		f.expectOps("prune(n=2)")
		if _, ok := f.world.Get("stranger"); ok {
			t.Error("the prune left the stranger")
		}
		f.expectHealth("OK", "")

		// A failing prune degrades health...
		f.world.SetFaulty(errors.New("prune fail"))
		f.r.Prune()
		settle(0)
		f.expectOps("prune(n=2) fail")
		l, _, err := f.health.get()
		if l != "Degraded" || err == nil || !strings.Contains(err.Error(), "prune fail") {
			t.Errorf("health = %s %v, want Degraded with the prune's error", l, err)
		}
		// ... and, unlike statedb's, is retried with backoff (50ms).
		f.world.SetFaulty(nil)
		settle(60 * time.Millisecond)
		f.expectOps("prune(n=2)")
		f.expectHealth("OK", "")

		// Deleting an object: its Delete, then the prune without it.
		f.remove(1)
		f.r.Prune()
		settle(0)
		f.expectOps("delete(1)", "prune(n=1)")

		// Without objects.
		f.remove(2)
		f.r.Prune()
		settle(0)
		f.expectOps("delete(2)", "prune(n=0)")

		out := expvar.String()
		for _, want := range []string{`"prunes_error": 1`, `"prunes_ok": 4`, `"failing": 0`} {
			if !strings.Contains(out, want) {
				t.Errorf("expvar lacks %s:\n%s", want, out)
			}
		}
		if f.world.PruneOverlapped() {
			t.Error("a prune overlapped an operation")
		}
	})
}

// TestScenarioPruneEmpty is prune_empty.txtar: a table initialized without
// objects is pruned (an empty desired state is a desired state).
func TestScenarioPruneEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{init: true}, scenarioOptions(reconciler.WithPruning(time.Hour))...)
		f.world.Drift("stranger", &testObj{ID: 7})
		f.start()
		defer f.stop()
		settle(0)
		f.expectOps()
		f.initDone()
		settle(0)
		f.expectOps("prune(n=0)")
		if n := len(f.world.Contents()); n != 0 {
			t.Errorf("world holds %d objects after pruning with none desired", n)
		}
		f.expectHealth("OK", "OK, 0 object(s)")
	})
}

// TestScenarioRefresh is refresh.txtar: an object Done long ago is
// refreshed; a failing refresh is retried; it recovers.
func TestScenarioRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, scenarioOptions(reconciler.WithRefresh(time.Minute, 100))...)
		f.start()
		defer f.stop()

		f.upsert(pending(1, "a"))
		settle(0)
		f.expectOps("update(1)")
		expectStatuses(t, f, "1:Done")

		// Done an hour ago (statedb's test says 2000, but fake time starts
		// there): stale, so refreshed.
		old := func() *testObj {
			o := &testObj{ID: 1, Value: "a", Status: reconciler.StatusDone()}
			o.Status.UpdatedAt = time.Now().Add(-time.Hour)
			return o
		}
		f.upsert(old())
		waitOps(f, 1, time.Minute)
		f.expectOps("update-refresh(1)")
		expectStatuses(t, f, "1:Done")

		// A failing refresh fails and is retried (every 50ms), still as a
		// refresh.
		f.world.SetFaulty(errUpdate)
		f.upsert(old())
		waitOps(f, 1, time.Minute)
		settle(60 * time.Millisecond)
		f.expectOps("update-refresh(1) fail", "update-refresh(1) fail")
		expectStatuses(t, f, "1:Error")
		f.expectHealth("Degraded", "1 error(s)")

		// Healthy again: the next retry succeeds.
		f.world.SetFaulty(nil)
		settle(60 * time.Millisecond)
		f.expectOps("update-refresh(1)")
		expectStatuses(t, f, "1:Done")
		f.expectHealth("OK", "OK, 1 object(s)")
	})
}
