package strata

// Regression tests of the failures an adversarial trial of the public API
// found in change feeds and write transactions. Each names the case it
// covers; each failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// lockFree reports whether tbl can be locked for writing within a second,
// and unlocks it again.
func lockFree(db *DB, tbl TableMeta) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	txn, err := db.WriteTxnContext(ctx, tbl)
	if err != nil {
		return false
	}
	txn.Abort()
	return true
}

// feedAll runs one Next and returns its changes as records.
func feedAll(it ChangeIterator[*testObject], txn ReadTxn) []changeRec {
	seq, _ := it.Next(txn)
	var out []changeRec
	for c := range seq {
		out = append(out, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
	}
	return out
}

// awaitFeedsReleased runs the garbage collector until tbl counts n open
// feeds and no feed cleanup is running.
func awaitFeedsReleased(t *testing.T, tbl RWTable[*testObject], n int) {
	t.Helper()
	fr := &tbl.(*table[*testObject]).meta.feeds
	deadline := time.Now().Add(10 * time.Second)
	for fr.live() != n || mdlFeedCleanupRunning() {
		if time.Now().After(deadline) {
			t.Fatalf("%d open feeds 10s after dropping, want %d", fr.live(), n)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// Case 1: a table has one feed; a write transaction on it starts; the
// feed is closed (or dropped and collected) while the transaction is open;
// the transaction writes more than two log segments of changes and
// aborts, or its journal fails the commit. The abort must not panic, and
// the table must be free for the next writer.
func TestRegressAbortAfterLastFeedClosedInLongTxn(t *testing.T) {
	for _, how := range []string{"Close/Abort", "drop/Abort", "Close/journal fails"} {
		t.Run(how, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t")
			txn := db.WriteTxn(tbl)
			it, err := tbl.Changes(txn)
			must(t, err)
			mustInsert(t, tbl, txn, &testObject{ID: 1})
			j := &memJournal{objects: map[string]int{}}
			if strings.HasSuffix(how, "journal fails") {
				must(t, SetJournal(txn, tbl, j, memTableJournal{}))
			}
			_, err = txn.Commit()
			must(t, err)
			j.fail = errors.New("disk full") // from now on

			txn = db.WriteTxn(tbl)
			mustInsert(t, tbl, txn, &testObject{ID: 99}) // begins the table's write state, with a feed
			if strings.HasPrefix(how, "drop") {
				it = nil
				awaitFeedsReleased(t, tbl, 0)
			} else {
				it.Close()
			}
			for i := range 3*changeLogSegment + 5 {
				mustInsert(t, tbl, txn, &testObject{ID: uint64(100 + i)})
			}
			if strings.HasSuffix(how, "journal fails") {
				if p := catch(func() { _, err = txn.Commit() }); p != nil {
					t.Fatalf("Commit with a failing journal panicked: %v", p)
				}
				if err == nil {
					t.Fatal("Commit with a failing journal succeeded")
				}
			} else if p := catch(txn.Abort); p != nil {
				t.Fatalf("Abort panicked: %v", p)
			}
			if !lockFree(db, tbl) {
				t.Fatal("the table stayed locked after the transaction ended")
			}
			txn = db.WriteTxn(tbl)
			mustInsert(t, tbl, txn, &testObject{ID: 2})
			rtxn, err := txn.Commit()
			if strings.HasSuffix(how, "journal fails") {
				// The journal still fails: nothing is published.
				if err == nil {
					t.Fatal("Commit with a failing journal succeeded")
				}
				return
			}
			must(t, err)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, []uint64{1, 2}) {
				t.Fatalf("table holds %v, want [1 2]", got)
			}
			runtime.KeepAlive(txn)
		})
	}
}

// Case 2: old feed closed; more than two segments of changes; a new feed
// registered in the same transaction; as many changes again; commit. The
// new feed's first Next must return the table as it is.
func TestRegressFeedRegisteredLateInLongTxn(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	txn := db.WriteTxn(tbl)
	old, err := tbl.Changes(txn)
	must(t, err)
	_, err = txn.Commit()
	must(t, err)

	txn = db.WriteTxn(tbl)
	n := 2*changeLogSegment + 2
	mustInsert(t, tbl, txn, &testObject{ID: uint64(n * 2)}) // begins the table's write state, with a feed
	old.Close()
	for i := range n {
		mustInsert(t, tbl, txn, &testObject{ID: uint64(i)})
	}
	it, err := tbl.Changes(txn)
	must(t, err)
	for i := range n {
		mustInsert(t, tbl, txn, &testObject{ID: uint64(n + i)})
	}
	rtxn, err := txn.Commit()
	must(t, err)
	var got []changeRec
	if p := catch(func() { got = feedAll(it, rtxn) }); p != nil {
		t.Fatalf("first Next panicked: %v", p)
	}
	if len(got) != 2*n+1 {
		t.Fatalf("first Next returned %d changes, want %d", len(got), 2*n+1)
	}
	// And the feed goes on.
	txn = db.WriteTxn(tbl)
	for i := range 3 * changeLogSegment {
		mustInsert(t, tbl, txn, &testObject{ID: uint64(i), Value: 1})
	}
	rtxn, err = txn.Commit()
	must(t, err)
	if got := feedAll(it, rtxn); len(got) != 3*changeLogSegment {
		t.Fatalf("second Next returned %d changes, want %d", len(got), 3*changeLogSegment)
	}
	it.Close()
}

// Case 3: a feed at revision 1; one transaction updates an object ten
// times, deletes it (or all objects), and restores another object at a
// revision among those of the updates. Next must deliver the restored
// object.
func TestRegressRestoredObjectDelivered(t *testing.T) {
	for _, del := range []string{"Delete", "DeleteAll"} {
		t.Run(del, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t")
			txn := db.WriteTxn(tbl)
			it, err := tbl.Changes(txn)
			must(t, err)
			mustInsert(t, tbl, txn, &testObject{ID: 1})
			rtxn, err := txn.Commit()
			must(t, err)
			if got := feedAll(it, rtxn); !slices.Equal(got, []changeRec{{1, 0, false}}) {
				t.Fatalf("first Next = %v", got)
			}

			txn = db.WriteTxn(tbl)
			for v := 1; v <= 10; v++ {
				mustInsert(t, tbl, txn, &testObject{ID: 1, Value: v})
			}
			if del == "Delete" {
				_, _, err = tbl.Delete(txn, &testObject{ID: 1})
			} else {
				err = tbl.DeleteAll(txn)
			}
			must(t, err)
			must(t, Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
				yield(&testObject{ID: 7, Value: 7}, 5)
			}, 0))
			rtxn, err = txn.Commit()
			must(t, err)
			got := feedAll(it, rtxn)
			want := []changeRec{{1, 10, true}, {7, 7, false}}
			if !slices.Equal(got, want) {
				t.Fatalf("Next = %v, want %v", got, want)
			}
			it.Close()
		})
	}
}

