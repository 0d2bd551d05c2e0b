package reconciler_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// TestChangesWhileInFlight: K changes to an object while its operation
// runs cause exactly one more operation, on the newest version, with any
// number of workers.
func TestChangesWhileInFlight(t *testing.T) {
	for _, batch := range []bool{false, true} {
		for _, workers := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("batch=%v/workers=%d", batch, workers), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := newFixture(t, fixtureConfig{batch: batch}, reconciler.WithWorkers(workers))
					f.start()
					defer f.stop()
					release := f.world.Block("1")
					f.upsert(pending(1, "v0"))
					settle(0)
					if f.world.Running() != 1 {
						t.Fatalf("%d operations running, want 1", f.world.Running())
					}
					for k := 1; k <= 10; k++ {
						f.upsert(pending(1, fmt.Sprintf("v%d", k)))
						settle(time.Millisecond)
					}
					if f.world.Running() != 1 {
						t.Fatalf("%d operations running while blocked, want 1", f.world.Running())
					}
					release()
					settle(time.Second)
					f.expectOps("update(1)", "update(1)")
					if o, _ := f.world.Get("1"); o.Value != "v10" {
						t.Errorf("world holds %q, want the newest version v10", o.Value)
					}
					if err := f.converged(); err != nil {
						t.Error(err)
					}
					if c := f.world.MaxConcurrentPerKey(); c != 1 {
						t.Errorf("%d operations at once on one key", c)
					}
				})
			})
		}
	}
}

// TestWorkersRunInParallel: slow operations on distinct objects run on
// all workers at once; on one object never more than one.
func TestWorkersRunInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{}, reconciler.WithWorkers(16))
		f.start()
		defer f.stop()
		var objs []*testObj
		for i := range 64 {
			f.world.Delay(fmt.Sprint(i), time.Second)
			objs = append(objs, pending(uint64(i), "v"))
		}
		start := time.Now()
		rev := f.upsert(objs...)
		got, low, err := f.r.WaitUntilReconciled(context.Background(), rev)
		took := time.Since(start)
		if err != nil || got < rev || low != 0 {
			t.Fatalf("WaitUntilReconciled = %d, %d, %v", got, low, err)
		}
		// 64 one-second operations on 16 workers: 4 seconds, not 64.
		if took < 4*time.Second || took > 5*time.Second {
			t.Errorf("took %s, want about 4s", took)
		}
		if c := f.world.MaxConcurrent(); c != 16 {
			t.Errorf("at most %d operations at once, want 16", c)
		}
		if err := f.converged(); err != nil {
			t.Error(err)
		}
	})
}

// groupOps records the operations per ordering key.
type groupOps struct {
	mu      sync.Mutex
	running map[string]int
	maxRun  int
	order   map[string][]string
	delay   time.Duration
}

func (g *groupOps) Update(ctx context.Context, _ strata.ReadTxn, _ strata.Revision, o *testObj) error {
	g.mu.Lock()
	g.running[o.Group]++
	g.maxRun = max(g.maxRun, g.running[o.Group])
	g.order[o.Group] = append(g.order[o.Group], o.Value)
	g.mu.Unlock()
	time.Sleep(g.delay)
	g.mu.Lock()
	g.running[o.Group]--
	g.mu.Unlock()
	return nil
}

func (g *groupOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}

func (g *groupOps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*testObj, strata.Revision]) error {
	return nil
}

// TestOrderingKey: with an ordering key, at most one operation per key is
// in flight, and the objects of a key are reconciled in revision order;
// different keys run in parallel.
func TestOrderingKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		ops := &groupOps{running: map[string]int{}, order: map[string][]string{}, delay: 10 * time.Millisecond}
		r, err := reconciler.New(db, reconciler.Config[*testObj]{
			Table: tbl, CloneObject: (*testObj).Clone, GetObjectStatus: (*testObj).GetStatus,
			SetObjectStatus: (*testObj).SetStatus, Operations: ops,
			OrderingKey: func(o *testObj) string { return o.Group },
		}, reconciler.WithWorkers(8), reconciler.WithoutPruning(), reconciler.WithoutRefresh())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx, nil) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()

		// Objects of four groups, written one per transaction, so that
		// their revisions give the order; IDs descending, so that key
		// order is not revision order.
		var want = map[string][]string{}
		var rev strata.Revision
		for i := range 40 {
			g := fmt.Sprintf("g%d", i%4)
			v := fmt.Sprintf("%s-%02d", g, i)
			want[g] = append(want[g], v)
			wtxn := db.WriteTxn(tbl)
			mustInsert(t, tbl, wtxn, &testObj{ID: uint64(100 - i), Group: g, Value: v, Status: reconciler.StatusPending()})
			rev = tbl.Revision(wtxn)
			mustCommit(t, wtxn)
		}
		start := time.Now()
		if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if ops.maxRun != 1 {
			t.Errorf("%d operations of one ordering key at once", ops.maxRun)
		}
		for g, w := range want {
			if !slices.Equal(ops.order[g], w) {
				t.Errorf("group %s reconciled in order %v, want %v", g, ops.order[g], w)
			}
		}
		// Four groups of ten 10ms operations run side by side: 100ms.
		if took := time.Since(start); took > 150*time.Millisecond {
			t.Errorf("took %s: the groups did not run in parallel", took)
		}
	})
}

