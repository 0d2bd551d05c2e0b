package reconciler_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// TestRefreshRate: Done objects older than the refresh interval are marked
// Refreshing at the rate limit, in batches (a tenth of a second's worth per
// write transaction), reconciled in the background lane, and Done again.
func TestRefreshRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txns := &txnCounter{}
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{dbOpts: []strata.Option{strata.WithMetrics(txns)}},
			reconciler.WithRefresh(time.Hour, 100), reconciler.WithMetrics(m))
		f.start()
		defer f.stop()
		var objs []*testObj
		for i := range 1000 {
			objs = append(objs, pending(uint64(i), "v"))
		}
		f.upsert(objs...)
		settle(time.Second)
		f.world.TakeOps()
		if m.waitsIn(reconciler.LaneBackground) != 0 {
			t.Fatal("background work before any refresh")
		}
		// An hour later every object is stale, and refreshed at 100 a
		// second: five seconds refresh about 500.
		settle(time.Hour)
		f.world.TakeOps()
		txns0 := txns.committed("objects")
		settle(5 * time.Second)
		ops := f.world.TakeOps()
		if len(ops) < 400 || len(ops) > 600 {
			t.Errorf("%d refreshes in 5s at 100/s", len(ops))
		}
		for _, op := range ops {
			if op[:len("update-refresh")] != "update-refresh" {
				t.Fatalf("op %q is not a refresh", op)
			}
		}
		// Marks in batches of 10, and the refreshes' statuses in batches
		// of their own: far fewer transactions than objects.
		if n := txns.committed("objects") - txns0; n > int64(len(ops))/5+10 {
			t.Errorf("%d write transactions for %d refreshes", n, len(ops))
		}
		bg := m.waitsIn(reconciler.LaneBackground)
		if bg < len(ops) {
			t.Errorf("%d objects came from the background lane, want %d", bg, len(ops))
		}
		settle(10 * time.Second)
		if err := f.converged(); err != nil {
			t.Error(err)
		}
		if up, _, _ := f.world.Counts(); up != 2000 {
			t.Errorf("%d updates: want every object once, and refreshed once", up)
		}
	})
}

// TestStartupRefresh: objects found Done when Run starts (a durable
// table's, after a restart) are refreshed; with WithStartupRefresh(false)
// they are not.
func TestStartupRefresh(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ops := newTimedOps(func(*testObj, int) error { return nil })
				db := strata.New()
				tbl := strata.MustNewTable(db, "objects", idIndex)
				wtxn := db.WriteTxn(tbl)
				for i := range 50 {
					mustInsert(t, tbl, wtxn, &testObj{ID: uint64(i), Status: reconciler.StatusDone()})
				}
				mustCommit(t, wtxn)
				time.Sleep(time.Second)
				_, stop := startOn(t, db, tbl, ops, reconciler.WithRefresh(time.Hour, 10), reconciler.WithStartupRefresh(on))
				defer stop()
				// Added after the start: not refreshed.
				insertOne(t, db, tbl, &testObj{ID: 1000, Status: reconciler.StatusDone()})
				time.Sleep(10 * time.Second)
				synctest.Wait()
				n := 0
				for i := range 50 {
					n += len(ops.at(uint64(i)))
				}
				want := 0
				if on {
					want = 50
				}
				if n != want {
					t.Errorf("%d startup refreshes, want %d", n, want)
				}
				if n := len(ops.at(1000)); n != 0 {
					t.Errorf("an object added Done after the start was refreshed %d times", n)
				}
			})
		})
	}
	_ = context.Background
}

// TestRefreshJitter: with jitter j, each Done object is refreshed between
// (1-j) and (1+j) times the refresh interval after its status was written
// (plus the granularity of the refresh passes, a sixteenth of the
// interval), never before; the refreshes spread over that window rather
// than bunching at its start or end. The random source is seeded, so the
// test is deterministic.
func TestRefreshJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			n      = 600
			every  = time.Hour
			jitter = 0.2
		)
		ops := newTimedOps(func(*testObj, int) error { return nil })
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		_, stop := startOn(t, db, tbl, ops, reconciler.WithRefresh(every, 10000),
			reconciler.WithJitter(jitter, rand.New(rand.NewPCG(1, 2))))
		defer stop()
		wtxn := db.WriteTxn(tbl)
		for i := range n {
			mustInsert(t, tbl, wtxn, &testObj{ID: uint64(i), Status: reconciler.StatusPending()})
		}
		mustCommit(t, wtxn)
		// Long enough for every first refresh, too short for a second.
		time.Sleep(3 * every / 2)
		synctest.Wait()
		lo, hi := time.Duration((1-jitter)*float64(every)), time.Duration((1+jitter)*float64(every))
		slack := every / 16
		// Three bins over the window [lo, hi]; the uniform share of each
		// is a third.
		var bins [3]int
		distinct := map[time.Duration]bool{}
		for i := range n {
			times := ops.at(uint64(i))
			if len(times) != 2 {
				t.Fatalf("object %d updated at %v: want once, and refreshed once", i, times)
			}
			age := times[1] - times[0]
			if age < lo || age > hi+slack {
				t.Errorf("object %d refreshed %s after it was Done, want within [%s, %s]", i, age, lo, hi+slack)
				continue
			}
			distinct[age] = true
			bins[min(int(3*(age-lo)/(hi-lo)), 2)]++
		}
		for i, c := range bins {
			if c < n/5 {
				t.Errorf("refresh ages by third of the jitter window %v: third %d holds %d of %d", bins, i, c, n)
				break
			}
		}
		if len(distinct) < 5 {
			t.Errorf("the refreshes came at %d distinct times, want them spread", len(distinct))
		}
	})
}

