package strata

// Tests of reads (table_read.go): snapshots that stay stable under
// commits, watch channels that close exactly when what a read saw
// changed (also under concurrency), and scans at the ends of the key
// space.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/part"
)

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

// TestReverseScansNilKey: a query key may be nil (QueryKey(nil),
// index.Bytes(nil) or of an empty slice): the empty key, below all others.
// Regression test: ReverseRange(nil, to) once made its upper bound
// inclusive, and ReverseLowerBound(nil) once scanned without a bound.
func TestReverseScansNilKey(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "bugnil", valueIndex)
	txn := db.WriteTxn(tbl)
	for i := range uint64(8) {
		if _, _, err := tbl.Insert(txn, &testObject{ID: i, Value: int(i)}); err != nil {
			t.Fatal(err)
		}
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(tbl.Range(rtxn, idIndex.QueryKey(nil), idIndex.Query(5))); !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
		t.Errorf("Range(id nil..5) = %v", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, idIndex.QueryKey(nil), idIndex.Query(5))); !slices.Equal(got, []uint64{4, 3, 2, 1, 0}) {
		t.Errorf("ReverseRange(id nil..5) = %v, want [4 3 2 1 0]", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, valueIndex.QueryKey(nil), valueIndex.Query(5))); !slices.Equal(got, []uint64{4, 3, 2, 1, 0}) {
		t.Errorf("ReverseRange(value nil..5) = %v, want [4 3 2 1 0]", got)
	}
	if got := ids(tbl.ReverseLowerBound(rtxn, idIndex.QueryKey(nil))); len(got) != 0 {
		t.Errorf("ReverseLowerBound(id nil) = %v, want []", got)
	}
}
