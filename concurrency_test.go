package strata

// Concurrency tests, meant for the race detector: atomicity of write
// transactions as seen by concurrent readers, freedom from deadlock with
// random lock sets, snapshot stability, watch channels under concurrency and
// table registration while the database is in use.
//
// Each test runs for a bounded time (shorter with -short) and stops every
// goroutine it starts before it returns.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// concPair is the second object type of the concurrency tests. It is a
// value type, not a pointer, so that tables of both kinds take part.
type concPair struct {
	ID  uint64
	Gen uint64
}

var (
	concPairID = Index[concPair, uint64]{
		Name:       "id",
		FromObject: func(o concPair) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	concPairGen = Index[concPair, uint64]{
		Name:       "gen",
		FromObject: func(o concPair) index.KeySet { return index.NewKeySet(index.Uint64(o.Gen)) },
		FromKey:    index.Uint64,
	}
)

func newConcPairTable(t testing.TB, db *DB, name string) RWTable[concPair] {
	t.Helper()
	tbl, err := NewTable(db, name, concPairID, concPairGen)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// concDuration returns how long a stress phase runs: short under -short.
func concDuration(short, long time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return long
}

// concSeed returns a random seed and logs it, so that a failure can be
// related to its run.
func concSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return seed
}

// concFailer reports the first error found by the test's goroutines and
// tells the others to stop. t.Errorf is safe from any goroutine.
type concFailer struct {
	t      *testing.T
	failed atomic.Bool
}

func (f *concFailer) errorf(format string, args ...any) {
	if f.failed.CompareAndSwap(false, true) {
		f.t.Helper()
		f.t.Errorf(format, args...)
	}
}

func (f *concFailer) stopped() bool { return f.failed.Load() }

// concGoroutineDump returns the stacks of every goroutine.
func concGoroutineDump() string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		b := make([]byte, 1<<20)
		return string(b[:runtime.Stack(b, true)])
	}
	return buf.String()
}

// concWait waits for wg and fails the test with a dump of every goroutine if
// progress stops advancing for stall before that: a deadlock (or a livelock
// that makes no progress) ends the test with the stacks that show it.
func concWait(t *testing.T, wg *sync.WaitGroup, progress *atomic.Uint64, stall time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := progress.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if p := progress.Load(); p != last {
				last, lastChange = p, time.Now()
				continue
			}
			if time.Since(lastChange) > stall {
				t.Fatalf("no progress for %v (progress stuck at %d): deadlock?\n%s", stall, last, concGoroutineDump())
			}
		}
	}
}

// concAbortedBit marks the generations written by transactions that abort:
// no reader may ever see one.
const concAbortedBit = 1 << 40

