package reconciler_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// TestStatusWritesBatched: the statuses of many objects are written in a
// few write transactions, not one each (statedb writes one
// CompareAndSwap per object, 38% of its CPU in its own benchmark).
func TestStatusWritesBatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		txns := &txnCounter{}
		f := newFixture(t, fixtureConfig{dbOpts: []strata.Option{strata.WithMetrics(txns)}})
		f.start()
		defer f.stop()
		var objs []*testObj
		for i := range 5000 {
			objs = append(objs, pending(uint64(i), "v"))
		}
		before := txns.committed("objects")
		f.upsert(objs...)
		settle(time.Second)
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		// One transaction of the test's, and the status writes.
		if n := txns.committed("objects") - before - 1; n < 1 || n > 10 {
			t.Errorf("%d write transactions for 5000 statuses, want at most 10", n)
		}
	})
}

// TestConflictMergedRetryKept is the regression test of cilium/statedb#176:
// while reconciler a's operation runs (and then fails), reconciler b
// writes its own status into the object. a's status write conflicts; it
// must be merged into the object without undoing b's, and a's retry must
// still happen.
func TestConflictMergedRetryKept(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "batch"}[batch], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := strata.New()
				tbl := strata.MustNewTable(db, "multi", multiByID)
				a := newMultiReconciler(t, db, tbl, "a")
				b := newMultiReconciler(t, db, tbl, "b")
				if batch {
					// Replace a with one that uses batch operations.
					var err error
					a.r, err = reconciler.New(db, reconciler.Config[*multiObj]{
						Table: tbl, CloneObject: (*multiObj).Clone,
						GetObjectStatus: func(o *multiObj) reconciler.Status { return o.Statuses.Get("a") },
						SetObjectStatus: func(o *multiObj, s reconciler.Status) *multiObj {
							o.Statuses = o.Statuses.Set("a", s)
							return o
						},
						Operations: a.world, BatchOperations: a.world,
					}, reconciler.WithName("a"), reconciler.WithJitter(0, nil), reconciler.WithoutPruning(), reconciler.WithoutRefresh())
					if err != nil {
						t.Fatal(err)
					}
				}
				release := a.world.Block("1")
				a.world.FailNext("1", 1, errors.New("a failed"))
				stop := runAll(a, b)
				defer stop()
				wtxn := db.WriteTxn(tbl)
				mustInsert(t, tbl, wtxn, &multiObj{ID: 1, Value: "v", Statuses: reconciler.NewStatusSet("a", "b")})
				mustCommit(t, wtxn)
				settle(0)
				get := func() *multiObj {
					o, _, _ := tbl.Get(db.ReadTxn(), multiByID.Query(1))
					return o
				}
				if st := get().Statuses; st.Get("b").Kind != reconciler.StatusKindDone || st.Get("a").Kind != reconciler.StatusKindPending {
					t.Fatalf("while a is blocked: %s", st)
				}
				release()
				settle(0)
				st := get().Statuses
				if st.Get("a").Kind != reconciler.StatusKindError || st.Get("a").GetError() != "a failed" {
					t.Errorf("a's failure was not written: %s", st)
				}
				if st.Get("b").Kind != reconciler.StatusKindDone {
					t.Errorf("a's status write undid b's: %s", st)
				}
				// The retry is not lost.
				settle(150 * time.Millisecond)
				if up, _, _ := a.world.Counts(); up != 2 {
					t.Errorf("a ran %d times, want 2: the retry was lost", up)
				}
				if st := get().Statuses; !st.IsDone() {
					t.Errorf("after the retry: %s", st)
				}
				if up, _, _ := b.world.Counts(); up != 1 {
					t.Errorf("b ran %d times, want 1", up)
				}
			})
		})
	}
}

