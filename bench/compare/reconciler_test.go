package main

// The reconciler benchmarks: Strata's reconciler beside cilium/statedb
// v0.9.4's, on the same work, in the same run.
//
//	B1  statedb's own reconciler benchmark shape: N objects inserted in
//	    write transactions of 1000, an Update that does nothing; the time
//	    from the first insert until every status is Done.
//	B2  latency-bound operations: 10,000 objects, Update sleeps 1 ms;
//	    Strata with 1, 4, 16 and 64 workers, statedb with its one.
//	B3  durable statuses: B1 with the table made durable with persist/ in
//	    Sync mode (every commit fsynced), against B1 in memory. Each op
//	    is a pair of runs, one in memory and one durable, in alternating
//	    order, so that both sides see the same load: the shared machine's
//	    load moves the durable side, which waits for the disk, more than
//	    the other, and a ratio of two benchmarks run minutes apart says
//	    more about the load than about the store. impl=pebble-floor
//	    pairs the same in-memory run with B3's writes done by Pebble
//	    alone (pebbleFloor): how near the goal the disk lets B3 come.
//
// Each op is one whole run (a new database and reconciler; B3's op is
// two); objects/s is N divided by the time from the first insert to the
// last Done status, and allocs/object the run's allocations over N (the
// driver's inserts and objects included, on both sides). Strata's runs
// also report how its statuses were written: status-txns/kobj, the
// reconciler's write transactions per 1000 objects, objects/status-txn,
// and, durable, the log syncs per 1000 objects (fsyncs/kobj, the driver's
// commits included) and their mean latency (µs/fsync: the disk's, which
// other programs on the machine move). Run them with
//
//	go test -run '^$' -bench 'Reconciler/B1' -benchtime 5x -count 6 | tee b1.txt
//	benchstat -col /impl b1.txt
//
// and see README.md for the figures. B3 reports the durable runs'
// figures, the in-memory runs' objects/s (memory-objects/s) and
// durable/memory, the ratio of the two rates (each over all of the op's
// runs), and, on Unix, each side's CPU time per run (cpu-ms/run: the
// whole process's, Pebble's goroutines included) and the cores it kept
// busy on average (cores: CPU time over elapsed time). -reconciler.1m
// adds B1-1M, B1 with a million objects (not run by default: a run takes
// seconds); -reconciler.smoke runs them once on small data (CI).

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	sindex "github.com/cilium/statedb/index"
	sreconciler "github.com/cilium/statedb/reconciler"
	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	smetrics "github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"golang.org/x/time/rate"
)

var (
	reconcilerN     = flag.Int("reconciler.n", 100_000, "objects of the B1 and B3 reconciler benchmarks")
	reconcilerB2N   = flag.Int("reconciler.b2n", 10_000, "objects of the B2 reconciler benchmark")
	reconcilerSmoke = flag.Bool("reconciler.smoke", false, "reconciler benchmarks on small data (CI)")
	reconciler1M    = flag.Bool("reconciler.1m", false, "add B1-1M, the B1 reconciler benchmark with a million objects")
)

// reconcileRun describes one run.
type reconcileRun struct {
	n       int           // objects
	delay   time.Duration // of each Update
	workers int           // Strata only
	durable bool          // Strata only: a persist store in Sync mode
}

// reconcileResult is what one run measured.
type reconcileResult struct {
	// elapsed is the time from the first insert until every status was
	// Done.
	elapsed time.Duration
	// statusTxns counts the reconciler's write transactions, and syncs
	// the store's log syncs (durable runs): Strata only.
	statusTxns, syncs uint64
	// syncTime is the time the store's log syncs took, all of them
	// summed (durable runs).
	syncTime time.Duration
	// cpu is the CPU time the process used over elapsed (user and
	// system, every goroutine: Pebble's too), 0 where not measured.
	cpu time.Duration
}

// reconcileImpl runs one reconciliation and returns what it measured, or
// an error if the outcome is wrong.
type reconcileImpl func(b testing.TB, run reconcileRun) (reconcileResult, error)