// TestBacklogBounded: a burst larger than the backlog (a big first read,
// a big transaction) is read from the change feed a part at a time, so
// that the objects queued and in flight stay bounded, and still converges,
// with WaitUntilReconciled waiting for the whole of it.
func TestBacklogBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRecordingMetrics()
		f := newFixture(t, fixtureConfig{}, reconciler.WithRoundSize(100), reconciler.WithMetrics(m))
		var objs []*testObj
		for i := range 30000 {
			objs = append(objs, pending(uint64(i), "v"))
		}
		f.upsert(objs[:10000]...) // before the start: the first read
		f.start()
		defer f.stop()
		rev := f.upsert(objs[10000:]...)
		got, low, err := f.r.WaitUntilReconciled(context.Background(), rev)
		if err != nil || got < rev || low != 0 {
			t.Fatalf("WaitUntilReconciled = %d, %d, %v", got, low, err)
		}
		if err := f.converged(); err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		most := 0
		for _, s := range m.progress {
			n := s.Queued[0] + s.Queued[1] + s.Queued[2] + s.InFlight
			most = max(most, n)
		}
		if most > 4096 {
			t.Errorf("%d objects queued or in flight at once, want at most 4096", most)
		}
		if most < 1000 {
			t.Errorf("at most %d objects queued or in flight: the backlog did not fill", most)
		}
	})
}

// sleepOps is an outside world whose operations each take a fixed time.
type sleepOps struct {
	d       time.Duration
	updates sync.Map // id -> struct{}
}

func (s *sleepOps) Update(_ context.Context, _ strata.ReadTxn, _ strata.Revision, o *testObj) error {
	time.Sleep(s.d)
	s.updates.Store(o.ID, struct{}{})
	return nil
}

func (s *sleepOps) Delete(context.Context, strata.ReadTxn, strata.Revision, *testObj) error {
	return nil
}

func (s *sleepOps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*testObj, strata.Revision]) error {
	return nil
}

// TestRoundsKeepWorkersBusy: work that arrives while every worker is busy,
// before the reconciler knows what an operation costs, is not handed
// whole to the first worker that comes back while the others go idle: 2400
// objects of 1 ms operations, then 600 more, on 16 workers, take about
// 3000/16 ms, not the 600 ms of one worker doing the 600 alone (as they
// did: half of a benchmark's runs were 5x slower).
func TestRoundsKeepWorkersBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", idIndex)
		ops := &sleepOps{d: time.Millisecond}
		r, err := reconciler.New(db, reconciler.Config[*testObj]{
			Table: tbl, CloneObject: (*testObj).Clone, GetObjectStatus: (*testObj).GetStatus,
			SetObjectStatus: (*testObj).SetStatus, Operations: ops,
		}, reconciler.WithWorkers(16), reconciler.WithoutPruning(), reconciler.WithoutRefresh())
		if err != nil {
			t.Fatal(err)
		}
		insert := func(from, to int) strata.Revision {
			wtxn := db.WriteTxn(tbl)
			for i := from; i < to; i++ {
				mustInsert(t, tbl, wtxn, &testObj{ID: uint64(i), Status: reconciler.StatusPending()})
			}
			rev := tbl.Revision(wtxn)
			mustCommit(t, wtxn)
			return rev
		}
		insert(0, 2400)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		start := time.Now()
		go func() { done <- r.Run(ctx, nil) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait() // the first 2400 are dispatched
		rev := insert(2400, 3000)
		if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		n := 0
		ops.updates.Range(func(any, any) bool { n++; return true })
		if n != 3000 {
			t.Fatalf("%d objects updated, want 3000", n)
		}
		// 3000 ms of operations on 16 workers: 188 ms if none is idle.
		if took > 250*time.Millisecond {
			t.Errorf("took %s, want about 190ms: workers idled while work waited", took)
		}
		t.Logf("3000 1ms-operations on 16 workers took %s", took)
	})
}
