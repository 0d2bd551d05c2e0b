package prometheus_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/prometheus"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type object struct {
	ID     uint64
	Status reconciler.Status
}

var idIndex = strata.Index[*object, uint64]{
	Name:       "id",
	FromObject: func(o *object) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// metric returns the metric name with the given labels, gathered from g.
func metric(t *testing.T, g prom.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return nil
}

// TestReconcilerMetrics runs a reconciler with Prometheus metrics and
// reads them back.
func TestReconcilerMetrics(t *testing.T) {
	synctest.Test(t, testReconcilerMetrics)
}

// testReconcilerMetrics runs in a synctest bubble, so that the retry's
// backoff and the polling of WaitUntilReconciled pass in fake time.
func testReconcilerMetrics(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := prometheus.New(reg, "strata")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prometheus.New(reg, "strata"); err == nil {
		t.Error("registering the same metrics twice did not fail")
	}
	db := strata.New()
	tbl := strata.MustNewTable(db, "objects", idIndex)
	world := reconcilertest.NewWorld(func(o *object) string { return strconv.FormatUint(o.ID, 10) })
	world.FailNext("3", 1, errors.New("no"))
	r, err := reconciler.New(db, reconciler.Config[*object]{
		Table:           tbl,
		CloneObject:     func(o *object) *object { c := *o; return &c },
		GetObjectStatus: func(o *object) reconciler.Status { return o.Status },
		SetObjectStatus: func(o *object, s reconciler.Status) *object { o.Status = s; return o },
		Operations:      world,
	}, reconciler.WithMetrics(m), reconciler.WithName("routes"), reconciler.WithRetry(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()
	wtxn := db.WriteTxn(tbl)
	for i := range 10 {
		if _, _, err := tbl.Insert(wtxn, &object{ID: uint64(i), Status: reconciler.StatusPending()}); err != nil {
			t.Fatal(err)
		}
	}
	rev := tbl.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	for {
		got, low, err := r.WaitUntilReconciled(ctx, rev)
		if err != nil {
			t.Fatal(err)
		}
		if got >= rev && low == 0 {
			break
		}
		// The failed object waits for its retry, a millisecond of fake
		// time away.
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rl := map[string]string{"reconciler": "routes"}
	with := func(k, v string) map[string]string { return map[string]string{"reconciler": "routes", k: v} }
	if v := metric(t, reg, "strata_reconciler_operations_total", map[string]string{"reconciler": "routes", "op": "update", "outcome": "ok"}).GetCounter().GetValue(); v != 10 {
		t.Errorf("updates ok = %v, want 10", v)
	}
	if v := metric(t, reg, "strata_reconciler_operations_total", map[string]string{"reconciler": "routes", "op": "update", "outcome": "error"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("updates failed = %v, want 1", v)
	}
	if n := metric(t, reg, "strata_reconciler_operation_duration_seconds", with("op", "update")).GetHistogram().GetSampleCount(); n != 11 {
		t.Errorf("%d durations, want 11", n)
	}
	if n := metric(t, reg, "strata_reconciler_queue_wait_seconds", with("lane", "changes")).GetHistogram().GetSampleCount(); n != 10 {
		t.Errorf("%d queue waits in the changes lane, want 10", n)
	}
	if n := metric(t, reg, "strata_reconciler_change_to_done_seconds", rl).GetHistogram().GetSampleCount(); n != 10 {
		t.Errorf("%d latencies, want 10", n)
	}
	if v := metric(t, reg, "strata_reconciler_statuses_written_total", rl).GetCounter().GetValue(); v != 11 {
		t.Errorf("statuses written = %v, want 11", v)
	}
	if v := metric(t, reg, "strata_reconciler_failing", rl).GetGauge().GetValue(); v != 0 {
		t.Errorf("failing = %v", v)
	}
	h := m.Reconciler("other")
	h.Prune(reconciler.OutcomeRefused, time.Second)
	h.Refresh(4)
	h.Progress(reconciler.Stats{Lag: 3, Queued: [3]int{0, 0, 9}, OldestPending: 2 * time.Second})
	h.StatusCommit(0, 0, 0, errors.New("x"))
	ol := map[string]string{"reconciler": "other"}
	if v := metric(t, reg, "strata_reconciler_prunes_total", map[string]string{"reconciler": "other", "outcome": "refused"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("refused prunes = %v", v)
	}
	if v := metric(t, reg, "strata_reconciler_prune_failing", ol).GetGauge().GetValue(); v != 1 {
		t.Errorf("prune failing = %v after a refused prune, want 1", v)
	}
	h.Prune(reconciler.OutcomeOK, time.Second)
	if v := metric(t, reg, "strata_reconciler_prune_failing", ol).GetGauge().GetValue(); v != 0 {
		t.Errorf("prune failing = %v after a prune that worked, want 0", v)
	}
	if v := metric(t, reg, "strata_reconciler_refresh_marked_total", ol).GetCounter().GetValue(); v != 4 {
		t.Errorf("marked = %v", v)
	}
	if v := metric(t, reg, "strata_reconciler_queued", map[string]string{"reconciler": "other", "lane": "background"}).GetGauge().GetValue(); v != 9 {
		t.Errorf("queued background = %v", v)
	}
	if v := metric(t, reg, "strata_reconciler_oldest_pending_seconds", ol).GetGauge().GetValue(); v != 2 {
		t.Errorf("oldest pending = %v", v)
	}
	if v := metric(t, reg, "strata_reconciler_status_commits_total", map[string]string{"reconciler": "other", "result": "error"}).GetCounter().GetValue(); v != 1 {
		t.Errorf("failed commits = %v", v)
	}
}
