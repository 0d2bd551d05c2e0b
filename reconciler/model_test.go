package reconciler_test

// The model test of the reconciler's concurrency. Every hand-off between
// the reconciler's goroutines passes through a hold point (holds.go), and
// so does every operation of the outside world below. A scheduler holds
// each goroutine that reaches one, and the test, alone running while all
// the others are held or blocked (testing/synctest), chooses by a seeded
// random source what happens next: one held goroutine goes on, or the
// user writes, deletes or asks for a prune, or time passes. Each seed is
// one order of events; many seeds explore many orders, and a failing seed
// replays exactly (-reconciler.model.seed).
//
// What must hold, whatever the order:
//
//  1. At most one operation per object at once, and per ordering key.
//  2. Per ordering key, operations run in the order of the revisions of
//     the changes they reconcile.
//  3. A prune never overlaps an operation, and one starts after the last
//     call of Prune.
//  4. WaitUntilReconciled(rev) returns only once every object's newest
//     change up to rev was attempted (its operation ended), and no
//     object at a revision up to rev is still Pending.
//  5. In the end, every object is Done, and the outside world holds
//     exactly the newest version of every object of the table: no
//     change lost, none applied out of order.
//  6. A status write never overwrites a newer version: the table holds
//     the user's last write of every object.
//  7. Pause returns only once no operation (or prune) runs, and none
//     starts until Resume.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/internal/holdtest"
	"github.com/strata-db/strata/reconciler"
)

var (
	modelSeeds = flag.Int("reconciler.model.seeds", 300, "seeds of each reconciler model test")
	modelSeed  = flag.Int64("reconciler.model.seed", -1, "run the reconciler model tests with this seed only")
	modelLong  = flag.Bool("reconciler.model.long", false, "run the reconciler model tests with 20x the seeds")
)

// modelScheduler holds the reconciler's goroutines and the world's
// operations at their hold points.
type modelScheduler = holdtest.Scheduler[string]

// modelCoverage counts the releases at each hold point over every seed of
// TestModel.
var modelCoverage = &holdtest.Coverage{}

// modelWorld is the outside world of the model test: it holds each
// operation at a hold point, fails some on demand, and checks properties
// 1 to 3.
type modelWorld struct {
	s *modelScheduler
	m *modelTable

	mu           sync.Mutex
	applied      map[uint64]string // id -> value
	running      map[uint64]int
	groupRunning map[string]int
	groupLast    map[string]strata.Revision
	// attempted is, per object, the highest revision of a change whose
	// operation ended.
	attempted map[uint64]strata.Revision
	// chance decides, while failures or requeues are on, which
	// operations fail or ask for a requeue.
	chance   *rand.Rand
	failures bool
	requeues bool
	pruning  bool
	// paused: Pause returned and Resume was not called since; no
	// operation may start. pauseWanted numbers the Pause call that is
	// not resumed yet (0: none).
	paused      bool
	pauseWanted int
	prunes      int // prunes started
	pruneAfter  int // m.pruneReqs when the last prune started
	ordering    bool
	violations  []string
}

func (w *modelWorld) violate(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	w.violations = append(w.violations, v)
	w.s.Note("VIOLATION %s", v)
}

// begin records the start of an operation on o for its change at rev.
func (w *modelWorld) begin(op string, o *testObj, rev strata.Revision) {
	w.s.Note("%s id=%d %s change-rev=%d", op, o.ID, o.Value, rev)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pruning {
		w.violate("%s of id=%d while a prune runs", op, o.ID)
	}
	if w.paused {
		w.violate("%s of id=%d while paused", op, o.ID)
	}
	w.running[o.ID]++
	if w.running[o.ID] > 1 {
		w.violate("%d operations on id=%d at once", w.running[o.ID], o.ID)
	}
	if !w.ordering {
		return
	}
	w.groupRunning[o.Group]++
	if w.groupRunning[o.Group] > 1 {
		w.violate("%d operations of ordering key %s at once", w.groupRunning[o.Group], o.Group)
	}
	if last := w.groupLast[o.Group]; rev < last {
		w.violate("ordering key %s: %s of id=%d for the change at rev %d after an operation for rev %d", o.Group, op, o.ID, rev, last)
	}
	w.groupLast[o.Group] = max(w.groupLast[o.Group], rev)
}