// TestAtomicPairs checks that readers never see half of a write
// transaction. Writers write pairs of objects that belong together in one
// transaction: object k in table A (a pointer type) and object k in table B
// (a value type) with the same generation, and objects 2p and 2p+1 of table
// C with the same generation; or delete both members of a pair; or write
// and abort. Readers check every snapshot: same generation on both sides,
// both members present or both absent, NumObjects and Revision consistent
// with the contents and across the two tables, secondary indexes agreeing
// with the primary, and nothing from an aborted transaction.
func TestAtomicPairs(t *testing.T) {
	db := New()
	tblA := newTestTable(t, db, "atomic-a", valueIndex)
	tblB := newConcPairTable(t, db, "atomic-b")
	tblC := newConcPairTable(t, db, "atomic-c")
	const keys = 8
	const writers, readers = 3, 2

	seed := concSeed(t)
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	f := &concFailer{t: t}
	var gen atomic.Uint64
	var commits, checks, progress atomic.Uint64
	var wg sync.WaitGroup

	writeAB := func(r *rand.Rand, txn WriteTxn, k, g uint64) {
		if r.IntN(4) == 0 {
			_, hadA, errA := tblA.Delete(txn, &testObject{ID: k})
			maybeYield(r)
			_, hadB, errB := tblB.Delete(txn, concPair{ID: k})
			if errA != nil || errB != nil || hadA != hadB {
				f.errorf("delete pair %d: had %v/%v, err %v/%v", k, hadA, hadB, errA, errB)
			}
			return
		}
		_, hadA, errA := tblA.Insert(txn, &testObject{ID: k, Value: int(g)})
		maybeYield(r)
		_, hadB, errB := tblB.Insert(txn, concPair{ID: k, Gen: g})
		if errA != nil || errB != nil || hadA != hadB {
			f.errorf("insert pair %d: had %v/%v, err %v/%v", k, hadA, hadB, errA, errB)
		}
		// The transaction reads its own writes.
		if o, _, ok := tblA.Get(txn, idIndex.Query(k)); !ok || o.Value != int(g) {
			f.errorf("read own write of A[%d]: %v %v, want gen %d", k, o, ok, g)
		}
		if o, _, ok := tblB.Get(txn, concPairID.Query(k)); !ok || o.Gen != g {
			f.errorf("read own write of B[%d]: %v %v, want gen %d", k, o, ok, g)
		}
	}
	writeC := func(r *rand.Rand, txn WriteTxn, p, g uint64) {
		if r.IntN(4) == 0 {
			_, had0, err0 := tblC.Delete(txn, concPair{ID: 2 * p})
			maybeYield(r)
			_, had1, err1 := tblC.Delete(txn, concPair{ID: 2*p + 1})
			if err0 != nil || err1 != nil || had0 != had1 {
				f.errorf("delete C pair %d: had %v/%v, err %v/%v", p, had0, had1, err0, err1)
			}
			return
		}
		_, had0, err0 := tblC.Insert(txn, concPair{ID: 2 * p, Gen: g})
		maybeYield(r)
		_, had1, err1 := tblC.Insert(txn, concPair{ID: 2*p + 1, Gen: g})
		if err0 != nil || err1 != nil || had0 != had1 {
			f.errorf("insert C pair %d: had %v/%v, err %v/%v", p, had0, had1, err0, err1)
		}
	}

	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) && !f.stopped() {
				g := gen.Add(1)
				abort := r.IntN(8) == 0
				if abort {
					g |= concAbortedBit
				}
				k := r.Uint64N(keys)
				var txn WriteTxn
				var wroteAB []uint64
				switch op := r.IntN(10); {
				case op < 5: // one pair across A and B, tables in either order
					if r.IntN(2) == 0 {
						txn = db.WriteTxn(tblA, tblB)
					} else {
						txn = db.WriteTxn(tblB, tblA)
					}
					writeAB(r, txn, k, g)
					wroteAB = append(wroteAB, k)
				case op < 8: // one pair within C
					txn = db.WriteTxn(tblC)
					writeC(r, txn, k, g)
				default: // several pairs of A/B and of C in one transaction
					txn = db.WriteTxn(tblC, tblB, tblA, tblC)
					for range 1 + r.IntN(3) {
						k := r.Uint64N(keys)
						writeAB(r, txn, k, g)
						writeC(r, txn, r.Uint64N(keys), g)
					}
				}
				if abort {
					txn.Abort()
				} else {
					rtxn, err := txn.Commit()
					if err != nil {
						f.errorf("commit: %v", err)
						return
					}
					commits.Add(1)
					// The snapshot Commit returns holds this commit's writes:
					// no other commit to A or B came in between.
					for _, k := range wroteAB {
						a, _, okA := tblA.Get(rtxn, idIndex.Query(k))
						b, _, okB := tblB.Get(rtxn, concPairID.Query(k))
						if okA != okB || (okA && (uint64(a.Value) != g || b.Gen != g)) {
							f.errorf("commit snapshot: pair %d: A %v %v, B %v %v, want gen %d", k, a, okA, b, okB, g)
						}
					}
				}
				progress.Add(1)
			}
		}()
	}

	check := func(rtxn ReadTxn) {
		as := map[uint64]uint64{}
		for o := range tblA.All(rtxn) {
			as[o.ID] = uint64(o.Value)
		}
		bs := map[uint64]uint64{}
		for o := range tblB.All(rtxn) {
			bs[o.ID] = o.Gen
		}
		cs := map[uint64]uint64{}
		for o := range tblC.All(rtxn) {
			cs[o.ID] = o.Gen
		}
		if n := tblA.NumObjects(rtxn); n != len(as) {
			f.errorf("A: NumObjects %d, All has %d", n, len(as))
		}
		if n := tblB.NumObjects(rtxn); n != len(bs) {
			f.errorf("B: NumObjects %d, All has %d", n, len(bs))
		}
		if n := tblC.NumObjects(rtxn); n != len(cs) {
			f.errorf("C: NumObjects %d, All has %d", n, len(cs))
		}
		// Every transaction over A and B makes the same changes to both,
		// so their revision counters move together.
		if ra, rb := tblA.Revision(rtxn), tblB.Revision(rtxn); ra != rb {
			f.errorf("Revision(A) %d != Revision(B) %d", ra, rb)
		}
		if len(as) != len(bs) {
			f.errorf("A has %d objects, B %d: %v / %v", len(as), len(bs), as, bs)
		}
		for k := range uint64(keys) {
			ga, okA := as[k]
			gb, okB := bs[k]
			if okA != okB || ga != gb {
				f.errorf("half a transaction seen: A[%d] = %d (%v), B[%d] = %d (%v)", k, ga, okA, k, gb, okB)
			}
			if ga&concAbortedBit != 0 {
				f.errorf("aborted write seen: A[%d] = %#x", k, ga)
			}
			// Point reads agree with the scan of the same snapshot.
			a, _, ok := tblA.Get(rtxn, idIndex.Query(k))
			if ok != okA || (ok && uint64(a.Value) != ga) {
				f.errorf("Get A[%d] = %v %v, All had %d %v", k, a, ok, ga, okA)
			}
			b, _, ok := tblB.Get(rtxn, concPairID.Query(k))
			if ok != okB || (ok && b.Gen != gb) {
				f.errorf("Get B[%d] = %v %v, All had %d %v", k, b, ok, gb, okB)
			}
			// The secondary index holds the object under its generation.
			if okB && !slices.Contains(slices.Collect(func(yield func(uint64) bool) {
				for o := range tblB.List(rtxn, concPairGen.Query(gb)) {
					if !yield(o.ID) {
						return
					}
				}
			}), k) {
				f.errorf("B[%d] with gen %d missing from the gen index", k, gb)
			}
			g0, ok0 := cs[2*k]
			g1, ok1 := cs[2*k+1]
			if ok0 != ok1 || g0 != g1 {
				f.errorf("half a transaction seen: C[%d] = %d (%v), C[%d] = %d (%v)", 2*k, g0, ok0, 2*k+1, g1, ok1)
			}
			if g0&concAbortedBit != 0 {
				f.errorf("aborted write seen: C[%d] = %#x", 2*k, g0)
			}
		}
		// The secondary indexes hold exactly one entry per object.
		if n := countSeq(tblB.LowerBound(rtxn, concPairGen.Query(0))); n != len(bs) {
			f.errorf("B: gen index has %d entries, primary %d", n, len(bs))
		}
		if n := countSeq(tblA.LowerBound(rtxn, valueIndex.Query(0))); n != len(as) {
			f.errorf("A: value index has %d entries, primary %d", n, len(as))
		}
		checks.Add(1)
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && !f.stopped() {
				check(db.ReadTxn())
				progress.Add(1)
			}
		}()
	}
	concWait(t, &wg, &progress, 10*time.Second)
	check(db.ReadTxn())
	t.Logf("%d commits, %d snapshots checked", commits.Load(), checks.Load())
	if commits.Load() == 0 || checks.Load() == 0 {
		t.Fatalf("no work done: %d commits, %d checks", commits.Load(), checks.Load())
	}
}

