package reconciler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// TestInspect follows one object through its phases.
func TestInspect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		key := index.Uint64(1)
		if in, ok := f.r.Inspect(key); ok || in.Phase != reconciler.PhaseAbsent {
			t.Errorf("unknown key: %+v, %v", in, ok)
		}
		// Written before Run: not read yet.
		f.upsert(pending(1, "v"))
		if in, ok := f.r.Inspect(key); !ok || in.Phase != reconciler.PhaseUnseen || in.Status.Kind != reconciler.StatusKindPending {
			t.Errorf("before Run: %+v", in)
		}
		if err := f.r.Pause(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.start()
		defer f.stop()
		settle(3 * time.Second)
		in, ok := f.r.Inspect(key)
		if !ok || in.Phase != reconciler.PhaseQueued || in.Lane != reconciler.LaneChanges || in.Waiting != 3*time.Second {
			t.Errorf("paused: %+v", in)
		}
		release := f.world.Block("1")
		f.world.FailNext("1", 1, errUpdate)
		f.r.Resume()
		settle(0)
		if in, _ := f.r.Inspect(key); in.Phase != reconciler.PhaseInFlight {
			t.Errorf("running: %+v", in)
		}
		release()
		settle(0)
		in, _ = f.r.Inspect(key)
		if in.Phase != reconciler.PhaseBackoff || in.Attempts != 1 || !errors.Is(in.LastError, errUpdate) ||
			!in.NextAttempt.Equal(time.Now().Add(100*time.Millisecond)) || in.Status.Kind != reconciler.StatusKindError {
			t.Errorf("failed: %+v", in)
		}
		settle(time.Second)
		in, ok = f.r.Inspect(key)
		if !ok || in.Phase != reconciler.PhaseIdle || in.Status.Kind != reconciler.StatusKindDone || in.Attempts != 0 {
			t.Errorf("done: %+v", in)
		}
		f.remove(1)
		settle(0)
		if in, ok := f.r.Inspect(key); ok || in.Phase != reconciler.PhaseAbsent {
			t.Errorf("deleted: %+v", in)
		}
	})
}

// TestStats checks the figures while work waits, runs and fails.
func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{}, reconciler.WithMetrics(m), reconciler.WithRetry(10*time.Second, time.Minute))
		f.start()
		defer f.stop()
		release := f.world.Block("1")
		f.world.FailAlways("2", errUpdate)
		f.upsert(pending(2, "v"))
		settle(0)
		f.upsert(pending(1, "v"))
		settle(0)
		rev := f.upsert(pending(3, "v"), pending(4, "v"))
		settle(2 * time.Second)
		s := f.r.Stats()
		if s.InFlight != 1 || s.Queued[reconciler.LaneChanges] != 2 || s.Failing != 1 || s.Delayed != 1 {
			t.Errorf("stats %+v", s)
		}
		if s.LongestRunning != 2*time.Second || s.OldestPending != 2*time.Second {
			t.Errorf("longest running %s, oldest pending %s; want 2s", s.LongestRunning, s.OldestPending)
		}
		if s.Lag == 0 || s.Revision >= rev {
			t.Errorf("progress %d, lag %d with work outstanding", s.Revision, s.Lag)
		}
		if s.RetryLowWatermark == 0 {
			t.Error("no retry low watermark with a failing object")
		}
		release()
		settle(0)
		s = f.r.Stats()
		if s.InFlight != 0 || s.Queued != [3]int{} || s.Failing != 1 || s.Lag != 0 || s.Revision < rev || s.OldestPending != 0 {
			t.Errorf("stats after the work %+v", s)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.progress) == 0 {
			t.Error("no Progress reported")
		}
	})
}

// TestMetrics checks what a Metrics receives.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{init: true}, reconciler.WithMetrics(m), reconciler.WithPruning(time.Hour),
			reconciler.WithRefresh(time.Hour, 100))
		f.start()
		defer f.stop()
		f.world.Delay("1", time.Second)
		f.world.FailNext("2", 1, errUpdate)
		f.upsert(pending(1, "v"), pending(2, "v"))
		settle(2 * time.Second)
		f.remove(1)
		f.initDone()
		settle(2 * time.Hour)
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, want := range []string{"update/ok", "update/error", "delete/ok"} {
			if m.ops[want] == 0 {
				t.Errorf("no %s operation reported: %v", want, m.ops)
			}
		}
		longest := time.Duration(0)
		for _, d := range m.durations {
			longest = max(longest, d)
		}
		if longest != time.Second {
			t.Errorf("longest operation reported %s, want 1s", longest)
		}
		if m.waits[reconciler.LaneChanges] == 0 || m.waits[reconciler.LaneRetries] == 0 || m.waits[reconciler.LaneBackground] == 0 {
			t.Errorf("queue waits by lane %v", m.waits)
		}
		if len(m.reconciled) < 2 || m.commits == 0 || m.written < 2 {
			t.Errorf("reconciled %d, commits %d, written %d", len(m.reconciled), m.commits, m.written)
		}
		if m.prunes[reconciler.OutcomeOK] < 2 || m.marked == 0 {
			t.Errorf("prunes %v, refresh marks %d", m.prunes, m.marked)
		}
	})
}

