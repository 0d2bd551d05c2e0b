package reconciler_test

import (
	"context"
	"flag"
	"iter"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// nopOps is an outside world that does nothing, fast.
type nopOps struct{ delay time.Duration }

func (n nopOps) Update(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	if n.delay > 0 {
		time.Sleep(n.delay)
	}
	return nil
}
func (nopOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error { return nil }
func (nopOps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*testObj, strata.Revision]) error {
	return nil
}

var benchN = flag.Int("reconciler.benchn", 100_000, "objects of BenchmarkReconcile")

// BenchmarkReconcile is statedb's reconciler benchmark shape (B1 of
// bench/compare, which runs it beside statedb's): N objects inserted in
// transactions of 1000, an Update that does nothing, from the first insert
// until every status is Done. It guards the cost of the round limiter
// when it is off (roundLimit.take).
func BenchmarkReconcile(b *testing.B) {
	benchReconcile(b)
}

// BenchmarkReconcileRoundLimit is BenchmarkReconcile with statedb's
// benchmark's round limit: 1000 rounds a second, with bursts of 10.
func BenchmarkReconcileRoundLimit(b *testing.B) {
	benchReconcile(b, reconciler.WithRoundRateLimit(1000, 10))
}

func benchReconcile(b *testing.B, opts ...reconciler.Option) {
	n := *benchN
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		db := strata.New()
		tbl, _ := strata.NewTable(db, "objects", idIndex)
		r, err := reconciler.New(db, reconciler.Config[*testObj]{
			Table: tbl, CloneObject: (*testObj).Clone, GetObjectStatus: (*testObj).GetStatus,
			SetObjectStatus: (*testObj).SetStatus, Operations: nopOps{},
		}, append([]reconciler.Option{reconciler.WithoutPruning(), reconciler.WithoutRefresh()}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx, nil) }()
		start := time.Now()
		var rev strata.Revision
		for i := 0; i < n; i += 1000 {
			wtxn := db.WriteTxn(tbl)
			for j := i; j < min(i+1000, n); j++ {
				if _, _, err := tbl.Insert(wtxn, &testObj{ID: uint64(j), Status: reconciler.StatusPending()}); err != nil {
					b.Fatal(err)
				}
			}
			rev = tbl.Revision(wtxn)
			if _, err := wtxn.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		got, wm, err := r.WaitUntilReconciled(ctx, rev)
		total += time.Since(start)
		if err != nil || got < rev || wm != 0 {
			b.Fatalf("WaitUntilReconciled: %d %d %v", got, wm, err)
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		for o := range tbl.All(db.ReadTxn()) {
			if o.Status.Kind != reconciler.StatusKindDone {
				b.Fatalf("object %d: %s", o.ID, o.Status)
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "objects/s")
}
