package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
)

// testObj is the object of the tests' tables.
type testObj struct {
	ID     uint64
	Value  string
	Group  string
	Status reconciler.Status
}

func (o *testObj) Clone() *testObj { c := *o; return &c }

func (o *testObj) GetStatus() reconciler.Status { return o.Status }

func (o *testObj) SetStatus(s reconciler.Status) *testObj { o.Status = s; return o }

var idIndex = strata.Index[*testObj, uint64]{
	Name:       "id",
	FromObject: func(o *testObj) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

func objKey(o *testObj) string { return strconv.FormatUint(o.ID, 10) }

// fixture is a database with one table, a World, and a reconciler between
// them.
type fixture struct {
	t      testing.TB
	db     *strata.DB
	tbl    strata.RWTable[*testObj]
	world  *reconcilertest.World[*testObj]
	r      *reconciler.Reconciler[*testObj]
	health *testHealth
	cancel context.CancelFunc
	done   chan error
	// initDone marks the table initialized, if fixtureConfig.init
	// registered an initializer.
	initDone func()
}

type fixtureConfig struct {
	batch    bool
	ordering bool
	dbOpts   []strata.Option
	init     bool // register an initializer (left pending)
	// defaultPruning leaves pruning at its default (hourly) instead of
	// turning it off.
	defaultPruning bool
}

func newFixture(t testing.TB, fc fixtureConfig, opts ...reconciler.Option) *fixture {
	t.Helper()
	db := strata.New(fc.dbOpts...)
	tbl, err := strata.NewTable(db, "objects", idIndex)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, tbl: tbl, health: &testHealth{}}
	if fc.init {
		wtxn := db.WriteTxn(tbl)
		done := tbl.RegisterInitializer(wtxn, "test")
		if _, err := wtxn.Commit(); err != nil {
			t.Fatal(err)
		}
		f.initDone = func() {
			wtxn := db.WriteTxn(tbl)
			done(wtxn)
			if _, err := wtxn.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.world = reconcilertest.NewWorld(objKey).LogRefreshes((*testObj).GetStatus)
	cfg := reconciler.Config[*testObj]{
		Table:           tbl,
		CloneObject:     (*testObj).Clone,
		GetObjectStatus: (*testObj).GetStatus,
		SetObjectStatus: (*testObj).SetStatus,
		Operations:      f.world,
	}
	if fc.batch {
		cfg.BatchOperations = f.world
	}
	if fc.ordering {
		cfg.OrderingKey = func(o *testObj) string { return o.Group }
	}
	// No jitter, pruning or refresh unless the test asks for them.
	defaults := []reconciler.Option{reconciler.WithJitter(0, nil), reconciler.WithoutRefresh()}
	if !fc.defaultPruning {
		defaults = append(defaults, reconciler.WithoutPruning())
	}
	opts = append(defaults, opts...)
	f.r, err = reconciler.New(db, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.done = make(chan error, 1)
	go func() { f.done <- f.r.Run(ctx, f.health) }()
}

func (f *fixture) stop() {
	f.t.Helper()
	if f.cancel == nil {
		return
	}
	f.cancel()
	if err := <-f.done; err != nil {
		f.t.Errorf("Run: %v", err)
	}
	f.cancel = nil
}

func pending(id uint64, value string) *testObj {
	return &testObj{ID: id, Value: value, Status: reconciler.StatusPending()}
}

// upsert writes the objects (as given: set their status) in one
// transaction and returns its revision.
func (f *fixture) upsert(objs ...*testObj) strata.Revision {
	f.t.Helper()
	wtxn := f.db.WriteTxn(f.tbl)
	for _, o := range objs {
		if _, _, err := f.tbl.Insert(wtxn, o); err != nil {
			f.t.Fatalf("insert %d: %v", o.ID, err)
		}
	}
	rev := f.tbl.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		f.t.Fatal(err)
	}
	return rev
}

func (f *fixture) remove(ids ...uint64) strata.Revision {
	f.t.Helper()
	wtxn := f.db.WriteTxn(f.tbl)
	for _, id := range ids {
		if _, had, err := f.tbl.Delete(wtxn, &testObj{ID: id}); err != nil || !had {
			f.t.Fatalf("delete %d: had %v, %v", id, had, err)
		}
	}
	rev := f.tbl.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		f.t.Fatal(err)
	}
	return rev
}

func (f *fixture) get(id uint64) *testObj {
	f.t.Helper()
	o, _, ok := f.tbl.Get(f.db.ReadTxn(), idIndex.Query(id))
	if !ok {
		f.t.Fatalf("object %d not in the table", id)
	}
	return o
}

// statuses returns "id:Kind" for every object, in ID order.
func (f *fixture) statuses() []string {
	var out []string
	for o := range f.tbl.All(f.db.ReadTxn()) {
		out = append(out, fmt.Sprintf("%d:%s", o.ID, o.Status.Kind))
	}
	return out
}

// converged reports whether the world holds exactly the table's objects
// (by value) and every status is Done.
func (f *fixture) converged() error {
	world := f.world.Contents()
	n := 0
	for o := range f.tbl.All(f.db.ReadTxn()) {
		n++
		if o.Status.Kind != reconciler.StatusKindDone {
			return fmt.Errorf("object %d: status %s", o.ID, o.Status)
		}
		w, ok := world[objKey(o)]
		if !ok {
			return fmt.Errorf("object %d missing from the world", o.ID)
		}
		if w.Value != o.Value {
			return fmt.Errorf("object %d: world has %q, table %q", o.ID, w.Value, o.Value)
		}
	}
	if len(world) != n {
		return fmt.Errorf("world holds %d objects, table %d: %v", len(world), n, slices.Sorted(func(yield func(string) bool) {
			for k := range world {
				if !yield(k) {
					return
				}
			}
		}))
	}
	return nil
}

// expectOps checks the world's operations since the last call.
func (f *fixture) expectOps(want ...string) {
	f.t.Helper()
	got := f.world.TakeOps()
	if !slices.Equal(got, want) {
		f.t.Errorf("ops = %q, want %q", got, want)
	}
}

// expectOpsAnyOrder checks the operations since the last call, as a set.
func (f *fixture) expectOpsAnyOrder(want ...string) {
	f.t.Helper()
	got := f.world.TakeOps()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		f.t.Errorf("ops = %q, want (in any order) %q", got, want)
	}
}

