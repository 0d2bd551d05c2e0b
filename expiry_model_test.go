package strata

// A model test of expiry: random inserts, updates and deletes of objects
// with random expiries (some never expire), and a clock (synctest's)
// moved forward by random steps, checked after every step against a map
// of each object's expiry. The run either calls ExpireBefore itself, with
// a random batch, or leaves it to an Expirer running beside it, which must
// have deleted, once the bubble is idle, exactly what is due.
//
// Checked after every step:
//  1. the table holds exactly the model's objects: those written and not
//     deleted whose expiry is after now (or never);
//  2. a change feed opened at the start, applied to a map, holds the same
//     objects, and never delivers the delete of an object it does not
//     hold (each delete once);
//  3. the watch channel of each object's Get, taken before the step,
//     has closed if the object expired in it, and the Count of the expiry
//     index up to now is zero.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestExpiryModel(t *testing.T) {
	for _, background := range []bool{false, true} {
		for seed := range uint64(4) {
			name := "pass"
			if background {
				name = "expirer"
			}
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runExpiryModel(t, seed, background, 400) })
			})
		}
	}
}

func runExpiryModel(t *testing.T, seed uint64, background bool, steps int) {
	rng := rand.New(rand.NewPCG(seed, 30))
	db := New()
	tbl := newSessions(t, db, "s")
	model := map[uint64]time.Time{} // id -> expiry, zero: never

	wtxn := db.WriteTxn(tbl)
	feed, err := tbl.Changes(wtxn, WithCreated())
	must(t, err)
	defer feed.Close()
	mustCommit(t, wtxn)
	held := map[uint64]bool{} // what the feed delivered and did not delete
	total := 0                // objects expired

	var stop func()
	if background {
		e, err := NewExpirer(db, ExpirerOptions{Batch: 1 + rng.IntN(8)})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		stop = func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
			if e.Err() != nil {
				t.Errorf("Expirer: %v", e.Err())
			}
		}
	}

	for step := range steps {
		now := time.Now()
		watches := map[uint64]<-chan struct{}{}
		rtxn := db.ReadTxn()
		for id := range model {
			_, _, w, _ := tbl.GetWatch(rtxn, sessionByID.Query(id))
			watches[id] = w
		}
		passed := false
		switch op := rng.IntN(10); {
		case op < 5: // a write transaction of a few inserts and deletes
			txn := db.WriteTxn(tbl)
			for range 1 + rng.IntN(4) {
				id := uint64(rng.IntN(40))
				if rng.IntN(4) == 0 {
					if _, _, err := tbl.Delete(txn, &session{ID: id}); err != nil {
						t.Fatal(err)
					}
					delete(model, id)
					continue
				}
				var exp time.Time
				if rng.IntN(5) > 0 {
					exp = now.Add(time.Duration(1+rng.IntN(60_000)) * time.Millisecond)
				}
				if rng.IntN(10) == 0 {
					// Already expired: refused, and nothing changes.
					_, _, err := tbl.Insert(txn, &session{ID: id, Expires: now.Add(-time.Duration(rng.IntN(1000)))})
					if !errors.Is(err, ErrExpired) {
						t.Fatalf("step %d: expired insert: %v", step, err)
					}
					continue
				}
				if _, _, err := tbl.Insert(txn, &session{ID: id, Expires: exp, Value: step}); err != nil {
					t.Fatal(err)
				}
				model[id] = exp
			}
			mustCommit(t, txn)
		case op < 8: // time passes
			time.Sleep(time.Duration(rng.IntN(20_000)) * time.Millisecond)
		default: // a pass, unless the Expirer makes them
			if !background {
				if _, err := ExpireBefore(db, now, 1+rng.IntN(8)); err != nil {
					t.Fatal(err)
				}
				passed = true
			}
		}
		if background {
			synctest.Wait()
		} else if !passed {
			continue // the objects due stay until a pass
		}
		now = time.Now()
		expired := map[uint64]bool{}
		for id, exp := range model {
			if !exp.IsZero() && !exp.After(now) {
				delete(model, id)
				expired[id] = true
				total++
			}
		}
		checkExpiryModel(t, step, db, tbl, feed, held, model)
		for id := range expired {
			select {
			case <-watches[id]:
			default:
				t.Fatalf("step %d: the watch channel of expired object %d is open (nil %v)", step, id, watches[id] == nil)
			}
		}
	}
	if stop != nil {
		stop()
	}
	if total < steps/20 {
		t.Fatalf("only %d objects expired in %d steps: the run tests little", total, steps)
	}
}

// checkExpiryModel checks invariants 1 and 2, and 3's count.
func checkExpiryModel(t *testing.T, step int, db *DB, tbl RWTable[*session], feed ChangeIterator[*session], held map[uint64]bool, model map[uint64]time.Time) {
	t.Helper()
	rtxn := db.ReadTxn()
	want := slices.Sorted(maps.Keys(model))
	if got := sessionIDs(rtxn, tbl); !slices.Equal(got, want) {
		t.Fatalf("step %d at %v: table holds %v, want %v", step, time.Now(), got, want)
	}
	changes, _ := feed.Next(rtxn)
	for c := range changes {
		id := c.Object.ID
		switch {
		case c.Deleted && c.Created: // written and deleted between two reads
		case c.Deleted && !held[id]:
			t.Fatalf("step %d: the feed deletes %d, which it does not hold (a second delete?)", step, id)
		case c.Deleted:
			delete(held, id)
		default:
			held[id] = true
		}
	}
	if got := slices.Sorted(maps.Keys(held)); !slices.Equal(got, want) {
		t.Fatalf("step %d: the feed holds %v, want %v", step, got, want)
	}
	if n, err := CountRange(rtxn, tbl.ToTable(), sessionByExpiry.Query(time.Time{}), sessionByExpiry.Query(time.Now().Add(time.Nanosecond))); err != nil || n != 0 {
		t.Fatalf("step %d: %d objects due left (%v)", step, n, err)
	}
}