// insertBatch is the size of the driver's write transactions.
const insertBatch = 1000

func BenchmarkReconciler(b *testing.B) {
	n, b2n := *reconcilerN, *reconcilerB2N
	if *reconcilerSmoke {
		n, b2n = 2000, 200
	}
	b.Run("B1", func(b *testing.B) {
		run := reconcileRun{n: n, workers: 1}
		b.Run("impl=strata", func(b *testing.B) { benchReconcile(b, reconcileStrata, run) })
		b.Run("impl=statedb", func(b *testing.B) { benchReconcile(b, reconcileStatedb, run) })
	})
	if *reconciler1M {
		b.Run("B1-1M", func(b *testing.B) {
			run := reconcileRun{n: 1_000_000, workers: 1}
			if *reconcilerSmoke {
				run.n = 4000
			}
			b.Run("impl=strata", func(b *testing.B) { benchReconcile(b, reconcileStrata, run) })
			b.Run("impl=statedb", func(b *testing.B) { benchReconcile(b, reconcileStatedb, run) })
		})
	}
	b.Run("B2", func(b *testing.B) {
		run := reconcileRun{n: b2n, delay: time.Millisecond}
		b.Run("impl=statedb", func(b *testing.B) { benchReconcile(b, reconcileStatedb, run) })
		for _, w := range []int{1, 4, 16, 64} {
			run.workers = w
			b.Run(fmt.Sprintf("impl=strata/workers=%d", w), func(b *testing.B) { benchReconcile(b, reconcileStrata, run) })
		}
	})
	b.Run("B3", func(b *testing.B) {
		run := reconcileRun{n: n, workers: 1, durable: true}
		b.Run("impl=strata-durable", func(b *testing.B) { benchDurableVsMemory(b, run, reconcileStrata) })
		b.Run("impl=pebble-floor", func(b *testing.B) { benchDurableVsMemory(b, run, pebbleFloor) })
	})
}

func benchReconcile(b *testing.B, impl reconcileImpl, run reconcileRun) {
	var (
		total time.Duration
		ms0   runtime.MemStats
		ms1   runtime.MemStats
		runs  int
		sum   reconcileResult
	)
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		res, err := impl(b, run)
		if err != nil {
			b.Fatal(err)
		}
		total += res.elapsed
		sum.statusTxns += res.statusTxns
		sum.syncs += res.syncs
		runs++
	}
	runtime.ReadMemStats(&ms1)
	sum.elapsed = total
	reportReconcile(b, run, runs, sum, ms1.Mallocs-ms0.Mallocs)
}

// benchDurableVsMemory runs B3: each op runs run durable (durableImpl:
// reconcileStrata, or pebbleFloor) and the same run in memory, in
// alternating order, and reports the durable runs' figures beside the
// in-memory runs' objects/s and the ratio of the two rates. Allocations
// are counted over the durable runs only.
func benchDurableVsMemory(b *testing.B, run reconcileRun, durableImpl reconcileImpl) {
	var (
		memory   reconcileResult
		durable  reconcileResult
		ms0, ms1 runtime.MemStats
		mallocs  uint64
		runs     int
	)
	inMemory := run
	inMemory.durable = false
	runDurable := func() {
		runtime.ReadMemStats(&ms0)
		res, err := durableImpl(b, run)
		runtime.ReadMemStats(&ms1)
		if err != nil {
			b.Fatal(err)
		}
		mallocs += ms1.Mallocs - ms0.Mallocs
		durable.elapsed += res.elapsed
		durable.statusTxns += res.statusTxns
		durable.syncs += res.syncs
		durable.syncTime += res.syncTime
		durable.cpu += res.cpu
	}
	runMemory := func() {
		res, err := reconcileStrata(b, inMemory)
		if err != nil {
			b.Fatal(err)
		}
		memory.elapsed += res.elapsed
		memory.cpu += res.cpu
	}
	for b.Loop() {
		if runs%2 == 0 {
			runMemory()
			runDurable()
		} else {
			runDurable()
			runMemory()
		}
		runs++
	}
	reportReconcile(b, run, runs, durable, mallocs)
	objects := float64(run.n) * float64(runs)
	b.ReportMetric(objects/memory.elapsed.Seconds(), "memory-objects/s")
	b.ReportMetric(memory.elapsed.Seconds()/durable.elapsed.Seconds(), "durable/memory")
	if durable.cpu > 0 && memory.cpu > 0 {
		// CPU per run and cores busy on average, each side.
		b.ReportMetric(float64(durable.cpu.Microseconds())/1000/float64(runs), "cpu-ms/run")
		b.ReportMetric(durable.cpu.Seconds()/durable.elapsed.Seconds(), "cores")
		b.ReportMetric(float64(memory.cpu.Microseconds())/1000/float64(runs), "memory-cpu-ms/run")
		b.ReportMetric(memory.cpu.Seconds()/memory.elapsed.Seconds(), "memory-cores")
	}
}

