package reconciler_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
)

// txnCounter counts the committed write transactions that locked each
// table (a strata metrics.Metrics).
type txnCounter struct {
	mu     sync.Mutex
	tables map[string]*txnCounterTable
}

type txnCounterTable struct{ committed atomic.Int64 }

func (c *txnCounter) Table(name string) metrics.Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil {
		c.tables = map[string]*txnCounterTable{}
	}
	t := &txnCounterTable{}
	c.tables[name] = t
	return t
}

func (c *txnCounter) committed(table string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tables[table].committed.Load()
}

// Handle discards what database handles report: the tests count by table.
func (c *txnCounter) Handle(string) metrics.Handle { return metrics.NopMetrics{}.Handle("") }

func (t *txnCounterTable) LockWait(time.Duration) {}
func (t *txnCounterTable) WriteTxn(_ time.Duration, committed bool) {
	if committed {
		t.committed.Add(1)
	}
}
func (t *txnCounterTable) Committed(int, uint64, int) {}
func (t *txnCounterTable) ChangeFeeds(int, uint64)    {}

// TestConvergedIsQuiet: once converged, a day of fake time with refresh
// off costs no operation and no write transaction, with any number of
// workers; with pruning at its default (hourly), it costs exactly 24
// prunes and still no write: a prune that finds nothing to delete writes
// nothing to the table (a prune never writes to it).
func TestConvergedIsQuiet(t *testing.T) {
	for _, pruning := range []bool{false, true} {
		for _, workers := range []int{1, 4, 16} {
			name := fmt.Sprintf("workers=%d/pruning=%v", workers, pruning)
			t.Run(name, func(t *testing.T) { testConvergedIsQuiet(t, workers, pruning) })
		}
	}
}

func testConvergedIsQuiet(t *testing.T, workers int, pruning bool) {
	synctest.Test(t, func(t *testing.T) {
		txns := &txnCounter{}
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{dbOpts: []strata.Option{strata.WithMetrics(txns)}, defaultPruning: pruning},
			reconciler.WithWorkers(workers), reconciler.WithMetrics(m))
		f.start()
		defer f.stop()
		var objs []*testObj
		for i := range 200 {
			objs = append(objs, pending(uint64(i), "v"))
		}
		f.upsert(objs...)
		f.upsert(pending(5, "changed"), pending(7, "changed"))
		f.remove(9)
		settle(time.Second)
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		up0, del0, prunes0 := f.world.Counts()
		txns0 := txns.committed("objects")
		if txns0 < 3 {
			t.Fatalf("%d write transactions counted; the counter does not work", txns0)
		}
		if want := map[bool]int{false: 0, true: 1}[pruning]; prunes0 != want {
			t.Fatalf("%d prunes at the start, want %d", prunes0, want)
		}
		f.world.TakeOps()
		settle(24 * time.Hour)
		up, del, prunes := f.world.Counts()
		if up != up0 || del != del0 {
			t.Errorf("a converged day: %d updates and %d deletes, want none", up-up0, del-del0)
		}
		if n := txns.committed("objects") - txns0; n != 0 {
			t.Errorf("a converged day: %d write transactions, want none", n)
		}
		// The first prune ran at the start, just before the
		// objects were written: the day holds the next 24.
		if want := map[bool]int{false: 0, true: 24}[pruning]; prunes-prunes0 != want {
			t.Errorf("a converged day: %d prunes, want %d", prunes-prunes0, want)
		}
		if n := m.prunesOf(reconciler.OutcomeOK); n != prunes {
			t.Errorf("%d prunes reported ok, %d ran", n, prunes)
		}
		for _, op := range f.world.TakeOps() {
			if op != "prune(n=199)" {
				t.Errorf("a converged day: operation %q", op)
			}
		}
		f.expectHealth("OK", "OK, 199 object(s)")
	})
}

// multiObj is reconciled by several reconcilers, each with its own entry
// in a StatusSet.
type multiObj struct {
	ID       uint64
	Value    string
	Statuses reconciler.StatusSet
}

func (o *multiObj) Clone() *multiObj { c := *o; return &c }