// maybeYield sometimes lets other goroutines run in the middle of a
// transaction, to widen the window in which a reader could see half of it.
// Not always: with the race detector on two cores, yielding on every write
// lets busy readers starve the writers.
func maybeYield(r *rand.Rand) {
	if r.IntN(16) == 0 {
		runtime.Gosched()
	}
}

func countSeq[A, B any](seq func(func(A, B) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// TestDeadlockFreeRandomLockSets runs goroutines that take write
// transactions over random subsets of the tables, named in random order and
// with duplicates, some through WriteTxnContext with short timeouts, and
// write, then commit or abort. A watchdog fails the test with every
// goroutine's stack if progress stops. It also checks that a table is never
// held by two transactions at once, that WriteTxn refuses writes to a table
// it did not lock, that no commit is lost (each commit increments a counter
// object in every table it locked), and that timed-out transactions leave
// no lock behind.
func TestDeadlockFreeRandomLockSets(t *testing.T) {
	db := New()
	const nTables, workers = 6, 6
	tables := make([]RWTable[concPair], nTables)
	for i := range tables {
		tables[i] = newConcPairTable(t, db, fmt.Sprintf("lockset-%d", i))
	}
	var holders [nTables]atomic.Int32
	var committed [nTables]atomic.Uint64
	var progress, commits, aborts, timeouts atomic.Uint64

	seed := concSeed(t)
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	f := &concFailer{t: t}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) && !f.stopped() {
				picked := make([]int, 1+r.IntN(nTables+2)) // duplicates likely
				args := make([]TableMeta, len(picked))
				for i := range picked {
					picked[i] = r.IntN(nTables)
					args[i] = tables[picked[i]]
				}
				var txn WriteTxn
				if r.IntN(4) == 0 {
					timeout := time.Duration(r.IntN(2000)) * time.Microsecond
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					var err error
					txn, err = db.WriteTxnContext(ctx, args[0], args[1:]...)
					cancel()
					if err != nil {
						if !errors.Is(err, context.DeadlineExceeded) || txn != nil {
							f.errorf("WriteTxnContext: txn %v, err %v", txn, err)
						}
						timeouts.Add(1)
						progress.Add(1)
						continue
					}
				} else {
					txn = db.WriteTxn(args[0], args[1:]...)
				}
				set := slices.Compact(slices.Sorted(slices.Values(picked)))
				for _, i := range set {
					if !holders[i].CompareAndSwap(0, 1) {
						f.errorf("table %d locked by two transactions at once", i)
					}
				}
				for _, i := range set {
					tbl := tables[i]
					c, _, _ := tbl.Get(txn, concPairID.Query(0))
					if _, _, err := tbl.Insert(txn, concPair{ID: 0, Gen: c.Gen + 1}); err != nil {
						f.errorf("insert counter: %v", err)
					}
				}
				i := set[r.IntN(len(set))]
				id := 1 + r.Uint64N(32)
				var err error
				if r.IntN(3) == 0 {
					_, _, err = tables[i].Delete(txn, concPair{ID: id})
				} else {
					_, _, err = tables[i].Insert(txn, concPair{ID: id, Gen: r.Uint64()})
				}
				if err != nil {
					f.errorf("write to table %d: %v", i, err)
				}
				if len(set) < nTables {
					j := r.IntN(nTables)
					for slices.Contains(set, j) {
						j = (j + 1) % nTables
					}
					if _, _, err := tables[j].Insert(txn, concPair{ID: 1}); !errors.Is(err, ErrTableNotLockedForWriting) {
						f.errorf("write to unlocked table %d: err %v", j, err)
					}
				}
				if r.IntN(4) == 0 {
					runtime.Gosched() // hold the locks a little longer
				}
				for _, i := range set {
					holders[i].Store(0)
				}
				if r.IntN(3) == 0 {
					txn.Abort()
					aborts.Add(1)
				} else {
					if _, err := txn.Commit(); err != nil {
						f.errorf("commit: %v", err)
					}
					for _, i := range set {
						committed[i].Add(1)
					}
					commits.Add(1)
				}
				progress.Add(1)
			}
		}()
	}
	concWait(t, &wg, &progress, 10*time.Second)
	t.Logf("%d commits, %d aborts, %d timeouts", commits.Load(), aborts.Load(), timeouts.Load())

	// No lock is left behind: all tables can be locked at once, promptly.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all := make([]TableMeta, nTables)
	for i := range tables {
		all[i] = tables[i]
	}
	txn, err := db.WriteTxnContext(ctx, all[0], all[1:]...)
	if err != nil {
		t.Fatalf("locking every table after the run: %v", err)
	}
	txn.Abort()
	// No commit was lost, and no abort leaked into the tables.
	rtxn := db.ReadTxn()
	for i, tbl := range tables {
		c, _, _ := tbl.Get(rtxn, concPairID.Query(0))
		if c.Gen != committed[i].Load() {
			t.Errorf("table %d: counter %d, %d commits", i, c.Gen, committed[i].Load())
		}
	}
}