// TestChangeDuringOpDropsOutcome: an operation whose object changed for
// real while it ran has its outcome (here a failure) dropped; the new
// version is reconciled, and its status carries no stale attempts.
func TestChangeDuringOpDropsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.start()
		defer f.stop()
		release := f.world.Block("1")
		f.world.FailNext("1", 1, nil)
		f.upsert(pending(1, "v1"))
		settle(0)
		f.upsert(pending(1, "v2"))
		settle(0)
		release()
		settle(0)
		f.expectOps("update(1) fail", "update(1)")
		o := f.get(1)
		if o.Status.Kind != reconciler.StatusKindDone || o.Status.Attempts != 0 || o.Value != "v2" {
			t.Errorf("object %+v", o)
		}
		if w, _ := f.world.Get("1"); w.Value != "v2" {
			t.Errorf("world holds %q", w.Value)
		}
	})
}

// flakyJournal is a durable store that can refuse writes.
type flakyJournal struct{ fail atomic.Bool }

var errStoreRefuses = errors.New("the store refuses the write")

func (j *flakyJournal) Begin() strata.JournalBatch { return flakyBatch{j} }

type flakyBatch struct{ j *flakyJournal }

func (b flakyBatch) Commit() error {
	if b.j.fail.Load() {
		return errStoreRefuses
	}
	return nil
}
func (flakyBatch) Discard() {}

type nopTableJournal[Obj any] struct{}

func (nopTableJournal[Obj]) Upsert(strata.JournalBatch, []byte, Obj, strata.Revision) error {
	return nil
}
func (nopTableJournal[Obj]) Delete(strata.JournalBatch, []byte) error               { return nil }
func (nopTableJournal[Obj]) DeleteAll(strata.JournalBatch) error                    { return nil }
func (nopTableJournal[Obj]) SetRevision(strata.JournalBatch, strata.Revision) error { return nil }

// TestCommitFailureKeepsOutcomes: when the table's store refuses the
// status write, the outcome is kept (the operation does not run again),
// the write is retried, and health is Degraded until it succeeds.
func TestCommitFailureKeepsOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		journal := &flakyJournal{}
		wtxn := f.db.WriteTxn(f.tbl)
		if err := strata.SetJournal(wtxn, f.tbl, journal, nopTableJournal[*testObj]{}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, wtxn)
		f.start()
		defer f.stop()
		release := f.world.Block("1")
		f.upsert(pending(1, "v"))
		settle(0)
		journal.fail.Store(true)
		release()
		settle(time.Second)
		if l, _, err := f.health.get(); l != "Degraded" || !errors.Is(err, errStoreRefuses) {
			t.Errorf("health %s %v, want Degraded with the store's error", l, err)
		}
		if !f.r.Stats().CommitFailing {
			t.Error("Stats.CommitFailing is false")
		}
		if in, _ := f.r.Inspect(index.Uint64(1)); in.Phase != reconciler.PhaseInFlight {
			t.Errorf("Inspect: %+v, want in flight (outcome kept)", in)
		}
		settle(10 * time.Second)
		if up, _, _ := f.world.Counts(); up != 1 {
			t.Errorf("the operation ran %d times while the status could not be written", up)
		}
		journal.fail.Store(false)
		settle(time.Minute)
		if st := f.get(1).Status; st.Kind != reconciler.StatusKindDone {
			t.Errorf("status %+v after the store recovered", st)
		}
		f.expectHealth("OK", "OK, 1 object(s)")
		if up, _, _ := f.world.Counts(); up != 1 {
			t.Errorf("the operation ran %d times", up)
		}
		if f.r.Stats().CommitFailing {
			t.Error("Stats.CommitFailing still set")
		}
	})
}

// TestShutdownWhileCommitFails: Run returns even if the store refuses the
// statuses at shutdown, once the drain timeout passes.
func TestShutdownWhileCommitFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithDrainTimeout(5*time.Second))
		journal := &flakyJournal{}
		wtxn := f.db.WriteTxn(f.tbl)
		if err := strata.SetJournal(wtxn, f.tbl, journal, nopTableJournal[*testObj]{}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, wtxn)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- f.r.Run(ctx, f.health) }()
		release := f.world.Block("1")
		f.upsert(pending(1, "v"))
		settle(0)
		journal.fail.Store(true)
		release()
		settle(0)
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 5*time.Second || took > 6*time.Second {
			t.Errorf("Run returned after %s, want the drain timeout", took)
		}
		if st := f.get(1).Status; st.Kind != reconciler.StatusKindPending {
			t.Errorf("status %+v", st)
		}
		if l, m, _ := f.health.get(); l != "Stopped" || !strings.Contains(m, "stopped") {
			t.Errorf("health %s %q", l, m)
		}
	})
}

