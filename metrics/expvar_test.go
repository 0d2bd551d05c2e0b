package metrics_test

import (
	"encoding/json"
	"errors"
	"expvar"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/metrics"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExpVar_Values(t *testing.T) {
	e := metrics.NewExpVar("unused", false)
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Values("t"); ok {
		t.Fatal("values of a table never registered")
	}
	tbl := e.Table("t")
	tbl.LockWait(3 * time.Microsecond)
	tbl.LockWait(time.Microsecond)
	tbl.LockWait(2 * time.Microsecond)
	tbl.LockWait(0) // counted, adds nothing
	tbl.WriteTxn(10*time.Microsecond, true)
	tbl.WriteTxn(20*time.Microsecond, false)
	tbl.WriteTxn(30*time.Microsecond, true)
	tbl.Committed(5, 1<<63+1, 2)
	tbl.Committed(3, 1<<63+2, 1) // gauges: the latest wins
	tbl.Committed(3, 1<<63+2, 1) // unchanged
	tbl.ChangeFeeds(2, 9)
	tbl.ChangeFeeds(0, 0)
	tbl.ChangeFeeds(0, 9)

	got, ok := e.Values("t")
	if !ok {
		t.Fatal("no values")
	}
	want := metrics.TableValues{
		Objects: 3, Revision: 1<<63 + 2, Graveyard: 1,
		ChangeFeeds: 0, ChangeFeedLag: 9,
		Committed: 2, Aborted: 1, LockWaits: 4,
		LockWaitTotal: 6 * time.Microsecond, LockWaitMax: 3 * time.Microsecond,
		HeldTotal: 60 * time.Microsecond,
	}
	if got != want {
		t.Fatalf("values:\n got %+v\nwant %+v", got, want)
	}

	// The JSON of String is the same figures.
	var all map[string]map[string]uint64
	if err := json.Unmarshal([]byte(e.String()), &all); err != nil {
		t.Fatalf("String() = %s: %v", e.String(), err)
	}
	wantJSON := map[string]uint64{
		"objects": 3, "revision": 1<<63 + 2, "graveyard": 1,
		"change_feeds": 0, "change_feed_lag": 9,
		"write_txns_committed": 2, "write_txns_aborted": 1, "lock_waits": 4,
		"lock_wait_ns_total": 6000, "lock_wait_ns_max": 3000, "held_ns_total": 60000,
	}
	if len(all) != 2 || len(all["t"]) != len(wantJSON) || all[metrics.HandlesKey] == nil {
		t.Fatalf("String() = %s", e.String())
	}
	for k, v := range wantJSON {
		if all["t"][k] != v {
			t.Errorf("%s = %d, want %d", k, all["t"][k], v)
		}
	}
}

// The values are created by Table and then updated in place: the same
// expvar.Var before and after updates, and no allocation per update.
func TestExpVar_InPlace(t *testing.T) {
	e := metrics.NewExpVar("", false)
	tbl := e.Table("t")
	if again := e.Table("t"); again != tbl {
		t.Error("Table of the same name returned another handle")
	}
	vars := func() map[string]expvar.Var {
		m := map[string]expvar.Var{}
		e.Map().Get("t").(*expvar.Map).Do(func(kv expvar.KeyValue) { m[kv.Key] = kv.Value })
		return m
	}
	before := vars()
	allocs := testing.AllocsPerRun(100, func() {
		tbl.LockWait(time.Microsecond)
		tbl.WriteTxn(time.Millisecond, true)
		tbl.WriteTxn(time.Millisecond, false)
		tbl.Committed(1, 2, 3)
		tbl.ChangeFeeds(1, 1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per update", allocs)
	}
	after := vars()
	if len(before) != 11 || len(after) != len(before) {
		t.Fatalf("%d figures before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s was replaced", k)
		}
	}
}

func TestExpVar_Publish(t *testing.T) {
	const name = "strata_metrics_test_publish"
	e := metrics.NewExpVar(name, true)
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	e.Table("t").Committed(42, 1, 0)
	if got := expvar.Get(name); got != expvar.Var(e.Map()) {
		t.Fatalf("expvar.Get(%q) = %v", name, got)
	}
	if s := expvar.Get(name).String(); s != e.String() {
		t.Errorf("published %s, want %s", s, e.String())
	}

	// The same name again: an error, not a panic; the first stays.
	e2 := metrics.NewExpVar(name, true)
	if err := e2.Err(); !errors.Is(err, metrics.ErrPublished) {
		t.Fatalf("Err() = %v, want ErrPublished", err)
	}
	e2.Table("t").Committed(1, 1, 0) // still usable
	if s := expvar.Get(name).String(); s != e.String() {
		t.Errorf("published %s, want the first ExpVar's %s", s, e.String())
	}

	// A name taken outside this package.
	expvar.NewInt(name + "_int")
	if err := metrics.NewExpVar(name+"_int", true).Err(); !errors.Is(err, metrics.ErrPublished) {
		t.Fatalf("Err() = %v, want ErrPublished", err)
	}
}

func TestExpVar_Concurrent(t *testing.T) {
	e := metrics.NewExpVar("", false)
	const goroutines, n = 4, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			tbl := e.Table("t") // concurrent Table calls share the figures
			for i := range n {
				tbl.LockWait(time.Duration(g*n + i))
				tbl.WriteTxn(time.Nanosecond, i%2 == 0)
				tbl.Committed(i, uint64(i), 0)
				tbl.ChangeFeeds(1, 0)
				_ = e.String()
			}
		})
	}
	wg.Wait()
	v, _ := e.Values("t")
	if v.LockWaits != goroutines*n || v.Committed+v.Aborted != goroutines*n ||
		v.Committed != goroutines*n/2 || v.HeldTotal != goroutines*n ||
		v.LockWaitMax != goroutines*n-1 || v.Objects != n-1 {
		t.Errorf("values %+v", v)
	}
}

func BenchmarkExpVar_Txn(b *testing.B) {
	tbl := metrics.NewExpVar("", false).Table("t")
	b.ReportAllocs()
	for b.Loop() {
		tbl.LockWait(time.Microsecond)
		tbl.WriteTxn(time.Microsecond, true)
		tbl.Committed(1, 2, 0)
		tbl.ChangeFeeds(0, 0)
	}
}

func TestExpVar_Handle(t *testing.T) {
	e := metrics.NewExpVar("unused", false)
	if _, ok := e.HandleValues("mod"); ok {
		t.Fatal("values of a handle never made")
	}
	h := e.Handle("mod")
	if e.Handle("mod") != h {
		t.Fatal("two Handles of one name")
	}
	h.WriteTxn(10*time.Microsecond, true)
	h.WriteTxn(5*time.Microsecond, false)
	got, ok := e.HandleValues("mod")
	if want := (metrics.HandleValues{Committed: 1, Aborted: 1, HeldTotal: 15 * time.Microsecond}); !ok || got != want {
		t.Fatalf("HandleValues = %+v, %v; want %+v", got, ok, want)
	}
	var all map[string]map[string]map[string]uint64
	if err := json.Unmarshal([]byte(e.String()), &all); err != nil {
		t.Fatalf("String() = %s: %v", e.String(), err)
	}
	if got := all[metrics.HandlesKey]["mod"]; got["write_txns_committed"] != 1 || got["write_txns_aborted"] != 1 || got["held_ns_total"] != 15000 {
		t.Fatalf("String() = %s", e.String())
	}
}
