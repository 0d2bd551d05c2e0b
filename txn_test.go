package strata

// Tests of transactions (txn.go, txn_ref.go, lock.go): atomicity across
// tables as concurrent readers see it, freedom from deadlock with random
// lock sets and contexts, aborts, and what ended transactions leave
// behind. The concurrent ones are meant for the race detector; each runs
// for a bounded time (shorter with -short) and stops every goroutine it
// starts.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/strata-db/strata/index"
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

// TestEndedWriteTxnsKeepNoGarbage: once the txnRefs of ended write
// transactions are unreachable, one collection frees what only their
// snapshots held. (With a finalizer on the refs' blocks, the collector
// kept them for one more cycle: a write-heavy program's dead trees were all
// marked once more.)
func TestEndedWriteTxnsKeepNoGarbage(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	obj := &testObject{ID: 1}
	gone := weak.Make(obj)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, obj); err != nil {
		t.Fatal(err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, found := tbl.Get(rtxn, idIndex.Query(1)); !found {
		t.Fatal("the object was not stored")
	}
	txn = db.WriteTxn(tbl)
	if _, hadOld, err := tbl.Delete(txn, obj); err != nil || !hadOld {
		t.Fatalf("Delete = %v, %v", hadOld, err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	obj, rtxn, txn = nil, nil, nil
	// Fill the blocks that hold handles which saw obj, so that none of
	// them waits in the pool of partly used blocks.
	for range 2 * refsPerBlock {
		db.WriteTxn(tbl).Abort()
	}
	runtime.GC()
	if gone.Value() != nil {
		t.Fatal("a deleted object outlived a collection after every handle that saw it was dropped")
	}
}

// A regression the adversarial trial of the public API found (its case 5):
// watch channels read through a write transaction that aborts must close:
// what they watched was never committed. Through one that commits, they
// close when a later commit changes what they watch.
func TestRegressWatchThroughAbortedWriteTxn(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex)
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Name: "a"}, &testObject{ID: 2, Name: "b"})
	_, err := txn.Commit()
	must(t, err)

	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Name: "a2"}, &testObject{ID: 3, Name: "c"})
	var watches []<-chan struct{}
	_, _, w, _ := tbl.GetWatch(txn, idIndex.Query(1))
	watches = append(watches, w)
	_, _, w, _ = tbl.GetWatch(txn, idIndex.Query(3))
	watches = append(watches, w)
	_, _, w, _ = tbl.GetWatch(txn, nameIndex.Query("c"))
	watches = append(watches, w)
	_, w = tbl.AllWatch(txn)
	watches = append(watches, w)
	_, w = tbl.PrefixWatch(txn, nameIndex.Query("a"))
	watches = append(watches, w)
	_, _, w, err = tbl.InsertWatch(txn, &testObject{ID: 4, Name: "d"})
	must(t, err)
	watches = append(watches, w)
	// Object 2 is not written by the transaction: its channel is the
	// committed one's, and stays open.
	_, _, untouched, _ := tbl.GetWatch(txn, idIndex.Query(2))
	txn.Abort()
	for i, w := range watches {
		if !mdlClosed(w) {
			t.Errorf("watch %d taken through the aborted transaction is open", i)
		}
	}
	if mdlClosed(untouched) {
		t.Error("the watch of an object the aborted transaction did not write closed")
	}
}