// checkIndexesAgree checks that every secondary index holds exactly the
// objects of the primary index.
func checkIndexesAgree(t *testing.T, tbl RWTable[*testObject], txn ReadTxn) {
	t.Helper()
	impl := tbl.(*table[*testObject])
	st := impl.read(txn)
	want := map[uint64]Revision{}
	for o, rev := range tbl.All(txn) {
		want[o.ID] = rev
	}
	for i, sec := range st.secondary {
		got := map[uint64]Revision{}
		for _, o := range sec.All() {
			got[o.obj.ID] = o.rev
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("secondary index %d holds %v, the primary %v", i, got, want)
		}
	}
}

// Case 9: a feed closed by the abort of the transaction that registered
// it must say so, never make its consumer spin: Next returns no changes
// and a nil channel, and the same after Close.
func TestRegressClosedFeedDoesNotSpin(t *testing.T) {
	for _, how := range []string{"aborted registration", "Close"} {
		t.Run(how, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t")
			txn := db.WriteTxn(tbl)
			it, err := tbl.Changes(txn)
			must(t, err)
			if how == "Close" {
				_, err = txn.Commit()
				must(t, err)
				it.Close()
			} else {
				txn.Abort()
			}
			seq, watch := it.Next(db.ReadTxn())
			for c := range seq {
				t.Fatalf("a closed feed delivered %v", c)
			}
			if watch != nil {
				t.Fatalf("a closed feed's Next returned a non-nil channel (closed: %v)", mdlClosed(watch))
			}
		})
	}
}