var multiByID = strata.Index[*multiObj, uint64]{
	Name:       "id",
	FromObject: func(o *multiObj) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

func multiKey(o *multiObj) string { return strconv.FormatUint(o.ID, 10) }

// multiReconciler is one of several reconcilers of a multiObj table.
type multiReconciler struct {
	name  string
	world *reconcilertest.World[*multiObj]
	r     *reconciler.Reconciler[*multiObj]
}

func newMultiReconciler(t testing.TB, db *strata.DB, tbl strata.RWTable[*multiObj], name string, opts ...reconciler.Option) *multiReconciler {
	m := &multiReconciler{name: name, world: reconcilertest.NewWorld(multiKey)}
	var err error
	m.r, err = reconciler.New(db, reconciler.Config[*multiObj]{
		Table:           tbl,
		CloneObject:     (*multiObj).Clone,
		GetObjectStatus: func(o *multiObj) reconciler.Status { return o.Statuses.Get(name) },
		SetObjectStatus: func(o *multiObj, s reconciler.Status) *multiObj {
			o.Statuses = o.Statuses.Set(name, s)
			return o
		},
		Operations: m.world,
	}, append([]reconciler.Option{reconciler.WithName(name), reconciler.WithJitter(0, nil),
		reconciler.WithoutPruning(), reconciler.WithoutRefresh()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runAll(rs ...*multiReconciler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, m := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.r.Run(ctx, nil); err != nil {
				panic(err) // no t here: a Run that fails must not pass unseen
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// TestStatusOnlyWritesCauseNoOps: two reconcilers share objects through a
// StatusSet; each one's status writes change the object for the other,
// and must not cause it an operation. A status-only write from outside
// (another reconciler's refresh mark, a write that keeps every status)
// causes none either.
func TestStatusOnlyWritesCauseNoOps(t *testing.T) {
	for _, workers := range []int{1, 8} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := strata.New()
				tbl := strata.MustNewTable(db, "multi", multiByID)
				a := newMultiReconciler(t, db, tbl, "a", reconciler.WithWorkers(workers))
				b := newMultiReconciler(t, db, tbl, "b", reconciler.WithWorkers(workers))
				stop := runAll(a, b)
				defer stop()

				const n = 100
				wtxn := db.WriteTxn(tbl)
				for i := range n {
					mustInsert(t, tbl, wtxn, &multiObj{ID: uint64(i), Value: "v", Statuses: reconciler.NewStatusSet("a", "b")})
				}
				mustCommit(t, wtxn)
				settle(time.Second)
				for _, m := range []*multiReconciler{a, b} {
					up, _, _ := m.world.Counts()
					if up != n || len(m.world.Contents()) != n {
						t.Fatalf("%s: %d updates, world %d; want %d", m.name, up, len(m.world.Contents()), n)
					}
				}
				for o := range tbl.All(db.ReadTxn()) {
					if !o.Statuses.IsDone() {
						t.Fatalf("object %d: %s", o.ID, o.Statuses)
					}
				}

				// b's refresh mark is a status-only write for a; a write
				// keeping every status is one for both.
				wtxn = db.WriteTxn(tbl)
				for o := range tbl.All(wtxn) {
					c := o.Clone()
					if o.ID%2 == 0 {
						c.Statuses = c.Statuses.Set("b", reconciler.StatusRefreshing())
					}
					mustInsert(t, tbl, wtxn, c)
				}
				mustCommit(t, wtxn)
				settle(time.Second)
				if up, _, _ := a.world.Counts(); up != n {
					t.Errorf("a: %d updates after status-only writes, want %d", up, n)
				}
				if up, _, _ := b.world.Counts(); up != n+n/2 {
					t.Errorf("b: %d updates after its refresh marks, want %d", up, n+n/2)
				}
				for _, m := range []*multiReconciler{a, b} {
					if c := m.world.MaxConcurrentPerKey(); c > 1 {
						t.Errorf("%s: %d operations at once on one key", m.name, c)
					}
				}
			})
		})
	}
}

func mustInsert[Obj any](t testing.TB, tbl strata.RWTable[Obj], wtxn strata.WriteTxn, o Obj) {
	t.Helper()
	if _, _, err := tbl.Insert(wtxn, o); err != nil {
		t.Fatal(err)
	}
}

func mustCommit(t testing.TB, wtxn strata.WriteTxn) strata.ReadTxn {
	t.Helper()
	txn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return txn
}

// TestOnlyPendingIsReconciled: objects written Done, Error or without a
// status are not reconciled; Pending and Refreshing ones are.
func TestOnlyPendingIsReconciled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.start()
		defer f.stop()
		f.upsert(
			&testObj{ID: 1, Status: reconciler.StatusDone()},
			&testObj{ID: 2},
			&testObj{ID: 3, Status: reconciler.StatusPending()},
			&testObj{ID: 4, Status: reconciler.StatusRefreshing()},
		)
		settle(0)
		f.expectOpsAnyOrder("update(3)", "update-refresh(4)")
	})
}