// TestDeadlockContextTimeoutReleasesLocks: a WriteTxnContext that times out
// waiting for its second table must give back the first one it took.
func TestDeadlockContextTimeoutReleasesLocks(t *testing.T) {
	db := New()
	t0 := newConcPairTable(t, db, "ctx-0")
	t1 := newConcPairTable(t, db, "ctx-1")
	holder := db.WriteTxn(t1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	txn, err := db.WriteTxnContext(ctx, t1, t0)
	if !errors.Is(err, context.DeadlineExceeded) || txn != nil {
		t.Fatalf("WriteTxnContext on a locked table: %v, %v", txn, err)
	}
	// t0 is free.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	txn, err = db.WriteTxnContext(ctx2, t0)
	if err != nil {
		t.Fatalf("t0 still locked after the timed-out transaction: %v", err)
	}
	txn.Abort()

	// A waiter gets the lock once the holder commits.
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		txn, err := db.WriteTxnContext(ctx, t0, t1)
		if err == nil {
			_, _, err = t1.Insert(txn, concPair{ID: 2})
			if err == nil {
				_, err = txn.Commit()
			}
		}
		got <- err
	}()
	if _, _, err := t1.Insert(holder, concPair{ID: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if n := t1.NumObjects(db.ReadTxn()); n != 2 {
		t.Fatalf("t1 has %d objects, want 2", n)
	}
}

// TestDeadlockContextWaitersNotLost: goroutines that wait for table locks
// in WriteTxnContext, with a deadline far beyond the run, contend with each
// other and with plain WriteTxn callers. Every run of the table's lock must
// wake some waiter: a lost wakeup shows as a waiter that sleeps until its
// deadline although the table is free (the plain callers stop with the
// run, so only a lost wakeup can make a waiter time out).
func TestDeadlockContextWaitersNotLost(t *testing.T) {
	db := New()
	t0 := newConcPairTable(t, db, "wake-0")
	t1 := newConcPairTable(t, db, "wake-1")
	seed := concSeed(t)
	f := &concFailer{t: t}
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	var progress, ctxTxns, plainTxns atomic.Uint64
	var maxWait atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			plain := w >= 4
			for time.Now().Before(deadline) && !f.stopped() {
				a, b := TableMeta(t0), TableMeta(t1)
				if r.IntN(2) == 0 {
					a, b = b, a
				}
				tables := []TableMeta{a}
				if r.IntN(2) == 0 {
					tables = append(tables, b)
				}
				var txn WriteTxn
				if plain {
					txn = db.WriteTxn(tables[0], tables[1:]...)
					plainTxns.Add(1)
				} else {
					start := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
					var err error
					txn, err = db.WriteTxnContext(ctx, tables[0], tables[1:]...)
					cancel()
					if err != nil {
						f.errorf("WriteTxnContext waited %v and failed: %v (lost wakeup?)", time.Since(start), err)
						return
					}
					if d := int64(time.Since(start)); d > maxWait.Load() {
						maxWait.Store(d) // racy maximum, for the log only
					}
					ctxTxns.Add(1)
				}
				tbl := tables[r.IntN(len(tables))].(RWTable[concPair])
				if _, _, err := tbl.Insert(txn, concPair{ID: r.Uint64N(8), Gen: uint64(w)}); err != nil {
					f.errorf("insert: %v", err)
				}
				if r.IntN(2) == 0 {
					txn.Abort()
				} else if _, err := txn.Commit(); err != nil {
					f.errorf("commit: %v", err)
				}
				progress.Add(1)
			}
		}()
	}
	concWait(t, &wg, &progress, 10*time.Second)
	t.Logf("%d context txns, %d plain txns, longest context wait %v", ctxTxns.Load(), plainTxns.Load(), time.Duration(maxWait.Load()))
}

// snapEntry is one object of a snapshot as TestSnapshotStableUnderCommits
// records it: by value, so that a later change to a stored object (which
// must never happen) would show.
type snapEntry struct {
	ID    uint64
	Name  string
	Value int
	Tags  string
	Rev   Revision
}

type snapView struct {
	all      []snapEntry
	reverse  []uint64
	n        int
	rev      Revision
	even     []uint64 // List(tags "even")
	lower    []uint64 // LowerBound(value 0)
	getFirst snapEntry
	getFound bool
}

func captureSnap(tbl Table[*testObject], txn ReadTxn) snapView {
	entry := func(o *testObject, rev Revision) snapEntry {
		var tags []string
		for tag := range o.Tags.All() {
			tags = append(tags, tag)
		}
		return snapEntry{ID: o.ID, Name: o.Name, Value: o.Value, Tags: fmt.Sprint(tags), Rev: rev}
	}
	var v snapView
	for o, rev := range tbl.All(txn) {
		v.all = append(v.all, entry(o, rev))
	}
	v.reverse = ids(tbl.ReverseAll(txn))
	v.n = tbl.NumObjects(txn)
	v.rev = tbl.Revision(txn)
	v.even = ids(tbl.List(txn, tagsIndex.Query("even")))
	v.lower = ids(tbl.LowerBound(txn, valueIndex.Query(0)))
	if o, rev, ok := tbl.Get(txn, idIndex.Query(1)); ok {
		v.getFirst, v.getFound = entry(o, rev), true
	}
	return v
}

func (v snapView) diff(w snapView) string {
	switch {
	case !slices.Equal(v.all, w.all):
		return fmt.Sprintf("All: %v\nthen %v", v.all, w.all)
	case !slices.Equal(v.reverse, w.reverse):
		return fmt.Sprintf("ReverseAll: %v, then %v", v.reverse, w.reverse)
	case v.n != w.n || v.rev != w.rev:
		return fmt.Sprintf("NumObjects/Revision: %d/%d, then %d/%d", v.n, v.rev, w.n, w.rev)
	case !slices.Equal(v.even, w.even):
		return fmt.Sprintf("List(even): %v, then %v", v.even, w.even)
	case !slices.Equal(v.lower, w.lower):
		return fmt.Sprintf("LowerBound(0): %v, then %v", v.lower, w.lower)
	case v.getFound != w.getFound || v.getFirst != w.getFirst:
		return fmt.Sprintf("Get(1): %v %v, then %v %v", v.getFirst, v.getFound, w.getFirst, w.getFound)
	}
	return ""
}

