package strata

import (
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// TestChangesConcurrentReaders: feeds read on goroutines of their own,
// stopping early at random (a round limit), while writers commit and abort
// long and short transactions, with deletes, DeleteAll and Restore, and
// while other feeds are registered, closed, and dropped without Close for
// the garbage collector to release. Once the writers stop, every feed's
// view (what its changes describe) must be the table; so must the view of
// each dropped feed, at a snapshot it drained before it was dropped. Run
// it with -race.
func TestChangesConcurrentReaders(t *testing.T) {
	const readers, droppers, writers = 4, 2, 2
	txns, drops := 400, 40
	if testing.Short() {
		txns, drops = 100, 10
	}
	db := New()
	tbl := newTestTable(t, db, "t", tagsIndex)

	type reader struct {
		it   ChangeIterator[*testObject]
		view map[uint64]int
	}
	rs := make([]*reader, readers)
	txn := db.WriteTxn(tbl)
	for i := range rs {
		it, err := tbl.Changes(txn)
		must(t, err)
		rs[i] = &reader{it: it, view: map[uint64]int{}}
	}
	_, err := txn.Commit()
	must(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers+droppers+writers)
	for i, rd := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for {
				seq, watch := rd.it.Next(db.ReadTxn())
				limit := 1 + r.IntN(50)
				n := 0
				for c := range seq {
					if c.Deleted {
						delete(rd.view, c.Object.ID)
					} else {
						rd.view[c.Object.ID] = c.Object.Value
					}
					if n++; n == limit {
						break
					}
				}
				select {
				case <-watch:
				case <-stop:
					return
				}
			}
		}()
	}
	// Droppers register a feed, read it on their goroutine while the
	// writers commit, drain it to a snapshot and compare, and drop it.
	var writersWG sync.WaitGroup
	for d := range droppers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			r := rand.New(rand.NewPCG(uint64(d), 3))
			for range drops {
				if err := readAndDrop(db, tbl, r); err != nil {
					errs <- err
					return
				}
				runtime.GC() // the feed dropped is released, at some point
			}
		}()
	}
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			var extra ChangeIterator[*testObject]
			for i := range txns {
				txn := db.WriteTxn(tbl)
				n := 1 + r.IntN(5)
				if r.IntN(10) == 0 {
					n = changeLogSegment + r.IntN(3*changeLogSegment) // several segments
				}
				for range n {
					id := uint64(r.IntN(200))
					var err error
					switch k := r.IntN(40); {
					case k < 24:
						_, _, err = tbl.Insert(txn, &testObject{ID: id, Value: w*100000 + i})
					case k < 38:
						_, _, err = tbl.Delete(txn, &testObject{ID: id})
					case k < 39:
						err = tbl.DeleteAll(txn)
					default:
						// Restored objects keep their revisions, below the
						// table's.
						if err = tbl.DeleteAll(txn); err == nil {
							err = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
								for j, id := range r.Perm(200)[:5] {
									if !yield(&testObject{ID: uint64(id), Value: -1 - i}, Revision(1+3*j+r.IntN(3))) {
										return
									}
								}
							}, 0)
						}
					}
					if err != nil {
						errs <- err
						txn.Abort()
						return
					}
				}
				if r.IntN(8) == 0 {
					// A feed that comes and goes, inside the transaction:
					// closed, or dropped for the garbage collector.
					if extra != nil {
						if r.IntN(2) == 0 {
							extra.Close()
						}
						extra = nil
					} else if extra, err = tbl.Changes(txn); err != nil {
						errs <- err
						txn.Abort()
						return
					}
				}
				if r.IntN(5) == 0 {
					txn.Abort()
					continue
				}
				if _, err := txn.Commit(); err != nil {
					errs <- err
					return
				}
			}
			if extra != nil {
				extra.Close()
			}
		}()
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	final := db.ReadTxn()
	want := map[uint64]int{}
	for o := range tbl.All(final) {
		want[o.ID] = o.Value
	}
	for i, rd := range rs {
		for { // the rest of a batch, then what followed, until drained
			seq, watch := rd.it.Next(final)
			n := 0
			for c := range seq {
				n++
				if c.Deleted {
					delete(rd.view, c.Object.ID)
				} else {
					rd.view[c.Object.ID] = c.Object.Value
				}
			}
			if n == 0 && !mdlClosed(watch) {
				break
			}
		}
		if !maps.Equal(rd.view, want) {
			t.Errorf("reader %d: its view has %d objects, the table %d: %v", i, len(rd.view), len(want), fmt.Sprint(diffKeys(rd.view, want)))
		}
		rd.it.Close()
	}
	awaitFeedsReleased(t, tbl, 0) // the dropped ones too
	if st := tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()); st.logged() {
		t.Error("every feed closed, and the change log is kept")
	}
}

// readAndDrop registers a feed, reads it a few times as a reader that
// stops early would, drains it to the latest snapshot, checks that its
// view is the table there, and drops it without Close: in part read, now
// and then.
func readAndDrop(db *DB, tbl RWTable[*testObject], r *rand.Rand) error {
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	if err != nil {
		txn.Abort()
		return err
	}
	if _, err := txn.Commit(); err != nil {
		return err
	}
	view := map[uint64]int{}
	apply := func(seq iter.Seq2[Change[*testObject], Revision], limit int) int {
		n := 0
		for c := range seq {
			if c.Deleted {
				delete(view, c.Object.ID)
			} else {
				view[c.Object.ID] = c.Object.Value
			}
			if n++; n == limit {
				break
			}
		}
		return n
	}
	for range r.IntN(10) {
		seq, _ := it.Next(db.ReadTxn())
		apply(seq, 1+r.IntN(50))
	}
	rtxn := db.ReadTxn()
	for { // the rest of a batch, then up to rtxn
		seq, _ := it.Next(rtxn)
		if apply(seq, -1) == 0 {
			break
		}
	}
	want := map[uint64]int{}
	for o := range tbl.All(rtxn) {
		want[o.ID] = o.Value
	}
	if !maps.Equal(view, want) {
		return fmt.Errorf("a feed drained to revision %d: its view has %d objects, the table %d: %v",
			tbl.Revision(rtxn), len(view), len(want), diffKeys(view, want))
	}
	if r.IntN(2) == 0 {
		seq, _ := it.Next(db.ReadTxn())
		apply(seq, 1+r.IntN(5)) // dropped with a batch in part delivered
	}
	return nil
}

// diffKeys returns the keys whose values differ between a and b.
func diffKeys(a, b map[uint64]int) []uint64 {
	var out []uint64
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