// Case 10: a sequence consumed in part leaves the rest for the next Next.
func TestRegressPartialConsumption(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	must(t, err)
	for i := range 10 {
		mustInsert(t, tbl, txn, &testObject{ID: uint64(i)})
	}
	rtxn, err := txn.Commit()
	must(t, err)

	take := func(txn ReadTxn, n int) ([]uint64, <-chan struct{}) {
		seq, watch := it.Next(txn)
		var got []uint64
		for c := range seq {
			got = append(got, c.Object.ID)
			if len(got) == n {
				break
			}
		}
		return got, watch
	}
	var all []uint64
	got, _ := take(rtxn, 3) // the first Next, in part
	all = append(all, got...)
	got, w := take(rtxn, 3)
	all = append(all, got...)
	if !mdlClosed(w) {
		t.Fatal("Next with changes left returned an open channel")
	}
	got, _ = take(rtxn, 100)
	all = append(all, got...)
	if want := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(all, want) {
		t.Fatalf("changes delivered over three partial Nexts: %v, want %v", all, want)
	}

	// Later batches too, with a delete among them.
	txn = db.WriteTxn(tbl)
	for i := range 5 {
		mustInsert(t, tbl, txn, &testObject{ID: uint64(i), Value: 1})
	}
	_, _, err = tbl.Delete(txn, &testObject{ID: 9})
	must(t, err)
	rtxn, err = txn.Commit()
	must(t, err)
	var recs []changeRec
	for range 10 {
		seq, _ := it.Next(rtxn)
		for c := range seq {
			recs = append(recs, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
			break
		}
	}
	want := []changeRec{{0, 1, false}, {1, 1, false}, {2, 1, false}, {3, 1, false}, {4, 1, false}, {9, 0, true}}
	if !slices.Equal(recs, want) {
		t.Fatalf("one change per Next: %v, want %v", recs, want)
	}
	if got := feedAll(it, rtxn); len(got) != 0 {
		t.Fatalf("after every change was consumed: %v", got)
	}
	it.Close()
}

// A feed delivers nothing until the transaction that registered it
// commits, not even the state that transaction began from: if it aborts,
// the feed is closed, and a batch begun before would read a log the feed
// no longer pins. Found by the model test.
func TestChangesNothingWhileRegistering(t *testing.T) {
	for _, commit := range []bool{true, false} {
		db := New()
		tbl := newTestTable(t, db, "t")
		txn := db.WriteTxn(tbl)
		other, err := tbl.Changes(txn) // the table keeps a log
		must(t, err)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		_, err = txn.Commit()
		must(t, err)

		txn = db.WriteTxn(tbl)
		it, err := tbl.Changes(txn) // the first thing the transaction does
		must(t, err)
		var watches []<-chan struct{}
		for _, rtxn := range []ReadTxn{txn, db.ReadTxn()} {
			seq, watch := it.Next(rtxn)
			for c := range seq {
				t.Fatalf("a feed whose registration is open delivered %+v", c)
			}
			if watch == nil || mdlClosed(watch) {
				t.Fatal("a feed whose registration is open returned no open channel")
			}
			watches = append(watches, watch)
		}
		if commit {
			_, err = txn.Commit()
			must(t, err)
		} else {
			txn.Abort()
		}
		for _, w := range watches {
			if !mdlClosed(w) {
				t.Fatalf("commit %v: the channel stayed open after the registration ended", commit)
			}
		}
		got := feedAll(it, db.ReadTxn())
		if want := map[bool]int{true: 1, false: 0}[commit]; len(got) != want {
			t.Fatalf("commit %v: after the registration ended the feed delivered %v", commit, got)
		}
		it.Close()
		other.Close()
	}
}

// TestChangesCloseInsideSequence: a consumer may Close its feed in the
// body of its loop over a sequence: the sequence yields nothing more, the
// feed lets go of the log at once, and its Next returns nothing and a nil
// channel. Regression test: the sequence once went on delivering the rest
// of its batch after the Close (issue 27).
func TestChangesCloseInsideSequence(t *testing.T) {
	for _, kind := range reentrantKinds {
		t.Run(kind, func(t *testing.T) {
			db, tbl, it, want := reentrantFeed(t, kind)
			seq, _ := it.Next(db.ReadTxn())
			var got []changeRec
			if p := catch(func() {
				for c := range seq {
					got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
					if len(got) == 10 {
						it.Close()
					}
				}
			}); p != nil {
				t.Fatalf("the range over a sequence whose feed was closed in its loop body panicked: %v", p)
			}
			if len(got) != 10 || !slices.Equal(got, want[:10]) {
				t.Fatalf("Close after the 10th change in the loop body: the sequence delivered %d changes, want those 10 (then nothing):\n got  %v\n want %v",
					len(got), got, want[:10])
			}
			for c := range seq {
				t.Fatalf("the sequence, ranged again after Close, delivered %+v", c)
			}
			if live := tbl.(*table[*testObject]).meta.feeds.live(); live != 0 {
				t.Fatalf("%d feeds open after Close", live)
			}
			if tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()).logged() {
				t.Fatalf("the change log is kept after the only feed closed")
			}
			seq, watch := it.Next(db.ReadTxn())
			for c := range seq {
				t.Fatalf("a closed feed delivered %+v", c)
			}
			if watch != nil {
				t.Fatalf("a closed feed's Next returned a channel")
			}
		})
	}
}

