package prometheus_test

import (
	"errors"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/metrics/prometheus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type object struct{ ID uint64 }

var idIndex = strata.Index[*object, uint64]{
	Name:       "id",
	FromObject: func(o *object) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

func newTable(tb testing.TB, db *strata.DB, name string) strata.RWTable[*object] {
	tb.Helper()
	tbl, err := strata.NewTable(db, name, idIndex)
	if err != nil {
		tb.Fatal(err)
	}
	return tbl
}

// metric returns the metric name{table=table} gathered from g.
func metric(t *testing.T, g prom.Gatherer, name, table string) *dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" && l.GetValue() == table {
					return m
				}
			}
		}
	}
	t.Fatalf("no metric %s{table=%q}", name, table)
	return nil
}

// TestMetrics runs a known sequence of transactions through a database and
// checks every figure:
//
//  1. insert 1, 2, 3; commit                   revision 3
//  2. open a change feed; insert 4, 5; commit  revision 5, feed at 3
//  3. delete 1, 2; commit                      revision 7, 2 in the graveyard
//  4. insert 6; abort
func TestMetrics(t *testing.T) {
	reg := prom.NewRegistry()
	m, err := prometheus.New(reg, "strata")
	if err != nil {
		t.Fatal(err)
	}
	db := strata.New(strata.WithMetrics(m))
	tbl := newTable(t, db, "test")
	newTable(t, db, "idle") // registered, never locked

	must := func(_ *object, _ bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	commit := func(txn strata.WriteTxn) {
		t.Helper()
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	txn := db.WriteTxn(tbl)
	for id := range uint64(3) {
		must(tbl.Insert(txn, &object{ID: id + 1}))
	}
	commit(txn)
	txn = db.WriteTxn(tbl)
	feed, err := tbl.Changes(txn)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	must(tbl.Insert(txn, &object{ID: 4}))
	must(tbl.Insert(txn, &object{ID: 5}))
	commit(txn)
	txn = db.WriteTxn(tbl)
	must(tbl.Delete(txn, &object{ID: 1}))
	must(tbl.Delete(txn, &object{ID: 2}))
	commit(txn)
	txn = db.NewHandle("module").WriteTxn(tbl)
	must(tbl.Insert(txn, &object{ID: 6}))
	txn.Abort()

	// Gauges and counters, exactly. The idle table has its series from
	// registration on (WithLabelValues creates them), at zero.
	const want = `
# HELP strata_table_change_feed_lag Revisions the slowest change feed of the table is behind the table.
# TYPE strata_table_change_feed_lag gauge
strata_table_change_feed_lag{table="idle"} 0
strata_table_change_feed_lag{table="test"} 4
# HELP strata_table_change_feeds Number of open change feeds of the table.
# TYPE strata_table_change_feeds gauge
strata_table_change_feeds{table="idle"} 0
strata_table_change_feeds{table="test"} 1
# HELP strata_table_graveyard_objects Deleted objects kept for change feeds that have not delivered them.
# TYPE strata_table_graveyard_objects gauge
strata_table_graveyard_objects{table="idle"} 0
strata_table_graveyard_objects{table="test"} 2
# HELP strata_table_objects Number of objects in the table.
# TYPE strata_table_objects gauge
strata_table_objects{table="idle"} 0
strata_table_objects{table="test"} 3
# HELP strata_table_revision Revision of the table's latest change.
# TYPE strata_table_revision gauge
strata_table_revision{table="idle"} 0
strata_table_revision{table="test"} 7
# HELP strata_write_txns_total Write transactions that locked the table, by outcome.
# TYPE strata_write_txns_total counter
strata_write_txns_total{outcome="aborted",table="idle"} 0
strata_write_txns_total{outcome="aborted",table="test"} 1
strata_write_txns_total{outcome="committed",table="idle"} 0
strata_write_txns_total{outcome="committed",table="test"} 3
# HELP strata_handle_write_txns_total Write transactions of each database handle (the module that wrote), by outcome.
# TYPE strata_handle_write_txns_total counter
strata_handle_write_txns_total{handle="db",outcome="aborted"} 0
strata_handle_write_txns_total{handle="db",outcome="committed"} 3
strata_handle_write_txns_total{handle="module",outcome="aborted"} 1
strata_handle_write_txns_total{handle="module",outcome="committed"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"strata_table_objects", "strata_table_revision", "strata_table_graveyard_objects",
		"strata_table_change_feeds", "strata_table_change_feed_lag", "strata_write_txns_total",
		"strata_handle_write_txns_total",
	); err != nil {
		t.Error(err)
	}

	// Histograms: one lock wait per write transaction, one held time per
	// transaction, all positive.
	wait := metric(t, reg, "strata_write_txn_lock_wait_seconds", "test").GetHistogram()
	if wait.GetSampleCount() != 4 || wait.GetSampleSum() < 0 {
		t.Errorf("lock wait: count %d, sum %g; want 4, >= 0", wait.GetSampleCount(), wait.GetSampleSum())
	}
	held := metric(t, reg, "strata_write_txn_lock_held_seconds", "test").GetHistogram()
	if held.GetSampleCount() != 4 || held.GetSampleSum() <= 0 {
		t.Errorf("held: count %d, sum %g; want 4, > 0", held.GetSampleCount(), held.GetSampleSum())
	}
	if n := len(held.GetBucket()); n != len(prometheus.DurationBuckets) {
		t.Errorf("%d buckets", n)
	}
	if c := metric(t, reg, "strata_write_txn_lock_held_seconds", "idle").GetHistogram().GetSampleCount(); c != 0 {
		t.Errorf("idle table held count %d", c)
	}

	// Per table (2): 5 gauges, 1 counter (2 series), 2 histograms; per
	// handle (2): 1 counter (2 series) and 1 histogram.
	if n := testutil.CollectAndCount(m); n != 2*(5+2+2)+2*(2+1) {
		t.Errorf("CollectAndCount = %d, want 24", n)
	}
}

func TestNew(t *testing.T) {
	reg := prom.NewPedanticRegistry()
	if _, err := prometheus.New(reg, "strata"); err != nil {
		t.Fatal(err)
	}
	// The same names twice.
	_, err := prometheus.New(reg, "strata")
	var are prom.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New: %v, want AlreadyRegisteredError", err)
	}
	// Another namespace is fine.
	if _, err := prometheus.New(reg, "other"); err != nil {
		t.Fatal(err)
	}
	// Unregistered, then registered by hand; an empty namespace.
	m, err := prometheus.New(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m.Table("t").Committed(1, 2, 3)
	reg = prom.NewPedanticRegistry()
	reg.MustRegister(m)
	if got := metric(t, reg, "table_graveyard_objects", "t").GetGauge().GetValue(); got != 3 {
		t.Errorf("graveyard = %v", got)
	}
}

// Reporting does no label lookup and does not allocate.
func TestTableAllocs(t *testing.T) {
	m, err := prometheus.New(nil, "strata")
	if err != nil {
		t.Fatal(err)
	}
	tbl := m.Table("t")
	if allocs := testing.AllocsPerRun(100, func() {
		tbl.LockWait(1000)
		tbl.WriteTxn(2000, true)
		tbl.WriteTxn(2000, false)
		tbl.Committed(1, 2, 3)
		tbl.ChangeFeeds(1, 1)
	}); allocs != 0 {
		t.Errorf("%v allocations per update", allocs)
	}
}

func writeTxn1(tb testing.TB, db *strata.DB, tbl strata.RWTable[*object]) {
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &object{ID: 123}); err != nil {
		tb.Fatalf("Insert: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		tb.Fatalf("Commit: %s", err)
	}
}

// A database reporting to Prometheus allocates no more per write
// transaction than one with NopMetrics.
func TestDBAllocs(t *testing.T) {
	allocs := func(m metrics.Metrics) float64 {
		db := strata.New(strata.WithMetrics(m))
		tbl := newTable(t, db, "test")
		writeTxn1(t, db, tbl)
		return testing.AllocsPerRun(1000, func() { writeTxn1(t, db, tbl) })
	}
	m, err := prometheus.New(prom.NewRegistry(), "strata")
	if err != nil {
		t.Fatal(err)
	}
	nop, p := allocs(metrics.NopMetrics{}), allocs(m)
	t.Logf("allocs per WriteTxn_1: NopMetrics %v, Prometheus %v", nop, p)
	if p != nop {
		t.Errorf("Prometheus: %v allocs, NopMetrics: %v", p, nop)
	}
}

// BenchmarkDB_WriteTxn_1_PrometheusMetrics is the root package's
// BenchmarkDB_WriteTxn_1 reporting to Prometheus (compare with its
// BenchmarkDB_WriteTxn_1_NopMetrics and _ExpVarMetrics).
func BenchmarkDB_WriteTxn_1_PrometheusMetrics(b *testing.B) {
	m, err := prometheus.New(prom.NewRegistry(), "strata")
	if err != nil {
		b.Fatal(err)
	}
	db := strata.New(strata.WithMetrics(m))
	tbl := newTable(b, db, "test")
	b.ReportAllocs()
	for b.Loop() {
		writeTxn1(b, db, tbl)
	}
}

func BenchmarkPrometheus_Txn(b *testing.B) {
	m, err := prometheus.New(nil, "strata")
	if err != nil {
		b.Fatal(err)
	}
	tbl := m.Table("t")
	b.ReportAllocs()
	for b.Loop() {
		tbl.LockWait(1000)
		tbl.WriteTxn(2000, true)
		tbl.Committed(1, 2, 0)
		tbl.ChangeFeeds(0, 0)
	}
}