// end records the end of the operation begin recorded, and returns its
// error: some fail while failures are on.
func (w *modelWorld) end(o *testObj, rev strata.Revision, apply func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running[o.ID]--
	if w.ordering {
		w.groupRunning[o.Group]--
	}
	w.attempted[o.ID] = max(w.attempted[o.ID], rev)
	if w.failures && w.chance.IntN(4) == 0 {
		w.s.Note("fail id=%d", o.ID)
		return errors.New("injected failure")
	}
	apply()
	if w.requeues && w.chance.IntN(4) == 0 {
		w.s.Note("requeue id=%d", o.ID)
		return reconciler.Requeue(20 * time.Millisecond)
	}
	return nil
}

// opWho tells the held operations apart: one per object at a time.
func opWho(o *testObj) int { return 1000 + int(o.ID) }

func (w *modelWorld) Update(ctx context.Context, _ strata.ReadTxn, _ strata.Revision, o *testObj) error {
	rev := w.m.revOf(o.Value)
	w.begin("update", o, rev)
	w.s.Hold("op-update", opWho(o))
	return w.end(o, rev, func() { w.applied[o.ID] = o.Value })
}

func (w *modelWorld) Delete(ctx context.Context, _ strata.ReadTxn, rev strata.Revision, o *testObj) error {
	w.begin("delete", o, rev)
	w.s.Hold("op-delete", opWho(o))
	return w.end(o, rev, func() { delete(w.applied, o.ID) })
}

func (w *modelWorld) Prune(ctx context.Context, _ strata.ReadTxn, desired iter.Seq2[*testObj, strata.Revision]) error {
	w.mu.Lock()
	for id, n := range w.running {
		if n > 0 {
			w.violate("prune while an operation on id=%d runs", id)
		}
	}
	if w.paused {
		w.violate("prune while paused")
	}
	w.pruning = true
	w.prunes++
	w.pruneAfter = w.m.prunesRequested()
	w.mu.Unlock()
	w.s.Note("prune")
	w.s.Hold("op-prune", 999)
	want := map[uint64]bool{}
	for o := range desired {
		want[o.ID] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruning = false
	for id := range w.applied {
		if !want[id] {
			delete(w.applied, id)
		}
	}
	return nil
}

// modelTable is the user's side: what was written, at which revision.
type modelTable struct {
	mu sync.Mutex
	// revs maps each written value to the revision of its write.
	revs map[string]strata.Revision
	// changes are each object's changes, in revision order.
	changes   map[uint64][]modelChange
	pruneReqs int
}

type modelChange struct {
	rev     strata.Revision
	value   string // "" for a delete
	deleted bool
}

func (m *modelTable) revOf(value string) strata.Revision {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev, ok := m.revs[value]
	if !ok {
		panic("model: unknown value " + value)
	}
	return rev
}

func (m *modelTable) prunesRequested() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pruneReqs
}

// newestAt returns id's newest change at or before rev.
func (m *modelTable) newestAt(id uint64, rev strata.Revision) (modelChange, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c modelChange
	found := false
	for _, ch := range m.changes[id] {
		if ch.rev > rev {
			break
		}
		c, found = ch, true
	}
	return c, found
}

// modelConfig is a variant of the model test.
type modelConfig struct {
	workers  int
	ordering bool
	failures bool
	pruning  bool
	batch    bool
	requeues bool // some operations ask for a requeue
	refresh  bool // refresh every 10ms
	rounds   bool // a round rate limit: 200 rounds a second, bursts of 2
	objects  int  // distinct IDs
	actions  int  // user actions per seed
}

