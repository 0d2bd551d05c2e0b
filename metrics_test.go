package strata

import (
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/metrics"
)

// metricsSequence runs the known sequence of transactions the metrics tests
// check, on a table "test" of a database with m:
//
//  1. insert 1, 2, 3; commit                   revision 3
//  2. open a change feed; insert 4, 5; commit  revision 5, feed at 3
//  3. delete 1, 2; commit                      revision 7, 2 in the graveyard
//  4. insert 6; abort
//
// It returns the open feed, which the caller must close.
func metricsSequence(t *testing.T, m metrics.Metrics) (*DB, RWTable[*testObject], ChangeIterator[*testObject]) {
	t.Helper()
	db := New(WithMetrics(m))
	tbl := newTestTable(t, db, "test")
	must := func(_ *testObject, _ bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	commit := func(txn WriteTxn) {
		t.Helper()
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}

	txn := db.WriteTxn(tbl)
	for id := range uint64(3) {
		must(tbl.Insert(txn, &testObject{ID: id + 1}))
	}
	commit(txn)

	txn = db.WriteTxn(tbl)
	feed, err := tbl.Changes(txn)
	if err != nil {
		t.Fatal(err)
	}
	must(tbl.Insert(txn, &testObject{ID: 4}))
	must(tbl.Insert(txn, &testObject{ID: 5}))
	commit(txn)

	txn = db.WriteTxn(tbl)
	must(tbl.Delete(txn, &testObject{ID: 1}))
	must(tbl.Delete(txn, &testObject{ID: 2}))
	commit(txn)

	txn = db.WriteTxn(tbl)
	must(tbl.Insert(txn, &testObject{ID: 6}))
	txn.Abort()
	return db, tbl, feed
}

// drainFeed reads everything the feed has up to the current snapshot.
func drainFeed(db *DB, feed ChangeIterator[*testObject]) int {
	changes, _ := feed.Next(db.ReadTxn())
	n := 0
	for range changes {
		n++
	}
	return n
}

func TestMetrics_ExpVar(t *testing.T) {
	ev := metrics.NewExpVar("strata_test", false)
	db, tbl, feed := metricsSequence(t, ev)

	v, ok := ev.Values("test")
	if !ok {
		t.Fatal("no values for table test")
	}
	want := metrics.TableValues{
		Objects: 3, Revision: 7, Graveyard: 2,
		ChangeFeeds: 1, ChangeFeedLag: 4, // the feed is at revision 3
		Committed: 3, Aborted: 1, LockWaits: 4,
	}
	checkExpVar(t, v, want)

	// The feed catches up; the next commit empties the graveyard.
	if n := drainFeed(db, feed); n != 5 { // 3, 4, 5 upserted; 1, 2 deleted
		t.Fatalf("feed delivered %d changes, want 5", n)
	}
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	v, _ = ev.Values("test")
	want = metrics.TableValues{
		Objects: 4, Revision: 8, Graveyard: 0,
		ChangeFeeds: 1, ChangeFeedLag: 1, // the feed has seen up to 7
		Committed: 4, Aborted: 1, LockWaits: 5,
	}
	checkExpVar(t, v, want)

	// Closing the feed reports the feed count, and runs a write
	// transaction of its own (to collect the graveyard) when the table is
	// free: it counts as committed, with a lock wait of zero (it uses
	// TryLock). It changes nothing else.
	feed.Close()
	v, _ = ev.Values("test")
	want.Committed, want.LockWaits = 5, 6
	want.ChangeFeeds, want.ChangeFeedLag = 0, 0
	checkExpVar(t, v, want)

	// The JSON has every figure.
	s := ev.String()
	for _, key := range []string{
		`"test": {`, `"objects": 4`, `"revision": 8`, `"graveyard": 0`,
		`"change_feeds": 0`, `"change_feed_lag": 0`,
		`"write_txns_committed": 5`, `"write_txns_aborted": 1`, `"lock_waits": 6`,
		`"lock_wait_ns_total": `, `"lock_wait_ns_max": `, `"held_ns_total": `,
	} {
		if !strings.Contains(s, key) {
			t.Errorf("String() = %s\nlacks %s", s, key)
		}
	}
}

func checkExpVar(t *testing.T, got, want metrics.TableValues) {
	t.Helper()
	if got.HeldTotal <= 0 {
		t.Errorf("HeldTotal = %v, want > 0", got.HeldTotal)
	}
	if got.LockWaitTotal < 0 || got.LockWaitMax < 0 || got.LockWaitMax > got.LockWaitTotal {
		t.Errorf("LockWaitTotal = %v, LockWaitMax = %v", got.LockWaitTotal, got.LockWaitMax)
	}
	got.HeldTotal, got.LockWaitTotal, got.LockWaitMax = 0, 0, 0
	if got != want {
		t.Errorf("values:\n got %+v\nwant %+v", got, want)
	}
}

// countingMetrics counts the calls the database makes.
type countingMetrics struct {
	tables                                  atomic.Int64
	lockWaits, writeTxns, commits, feedCall atomic.Int64
	committed, aborted                      atomic.Int64
	handles                                 sync.Map // name -> *countingHandle
}

// countingHandle counts the write transactions of a handle.
type countingHandle struct{ committed, aborted atomic.Int64 }

func (h *countingHandle) WriteTxn(_ time.Duration, ok bool) {
	if ok {
		h.committed.Add(1)
	} else {
		h.aborted.Add(1)
	}
}

func (c *countingMetrics) Handle(name string) metrics.Handle {
	h, _ := c.handles.LoadOrStore(name, &countingHandle{})
	return h.(*countingHandle)
}

// handle returns the counts of the handle name.
func (c *countingMetrics) handle(name string) (committed, aborted int64) {
	h, ok := c.handles.Load(name)
	if !ok {
		return -1, -1
	}
	return h.(*countingHandle).committed.Load(), h.(*countingHandle).aborted.Load()
}

func (c *countingMetrics) Table(string) metrics.Table { c.tables.Add(1); return c }
func (c *countingMetrics) LockWait(time.Duration)     { c.lockWaits.Add(1) }
func (c *countingMetrics) WriteTxn(_ time.Duration, ok bool) {
	c.writeTxns.Add(1)
	if ok {
		c.committed.Add(1)
	} else {
		c.aborted.Add(1)
	}
}
func (c *countingMetrics) Committed(int, uint64, int) { c.commits.Add(1) }
func (c *countingMetrics) ChangeFeeds(int, uint64)    { c.feedCall.Add(1) }

func TestMetrics_Calls(t *testing.T) {
	c := &countingMetrics{}
	db, tbl, feed := metricsSequence(t, c)
	defer feed.Close()
	other := newTestTable(t, db, "other")
	if got := c.tables.Load(); got != 2 {
		t.Fatalf("Table called %d times, want 2 (once per table)", got)
	}
	// After the sequence: 4 transactions locked the table; 3 commits
	// changed it; the feed reported itself when it opened.
	check := func(lockWaits, writeTxns, committed, aborted, commits, feeds int64) {
		t.Helper()
		got := [...]int64{c.lockWaits.Load(), c.writeTxns.Load(), c.committed.Load(), c.aborted.Load(), c.commits.Load(), c.feedCall.Load()}
		want := [...]int64{lockWaits, writeTxns, committed, aborted, commits, feeds}
		if got != want {
			t.Errorf("calls (LockWait, WriteTxn, committed, aborted, Committed, ChangeFeeds) = %v, want %v", got, want)
		}
	}
	check(4, 4, 3, 1, 3, 4)

	// Two tables locked, one written: both report the lock and the
	// transaction, only the written one its state.
	txn := db.WriteTxn(tbl, other)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	check(6, 6, 5, 1, 4, 5)

	// A commit that changed nothing reports the transaction only.
	txn = db.WriteTxn(other)
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	check(7, 7, 6, 1, 4, 5)

	// Each transaction once to its handle: the sequence's five and the two
	// above went through the first; a module's handle reports its own.
	if committed, aborted := c.handle(DefaultHandle); committed != 5 || aborted != 1 {
		t.Errorf("handle %q: %d committed, %d aborted; want 5, 1", DefaultHandle, committed, aborted)
	}
	mod := db.NewHandle("module")
	txn = mod.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 11}); err != nil {
		t.Fatal(err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if committed, aborted := c.handle("module"); committed != 1 || aborted != 0 {
		t.Errorf("handle module: %d committed, %d aborted; want 1, 0", committed, aborted)
	}
	if w := tbl.LastWriter(rtxn); w != "module" {
		t.Errorf("LastWriter = %q, want module", w)
	}
	if w := other.LastWriter(rtxn); w != "" {
		t.Errorf("LastWriter of a table never written = %q", w)
	}
}

// nopWrapper is NopMetrics under another type: metrics.Nop does not see
// through it, so the database reports to it.
type nopWrapper struct{ metrics.NopMetrics }

func TestMetrics_Nop(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    metrics.Metrics
		nop  bool
	}{
		{"nil", nil, true},
		{"NopMetrics{}", metrics.NopMetrics{}, true},
		{"&NopMetrics{}", &metrics.NopMetrics{}, true},
		{"wrapped", nopWrapper{}, false},
		{"counting", &countingMetrics{}, false},
		{"ExpVar", metrics.NewExpVar("", false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := metrics.Nop(tc.m); got != tc.nop {
				t.Fatalf("Nop = %v, want %v", got, tc.nop)
			}
			db := New(WithMetrics(tc.m))
			tbl := newTestTable(t, db, "test")
			if db.opts.metricsOn == tc.nop {
				t.Errorf("metricsOn = %v", db.opts.metricsOn)
			}
			if got := tbl.tableMeta().metrics; (got == nil) != tc.nop {
				t.Errorf("table metrics handle = %v", got)
			}
			txn := db.WriteTxn(tbl)
			if read := txn.(*txnRef).w.acquired != 0; read == tc.nop {
				t.Errorf("clock read: %v, with Nop metrics: %v", read, tc.nop)
			}
			if _, _, err := tbl.Insert(txn, &testObject{ID: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The default is Nop.
	db := New()
	newTestTable(t, db, "test")
	if db.opts.metricsOn {
		t.Error("default database has metrics on")
	}
}

// writeTxn1 is one iteration of BenchmarkDB_WriteTxn_1.
func writeTxn1(tb testing.TB, db *DB, tbl RWTable[*testObject]) {
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 123}); err != nil {
		tb.Fatalf("Insert: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		tb.Fatalf("Commit: %s", err)
	}
}

func TestNopMetricsAllocs(t *testing.T) {
	allocs := func(opts ...Option) float64 {
		db := New(opts...)
		tbl := newTestTable(t, db, "test")
		writeTxn1(t, db, tbl) // the first insert grows the tree
		return testing.AllocsPerRun(1000, func() { writeTxn1(t, db, tbl) })
	}
	def := allocs()
	nop := allocs(WithMetrics(metrics.NopMetrics{}))
	ev := allocs(WithMetrics(metrics.NewExpVar("", false)))
	t.Logf("allocs per WriteTxn_1: default %v, NopMetrics %v, ExpVar %v", def, nop, ev)
	if nop != def {
		t.Errorf("NopMetrics: %v allocs, default: %v", nop, def)
	}
	if ev != nop {
		t.Errorf("ExpVar: %v allocs, NopMetrics: %v", ev, nop)
	}
}

// TestRootDependencies enforces the dependency rules of docs/architecture.md:
// the root package imports only the standard library, its own part, index
// and metrics packages, and golang.org/x/exp (never Prometheus, which lives
// in metrics/prometheus); part imports only the standard library, and index
// only the standard library and part (for index.Set over a part.Set).
func TestRootDependencies(t *testing.T) {
	// go test puts the go tool that runs it first in the PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go tool:", err)
	}
	const mod = "github.com/strata-db/strata"
	for _, tc := range []struct {
		pkg     string
		allowed func(string) bool
	}{
		{".", func(p string) bool {
			switch p {
			case mod, mod + "/part", mod + "/index", mod + "/metrics", mod + "/internal/expvars", mod + "/internal/wirejson", "golang.org/x/exp":
				return true
			}
			return strings.HasPrefix(p, "golang.org/x/exp/")
		}},
		{"./part", func(p string) bool { return p == mod+"/part" }},
		{"./index", func(p string) bool { return p == mod+"/index" || p == mod+"/part" }},
	} {
		cmd := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", tc.pkg)
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", tc.pkg)
		}
		for _, dep := range deps {
			if !tc.allowed(dep) {
				t.Errorf("%s depends on %s", tc.pkg, dep)
			}
		}
	}
}

func benchmarkWriteTxn1(b *testing.B, opts ...Option) {
	db := New(opts...)
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		writeTxn1(b, db, tbl)
		n++
	}
	if got := tbl.NumObjects(db.ReadTxn()); got != 1 {
		b.Fatalf("NumObjects = %d, want 1", got)
	}
	reportObjectsPerSec(b, n)
}

// BenchmarkDB_WriteTxn_1_NopMetrics is BenchmarkDB_WriteTxn_1 with
// NopMetrics given explicitly.
func BenchmarkDB_WriteTxn_1_NopMetrics(b *testing.B) {
	benchmarkWriteTxn1(b, WithMetrics(metrics.NopMetrics{}))
}

// BenchmarkDB_WriteTxn_1_ExpVarMetrics is BenchmarkDB_WriteTxn_1 reporting
// to an (unpublished) metrics.ExpVar. The target is at most 1.3 times
// BenchmarkDB_WriteTxn_1_NopMetrics, with no more allocations.
func BenchmarkDB_WriteTxn_1_ExpVarMetrics(b *testing.B) {
	benchmarkWriteTxn1(b, WithMetrics(metrics.NewExpVar("", false)))
}