// reportReconcile reports the figures of runs runs of run, whose
// measurements add up to sum, with mallocs allocations.
func reportReconcile(b *testing.B, run reconcileRun, runs int, sum reconcileResult, mallocs uint64) {
	objects := float64(run.n) * float64(runs)
	b.ReportMetric(objects/sum.elapsed.Seconds(), "objects/s")
	b.ReportMetric(float64(mallocs)/objects, "allocs/object")
	if sum.statusTxns > 0 {
		b.ReportMetric(1000*float64(sum.statusTxns)/objects, "status-txns/kobj")
		b.ReportMetric(objects/float64(sum.statusTxns), "objects/status-txn")
	}
	if sum.syncs > 0 {
		b.ReportMetric(1000*float64(sum.syncs)/objects, "fsyncs/kobj")
		b.ReportMetric(float64(sum.syncTime.Microseconds())/float64(sum.syncs), "µs/fsync")
	}
	b.ReportMetric(0, "ns/op")
}

// TestReconcilerSmoke runs every reconciler workload once, on small data,
// and checks its outcome.
func TestReconcilerSmoke(t *testing.T) {
	for _, tc := range []struct {
		name string
		impl reconcileImpl
		run  reconcileRun
	}{
		{"B1/strata", reconcileStrata, reconcileRun{n: 2000, workers: 1}},
		{"B1/statedb", reconcileStatedb, reconcileRun{n: 2000}},
		{"B2/strata/4", reconcileStrata, reconcileRun{n: 100, delay: time.Millisecond, workers: 4}},
		{"B2/statedb", reconcileStatedb, reconcileRun{n: 100, delay: time.Millisecond}},
		{"B3/strata-durable", reconcileStrata, reconcileRun{n: 2000, workers: 1, durable: true}},
		{"B3/pebble-floor", pebbleFloor, reconcileRun{n: 2000, durable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.impl(t, tc.run); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// ---- Strata -----------------------------------------------------------------

type strataRObj struct {
	ID     uint64
	Status reconciler.Status
}

func (o *strataRObj) Clone() *strataRObj                        { c := *o; return &c }
func (o *strataRObj) GetStatus() reconciler.Status              { return o.Status }
func (o *strataRObj) SetStatus(s reconciler.Status) *strataRObj { o.Status = s; return o }

func (o *strataRObj) AppendBinary(b []byte) ([]byte, error) {
	return o.Status.AppendBinary(binary.AppendUvarint(b, o.ID))
}

func (o *strataRObj) UnmarshalBinary(b []byte) error {
	id, n := binary.Uvarint(b)
	if n <= 0 {
		return errors.New("strataRObj: bad id")
	}
	o.ID = id
	return o.Status.UnmarshalBinary(b[n:])
}

var strataRObjByID = strata.Index[*strataRObj, uint64]{
	Name:       "id",
	FromObject: func(o *strataRObj) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

type strataROps struct {
	delay   time.Duration
	updates atomic.Int64
}

func (o *strataROps) Update(context.Context, strata.ReadTxn, strata.Revision, *strataRObj) error {
	if o.delay > 0 {
		time.Sleep(o.delay)
	}
	o.updates.Add(1)
	return nil
}

func (o *strataROps) Delete(context.Context, strata.ReadTxn, strata.Revision, *strataRObj) error {
	return nil
}

func (o *strataROps) Prune(context.Context, strata.ReadTxn, iter.Seq2[*strataRObj, strata.Revision]) error {
	return nil
}

// txnCounter counts the committed write transactions of the database
// (a strata metrics.Metrics; its cost, a clock read per transaction, is
// small beside a transaction of a thousand objects).
type txnCounter struct{ committed atomic.Uint64 }

func (c *txnCounter) Table(string) smetrics.Table   { return c }
func (c *txnCounter) Handle(string) smetrics.Handle { return smetrics.NopMetrics{}.Handle("") }
func (c *txnCounter) LockWait(time.Duration)        {}
func (c *txnCounter) Committed(int, uint64, int)    {}
func (c *txnCounter) ChangeFeeds(int, uint64)       {}
func (c *txnCounter) WriteTxn(_ time.Duration, committed bool) {
	if committed {
		c.committed.Add(1)
	}
}

func reconcileStrata(tb testing.TB, run reconcileRun) (reconcileResult, error) {
	txns := &txnCounter{}
	db := strata.New(strata.WithMetrics(txns))
	tbl, err := strata.NewTable(db, "objects", strataRObjByID)
	if err != nil {
		return reconcileResult{}, err
	}
	var store *persist.Store
	if run.durable {
		store, err = persist.Open(tb.TempDir(), persist.Options{Sync: persist.Sync{}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return reconcileResult{}, err
		}
		defer store.Close()
		if err := persist.Register(store, db, tbl, persist.Binary[strataRObj]()); err != nil {
			return reconcileResult{}, err
		}
	}
	var syncs0 uint64
	if store != nil {
		syncs0 = store.Stats().WALSyncs
	}
	txns0 := txns.committed.Load()
	ops := &strataROps{delay: run.delay}
	r, err := reconciler.New(db, reconciler.Config[*strataRObj]{
		Table:           tbl,
		CloneObject:     (*strataRObj).Clone,
		GetObjectStatus: (*strataRObj).GetStatus,
		SetObjectStatus: (*strataRObj).SetStatus,
		Operations:      ops,
	}, reconciler.WithWorkers(max(run.workers, 1)))
	if err != nil {
		return reconcileResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, nil) }()

	cpu0, start := processCPU(), time.Now()
	var rev strata.Revision
	driverTxns := uint64(0)
	for i := 0; i < run.n; i += insertBatch {
		driverTxns++
		wtxn := db.WriteTxn(tbl)
		for id := i; id < min(i+insertBatch, run.n); id++ {
			if _, _, err := tbl.Insert(wtxn, &strataRObj{ID: uint64(id), Status: reconciler.StatusPending()}); err != nil {
				wtxn.Abort()
				return reconcileResult{}, err
			}
		}
		rev = tbl.Revision(wtxn)
		if _, err := wtxn.Commit(); err != nil {
			return reconcileResult{}, err
		}
	}
	got, low, err := r.WaitUntilReconciled(ctx, rev)
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	cancel()
	if rerr := <-done; rerr != nil {
		return reconcileResult{}, rerr
	}
	if err != nil || got < rev || low != 0 {
		return reconcileResult{}, fmt.Errorf("strata: WaitUntilReconciled(%d) = %d, %d, %v", rev, got, low, err)
	}
	if u := ops.updates.Load(); u != int64(run.n) {
		return reconcileResult{}, fmt.Errorf("strata: %d updates, want %d", u, run.n)
	}
	n := 0
	for o := range tbl.All(db.ReadTxn()) {
		if o.Status.Kind != reconciler.StatusKindDone {
			return reconcileResult{}, fmt.Errorf("strata: object %d: %s", o.ID, o.Status)
		}
		n++
	}
	if n != run.n {
		return reconcileResult{}, fmt.Errorf("strata: %d objects, want %d", n, run.n)
	}
	res := reconcileResult{elapsed: elapsed, cpu: cpu}
	// Every write transaction but the driver's and the one Run opens its
	// change feed with wrote statuses.
	res.statusTxns = txns.committed.Load() - txns0 - driverTxns - 1
	if store != nil {
		// Stats' mean sync latency is that of the syncs since the
		// previous call, the one before the first insert.
		st := store.Stats()
		res.syncs = st.WALSyncs - syncs0
		res.syncTime = time.Duration(res.syncs) * st.WALSyncLatency
	}
	return res, nil
}

// pebbleFloor does B3's writes with Pebble alone, and no database or
// reconciler: a driver commits run.n records in Sync batches of
// insertBatch, one after another, and a second goroutine writes each
// batch's Done statuses, as Sync batches of their own, once the driver's
// batch is committed. Keys and values have the sizes of the store's
// records (a 12-byte key, the object's encoding behind a 4-byte header).
// Its elapsed time is what B3's durable run cannot go below on this disk
// whatever Strata and the reconciler do: its driver waits for the same
// syncs one after another, and does none of the inserts, encodings and
// operations.
func pebbleFloor(tb testing.TB, run reconcileRun) (reconcileResult, error) {
	db, err := pebble.Open(tb.TempDir(), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return reconcileResult{}, err
	}
	defer db.Close()
	batches := (run.n + insertBatch - 1) / insertBatch
	write := func(i int, status reconciler.Status) error {
		batch := db.NewBatch()
		defer batch.Close()
		var key, val []byte
		for id := i * insertBatch; id < min((i+1)*insertBatch, run.n); id++ {
			key = binary.BigEndian.AppendUint64(append(key[:0], 0, 0, 0, 1), uint64(id))
			val, _ = (&strataRObj{ID: uint64(id), Status: status}).AppendBinary(append(val[:0], 1, 0, 0, 0))
			if err := batch.Set(key, val, nil); err != nil {
				return err
			}
		}
		return batch.Commit(pebble.Sync)
	}
	committed := make(chan int, batches)
	statusErr := make(chan error, 1)
	cpu0, start := processCPU(), time.Now()
	go func() {
		for i := range committed {
			if err := write(i, reconciler.StatusDone()); err != nil {
				statusErr <- err
				for range committed {
				}
				return
			}
		}
		statusErr <- nil
	}()
	for i := range batches {
		if err := write(i, reconciler.StatusPending()); err != nil {
			close(committed)
			return reconcileResult{}, errors.Join(err, <-statusErr)
		}
		committed <- i
	}
	close(committed)
	if err := <-statusErr; err != nil {
		return reconcileResult{}, err
	}
	res := reconcileResult{elapsed: time.Since(start), cpu: processCPU() - cpu0}
	// Every record holds its object's Done status.
	it, err := db.NewIter(nil)
	if err != nil {
		return reconcileResult{}, err
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		var o strataRObj
		if err := o.UnmarshalBinary(it.Value()[4:]); err != nil {
			return reconcileResult{}, err
		}
		if o.ID != uint64(n) || o.Status.Kind != reconciler.StatusKindDone {
			return reconcileResult{}, fmt.Errorf("pebble floor: record %d holds object %d, %s", n, o.ID, o.Status)
		}
		n++
	}
	if n != run.n {
		return reconcileResult{}, fmt.Errorf("pebble floor: %d records, want %d", n, run.n)
	}
	return res, it.Error()
}

// quietPebble is a pebble.Logger that drops Pebble's messages.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// ---- statedb ----------------------------------------------------------------

type statedbRObj struct {
	ID     uint64
	Status sreconciler.Status
}

func (o *statedbRObj) Clone() *statedbRObj                         { c := *o; return &c }
func (o *statedbRObj) GetStatus() sreconciler.Status               { return o.Status }
func (o *statedbRObj) SetStatus(s sreconciler.Status) *statedbRObj { o.Status = s; return o }

// TableHeader and TableRow make statedbRObj a statedb.TableWritable, which
// statedb.NewTable requires.
func (o *statedbRObj) TableHeader() []string { return []string{"ID", "Status"} }
func (o *statedbRObj) TableRow() []string {
	return []string{fmt.Sprint(o.ID), o.Status.String()}
}

var statedbRObjByID = statedb.Index[*statedbRObj, uint64]{
	Name:       "id",
	FromObject: func(o *statedbRObj) sindex.KeySet { return sindex.NewKeySet(sindex.Uint64(o.ID)) },
	FromKey:    sindex.Uint64,
	Unique:     true,
}

type statedbROps struct {
	delay   time.Duration
	updates atomic.Int64
}

func (o *statedbROps) Update(context.Context, statedb.ReadTxn, statedb.Revision, *statedbRObj) error {
	if o.delay > 0 {
		time.Sleep(o.delay)
	}
	o.updates.Add(1)
	return nil
}

func (o *statedbROps) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *statedbRObj) error {
	return nil
}

func (o *statedbROps) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*statedbRObj, statedb.Revision]) error {
	return nil
}

var quietLog = slog.New(slog.DiscardHandler)

// reconcileStatedb runs statedb's reconciler in a hive, as its own
// benchmark program does, with the round limits that program sets.
func reconcileStatedb(tb testing.TB, run reconcileRun) (reconcileResult, error) {
	var (
		db  *statedb.DB
		tbl statedb.RWTable[*statedbRObj]
		r   sreconciler.Reconciler[*statedbRObj]
		ops = &statedbROps{delay: run.delay}
	)
	h := hive.New(
		cell.SimpleHealthCell,
		statedb.Cell,
		job.Cell,
		cell.Module("bench", "Reconciler benchmark",
			cell.Invoke(func(d *statedb.DB) (err error) {
				db = d
				tbl, err = statedb.NewTable(db, "objects", statedbRObjByID)
				return err
			}),
			cell.Provide(job.Registry.NewGroup),
			cell.Invoke(func(params sreconciler.Params) (err error) {
				r, err = sreconciler.Register(params, tbl,
					(*statedbRObj).Clone, (*statedbRObj).SetStatus, (*statedbRObj).GetStatus,
					ops, nil,
					sreconciler.WithRoundLimits(1000, rate.NewLimiter(1000.0, 10)))
				return err
			}),
		),
	)
	if err := h.Start(quietLog, context.Background()); err != nil {
		return reconcileResult{}, err
	}
	defer h.Stop(quietLog, context.Background())

	start := time.Now()
	var rev statedb.Revision
	for i := 0; i < run.n; i += insertBatch {
		wtxn := db.WriteTxn(tbl)
		for id := i; id < min(i+insertBatch, run.n); id++ {
			if _, _, err := tbl.Insert(wtxn, &statedbRObj{ID: uint64(id), Status: sreconciler.StatusPending()}); err != nil {
				wtxn.Abort()
				return reconcileResult{}, err
			}
		}
		rev = tbl.Revision(wtxn)
		wtxn.Commit()
	}
	got, low, err := r.WaitUntilReconciled(context.Background(), rev)
	elapsed := time.Since(start)
	if err != nil || got < rev || low != 0 {
		return reconcileResult{}, fmt.Errorf("statedb: WaitUntilReconciled(%d) = %d, %d, %v", rev, got, low, err)
	}
	if u := ops.updates.Load(); u != int64(run.n) {
		return reconcileResult{}, fmt.Errorf("statedb: %d updates, want %d", u, run.n)
	}
	n := 0
	for o := range tbl.All(db.ReadTxn()) {
		if o.Status.Kind != sreconciler.StatusKindDone {
			return reconcileResult{}, fmt.Errorf("statedb: object %d: %s", o.ID, o.Status)
		}
		n++
	}
	if n != run.n {
		return reconcileResult{}, fmt.Errorf("statedb: %d objects, want %d", n, run.n)
	}
	return reconcileResult{elapsed: elapsed}, nil
}