func TestModel(t *testing.T) {
	modelCoverage.Reset()
	defer func() {
		if t.Failed() || *modelSeed >= 0 {
			return
		}
		// Every hold point was reached, in many seeds: the test explores
		// what it says it does.
		points := []string{"feed-read", "dispatch", "prune-dispatch", "worker-start", "worker-done",
			"worker-free", "commit", "committed", "outcome", "promote", "refresh", "publish",
			"op-update", "op-delete", "op-prune"}
		t.Logf("hold points released: %s", modelCoverage)
		// 20 over the default seeds; -short runs a fifth of them (the
		// race run), where the refresh variant's point was reached 17
		// times in one CI run.
		least := 20
		if testing.Short() {
			least = 4
		}
		if missing := modelCoverage.Missing(points, least); len(missing) > 0 {
			t.Errorf("hold points released fewer than %d times over every seed: %v (all: %s)", least, missing, modelCoverage)
		}
	}()
	for _, mc := range []modelConfig{
		{workers: 1, objects: 3, actions: 25},
		{workers: 4, objects: 4, actions: 30},
		{workers: 4, objects: 4, actions: 30, failures: true},
		{workers: 2, objects: 4, actions: 30, ordering: true},
		{workers: 4, objects: 6, actions: 40, ordering: true, failures: true},
		{workers: 3, objects: 4, actions: 30, pruning: true},
		{workers: 3, objects: 5, actions: 30, batch: true, failures: true},
		{workers: 3, objects: 4, actions: 30, requeues: true, failures: true},
		{workers: 2, objects: 4, actions: 30, refresh: true},
		{workers: 3, objects: 5, actions: 30, ordering: true, failures: true, rounds: true},
	} {
		name := fmt.Sprintf("workers=%d/objects=%d/ordering=%v/failures=%v/prune=%v/batch=%v/requeue=%v/refresh=%v/rounds=%v",
			mc.workers, mc.objects, mc.ordering, mc.failures, mc.pruning, mc.batch, mc.requeues, mc.refresh, mc.rounds)
		t.Run(name, func(t *testing.T) {
			seeds := *modelSeeds
			if *modelLong {
				seeds *= 20
			}
			if testing.Short() {
				seeds = max(1, seeds/5)
			}
			first := int64(0)
			if *modelSeed >= 0 {
				first, seeds = *modelSeed, 1
			}
			for seed := first; seed < first+int64(seeds); seed++ {
				var report string
				// synctest.Test ends the test at once if the bubble's test
				// failed (a Fatalf of runModel's): say which seed inside.
				name := t.Name()
				synctest.Test(t, func(t *testing.T) {
					defer func() {
						if t.Failed() {
							t.Logf("seed %d (replay: -run '%s' -reconciler.model.seed %d)", seed, name, seed)
						}
					}()
					report = runModel(t, mc, seed)
				})
				if report != "" {
					t.Fatalf("seed %d (replay: -run '%s' -reconciler.model.seed %d):\n%s", seed, t.Name(), seed, report)
				}
			}
		})
	}
}

// modelRig is a table, the model world and a reconciler between them,
// whose goroutines the scheduler holds. Its methods run in the synctest
// bubble's main goroutine.
type modelRig struct {
	t   *testing.T
	mc  modelConfig
	rng *rand.Rand
	s   *modelScheduler
	m   *modelTable
	w   *modelWorld
	db  *strata.DB
	tbl strata.RWTable[*testObj]
	r   *reconciler.Reconciler[*testObj]

	ctx     context.Context
	cancel  context.CancelFunc
	done    chan error
	writes  int
	lastRev strata.Revision
	pauses  int  // Pause calls
	pausing bool // a Pause is not resumed yet

	vmu        sync.Mutex
	violations []string
	waiters    sync.WaitGroup
}