// reportLog records every report given to it, as "OK: msg" or
// "Degraded: reason: err".
type reportLog struct {
	mu      sync.Mutex
	reports []string
}

func (h *reportLog) OK(status string) { h.add("OK: " + status) }
func (h *reportLog) Degraded(reason string, err error) {
	h.add("Degraded: " + reason + ": " + err.Error())
}
func (h *reportLog) Stopped(reason string) { h.add("Stopped: " + reason) }

func (h *reportLog) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports = append(h.reports, s)
}

// take returns the reports since the last call.
func (h *reportLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.reports
	h.reports = nil
	return r
}

// TestReportRefresh: ReportRefresh reports the refresh's phases as they
// change (waiting for Run, a pass, the time to the next, marks that
// fail and work again, off once Run returned) and returns when its
// context ends; RefreshInterval is WithRefresh's interval.
func TestReportRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithRefresh(time.Hour, 100))
		if d := f.r.RefreshInterval(); d != time.Hour {
			t.Errorf("RefreshInterval = %s", d)
		}
		journal := &flakyJournal{}
		wtxn := f.db.WriteTxn(f.tbl)
		if err := strata.SetJournal(wtxn, f.tbl, journal, nopTableJournal[*testObj]{}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, wtxn)
		h := &reportLog{}
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan error, 1)
		go func() { returned <- f.r.ReportRefresh(ctx, h) }()
		settle(0)
		expectReports(t, h, "OK: Waiting for the reconciler to start")

		f.start()
		f.upsert(pending(1, "a"), pending(2, "b"))
		settle(0)
		// The first pass finds nothing due: the next in half the
		// interval. (ReportRefresh reports the newest state: it may not
		// see a pass as short as this one.)
		expectLastReport(t, h, "OK: Next refresh in 30m0s")

		// The next pass marks both objects, but the store refuses the
		// marks until it works again.
		time.Sleep(30 * time.Minute)
		journal.fail.Store(true)
		settle(time.Hour)
		expectLastReport(t, h, "Degraded: marking objects for refresh failed: journal: the store refuses the write")
		journal.fail.Store(false)
		settle(time.Hour)
		got := h.take()
		if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "OK: Next refresh in ") {
			t.Errorf("reports %q after the store works again, want the next refresh last", got)
		}
		if up, _, _ := f.world.Counts(); up < 4 {
			t.Errorf("%d updates, want the objects and their refreshes", up)
		}
		f.stop()
		settle(0)
		expectReports(t, h, "OK: Refresh off")
		cancel()
		if err := <-returned; err != nil {
			t.Errorf("ReportRefresh = %v", err)
		}
	})
}

// TestReportRefreshOff: without refresh, ReportRefresh says so once Run
// read the table, and RefreshInterval is 0.
func TestReportRefreshOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}) // WithoutRefresh
		if d := f.r.RefreshInterval(); d != 0 {
			t.Errorf("RefreshInterval = %s, want 0", d)
		}
		h := &reportLog{}
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan error, 1)
		go func() { returned <- f.r.ReportRefresh(ctx, h) }()
		settle(0)
		expectReports(t, h, "OK: Waiting for the reconciler to start")
		f.start()
		settle(time.Second)
		expectReports(t, h, "OK: Refresh off")
		f.stop()
		cancel()
		if err := <-returned; err != nil {
			t.Errorf("ReportRefresh = %v", err)
		}
	})
}

func expectReports(t *testing.T, h *reportLog, want ...string) {
	t.Helper()
	if got := h.take(); !slices.Equal(got, want) {
		t.Errorf("reports %q, want %q", got, want)
	}
}

// expectLastReport checks the last report since the last call.
func expectLastReport(t *testing.T, h *reportLog, want string) {
	t.Helper()
	if got := h.take(); len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("reports %q, want %q last", got, want)
	}
}