// settle lets the bubble run until every goroutine is blocked, after
// advancing fake time by d.
func settle(d time.Duration) {
	synctest.Wait()
	if d > 0 {
		time.Sleep(d)
		synctest.Wait()
	}
}

// testHealth records the reports of a reconciler.
type testHealth struct {
	mu      sync.Mutex
	level   string
	message string
	err     error
	reports int
}

func (h *testHealth) OK(status string) { h.set("OK", status, nil) }
func (h *testHealth) Degraded(reason string, err error) {
	h.set("Degraded", reason, err)
}
func (h *testHealth) Stopped(reason string) { h.set("Stopped", reason, nil) }

func (h *testHealth) set(level, msg string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.level, h.message, h.err = level, msg, err
	h.reports++
}

func (h *testHealth) get() (level, message string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.level, h.message, h.err
}

func (f *fixture) expectHealth(level, msgPrefix string) {
	f.t.Helper()
	l, m, err := f.health.get()
	if l != level || len(m) < len(msgPrefix) || m[:len(msgPrefix)] != msgPrefix {
		f.t.Errorf("health = %s %q (%v), want %s %q...", l, m, err, level, msgPrefix)
	}
}

var errUpdate = errors.New("update fail")

type (
	strataReadTxn  = strata.ReadTxn
	strataRevision = strata.Revision
)

// recordingMetrics is a reconciler.Metrics that records everything.
type recordingMetrics struct {
	mu         sync.Mutex
	ops        map[string]int
	durations  []time.Duration
	waits      map[reconciler.Lane]int
	reconciled []time.Duration
	commits    int
	written    int
	conflicts  int
	commitErrs int
	progress   []reconciler.Stats
	prunes     map[reconciler.Outcome]int
	marked     int
}

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{ops: map[string]int{}, waits: map[reconciler.Lane]int{}, prunes: map[reconciler.Outcome]int{}}
}

func (m *recordingMetrics) Reconciler(string) reconciler.ReconcilerMetrics { return m }

func (m *recordingMetrics) Operation(op reconciler.Op, o reconciler.Outcome, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops[op.String()+"/"+o.String()]++
	m.durations = append(m.durations, d)
}

func (m *recordingMetrics) QueueWait(l reconciler.Lane, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waits[l]++
}

func (m *recordingMetrics) Reconciled(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reconciled = append(m.reconciled, d)
}

func (m *recordingMetrics) StatusCommit(written, conflicts int, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if err != nil {
		m.commitErrs++
	}
	m.written += written
	m.conflicts += conflicts
}

func (m *recordingMetrics) Progress(s reconciler.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.progress = append(m.progress, s)
}

func (m *recordingMetrics) Prune(o reconciler.Outcome, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prunes[o]++
}

func (m *recordingMetrics) Refresh(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.marked += n
}

func (m *recordingMetrics) count(op, outcome string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops[op+"/"+outcome]
}

func (m *recordingMetrics) waitsIn(l reconciler.Lane) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waits[l]
}

func (m *recordingMetrics) prunesOf(o reconciler.Outcome) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prunes[o]
}
