package strata

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestChangesConcurrentReaders: feeds read on goroutines of their own,
// stopping early at random (a round limit), while writers commit and abort
// long and short transactions, with deletes and DeleteAll, and while other
// feeds are registered and closed. Once the writers stop, every feed's
// view (what its changes describe) must be the table. Run it with -race.
func TestChangesConcurrentReaders(t *testing.T) {
	const readers, writers = 4, 2
	txns := 400
	if testing.Short() {
		txns = 100
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
	errs := make(chan error, readers+writers)
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
	var writersWG sync.WaitGroup
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
					switch k := r.IntN(20); {
					case k < 12:
						_, _, err = tbl.Insert(txn, &testObject{ID: id, Value: w*100000 + i})
					case k < 19:
						_, _, err = tbl.Delete(txn, &testObject{ID: id})
					default:
						err = tbl.DeleteAll(txn)
					}
					if err != nil {
						errs <- err
						txn.Abort()
						return
					}
				}
				if r.IntN(8) == 0 {
					// A feed that comes and goes, inside the transaction.
					if extra != nil {
						extra.Close()
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
	if st := tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()); st.logged() {
		t.Error("every feed closed, and the change log is kept")
	}
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