// TestChangeToDone: the change-to-Done latency runs from the change (its
// Pending status's UpdatedAt), not from when the reconciler read it: a
// change made while no reconciler ran counts its whole wait, and a failed
// first attempt counts its backoff. A Pending status without a time is not
// reported, nor is a delete.
func TestChangeToDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{}, reconciler.WithMetrics(m), reconciler.WithRetry(300*time.Millisecond, time.Second))
		f.upsert(pending(1, "v"))
		time.Sleep(5 * time.Second)
		f.start()
		defer f.stop()
		settle(0)
		f.world.FailNext("2", 1, errUpdate)
		f.upsert(pending(2, "v"))
		settle(time.Second)
		f.upsert(&testObj{ID: 3, Status: reconciler.Status{Kind: reconciler.StatusKindPending, ID: 77}})
		settle(0)
		f.remove(1)
		settle(0)
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		// In fake time the operations and writes take no time: the
		// figures are exactly the waits.
		if want := []time.Duration{5 * time.Second, 300 * time.Millisecond}; !slices.Equal(m.reconciled, want) {
			t.Errorf("change-to-Done latencies %v, want %v", m.reconciled, want)
		}
	})
}

// TestExpVarPublish: NewExpVar publishes once per name, refuses a name
// taken with ErrPublished, and its figures read back as JSON.
var expvarRuns atomic.Int32

func TestExpVarPublish(t *testing.T) {
	name := fmt.Sprintf("strata_reconciler_test_%d", expvarRuns.Add(1)) // -count runs publish anew
	e := reconciler.NewExpVar(name, true)
	if e.Err() != nil {
		t.Fatal(e.Err())
	}
	if expvar.Get(name) == nil {
		t.Fatal("not published")
	}
	dup := reconciler.NewExpVar(name, true)
	if !errors.Is(dup.Err(), reconciler.ErrPublished) {
		t.Errorf("second publication: %v", dup.Err())
	}
	h := e.Reconciler("routes")
	if e.Reconciler("routes") != h {
		t.Error("two handles for one name")
	}
	h.Operation(reconciler.OpUpdate, reconciler.OutcomeOK, 3*time.Millisecond)
	h.Operation(reconciler.OpUpdate, reconciler.OutcomeOK, time.Millisecond)
	h.Operation(reconciler.OpDelete, reconciler.OutcomeTimeout, time.Second)
	h.StatusCommit(10, 2, time.Millisecond, nil)
	h.StatusCommit(0, 0, time.Millisecond, errors.New("x"))
	h.Progress(reconciler.Stats{Lag: 7, Queued: [3]int{1, 2, 3}})
	h.Prune(reconciler.OutcomeRefused, time.Second)
	h.Refresh(5)
	var got map[string]map[string]int64
	if err := json.Unmarshal([]byte(e.String()), &got); err != nil {
		t.Fatalf("%v: %s", err, e.String())
	}
	r := got["routes"]
	for k, want := range map[string]int64{
		"update_ok": 2, "delete_timeout": 1, "op_ns_max": int64(time.Second), "statuses_written": 10,
		"status_conflicts": 2, "status_commits": 2, "status_commit_errors": 1, "lag": 7, "queued_background": 3,
		"prunes_refused": 1, "refresh_marked": 5,
		// Per operation, as statedb's reconciliation_duration keyed
		// .../update and .../delete; statedb's prune_current_errors.
		"update_ns_total": int64(4 * time.Millisecond), "delete_ns_total": int64(time.Second),
		"op_ns_total": int64(time.Second + 4*time.Millisecond), "prune_failing": 1,
	} {
		if r[k] != want {
			t.Errorf("%s = %d, want %d", k, r[k], want)
		}
	}
	// A prune that works clears prune_failing.
	h.Prune(reconciler.OutcomeOK, time.Second)
	if err := json.Unmarshal([]byte(e.String()), &got); err != nil {
		t.Fatal(err)
	}
	if v := got["routes"]["prune_failing"]; v != 0 {
		t.Errorf("prune_failing = %d after a prune that worked", v)
	}
}

// TestHealthAndLogs: health follows the reconciler (OK, Degraded with the
// errors, OK again, Stopped) and reports only changes; problems are
// logged.
func TestHealthAndLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		f := newFixture(t, fixtureConfig{init: true}, reconciler.WithPruning(time.Hour),
			reconciler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		f.start()
		f.upsert(pending(1, "v"))
		settle(time.Second)
		f.expectHealth("OK", "OK, 1 object(s)")
		reports := f.health.reports
		settle(time.Hour / 2)
		if f.health.reports != reports {
			t.Errorf("%d health reports without a change", f.health.reports-reports)
		}
		f.world.FailAlways("1", errors.New("boom"))
		f.upsert(pending(1, "w"))
		settle(time.Second)
		l, m, err := f.health.get()
		if l != "Degraded" || m != "1 error(s)" || err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("health %s %q %v", l, m, err)
		}
		f.world.Heal("1")
		f.world.FailNextPrunes(1, errors.New("prune trouble"))
		f.initDone()
		settle(time.Minute)
		f.expectHealth("OK", "OK, 1 object(s)")
		f.stop()
		f.expectHealth("Stopped", "")
		if !strings.Contains(logs.String(), "prune trouble") {
			t.Errorf("the prune failure was not logged:\n%s", logs.String())
		}
	})
}

// TestDependencies: the reconciler and its test kit import the standard
// library, Strata's own packages (its internal ones included) and
// golang.org/x/time/rate (the round limiter, WithRoundRateLimit, which
// imports nothing outside the standard library) only: no hive, no
// Prometheus (that is reconciler/prometheus), no OpenTelemetry.
func TestDependencies(t *testing.T) {
	// go test puts its own go tool's directory first in PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/strata-db/strata"
	allowed := map[string]bool{mod: true, mod + "/part": true, mod + "/index": true, mod + "/metrics": true,
		mod + "/reconciler": true, mod + "/reconciler/reconcilertest": true,
		"golang.org/x/time/rate": true}
	for _, pkg := range []string{".", "./reconcilertest"} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s listed %v", pkg, deps)
		}
		for _, dep := range deps {
			if !allowed[dep] && !strings.HasPrefix(dep, mod+"/internal/") && !strings.HasPrefix(dep, "golang.org/x/exp") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