func snapObject(r *rand.Rand, id uint64, gen int) *testObject {
	return &testObject{
		ID:    id,
		Name:  fmt.Sprintf("obj-%d-%d", id, gen),
		Value: r.IntN(200) - 100,
		Tags:  part.NewSet([]string{"even", "odd"}[r.IntN(2)], fmt.Sprintf("t%d", r.IntN(4))),
	}
}

// TestSnapshotStableUnderCommits: a ReadTxn taken before a commit keeps
// returning the same results (All, ReverseAll, Get, List, LowerBound,
// NumObjects, Revision) after any number of later commits, including
// deletes and DeleteAll, and while those commits run. A reader that stops in
// the middle of an iteration does not hold the writer up, and the rest of
// its iteration still reads its snapshot.
func TestSnapshotStableUnderCommits(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "snap", nameIndex, tagsIndex, valueIndex)
	seed := concSeed(t)
	r0 := rand.New(rand.NewPCG(seed, 1000))
	txn := db.WriteTxn(tbl)
	for id := range uint64(200) {
		if _, _, err := tbl.Insert(txn, snapObject(r0, id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	firstView := captureSnap(tbl, first)
	if firstView.n != 200 {
		t.Fatalf("NumObjects %d", firstView.n)
	}

	type saved struct {
		txn  ReadTxn
		view snapView
	}
	var mu sync.Mutex
	snaps := []saved{{first, firstView}}
	var commits, progress atomic.Uint64
	stop := make(chan struct{})
	f := &concFailer{t: t}
	var wg sync.WaitGroup

	// The writer commits until told to stop.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		for gen := 1; ; gen++ {
			select {
			case <-stop:
				return
			default:
			}
			txn := db.WriteTxn(tbl)
			if gen%97 == 0 {
				if err := tbl.DeleteAll(txn); err != nil {
					f.errorf("DeleteAll: %v", err)
				}
			}
			for range 1 + r.IntN(5) {
				id := r.Uint64N(300)
				var err error
				if r.IntN(3) == 0 {
					_, _, err = tbl.Delete(txn, &testObject{ID: id})
				} else {
					_, _, err = tbl.Insert(txn, snapObject(r, id, gen))
				}
				if err != nil {
					f.errorf("write: %v", err)
				}
			}
			rtxn, err := txn.Commit()
			if err != nil {
				f.errorf("commit: %v", err)
				return
			}
			commits.Add(1)
			progress.Add(1)
			if gen%16 == 0 {
				v := captureSnap(tbl, rtxn)
				mu.Lock()
				snaps = append(snaps, saved{rtxn, v})
				mu.Unlock()
			}
		}
	}()

	// Readers check saved snapshots again and again.
	readersDone := make(chan struct{})
	var readers sync.WaitGroup
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	for i := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(seed, uint64(10+i)))
			for time.Now().Before(deadline) && !f.stopped() {
				mu.Lock()
				s := snaps[r.IntN(len(snaps))]
				mu.Unlock()
				if d := s.view.diff(captureSnap(tbl, s.txn)); d != "" {
					f.errorf("snapshot changed after later commits:\n%s", d)
				}
				progress.Add(1)
			}
		}()
	}
	// A reader parks in the middle of an iteration of the first snapshot
	// until the writer has committed many more times.
	readers.Add(1)
	go func() {
		defer readers.Done()
		var got []uint64
		parked := false
		for o := range tbl.All(first) {
			got = append(got, o.ID)
			if len(got) == 100 && !parked {
				parked = true
				start := commits.Load()
				limit := time.Now().Add(5 * time.Second)
				for commits.Load() < start+50 {
					if time.Now().After(limit) {
						f.errorf("writer made %d commits in 5s while a reader was in the middle of an iteration", commits.Load()-start)
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		}
		var want []uint64
		for _, e := range firstView.all {
			want = append(want, e.ID)
		}
		if !slices.Equal(got, want) {
			f.errorf("iteration interrupted by commits: got %v, want %v", got, want)
		}
		progress.Add(1)
	}()
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone:
	case <-time.After(concDuration(20*time.Second, 40*time.Second)):
		f.errorf("readers did not finish\n%s", concGoroutineDump())
		<-readersDone
	}
	close(stop)
	wg.Wait()

	if d := firstView.diff(captureSnap(tbl, first)); d != "" {
		t.Fatalf("first snapshot changed:\n%s", d)
	}
	for _, s := range snaps {
		if d := s.view.diff(captureSnap(tbl, s.txn)); d != "" {
			t.Fatalf("snapshot changed:\n%s", d)
		}
	}
	t.Logf("%d commits, %d snapshots saved", commits.Load(), len(snaps))
}

// TestConcurrentWatchWakeup runs rounds in which readers take GetWatch on
// keys (present or absent) and wait while two writers change some of the
// watched keys in concurrent transactions. Every reader whose key changed
// must wake within a bounded time and then see a different revision (or
// presence) of the key in a new snapshot; a watch on an existing key that
// did not change must stay open (the documented exact semantics); an
// AllWatch must wake on any change.
func TestConcurrentWatchWakeup(t *testing.T) {
	db := New()
	tbl := newConcPairTable(t, db, "watch")
	const keys, readers = 16, 8
	var gen atomic.Uint64
	txn := db.WriteTxn(tbl)
	for k := uint64(0); k < keys; k += 2 { // odd keys start absent
		if _, _, err := tbl.Insert(txn, concPair{ID: k, Gen: gen.Add(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}

	seed := concSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	f := &concFailer{t: t}
	rounds := 1000
	if testing.Short() {
		rounds = 300
	}
	for round := range rounds {
		watched := make([]uint64, readers)
		change := map[uint64]bool{} // key -> changed in this round
		for i := range watched {
			watched[i] = r.Uint64N(keys)
			if r.IntN(2) == 0 {
				change[watched[i]] = true
			}
		}
		change[watched[0]] = true
		// How each changed key changes: existing keys are updated or
		// deleted, absent ones inserted.
		deleteKey := map[uint64]bool{}
		var toChange []uint64
		for k := range change {
			toChange = append(toChange, k)
			deleteKey[k] = r.IntN(3) == 0
		}
		slices.Sort(toChange)

		var ready, done sync.WaitGroup
		committed := make(chan struct{})
		for i, k := range watched {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				_, oldRev, watch, oldFound := tbl.GetWatch(db.ReadTxn(), concPairID.Query(k))
				ready.Done()
				if !change[k] {
					<-committed
					if oldFound {
						select {
						case <-watch:
							f.errorf("round %d: watch on existing key %d closed, but the key did not change", round, k)
						default:
						}
					}
					return
				}
				limit := time.After(5 * time.Second)
				for {
					select {
					case <-watch:
					case <-limit:
						f.errorf("round %d: reader %d watching key %d not woken within 5s of its change", round, i, k)
						return
					}
					_, newRev, w, newFound := tbl.GetWatch(db.ReadTxn(), concPairID.Query(k))
					if newFound != oldFound || newRev != oldRev {
						return
					}
					if oldFound {
						f.errorf("round %d: reader %d woken, but existing key %d is unchanged in the new snapshot (rev %d)", round, i, k, newRev)
						return
					}
					// A watch on an absent key may close on a nearby
					// change (documented): watch again.
					watch = w
				}
			}()
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			rtxn := db.ReadTxn()
			_, watch := tbl.AllWatch(rtxn)
			rev := tbl.Revision(rtxn)
			ready.Done()
			select {
			case <-watch:
			case <-time.After(5 * time.Second):
				f.errorf("round %d: AllWatch not woken within 5s of a change", round)
				return
			}
			if nr := tbl.Revision(db.ReadTxn()); nr <= rev {
				f.errorf("round %d: AllWatch woken, table revision %d -> %d", round, rev, nr)
			}
		}()
		ready.Wait()

		// Two writers commit the changes concurrently, half each.
		var writers sync.WaitGroup
		for half := range 2 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				txn := db.WriteTxn(tbl)
				for i, k := range toChange {
					if i%2 != half {
						continue
					}
					var err error
					if _, _, found := tbl.Get(txn, concPairID.Query(k)); found && deleteKey[k] {
						_, _, err = tbl.Delete(txn, concPair{ID: k})
					} else {
						_, _, err = tbl.Insert(txn, concPair{ID: k, Gen: gen.Add(1)})
					}
					if err != nil {
						f.errorf("write key %d: %v", k, err)
					}
				}
				if _, err := txn.Commit(); err != nil {
					f.errorf("commit: %v", err)
				}
			}()
		}
		writers.Wait()
		close(committed)
		done.Wait()
		if f.stopped() {
			break
		}
	}
}

// TestConcurrentWatchStress: readers watch random keys (GetWatch, and
// ListWatch on the non-unique gen index) in a loop while two writers keep
// changing every key, round robin. Each watch must fire within a bounded
// time, and the snapshot taken after it fired must show the key at a newer
// revision (and no longer under the old generation).
func TestConcurrentWatchStress(t *testing.T) {
	db := New()
	tbl := newConcPairTable(t, db, "watch-stress")
	const keys, readers = 8, 6
	var gen atomic.Uint64
	txn := db.WriteTxn(tbl)
	for k := range uint64(keys) {
		if _, _, err := tbl.Insert(txn, concPair{ID: k, Gen: gen.Add(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}

	seed := concSeed(t)
	f := &concFailer{t: t}
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	var wakeups, spurious, commits, progress atomic.Uint64
	readersDone := make(chan struct{})
	var writers, rwg sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := uint64(0); ; i++ {
				select {
				case <-readersDone:
					return
				default:
				}
				txn := db.WriteTxn(tbl)
				k := (2*i + uint64(w)) % keys
				if _, _, err := tbl.Insert(txn, concPair{ID: k, Gen: gen.Add(1)}); err != nil {
					f.errorf("insert: %v", err)
				}
				if _, err := txn.Commit(); err != nil {
					f.errorf("commit: %v", err)
				}
				commits.Add(1)
				progress.Add(1)
				time.Sleep(50 * time.Microsecond)
			}
		}()
	}
	for i := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for time.Now().Before(deadline) && !f.stopped() {
				k := r.Uint64N(keys)
				rtxn := db.ReadTxn()
				old, oldRev, watch, found := tbl.GetWatch(rtxn, concPairID.Query(k))
				if !found {
					f.errorf("key %d missing", k)
					return
				}
				useList := r.IntN(2) == 0
				if useList {
					var objs []concPair
					var seq func(func(concPair, Revision) bool)
					seq, watch = tbl.ListWatch(rtxn, concPairGen.Query(old.Gen))
					for o := range seq {
						objs = append(objs, o)
					}
					if len(objs) != 1 || objs[0] != old {
						f.errorf("List(gen %d) = %v, want [%v]", old.Gen, objs, old)
					}
				}
				select {
				case <-watch:
				case <-time.After(5 * time.Second):
					f.errorf("watch on key %d (list %v) not woken within 5s while writers change every key", k, useList)
					return
				}
				now := db.ReadTxn()
				o, rev, found := tbl.Get(now, concPairID.Query(k))
				changed := found && rev > oldRev && o.Gen != old.Gen
				if useList {
					n := countSeq(tbl.List(now, concPairGen.Query(old.Gen)))
					if changed != (n == 0) {
						f.errorf("woken for List(gen %d): key %d now %v at %d, List has %d objects", old.Gen, k, o, rev, n)
					}
					if !changed {
						// A List watch may close on a nearby change
						// (TestBug_ListWatchClosedByUnrelatedChange): not
						// what this test checks.
						spurious.Add(1)
						continue
					}
				}
				if !changed {
					f.errorf("woken for key %d: was %v at %d, now %v at %d (found %v)", k, old, oldRev, o, rev, found)
				}
				wakeups.Add(1)
				progress.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		rwg.Wait()
		close(readersDone)
		writers.Wait()
		close(done)
	}()
	var all sync.WaitGroup
	all.Add(1)
	go func() { <-done; all.Done() }()
	concWait(t, &all, &progress, 10*time.Second)
	t.Logf("%d commits, %d wakeups, %d early List wakeups", commits.Load(), wakeups.Load(), spurious.Load())
}

// TestConcurrentTableRegistration registers tables (NewTable) while other
// goroutines write and read existing ones. Registration must not disturb
// the existing tables (pairs stay atomic, nothing is lost), a new table
// must be usable at once, a snapshot taken before the registration must
// read the new table as empty, two concurrent registrations of one name must
// give one table and one ErrDuplicateTable, and Tables must list every
// table once.
func TestConcurrentTableRegistration(t *testing.T) {
	db := New()
	tblA := newTestTable(t, db, "reg-a")
	tblB := newConcPairTable(t, db, "reg-b")
	const keys = 8
	seed := concSeed(t)
	f := &concFailer{t: t}
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	var gen, progress, commits atomic.Uint64
	var wg sync.WaitGroup

	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) && !f.stopped() {
				var txn WriteTxn
				if r.IntN(2) == 0 {
					txn = db.WriteTxn(tblA, tblB)
				} else {
					txn = db.WriteTxn(tblB, tblA)
				}
				k, g := r.Uint64N(keys), gen.Add(1)
				_, _, errA := tblA.Insert(txn, &testObject{ID: k, Value: int(g)})
				_, _, errB := tblB.Insert(txn, concPair{ID: k, Gen: g})
				if errA != nil || errB != nil {
					f.errorf("insert: %v, %v", errA, errB)
				}
				if _, err := txn.Commit(); err != nil {
					f.errorf("commit: %v", err)
				}
				commits.Add(1)
				progress.Add(1)
			}
		}()
	}
	checkPairs := func(rtxn ReadTxn) {
		for k := range uint64(keys) {
			a, _, okA := tblA.Get(rtxn, idIndex.Query(k))
			b, _, okB := tblB.Get(rtxn, concPairID.Query(k))
			if okA != okB || (okA && uint64(a.Value) != b.Gen) {
				f.errorf("pair %d: A %v %v, B %v %v", k, a, okA, b, okB)
			}
		}
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && !f.stopped() {
				rtxn := db.ReadTxn()
				checkPairs(rtxn)
				// Every listed table can be read through any snapshot, also
				// one taken before the table was registered.
				for _, m := range db.Tables() {
					n := m.NumObjects(rtxn)
					if n < 0 || (n > 0 && m.Revision(rtxn) == 0) {
						f.errorf("table %s: %d objects at revision %d", m.Name(), n, m.Revision(rtxn))
					}
				}
				progress.Add(1)
			}
		}()
	}

	type registered struct {
		name string
		id   uint64
		tbl  TableMeta
	}
	const dupNames = 20
	var dupWins [dupNames]atomic.Int32
	results := make([][]registered, 2)
	minTables := 20
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(100+g)))
			for i := 0; (i < minTables || time.Now().Before(deadline)) && !f.stopped(); i++ {
				if i < dupNames {
					_, err := NewTable(db, fmt.Sprintf("reg-dup-%d", i), concPairID)
					switch {
					case err == nil:
						dupWins[i].Add(1)
					case !errors.Is(err, ErrDuplicateTable):
						f.errorf("duplicate registration: %v", err)
					}
				}
				before := db.ReadTxn()
				name := fmt.Sprintf("reg-%d-%d", g, i)
				id := uint64(i)
				var meta TableMeta
				var err error
				if i%2 == 0 {
					var tbl RWTable[concPair]
					if tbl, err = NewTable(db, name, concPairID, concPairGen); err == nil {
						meta = tbl
						txn := db.WriteTxn(tbl, tblA) // contends with the pair writers
						_, _, err = tbl.Insert(txn, concPair{ID: id, Gen: 1})
						if _, cerr := txn.Commit(); cerr != nil {
							f.errorf("%s: Commit: %v", name, cerr)
						}
						if _, _, found := tbl.Get(before, concPairID.Query(id)); found || tbl.NumObjects(before) != 0 || countSeq(tbl.All(before)) != 0 {
							f.errorf("%s: snapshot from before the registration is not empty", name)
						}
						if _, _, found := tbl.Get(db.ReadTxn(), concPairID.Query(id)); !found {
							f.errorf("%s: committed object not found", name)
						}
					}
				} else {
					var tbl RWTable[*testObject]
					if tbl, err = NewTable(db, name, idIndex, nameIndex); err == nil {
						meta = tbl
						txn := db.WriteTxn(tblB, tbl)
						_, _, err = tbl.Insert(txn, &testObject{ID: id, Name: name})
						if r.IntN(2) == 0 {
							if _, cerr := txn.Commit(); cerr != nil {
								f.errorf("%s: Commit: %v", name, cerr)
							}
						} else {
							// Reading a fresh table through the transaction works.
							if o, _, found := tbl.Get(txn, nameIndex.Query(name)); !found || o.ID != id {
								f.errorf("%s: read own write: %v %v", name, o, found)
							}
							if _, cerr := txn.Commit(); cerr != nil {
								f.errorf("%s: Commit: %v", name, cerr)
							}
						}
						if _, _, found := tbl.Get(before, idIndex.Query(id)); found || tbl.NumObjects(before) != 0 {
							f.errorf("%s: snapshot from before the registration is not empty", name)
						}
					}
				}
				if err != nil {
					f.errorf("%s: %v", name, err)
					return
				}
				results[g] = append(results[g], registered{name, id, meta})
				progress.Add(1)
			}
		}()
	}
	concWait(t, &wg, &progress, 10*time.Second)
	if f.stopped() {
		return
	}

	rtxn := db.ReadTxn()
	checkPairs(rtxn)
	names := map[string]int{}
	for _, m := range db.Tables() {
		names[m.Name()]++
	}
	total := 2
	for i := range dupNames {
		if n := dupWins[i].Load(); n != 1 {
			t.Errorf("reg-dup-%d registered %d times", i, n)
		}
		total++
	}
	for _, res := range results {
		for _, reg := range res {
			total++
			if names[reg.name] != 1 {
				t.Errorf("table %s listed %d times", reg.name, names[reg.name])
			}
			if n := reg.tbl.NumObjects(rtxn); n != 1 {
				t.Errorf("table %s has %d objects, want 1", reg.name, n)
			}
		}
	}
	if len(names) != total || len(db.Tables()) != total {
		t.Errorf("Tables lists %d tables (%d names), want %d", len(db.Tables()), len(names), total)
	}
	t.Logf("%d pair commits, %d+%d tables registered", commits.Load(), len(results[0]), len(results[1]))
}

