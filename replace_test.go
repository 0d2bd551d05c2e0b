package strata

// Tests of Replace (replace.go).

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// replaceState is a table's objects (ID to name and revision) and its
// revision.
func replaceState(tbl RWTable[*testObject], txn ReadTxn) string {
	s := fmt.Sprintf("@%d:", tbl.Revision(txn))
	for o, rev := range tbl.All(txn) {
		s += fmt.Sprintf(" %d=%s/%d@%d", o.ID, o.Name, o.Value, rev)
	}
	return s
}

// randomTableWrite makes one random write to tbl in txn: an insert or
// update, a delete, now and then a DeleteAll.
func randomTableWrite(t *testing.T, rng *rand.Rand, tbl RWTable[*testObject], txn WriteTxn) {
	id := uint64(rng.IntN(30))
	switch r := rng.IntN(40); {
	case r == 0:
		must(t, tbl.DeleteAll(txn))
	case r < 12:
		_, _, err := tbl.Delete(txn, &testObject{ID: id})
		must(t, err)
	default:
		_, _, err := tbl.Insert(txn, &testObject{ID: id, Name: fmt.Sprint("n", id), Value: rng.IntN(1000)})
		must(t, err)
	}
}

// TestReplaceCatchesUp: a replica that made the first writes of a
// history is replaced with the state the writer reached later. It then
// holds exactly that state, objects, revisions and table revision; every
// watch channel of its old state closed; its feed, read before and after,
// leaves its consumer with the new state, the changes in revision order;
// and the replica goes on with the writer's next writes at the same
// revisions.
func TestReplaceCatchesUp(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			leader, replica := New(), New()
			lt := newTestTable(t, leader, "t", valueIndex)
			rt := newTestTable(t, replica, "t", valueIndex)
			txn := replica.WriteTxn(rt)
			feed, err := rt.Changes(txn)
			must(t, err)
			mustCommit(t, txn)
			defer feed.Close()
			// The same first writes on both: the same revisions.
			common, later := rng.IntN(30), rng.IntN(60)
			for i := range common + later {
				wseed := rng.Uint64()
				dbs := []*DB{leader}
				tbls := []RWTable[*testObject]{lt}
				if i < common {
					dbs, tbls = append(dbs, replica), append(tbls, rt)
				}
				for k, db := range dbs {
					txn := db.WriteTxn(tbls[k])
					wrng := rand.New(rand.NewPCG(wseed, 2))
					for range 1 + wrng.IntN(3) {
						randomTableWrite(t, wrng, tbls[k], txn)
					}
					mustCommit(t, txn)
				}
			}
			// The consumer of the feed has the replica's old state.
			view := map[uint64]string{}
			consume := func() {
				seq, _ := feed.Next(replica.ReadTxn())
				var last Revision
				for c, rev := range seq {
					if rev < last {
						t.Errorf("change at revision %d after %d", rev, last)
					}
					last = rev
					if c.Deleted {
						delete(view, c.Object.ID)
					} else {
						view[c.Object.ID] = fmt.Sprintf("%s/%d@%d", c.Object.Name, c.Object.Value, rev)
					}
				}
			}
			consume()
			old := replica.ReadTxn()
			var watches []<-chan struct{}
			for o := range rt.All(old) {
				_, _, w, _ := rt.GetWatch(old, idIndex.Query(o.ID))
				watches = append(watches, w)
			}
			_, tableWatch := rt.AllWatch(old)
			watches = append(watches, tableWatch)

			lread := leader.ReadTxn()
			want := replaceState(lt, lread)
			txn = replica.WriteTxn(rt)
			must(t, Replace(txn, rt, lt.All(lread), lt.Revision(lread)))
			rread := mustCommit(t, txn)
			if got := replaceState(rt, rread); got != want {
				t.Fatalf("replaced:\n%s\nwant\n%s", got, want)
			}
			checkIndexesAgree(t, rt, rread)
			for i, w := range watches {
				select {
				case <-w:
				default:
					t.Fatalf("watch channel %d of the old state is open", i)
				}
			}
			consume()
			wantView := map[uint64]string{}
			for o, rev := range lt.All(lread) {
				wantView[o.ID] = fmt.Sprintf("%s/%d@%d", o.Name, o.Value, rev)
			}
			if !maps.Equal(view, wantView) {
				t.Fatalf("the feed's consumer holds\n%v\nwant\n%v", view, wantView)
			}
			// The writer's next writes, made again by the replica, take
			// the same revisions.
			for range 5 {
				wseed := rng.Uint64()
				for k, db := range []*DB{leader, replica} {
					tbl := []RWTable[*testObject]{lt, rt}[k]
					txn := db.WriteTxn(tbl)
					randomTableWrite(t, rand.New(rand.NewPCG(wseed, 2)), tbl, txn)
					mustCommit(t, txn)
				}
			}
			if got, want := replaceState(rt, replica.ReadTxn()), replaceState(lt, leader.ReadTxn()); got != want {
				t.Fatalf("after the next writes:\n%s\nwant\n%s", got, want)
			}
			consume()
			wantView = map[uint64]string{}
			for o, rev := range lt.All(leader.ReadTxn()) {
				wantView[o.ID] = fmt.Sprintf("%s/%d@%d", o.Name, o.Value, rev)
			}
			if !maps.Equal(view, wantView) {
				t.Fatalf("after the next writes, the feed's consumer holds\n%v\nwant\n%v", view, wantView)
			}
		})
	}
}