// gateJournal is a durable store whose commits wait, while the gate is
// armed, until it is opened: a slow log sync, during which the committing
// transaction holds its tables' locks.
type gateJournal struct {
	armed   atomic.Bool
	waiting chan struct{} // receives when a commit starts waiting
	open    chan struct{}
}

func (j *gateJournal) Begin() strata.JournalBatch { return gateBatch{j} }

type gateBatch struct{ j *gateJournal }

func (b gateBatch) Commit() error {
	if b.j.armed.Load() {
		b.j.waiting <- struct{}{}
		<-b.j.open
	}
	return nil
}
func (gateBatch) Discard() {}

// TestStatusWriteTakesWhatCameDuringLockWait: outcomes that arrive while
// the status write waits for the table's lock (held by another writer's
// slow durable commit) are written in the same transaction, not in one
// of their own. Real time: a goroutine waiting for a mutex is not durably
// blocked, so synctest cannot wait for it; the test waits for the
// goroutines' states instead (goroutinesIn), which no delay can fake.
func TestStatusWriteTakesWhatCameDuringLockWait(t *testing.T) {
	m := newRecordingMetrics()
	f := newFixture(t, fixtureConfig{}, reconciler.WithWorkers(4), reconciler.WithRoundSize(1), reconciler.WithMetrics(m))
	journal := &gateJournal{waiting: make(chan struct{}), open: make(chan struct{})}
	wtxn := f.db.WriteTxn(f.tbl)
	if err := strata.SetJournal(wtxn, f.tbl, journal, nopTableJournal[*testObj]{}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	var releases []func()
	for i := range 4 {
		releases = append(releases, f.world.Block(strconv.Itoa(i)))
	}
	f.start()
	defer f.stop()
	f.upsert(pending(0, "v"), pending(1, "v"), pending(2, "v"), pending(3, "v"))
	waitFor(t, func() bool { return f.world.Running() == 4 })

	// Another writer's commit holds the lock, waiting for its sync.
	journal.armed.Store(true)
	written := make(chan error)
	go func() {
		wtxn := f.db.WriteTxn(f.tbl)
		if _, _, err := f.tbl.Insert(wtxn, &testObj{ID: 99, Status: reconciler.StatusDone()}); err != nil {
			wtxn.Abort()
			written <- err
			return
		}
		_, err := wtxn.Commit()
		written <- err
	}()
	<-journal.waiting
	journal.armed.Store(false)
	// The first outcome reaches the status write, which waits for the
	// lock; the others come in while it waits: their workers hand them
	// to the status writer and go back to wait for work.
	releases[0]()
	waitFor(t, func() bool {
		return goroutinesIn("sync.Mutex.Lock", "reconciler.(*committer[...]).write(") == 1
	})
	for _, release := range releases[1:] {
		release()
	}
	waitFor(t, func() bool {
		return f.world.Running() == 0 && goroutinesIn("chan receive", "reconciler.(*worker[...]).run(") == 4
	})
	close(journal.open)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		for i := range 4 {
			if f.get(uint64(i)).Status.Kind != reconciler.StatusKindDone {
				return false
			}
		}
		return true
	})
	// The status write reports to the metrics after its commit
	// published, so the statuses may be seen before the report.
	waitFor(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.commits > 0
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.commits != 1 || m.written != 4 {
		t.Errorf("%d status transactions writing %d statuses, want 1 writing 4", m.commits, m.written)
	}
}

// waitFor polls cond, for tests that run in real time. Its bound only
// stops a hang: a slow machine makes the wait longer, not the test red.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in a minute")
		}
		time.Sleep(time.Millisecond)
	}
}

// goroutinesIn counts the goroutines blocked in state (as runtime.Stack's
// headers name it: "chan receive", "sync.Mutex.Lock") whose stacks hold
// every one of the frames (substrings of its lines).
func goroutinesIn(state string, frames ...string) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "["+state) && !slices.ContainsFunc(frames, func(f string) bool { return !strings.Contains(g, f) }) {
			n++
		}
	}
	return n
}
