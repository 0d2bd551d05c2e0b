package stratahive_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
)

// multi is an object that several reconcilers reconcile, each with its
// entry in a StatusSet (statedb's TestMultipleReconcilers' object).
type multi struct {
	ID       uint64
	Statuses reconciler.StatusSet
}

func (m *multi) Clone() *multi { c := *m; return &c }

var multiByID = strata.Index[*multi, uint64]{
	Name:       "id",
	FromObject: func(m *multi) index.KeySet { return index.KeySetOf(index.Uint64(m.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// countingOps counts its updates.
type countingOps struct {
	mu      sync.Mutex
	updates int
}

func (o *countingOps) Update(context.Context, strata.ReadTxn, strata.Revision, *multi) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.updates++
	return nil
}

func (o *countingOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *multi) error {
	return nil
}

func (o *countingOps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*multi, strata.Revision]) error {
	return nil
}

func (o *countingOps) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.updates
}

// registerMulti is an invoke function that registers a reconciler of the
// multi table with the StatusSet entry entry, as statedb's test does:
// no name given unless opts give one.
func registerMulti(table *strata.RWTable[*multi], ops *countingOps, entry string, opts ...reconciler.Option) func(stratahive.ReconcilerParams) error {
	return func(p stratahive.ReconcilerParams) error {
		_, err := stratahive.RegisterReconciler(p, *table, (*multi).Clone,
			func(m *multi, s reconciler.Status) *multi { m.Statuses = m.Statuses.Set(entry, s); return m },
			func(m *multi) reconciler.Status { return m.Statuses.Get(entry) },
			ops, nil, append([]reconciler.Option{reconciler.WithoutPruning(), reconciler.WithoutRefresh()}, opts...)...)
		return err
	}
}

// multiHive is statedb's TestMultipleReconcilers program: a table, and
// the reconciler cells given.
func multiHive(table *strata.RWTable[*multi], db **strata.DB, health **cell.SimpleHealth, reg **stratahive.Registry, cells ...cell.Cell) *hive.Hive {
	return hive.New(append([]cell.Cell{
		stratahive.Cell, job.Cell,
		cell.Provide(func() (cell.Health, *cell.SimpleHealth) {
			h, sh := cell.NewSimpleHealth()
			*health = sh
			return h, sh
		}),
		cell.Provide(func(r job.Registry, h cell.Health) job.Group { return r.NewGroup(h) }),
		cell.Invoke(func(d *strata.DB, r *stratahive.Registry) (err error) {
			*db, *reg = d, r
			*table, err = strata.NewTable(d, "objects", multiByID)
			return err
		}),
	}, cells...)...)
}

// TestTwoUnnamedReconcilersOfOneTable: statedb's TestMultipleReconcilers,
// ported: two modules register a reconciler of one table without a name.
// The hive starts; the first takes the table's name, the second the
// table's and its module's; both reconcile the object once, each in its
// own StatusSet entry, and each has its health and its entry in the
// registry.
func TestTwoUnnamedReconcilersOfOneTable(t *testing.T) {
	var (
		table      strata.RWTable[*multi]
		db         *strata.DB
		health     *cell.SimpleHealth
		reg        *stratahive.Registry
		ops1, ops2 countingOps
	)
	h := multiHive(&table, &db, &health, &reg,
		cell.Module("test1", "First reconciler",
			cell.Invoke(registerMulti(&table, &ops1, "test1"))),
		cell.Module("test2", "Second reconciler",
			cell.Invoke(registerMulti(&table, &ops2, "test2"))),
	)
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	t.Cleanup(func() { must(t, h.Stop(log, context.Background())) })

	if got := reg.Reconcilers(); !slices.Equal(got, []string{"objects", "objects-test2"}) {
		t.Errorf("reconcilers %v, want [objects objects-test2]", got)
	}
	wtxn := db.WriteTxn(table)
	_, _, err := table.Insert(wtxn, &multi{ID: 1, Statuses: reconciler.NewStatusSet()})
	must(t, err)
	_, err = wtxn.Commit()
	must(t, err)
	deadline := time.Now().Add(time.Minute) // only a hang reaches it
	for {
		m, _, watch, _ := table.GetWatch(db.ReadTxn(), multiByID.Query(1))
		if m.Statuses.Get("test1").Kind == reconciler.StatusKindDone && m.Statuses.Get("test2").Kind == reconciler.StatusKindDone {
			if !strings.HasPrefix(m.Statuses.String(), "Done: test1 test2 (") {
				t.Errorf("statuses %q", m.Statuses)
			}
			break
		}
		select {
		case <-watch:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("not reconciled by both: %s", m.Statuses)
		}
	}
	if ops1.count() != 1 || ops2.count() != 1 {
		t.Errorf("updates %d and %d, want 1 each", ops1.count(), ops2.count())
	}
	for _, scope := range []string{"job-reconcile-objects", "job-reconcile-objects-test2"} {
		waitHealth(t, health, scope, cell.StatusOK, "OK, 1 object(s)")
	}
}

// TestUnnamedReconcilerNames: unnamed reconcilers of one table in one
// module are named after the table, then the table and the module (its
// ID's dots made dashes), then the table and a number; a name given with
// WithName is kept, and one taken fails the hive with
// ErrDuplicateReconciler and a message that says what to write.
func TestUnnamedReconcilerNames(t *testing.T) {
	var (
		table  strata.RWTable[*multi]
		db     *strata.DB
		health *cell.SimpleHealth
		reg    *stratahive.Registry
		ops    countingOps
	)
	h := multiHive(&table, &db, &health, &reg,
		cell.Module("outer", "Outer",
			cell.Module("inner", "Inner",
				cell.Invoke(registerMulti(&table, &ops, "a")),
				cell.Invoke(registerMulti(&table, &ops, "b")),
				cell.Invoke(registerMulti(&table, &ops, "c")),
				cell.Invoke(registerMulti(&table, &ops, "d", reconciler.WithName("objects-outer-inner-x"))),
				cell.Invoke(registerMulti(&table, &ops, "e")),
			)),
	)
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	t.Cleanup(func() { must(t, h.Stop(log, context.Background())) })
	want := []string{"objects", "objects-2", "objects-3", "objects-outer-inner", "objects-outer-inner-x"}
	if got := reg.Reconcilers(); !slices.Equal(got, want) {
		t.Errorf("reconcilers %v, want %v", got, want)
	}
	for _, name := range want {
		waitHealth(t, health, "job-reconcile-"+name, cell.StatusOK, "OK, 0 object(s)")
	}

	// A name given twice is refused.
	var table2 strata.RWTable[*multi]
	var db2 *strata.DB
	var health2 *cell.SimpleHealth
	var reg2 *stratahive.Registry
	h2 := multiHive(&table2, &db2, &health2, &reg2,
		cell.Module("one", "One", cell.Invoke(registerMulti(&table2, &ops, "a", reconciler.WithName("objects")))),
		cell.Module("two", "Two", cell.Invoke(registerMulti(&table2, &ops, "b", reconciler.WithName("objects")))),
	)
	err := h2.Populate(log)
	if !errors.Is(err, stratahive.ErrDuplicateReconciler) {
		t.Fatalf("two reconcilers named objects: %v, want ErrDuplicateReconciler", err)
	}
	if !strings.Contains(err.Error(), `reconciler.WithName("objects-two")`) {
		t.Errorf("the error does not say what to write: %v", err)
	}
}

// waitHealth waits until the health scope reports level with a status
// that starts with prefix (the reconciler's own report, not the job's
// "Running").
func waitHealth(t *testing.T, h *cell.SimpleHealth, scope string, level cell.Level, prefix string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only a hang reaches it
	for {
		var got cell.Level
		var status string
		if c := h.GetChild(scope); c != nil {
			h.Lock()
			got, status = c.Level, c.Status
			h.Unlock()
			if got == level && strings.HasPrefix(status, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("health %s: %s %q, want %s %q...", scope, got, status, level, prefix)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRefreshJob: a reconciler that refreshes has the job
// "refresh-<name>", whose health ("job-refresh-<name>", as statedb's
// health tree has it) tells when the next refresh comes; one that does
// not refresh has none.
func TestRefreshJob(t *testing.T) {
	var (
		table  strata.RWTable[*multi]
		db     *strata.DB
		health *cell.SimpleHealth
		reg    *stratahive.Registry
		ops    countingOps
	)
	h := multiHive(&table, &db, &health, &reg,
		cell.Module("app", "App",
			cell.Invoke(registerMulti(&table, &ops, "a", reconciler.WithName("refreshing"), reconciler.WithRefresh(time.Hour, 100))),
			cell.Invoke(registerMulti(&table, &ops, "b", reconciler.WithName("still"))), // WithoutRefresh
		),
	)
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	t.Cleanup(func() { must(t, h.Stop(log, context.Background())) })
	waitHealth(t, health, "job-reconcile-refreshing", cell.StatusOK, "OK, 0 object(s)")
	waitHealth(t, health, "job-reconcile-still", cell.StatusOK, "OK, 0 object(s)")
	waitHealth(t, health, "job-refresh-refreshing", cell.StatusOK, "Next refresh in ")
	if c := health.GetChild("job-refresh-still"); c != nil {
		t.Errorf("a reconciler without refresh has a refresh job: %+v", c)
	}
}