// TestReplaceRefuses: a state that cannot follow the table's, or objects
// that do not fit it, fail Replace with a typed error, and the table is as
// it was, in the transaction and once it commits.
func TestReplaceRefuses(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex)
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Name: "a"}, &testObject{ID: 2, Name: "b"}, &testObject{ID: 3, Name: "c"})
	rtxn := mustCommit(t, txn) // revisions 1, 2, 3
	before := replaceState(tbl, rtxn)
	type obj struct {
		o   *testObject
		rev Revision
	}
	seq := func(objs ...obj) func(func(*testObject, Revision) bool) {
		return func(yield func(*testObject, Revision) bool) {
			for _, o := range objs {
				if !yield(o.o, o.rev) {
					return
				}
			}
		}
	}
	for _, c := range []struct {
		name     string
		objects  func(func(*testObject, Revision) bool)
		revision Revision
		want     error
	}{
		{"revision below the table's", seq(), 2, ErrWriteOrder},
		{"a new object at an old revision", seq(obj{&testObject{ID: 4, Name: "d"}, 2}), 5, ErrWriteOrder},
		{"a changed object at an old revision", seq(obj{&testObject{ID: 1, Name: "a2"}, 2}), 5, ErrWriteOrder},
		{"no revision for the deletions", seq(obj{&testObject{ID: 4, Name: "d"}, 4}, obj{&testObject{ID: 5, Name: "e"}, 5}), 5, ErrWriteOrder},
		{"object above the revision", seq(obj{&testObject{ID: 4, Name: "d"}, 9}), 8, ErrRestoreInput},
		{"a primary key twice", seq(obj{&testObject{ID: 4, Name: "d"}, 4}, obj{&testObject{ID: 4, Name: "e"}, 5}), 8, ErrRestoreInput},
		{"a revision twice", seq(obj{&testObject{ID: 4, Name: "d"}, 4}, obj{&testObject{ID: 5, Name: "e"}, 4}), 8, ErrRestoreInput},
		{"a unique key twice", seq(obj{&testObject{ID: 4, Name: "d"}, 4}, obj{&testObject{ID: 5, Name: "d"}, 5}), 8, ErrUniqueConstraint},
	} {
		t.Run(c.name, func(t *testing.T) {
			txn := db.WriteTxn(tbl)
			err := Replace(txn, tbl, c.objects, c.revision)
			if !errors.Is(err, c.want) {
				t.Fatalf("Replace: %v, want %v", err, c.want)
			}
			if got := replaceState(tbl, txn); got != before {
				t.Fatalf("in the transaction after the failed Replace:\n%s\nwant\n%s", got, before)
			}
			rtxn := mustCommit(t, txn)
			if got := replaceState(tbl, rtxn); got != before {
				t.Fatalf("committed after the failed Replace:\n%s\nwant\n%s", got, before)
			}
			checkIndexesAgree(t, tbl, rtxn)
		})
	}
	// And one that follows: object 2 kept, 1 changed, 3 gone, 4 new, with
	// revision 6 free for the deletion.
	txn = db.WriteTxn(tbl)
	must(t, Replace(txn, tbl, seq(obj{&testObject{ID: 1, Name: "a2"}, 5}, obj{&testObject{ID: 2, Name: "b"}, 2}, obj{&testObject{ID: 4, Name: "d"}, 4}), 7))
	rtxn = mustCommit(t, txn)
	if got, want := replaceState(tbl, rtxn), "@7: 1=a2/0@5 2=b/0@2 4=d/0@4"; got != want {
		t.Fatalf("replaced: %s, want %s", got, want)
	}
	checkIndexesAgree(t, tbl, rtxn)
}

// TestReplaceJournal: a table attached to a journal records a Replace as
// a DeleteAll and the objects given, so the journal holds what the table
// does; a failed Replace records nothing.
func TestReplaceJournal(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex)
	j := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(tbl)
	must(t, SetJournal(txn, tbl, j, memTableJournal{}))
	for i := range uint64(5) {
		mustInsert(t, tbl, txn, &testObject{ID: i, Name: fmt.Sprint(i), Value: int(i)})
	}
	mustCommit(t, txn) // revisions 1..5
	objs := func(yield func(*testObject, Revision) bool) {
		_ = yield(&testObject{ID: 1, Name: "1", Value: 1}, 2) &&
			yield(&testObject{ID: 7, Name: "7", Value: 70}, 6) &&
			yield(&testObject{ID: 3, Name: "3", Value: 30}, 8)
	}
	// A failed one first, in the transaction that then succeeds.
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 9, Name: "9", Value: 9}) // revision 6
	if err := Replace(txn, tbl, objs, 10); !errors.Is(err, ErrWriteOrder) {
		t.Fatalf("Replace over a state at revision 6 with an object new at 6: %v", err)
	}
	rtxn := mustCommit(t, txn)
	if want := tableContents(rtxn, tbl); !maps.Equal(j.objects, want) || j.revision != 6 {
		t.Fatalf("after a failed Replace the journal holds %v at %d, the table %v at 6", j.objects, j.revision, want)
	}
	objs = func(yield func(*testObject, Revision) bool) {
		_ = yield(&testObject{ID: 1, Name: "1", Value: 1}, 2) &&
			yield(&testObject{ID: 7, Name: "7", Value: 70}, 7) &&
			yield(&testObject{ID: 3, Name: "3", Value: 30}, 9)
	}
	txn = db.WriteTxn(tbl)
	must(t, Replace(txn, tbl, objs, 12))
	rtxn = mustCommit(t, txn)
	want := tableContents(rtxn, tbl)
	if len(want) != 3 || !maps.Equal(j.objects, want) || j.revision != 12 {
		t.Fatalf("after Replace the journal holds %v at %d, the table %v at %d", j.objects, j.revision, want, tbl.Revision(rtxn))
	}
}
