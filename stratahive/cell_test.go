package stratahive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startHive builds a hive with the given flags and cells, starts it, and
// stops it at the end of the test.
func startHive(t testing.TB, flags map[string]string, cells ...cell.Cell) *hive.Hive {
	t.Helper()
	h := hive.NewWithOptions(hive.Options{ModuleDecorators: stratahive.ModuleHandles}, cells...)
	for k, v := range flags {
		h.Viper().Set(k, v)
	}
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	t.Cleanup(func() {
		if err := h.Stop(log, context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

// insertHosts inserts hosts through db in one transaction.
func insertHosts(t testing.TB, db *strata.DB, hosts strata.RWTable[*Host], hs ...*Host) strata.Revision {
	t.Helper()
	wtxn := db.WriteTxn(hosts)
	for _, h := range hs {
		_, _, err := hosts.Insert(wtxn, h)
		must(t, err)
	}
	rev := hosts.Revision(wtxn)
	_, err := wtxn.Commit()
	must(t, err)
	return rev
}

// metricNames returns the names of the metric families reg gathers.
func metricNames(t testing.TB, reg *prom.Registry) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

// testApp is the test program's cells, with what a test needs from it.
type testApp struct {
	db    *strata.DB
	hosts strata.RWTable[*Host]
	r     *reconciler.Reconciler[*Host]
}

func (a *testApp) cells() []cell.Cell {
	return []cell.Cell{
		stratahive.Cell, job.Cell, cell.SimpleHealthCell,
		appCells(newWorld()),
		cell.Invoke(func(db *strata.DB, hosts strata.RWTable[*Host], r *reconciler.Reconciler[*Host]) {
			a.db, a.hosts, a.r = db, hosts, r
		}),
	}
}

func (a *testApp) reconcile(t testing.TB, hs ...*Host) {
	t.Helper()
	rev := insertHosts(t, a.db, a.hosts, hs...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only a hang reaches it
	defer cancel()
	_, _, err := a.r.WaitUntilReconciled(ctx, rev)
	must(t, err)
}

func TestPrometheusMetricsWhileRunning(t *testing.T) {
	reg := prom.NewRegistry()
	var app testApp
	h := hive.NewWithOptions(hive.Options{ModuleDecorators: stratahive.ModuleHandles},
		append(app.cells(), cell.Provide(func() prom.Registerer { return reg }))...)
	h.Viper().Set("strata-metrics", "prometheus")
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))

	app.reconcile(t, &Host{Name: "a1", Status: reconciler.StatusPending()})
	names := metricNames(t, reg)
	for _, want := range []string{
		"strata_table_objects", "strata_write_txns_total", "strata_handle_write_txns_total",
		"strata_reconciler_operations_total", "strata_reconciler_status_commits_total",
	} {
		if !names[want] {
			t.Errorf("running hive: %s not registered", want)
		}
	}
	must(t, h.Stop(log, context.Background()))
	if names := metricNames(t, reg); len(names) != 0 {
		t.Errorf("stopped hive: metrics still registered: %v", names)
	}

	// A second hive registers again in the same registry.
	var app2 testApp
	startHive(t, map[string]string{"strata-metrics": "prometheus"},
		append(app2.cells(), cell.Provide(func() prom.Registerer { return reg }))...)
	if !metricNames(t, reg)["strata_table_objects"] {
		t.Errorf("second hive: metrics not registered")
	}
}

func TestExpVarMetrics(t *testing.T) {
	var m *stratahive.Metrics
	var app testApp
	startHive(t, map[string]string{"strata-metrics": "expvar"},
		append(app.cells(), cell.Invoke(func(mm *stratahive.Metrics) { m = mm }))...)
	app.reconcile(t, &Host{Name: "a1", Status: reconciler.StatusPending()})
	dbm, ok := m.DB.(*metrics.ExpVar)
	if !ok {
		t.Fatalf("DB metrics are %T, want *metrics.ExpVar", m.DB)
	}
	if s := dbm.String(); !strings.Contains(s, `"hosts"`) || !strings.Contains(s, `"app"`) {
		t.Errorf("expvar figures lack the table or the module's handle: %s", s)
	}
	rm, ok := m.Reconcilers.(*reconciler.ExpVar)
	if !ok {
		t.Fatalf("reconciler metrics are %T, want *reconciler.ExpVar", m.Reconcilers)
	}
	if s := rm.String(); !strings.Contains(s, `"hosts"`) {
		t.Errorf("reconciler expvar figures lack the reconciler: %s", s)
	}
}

// countingMetrics counts the tables the database asked it for.
type countingMetrics struct {
	metrics.NopMetrics
	tables []string
}

func (c *countingMetrics) Table(name string) metrics.Table {
	c.tables = append(c.tables, name)
	return c.NopMetrics.Table(name)
}

func TestInjectedMetricsWin(t *testing.T) {
	cm := &countingMetrics{}
	var app testApp
	startHive(t, map[string]string{"strata-metrics": "expvar"},
		append(app.cells(), cell.Provide(func() metrics.Metrics { return cm }))...)
	if strings.Join(cm.tables, ",") != "hosts,records,notes" {
		t.Errorf("injected metrics saw tables %v, want hosts, records, notes", cm.tables)
	}
}

func TestInvalidMetricsFlag(t *testing.T) {
	var app testApp
	h := hive.New(app.cells()...)
	h.Viper().Set("strata-metrics", "statsd")
	err := h.Populate(hivetest.Logger(t))
	if !errors.Is(err, stratahive.ErrInvalidConfig) {
		t.Fatalf("start with --strata-metrics=statsd: %v, want ErrInvalidConfig", err)
	}
	if !strings.Contains(err.Error(), `--strata-metrics="statsd": want none, expvar or prometheus`) {
		t.Errorf("error does not say what is wrong: %v", err)
	}
}

func TestModuleHandles(t *testing.T) {
	var (
		db       *strata.DB
		hosts    strata.RWTable[*Host]
		other    *strata.DB
		rootDB   *strata.DB
		otherTbl strata.Table[*Host]
	)
	startHive(t, nil,
		stratahive.Cell,
		cell.Invoke(func(d *strata.DB) { rootDB = d }),
		cell.Module("app", "The application",
			stratahive.Table("hosts", hostByName),
			cell.Invoke(func(d *strata.DB, h strata.RWTable[*Host]) { db, hosts = d, h }),
		),
		cell.Module("other", "Another module",
			cell.Invoke(func(d *strata.DB, h strata.Table[*Host]) { other, otherTbl = d, h }),
		),
	)
	if db.HandleName() != "app" || other.HandleName() != "other" || rootDB.HandleName() != strata.DefaultHandle {
		t.Fatalf("handles: app %q, other %q, root %q", db.HandleName(), other.HandleName(), rootDB.HandleName())
	}
	if !db.SameDatabase(other) {
		t.Fatal("module handles are not of one database")
	}
	insertHosts(t, db, hosts, &Host{Name: "a1"})
	if w := otherTbl.LastWriter(other.ReadTxn()); w != "app" {
		t.Errorf("LastWriter after module app wrote: %q", w)
	}
	insertHosts(t, other, hosts, &Host{Name: "a2"})
	if w := otherTbl.LastWriter(db.ReadTxn()); w != "other" {
		t.Errorf("LastWriter after module other wrote: %q", w)
	}
}

// OtherHost is a second object type, for a second table named hosts.
type OtherHost struct{ Name string }

var otherHostByName = strata.Index[*OtherHost, string]{
	Name:       "name",
	FromObject: func(h *OtherHost) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

func TestDuplicateTableName(t *testing.T) {
	h := hive.New(
		stratahive.Cell,
		cell.Module("first", "The first module", stratahive.Table("hosts", hostByName)),
		cell.Module("second", "The second module", stratahive.Table("hosts", otherHostByName)),
	)
	err := h.Populate(hivetest.Logger(t))
	if !errors.Is(err, stratahive.ErrDuplicateTable) || !errors.Is(err, strata.ErrDuplicateTable) {
		t.Fatalf("populate with two tables named hosts: %v, want ErrDuplicateTable", err)
	}
	if !strings.Contains(err.Error(), `table "hosts" declared by module "second" is declared by module "first" already`) {
		t.Errorf("error does not name both modules: %v", err)
	}
	// Start fails the same way, before any start hook runs (hive's
	// ErrPopulate keeps the message, not the error).
	h = hive.New(
		stratahive.Cell,
		cell.Module("first", "The first module", stratahive.Table("hosts", hostByName)),
		cell.Module("second", "The second module", stratahive.Table("hosts", otherHostByName)),
	)
	if err := h.Start(hivetest.Logger(t), context.Background()); err == nil || !strings.Contains(err.Error(), "declared by module") {
		t.Fatalf("start: %v", err)
	}
}

func TestDuplicateTableType(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "already provided") {
			t.Fatalf("hive.New with two tables of one type: %v, want dig's already provided", r)
		}
	}()
	hive.New(
		stratahive.Cell,
		cell.Module("first", "The first module", stratahive.Table("hosts", hostByName)),
		cell.Module("second", "The second module", stratahive.Table("hosts2", hostByName)),
	)
}