// TestConcurrentRegistrationDuringOpenWriteTxn: a table registered and
// written while another write transaction is open keeps its contents when
// that transaction commits (commit must not publish a root built from its
// stale snapshot), and the open transaction reads it as empty and cannot
// write to it.
func TestConcurrentRegistrationDuringOpenWriteTxn(t *testing.T) {
	db := New()
	a := newTestTable(t, db, "open-a")
	txn := db.WriteTxn(a)
	if _, _, err := a.Insert(txn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	got := make(chan RWTable[concPair])
	go func() {
		n, err := NewTable(db, "open-n", concPairID)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		w := db.WriteTxn(n)
		if _, _, err := n.Insert(w, concPair{ID: 7}); err != nil {
			t.Error(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Error(err)
		}
		got <- n
	}()
	n, ok := <-got
	if !ok {
		t.FailNow()
	}
	if c := n.NumObjects(txn); c != 0 {
		t.Errorf("open transaction sees %d objects of a table registered after it began", c)
	}
	if _, _, err := n.Insert(txn, concPair{ID: 8}); !errors.Is(err, ErrTableNotLockedForWriting) {
		t.Errorf("write to a table the transaction did not lock: %v", err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range []ReadTxn{rtxn, db.ReadTxn()} {
		if _, _, found := n.Get(snap, concPairID.Query(7)); !found {
			t.Errorf("object of the table registered meanwhile lost by the commit")
		}
		if _, _, found := a.Get(snap, idIndex.Query(1)); !found {
			t.Errorf("committed object missing")
		}
	}
}

// TestBug_InsertWatchNotClosedBySameTxnOverwrite: InsertWatch documents
// that its channel closes "when the stored object is next replaced or
// deleted (by a later commit, or by a later write in this transaction once
// it commits)". A later Insert of the same key in the same transaction
// replaces the object, yet the channel stays open after Commit.
func TestInsertWatchClosedBySameTxnOverwrite(t *testing.T) {
	db := New()
	tbl := newConcPairTable(t, db, "bug-insertwatch")
	txn := db.WriteTxn(tbl)
	_, _, watch, err := tbl.InsertWatch(txn, concPair{ID: 1, Gen: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(txn, concPair{ID: 1, Gen: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	default:
		t.Fatal("InsertWatch channel still open after a later write in the same transaction replaced the object and committed")
	}
}

// TestWatchExactness checks what Table documents about watch channels: a
// Get watch on a unique index closes exactly when its object changes, while
// List and Get watches on a non-unique index close whenever their result
// changes (and may also close on nearby changes, which is not checked).
func TestWatchExactness(t *testing.T) {
	db := New()
	tbl := newConcPairTable(t, db, "watch-exact")
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, concPair{ID: 1, Gen: 10}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(txn, concPair{ID: 2, Gen: 11}); err != nil {
		t.Fatal(err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	_, _, uniqueWatch, found := tbl.GetWatch(rtxn, concPairID.Query(1))
	if !found {
		t.Fatal("GetWatch(id 1) found nothing")
	}
	seq, listWatch := tbl.ListWatch(rtxn, concPairGen.Query(10))
	if n := countSeq(seq); n != 1 {
		t.Fatalf("List(gen 10) has %d objects", n)
	}
	_, _, getWatch, found := tbl.GetWatch(rtxn, concPairGen.Query(10))
	if !found {
		t.Fatal("GetWatch(gen 10) found nothing")
	}

	// Changing object 2 leaves the unique-index watch on object 1 open.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, concPair{ID: 2, Gen: 12}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-uniqueWatch:
		t.Fatal("GetWatch on a unique index closed though its object did not change")
	default:
	}

	// Changing object 1 closes all three.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, concPair{ID: 1, Gen: 13}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan struct{}{"unique Get": uniqueWatch, "List": listWatch, "non-unique Get": getWatch} {
		select {
		case <-ch:
		default:
			t.Errorf("%s watch still open after its result changed", name)
		}
	}
}