func newModelRig(t *testing.T, mc modelConfig, seed int64) *modelRig {
	s := &modelScheduler{Coverage: modelCoverage}
	m := &modelTable{revs: map[string]strata.Revision{}, changes: map[uint64][]modelChange{}}
	w := &modelWorld{
		s: s, m: m, ordering: mc.ordering,
		applied: map[uint64]string{}, running: map[uint64]int{},
		groupRunning: map[string]int{}, groupLast: map[string]strata.Revision{},
		attempted: map[uint64]strata.Revision{},
		chance:    rand.New(rand.NewPCG(uint64(seed), 0xfa11)),
		failures:  mc.failures, requeues: mc.requeues,
	}
	db := strata.New()
	tbl := strata.MustNewTable(db, "objects", idIndex)
	cfg := reconciler.Config[*testObj]{
		Table: tbl, CloneObject: (*testObj).Clone,
		GetObjectStatus: (*testObj).GetStatus, SetObjectStatus: (*testObj).SetStatus,
		Operations: w,
	}
	if mc.ordering {
		cfg.OrderingKey = func(o *testObj) string { return o.Group }
	}
	if mc.batch {
		cfg.BatchOperations = modelBatch{w}
	}
	refresh, rounds := reconciler.WithoutRefresh(), reconciler.WithRoundSize(2) // (the round size again: no limit)
	if mc.refresh {
		refresh = reconciler.WithRefresh(10*time.Millisecond, 1000)
	}
	if mc.rounds {
		rounds = reconciler.WithRoundRateLimit(200, 2)
	}
	r, err := reconciler.New(db, cfg, rounds,
		reconciler.WithWorkers(mc.workers),
		reconciler.WithRoundSize(2),
		reconciler.WithRetry(10*time.Millisecond, 40*time.Millisecond),
		reconciler.WithJitter(0, nil),
		refresh,
		reconciler.WithoutPruning(),
		reconciler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	reconciler.SetHoldForTest(r, s.Hold)
	rig := &modelRig{
		t: t, mc: mc, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		s: s, m: m, w: w, db: db, tbl: tbl, r: r, done: make(chan error, 1),
	}
	rig.ctx, rig.cancel = context.WithCancel(context.Background())
	go func() { rig.done <- r.Run(rig.ctx, nil) }()
	return rig
}

func (g *modelRig) violate(format string, args ...any) {
	g.vmu.Lock()
	defer g.vmu.Unlock()
	v := fmt.Sprintf(format, args...)
	g.violations = append(g.violations, v)
	g.s.Note("VIOLATION %s", v)
}

// write writes a new version of id, Pending, and returns its revision.
func (g *modelRig) write(id uint64, group string) strata.Revision {
	g.writes++
	o := &testObj{ID: id, Group: group, Value: fmt.Sprintf("%d.%d", id, g.writes), Status: reconciler.StatusPending()}
	wtxn := g.db.WriteTxn(g.tbl)
	mustInsert(g.t, g.tbl, wtxn, o)
	rev := g.tbl.Revision(wtxn)
	mustCommit(g.t, wtxn)
	g.m.mu.Lock()
	g.m.revs[o.Value] = rev
	g.m.changes[id] = append(g.m.changes[id], modelChange{rev: rev, value: o.Value})
	g.m.mu.Unlock()
	g.lastRev = rev
	g.s.Note("user: write id=%d %s group=%s rev=%d", id, o.Value, o.Group, rev)
	return rev
}

// remove deletes id, if the table has it.
func (g *modelRig) remove(id uint64) {
	wtxn := g.db.WriteTxn(g.tbl)
	_, hadOld, err := g.tbl.Delete(wtxn, &testObj{ID: id})
	if err != nil {
		g.t.Fatal(err)
	}
	rev := g.tbl.Revision(wtxn)
	mustCommit(g.t, wtxn)
	if !hadOld {
		return
	}
	g.m.mu.Lock()
	g.m.changes[id] = append(g.m.changes[id], modelChange{rev: rev, deleted: true})
	g.m.mu.Unlock()
	g.lastRev = rev
	g.s.Note("user: delete id=%d rev=%d", id, rev)
}

func (g *modelRig) prune() {
	g.m.mu.Lock()
	g.m.pruneReqs++
	g.m.mu.Unlock()
	g.s.Note("user: Prune()")
	g.r.Prune()
}

// waitFor calls WaitUntilReconciled(rev) on a goroutine of its own, and
// checks property 4 when it returns.
func (g *modelRig) waitFor(rev strata.Revision) {
	g.waiters.Add(1)
	go func() {
		defer g.waiters.Done()
		got, _, err := g.r.WaitUntilReconciled(g.ctx, rev)
		if err != nil {
			return // ended by the test's end
		}
		g.s.Note("WaitUntilReconciled(%d) = %d", rev, got)
		g.checkWait(rev)
	}()
}

// checkWait checks property 4 for a WaitUntilReconciled(rev) that
// returned.
func (g *modelRig) checkWait(rev strata.Revision) {
	g.w.mu.Lock()
	attempted := maps.Clone(g.w.attempted)
	g.w.mu.Unlock()
	g.m.mu.Lock()
	ids := slices.Collect(maps.Keys(g.m.changes))
	g.m.mu.Unlock()
	for _, id := range ids {
		c, ok := g.m.newestAt(id, rev)
		if ok && attempted[id] < c.rev {
			in, _ := g.r.Inspect(index.Uint64(id))
			g.violate("WaitUntilReconciled(%d) returned, but the change of id=%d at rev %d was not attempted (up to %d); the reconciler has it %+v", rev, id, c.rev, attempted[id], in)
		}
	}
	for o, orev := range g.tbl.All(g.db.ReadTxn()) {
		if orev <= rev && o.Status.Kind == reconciler.StatusKindPending {
			g.violate("WaitUntilReconciled(%d) returned, but id=%d at rev %d is Pending", rev, o.ID, orev)
		}
	}
}

// act does a random user action.
func (g *modelRig) act() {
	if g.rng.IntN(12) == 0 {
		if g.pausing {
			g.resume()
		} else {
			g.pause()
		}
	}
	id := uint64(g.rng.IntN(g.mc.objects))
	switch k := g.rng.IntN(10); {
	case k < 6 || (k < 8 && !g.mc.pruning):
		group := fmt.Sprintf("g%d", id%2)
		if g.mc.ordering && g.rng.IntN(5) == 0 {
			group = fmt.Sprintf("g%d", g.rng.IntN(2)) // a change of ordering key
		}
		g.write(id, group)
	case k < 8:
		g.prune()
	default:
		g.remove(id)
	}
	if g.rng.IntN(4) == 0 && g.lastRev > 0 {
		g.waitFor(g.lastRev)
	}
}

// pause calls Pause on a goroutine of its own. Once it returns, and until
// resume, no operation may run (property 7).
func (g *modelRig) pause() {
	g.pauses++
	n := g.pauses
	g.pausing = true
	g.w.mu.Lock()
	g.w.pauseWanted = n
	g.w.mu.Unlock()
	g.s.Note("user: Pause()")
	g.waiters.Add(1)
	go func() {
		defer g.waiters.Done()
		if err := g.r.Pause(g.ctx); err != nil {
			return // ended by the test's end
		}
		g.w.mu.Lock()
		defer g.w.mu.Unlock()
		if g.w.pauseWanted != n {
			return // resumed before Pause returned
		}
		for id, c := range g.w.running {
			if c > 0 {
				g.w.violate("Pause returned while an operation on id=%d runs", id)
			}
		}
		if g.w.pruning {
			g.w.violate("Pause returned while a prune runs")
		}
		g.w.paused = true
		g.s.Note("Pause returned")
	}()
	// Pause has counted itself before anything else happens: a Resume
	// called before that would have nothing to undo (as documented).
	synctest.Wait()
}

// resume undoes the pause.
func (g *modelRig) resume() {
	g.pausing = false
	g.w.mu.Lock()
	g.w.paused, g.w.pauseWanted = false, 0
	g.w.mu.Unlock()
	g.s.Note("user: Resume()")
	g.r.Resume()
}

// runUntil lets the held goroutines go, in the seed's order, but for
// those at point, until one is held at point.
func (g *modelRig) runUntil(point string) {
	for range 10000 {
		synctest.Wait()
		if g.s.IsHeld(point) {
			return
		}
		if !g.s.ReleaseWhere(g.rng, func(p string, _ int) bool { return p != point }) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	g.t.Fatalf("no goroutine reached %s:\n%s", point, g.s.History())
}

// runOthers lets every held goroutine go, in the seed's order, but for
// those at point, until none but those is held, or running.
func (g *modelRig) runOthers(point string) {
	for range 10000 {
		synctest.Wait()
		if !g.s.ReleaseWhere(g.rng, func(p string, _ int) bool { return p != point }) {
			return
		}
	}
	g.t.Fatalf("goroutines kept reaching hold points:\n%s", g.s.History())
}

// settle lets everything go until the reconciler is idle, with the
// outside world's failures off, and returns false if it never is.
func (g *modelRig) settle() bool {
	g.w.mu.Lock()
	g.w.failures, g.w.requeues = false, false
	g.w.mu.Unlock()
	if g.pausing {
		g.resume()
	}
	idle := 0
	for range 20000 {
		synctest.Wait()
		if g.s.Release(g.rng) {
			idle = 0
			continue
		}
		if g.idle() {
			// Idle for a while of fake time: no retry is due. (Refreshes
			// come back forever: idle once is all there is.)
			if idle++; idle > 5 || g.mc.refresh {
				return true
			}
		}
		time.Sleep(5 * time.Millisecond) // timers: retries, backoff
	}
	return false
}

// idle reports whether the reconciler has nothing left to do up to the
// last write.
func (g *modelRig) idle() bool {
	st := g.r.Stats()
	return st.InFlight == 0 && st.Parked == 0 && st.Delayed == 0 && st.Failing == 0 &&
		st.Queued == [3]int{} && st.Revision >= g.lastRev
}

// finish checks properties 3, 5 and 6, stops the reconciler and returns
// what went wrong, with the recent history, or "".
func (g *modelRig) finish() string {
	m, w := g.m, g.w
	w.mu.Lock()
	if req := m.prunesRequested(); req > 0 && w.pruneAfter < req {
		w.violate("Prune was called %d times, but the last prune started after call %d", req, w.pruneAfter)
	}
	w.mu.Unlock()
	inTable := map[uint64]bool{}
	for o := range g.tbl.All(g.db.ReadTxn()) {
		inTable[o.ID] = true
		c, _ := m.newestAt(o.ID, g.lastRev)
		if c.deleted || c.value != o.Value {
			g.violate("table holds id=%d %s, the user's last write is %+v", o.ID, o.Value, c)
		}
		if o.Status.Kind != reconciler.StatusKindDone {
			g.violate("id=%d %s ends %s", o.ID, o.Value, o.Status.Kind)
		}
		w.mu.Lock()
		if got := w.applied[o.ID]; got != o.Value {
			g.violate("the world holds id=%d %q, the table %s", o.ID, got, o.Value)
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	for id, v := range w.applied {
		if !inTable[id] {
			g.violate("the world holds id=%d %s, deleted from the table", id, v)
		}
	}
	w.mu.Unlock()
	// Fake time: a second is long past anything due.
	ctx, cancel := context.WithTimeout(g.ctx, time.Second)
	rev, low, err := g.r.WaitUntilReconciled(ctx, g.lastRev)
	cancel()
	if err != nil || rev < g.lastRev || low != 0 {
		g.violate("WaitUntilReconciled(%d) = %d, %d, %v at the end; %+v", g.lastRev, rev, low, err, g.r.Stats())
	}
	// Stop, letting held goroutines go until Run returns.
	g.cancel()
	for stopped := false; !stopped; {
		synctest.Wait()
		select {
		case err := <-g.done:
			if err != nil {
				g.violate("Run: %v", err)
			}
			stopped = true
		default:
			if !g.s.Release(g.rng) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	g.waiters.Wait()
	w.mu.Lock()
	violations := append(g.violations, w.violations...)
	w.mu.Unlock()
	if len(violations) > 0 {
		return strings.Join(violations, "\n") + "\nhistory:\n" + g.s.History()
	}
	return ""
}

// runModel runs one seed of mc: events in the seed's order until the
// user's actions are done, then until the reconciler is idle. It returns
// what went wrong, or "".
func runModel(t *testing.T, mc modelConfig, seed int64) string {
	g := newModelRig(t, mc, seed)
	for actions := mc.actions; actions > 0; {
		synctest.Wait()
		switch held := g.s.Len(); {
		case held > 0 && g.rng.IntN(3) != 0:
			g.s.Release(g.rng)
		case g.rng.IntN(4) == 0:
			// Time passes: retries, requeues and refreshes fall due
			// among the user's actions.
			g.s.Note("time +5ms")
			time.Sleep(5 * time.Millisecond)
		default:
			g.act()
			actions--
		}
	}
	if !g.settle() {
		g.violate("no convergence: %+v", g.r.Stats())
	}
	return g.finish()
}

// modelBatch gives the model world to BatchOperations: each entry is one
// operation of the world's, in turn.
type modelBatch struct{ w *modelWorld }

func (b modelBatch) UpdateBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[*testObj]) {
	for i := range batch {
		batch[i].Result = b.w.Update(ctx, txn, batch[i].Revision, batch[i].Object)
	}
}

func (b modelBatch) DeleteBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[*testObj]) {
	for i := range batch {
		batch[i].Result = b.w.Delete(ctx, txn, batch[i].Revision, batch[i].Object)
	}
}

// TestChangeDuringStatusCommit: a change read while the status of the
// object's previous version is being committed, and before the loop took
// that outcome in, is reconciled (it was lost: the loop replaced the
// change it had read with the version it had just written, reconciled
// that again, and released the object with its change Pending while
// WaitUntilReconciled reported it done).
func TestChangeDuringStatusCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newModelRig(t, modelConfig{workers: 1}, 1)
		g.write(1, "g")
		g.runUntil("committed") // v1's Done is in the table
		rev := g.write(1, "g")  // v2, Pending
		g.waitFor(rev)
		g.runOthers("committed") // the loop reads v2, and waits
		if held := g.s.Len(); held != 1 {
			t.Fatalf("%d goroutines held, want the committer alone:\n%s", held, g.s.History())
		}
		if !g.settle() {
			g.violate("no convergence: %+v", g.r.Stats())
		}
		if report := g.finish(); report != "" {
			t.Fatal(report)
		}
	})
}

// TestOrderingKeyDeleteDuringUpdate: an object deleted while its own
// Update runs is deleted before a later object of its ordering key is
// updated (it was queued behind the later one, whose update ran first).
func TestOrderingKeyDeleteDuringUpdate(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newModelRig(t, modelConfig{workers: workers, ordering: true}, 1)
				g.write(1, "route")
				g.runUntil("op-update") // id=1's update runs
				g.remove(1)
				g.write(2, "route")
				g.runOthers("op-update") // id=2 waits for its key
				if !g.settle() {
					g.violate("no convergence: %+v", g.r.Stats())
				}
				if report := g.finish(); report != "" {
					t.Fatal(report)
				}
				g.w.mu.Lock()
				defer g.w.mu.Unlock()
				if got := g.w.applied; len(got) != 1 || got[2] == "" {
					t.Errorf("the world holds %v, want id=2 alone", got)
				}
			})
		})
	}
}