// reentrantKinds name the batches reentrantFeed leaves a feed to deliver.
var reentrantKinds = []string{"first", "log", "truncate", "created", "restored"}

// reentrantN is the number of changes of reentrantFeed's batch.
const reentrantN = 100

// reentrantFeed returns a feed, registered and committed, that has a batch
// of reentrantN changes to deliver on the latest snapshot, and those
// changes in order. The batch is, by kind: the feed's first ("first", a
// list batch); inserts read from the log ("log"); the deletes of a
// DeleteAll, read from one truncate entry of the log ("truncate");
// inserts for a feed WithCreated ("created", a list batch collected from
// the log); objects Restore added ("restored", the same).
func reentrantFeed(t *testing.T, kind string) (*DB, RWTable[*testObject], ChangeIterator[*testObject], []changeRec) {
	t.Helper()
	db := New()
	tbl := newTestTable(t, db, "t")
	txn := db.WriteTxn(tbl)
	var opts []FeedOption
	if kind == "created" {
		opts = append(opts, WithCreated())
	}
	it, err := tbl.Changes(txn, opts...)
	must(t, err)
	mustCommit(t, txn)
	if kind == "truncate" {
		txn = db.WriteTxn(tbl)
		for i := range reentrantN {
			mustInsert(t, tbl, txn, &testObject{ID: uint64(i), Value: 1})
		}
		mustCommit(t, txn)
	}
	if kind != "first" {
		if got := feedAll(it, db.ReadTxn()); kind == "truncate" && len(got) != reentrantN {
			t.Fatalf("the first batch of %d objects: %d changes", reentrantN, len(got))
		}
	}
	var want []changeRec
	txn = db.WriteTxn(tbl)
	switch kind {
	case "truncate":
		must(t, tbl.DeleteAll(txn))
		for i := range reentrantN {
			want = append(want, changeRec{uint64(i), 1, true})
		}
	case "restored":
		must(t, Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
			for i := range reentrantN {
				if !yield(&testObject{ID: uint64(i), Value: 2}, Revision(1+i)) {
					return
				}
			}
		}, 0))
		for i := range reentrantN {
			want = append(want, changeRec{uint64(i), 2, false})
		}
	default:
		for i := range reentrantN {
			mustInsert(t, tbl, txn, &testObject{ID: uint64(i), Value: 2})
			want = append(want, changeRec{uint64(i), 2, false})
		}
	}
	mustCommit(t, txn)
	return db, tbl, it, want
}

// checkReentrantFeed checks that the changes a feed delivered in a test
// of reentrantFeed's batch, got, are each of the batch's, once, in order;
// that the feed has nothing more to deliver; and that it delivers the
// next write, and only that (it moved to the end of the batch, not to
// some other position).
func checkReentrantFeed(t *testing.T, db *DB, tbl RWTable[*testObject], it ChangeIterator[*testObject], got, want []changeRec) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("the feed delivered %d changes, want each of the %d of its batch once, in order; delivered twice: %d",
			len(got), len(want), len(twice(got)))
	}
	var more []changeRec
	var watch <-chan struct{}
	if p := catch(func() {
		seq, w := it.Next(db.ReadTxn())
		watch = w
		for c := range seq {
			more = append(more, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
		}
	}); p != nil {
		t.Fatalf("Next after the batch was delivered panicked: %v", p)
	}
	if len(more) > 0 || watch == nil || mdlClosed(watch) {
		t.Fatalf("after the batch was delivered, Next delivered %v with a channel closed: %v (want nothing, and an open channel)",
			more, watch == nil || mdlClosed(watch))
	}
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1000, Value: 7})
	mustCommit(t, txn)
	if !mdlClosed(watch) {
		t.Fatal("the channel of a drained feed stayed open after a write")
	}
	var next []changeRec
	if p := catch(func() { next = feedAll(it, db.ReadTxn()) }); p != nil {
		t.Fatalf("Next after a write panicked: %v", p)
	}
	if w := []changeRec{{1000, 7, false}}; !slices.Equal(next, w) {
		t.Fatalf("after the batch, a write of one object: Next delivered %v, want %v", next, w)
	}
}

// twice returns the records that occur more than once in recs.
func twice(recs []changeRec) []changeRec {
	seen := map[changeRec]int{}
	var out []changeRec
	for _, c := range recs {
		if seen[c]++; seen[c] == 2 {
			out = append(out, c)
		}
	}
	return out
}

// TestChangesNextInsideRange: a consumer calls Next in the body of its
// loop over the previous sequence, and ranges over the new sequence there
// (to the end, in part) or not. The old sequence yields nothing more once
// Next was called, mid-range too; the new one delivers the rest of the
// batch, from the change after the one the old yielded last; no change
// is delivered twice or lost, whatever the batch and wherever the Next.
// Regression test (issue 27): on a log batch the inner range restarted
// from the batch's start and the old sequence went on too, delivering the
// changes twice; on a list batch the inner range released the batch, the
// outer then moved the feed to the batch's zeroed end, and the next Next
// panicked.
func TestChangesNextInsideRange(t *testing.T) {
	for _, kind := range reentrantKinds {
		for _, at := range []int{1, 37, reentrantN - 1, reentrantN} {
			for _, inner := range []string{"ranged", "ranged in part", "not ranged", "Next twice"} {
				t.Run(fmt.Sprintf("%s/after %d/%s", kind, at, inner), func(t *testing.T) {
					db, tbl, it, want := reentrantFeed(t, kind)
					defer it.Close()
					var got, after []changeRec
					if p := catch(func() {
						old, _ := it.Next(db.ReadTxn())
						n := 0
						for c := range old {
							rec := changeRec{c.Object.ID, c.Object.Value, c.Deleted}
							if n >= at {
								after = append(after, rec)
								continue
							}
							got = append(got, rec)
							if n++; n < at {
								continue
							}
							seq, _ := it.Next(db.ReadTxn())
							switch inner {
							case "ranged":
								for c := range seq {
									got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
								}
							case "ranged in part":
								for c := range seq {
									got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
									if len(got) == at+10 {
										break
									}
								}
							case "Next twice":
								it.Next(db.ReadTxn())
							}
						}
						for c := range old {
							after = append(after, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
						}
						// The rest of the batch, if any, then nothing.
						for range 2 {
							got = append(got, feedAll(it, db.ReadTxn())...)
						}
					}); p != nil {
						t.Fatalf("panicked, after delivering %d changes (%d twice) and %d more by the old sequence: %v",
							len(got), len(twice(got)), len(after), p)
					}
					if len(after) > 0 {
						t.Errorf("the old sequence yielded %d changes after a later Next in its loop body (the first %v)", len(after), after[0])
					}
					checkReentrantFeed(t, db, tbl, it, got, want)
				})
			}
		}
	}
}

// TestChangesRangeInsideRange: a consumer ranges over a sequence again in
// the body of its loop over that sequence, to the end or in part. The
// inner range goes on from the change after the one the outer yielded
// last, and the outer yields nothing more; no change is delivered twice
// or lost. Regression test (issue 27): as TestChangesNextInsideRange.
func TestChangesRangeInsideRange(t *testing.T) {
	for _, kind := range reentrantKinds {
		for _, at := range []int{1, 37, reentrantN} {
			for _, inner := range []string{"to the end", "in part"} {
				t.Run(fmt.Sprintf("%s/after %d/%s", kind, at, inner), func(t *testing.T) {
					db, tbl, it, want := reentrantFeed(t, kind)
					defer it.Close()
					var got, after []changeRec
					if p := catch(func() {
						seq, _ := it.Next(db.ReadTxn())
						n := 0
						for c := range seq {
							rec := changeRec{c.Object.ID, c.Object.Value, c.Deleted}
							if n >= at {
								after = append(after, rec)
								continue
							}
							got = append(got, rec)
							if n++; n < at {
								continue
							}
							for c := range seq {
								got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
								if inner == "in part" && len(got) == at+10 {
									break
								}
							}
						}
						// Ranged again after both stopped: the rest.
						for c := range seq {
							got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
						}
					}); p != nil {
						t.Fatalf("panicked, after delivering %d changes (%d twice) and %d more by the outer range: %v",
							len(got), len(twice(got)), len(after), p)
					}
					if len(after) > 0 {
						t.Errorf("the outer range yielded %d changes after a range of its sequence in its loop body (the first %v)", len(after), after[0])
					}
					checkReentrantFeed(t, db, tbl, it, got, want)
				})
			}
		}
	}
}
