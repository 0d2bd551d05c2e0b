package strata

// Tests of Restore and RestoreStored (restore.go).

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-db/strata/index"
)

// TestRestoreStored: RestoreStored compares each object's primary key with
// the key it was stored under and calls keyChanged for those that differ,
// with both keys; its error fails the restore, which leaves the table as
// it was, and nil restores the object under its key computed now. Without
// keyChanged a changed key is ErrRestoreInput.
func TestRestoreStored(t *testing.T) {
	// Objects 0..4, stored under their keys, except object 3, stored
	// under the key of 103.
	stored := func(yield func(StoredObject[*testObject], Revision) bool) {
		for i := range uint64(5) {
			key := index.Uint64(i)
			if i == 3 {
				key = index.Uint64(103)
			}
			if !yield(StoredObject[*testObject]{Obj: &testObject{ID: i, Name: string(rune('a' + i))}, Key: key}, 10+i) {
				return
			}
		}
	}
	type change struct{ stored, now uint64 }
	errRefused := errors.New("refused")
	for _, c := range []struct {
		name    string
		refuse  bool
		nilFunc bool
		want    error
	}{
		{"accepted", false, false, nil},
		{"refused", true, false, errRefused},
		{"no keyChanged", false, true, ErrRestoreInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", nameIndex)
			var changes []change
			keyChanged := func(s, now []byte) error {
				changes = append(changes, change{decodeUint64(t, s), decodeUint64(t, now)})
				if c.refuse {
					return errRefused
				}
				return nil
			}
			if c.nilFunc {
				keyChanged = nil
			}
			txn := db.WriteTxn(tbl)
			err := RestoreStored(txn, tbl, stored, 0, keyChanged)
			if !errors.Is(err, c.want) {
				t.Fatalf("RestoreStored: err = %v, want %v", err, c.want)
			}
			if !c.nilFunc && !slices.Equal(changes, []change{{103, 3}}) {
				t.Fatalf("keyChanged saw %v, want [{103 3}]", changes)
			}
			rtxn := mustCommit(t, txn)
			if c.want != nil {
				if n := tbl.NumObjects(rtxn); n != 0 {
					t.Fatalf("a failed RestoreStored left %d objects", n)
				}
				return
			}
			checkIndexesAgree(t, tbl, rtxn)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
				t.Fatalf("restored %v", got)
			}
			if o, rev, ok := tbl.Get(rtxn, idIndex.Query(3)); !ok || o.ID != 3 || rev != 13 {
				t.Fatalf("object 3 under its key now: %v %d %v", o, rev, ok)
			}
			if rev := tbl.Revision(rtxn); rev != 14 {
				t.Fatalf("table revision %d, want 14", rev)
			}
		})
	}
}

// decodeUint64 is the uint64 whose index.Uint64 key is key.
func decodeUint64(t *testing.T, key []byte) uint64 {
	t.Helper()
	for i := range uint64(200) {
		if bytes.Equal(index.Uint64(i), key) {
			return i
		}
	}
	t.Fatalf("key %x is no uint64 below 200", key)
	return 0
}

// TestRestoreErrorLeavesTableAsItWas: a Restore that fails on its input
// after adding objects leaves the table, its journal's record and its
// feeds as they were, so the transaction may go on.
func TestRestoreErrorLeavesTableAsItWas(t *testing.T) {
	type restored struct {
		id  uint64
		rev Revision
	}
	for _, c := range []struct {
		name string
		objs []restored
		err  error
	}{
		{"primary key twice", []restored{{10, 50}, {11, 51}, {10, 52}}, ErrRestoreInput},
		{"revision twice", []restored{{10, 50}, {11, 50}}, ErrRestoreInput},
		{"unique key twice", []restored{{10, 50}, {12, 51}}, ErrUniqueConstraint},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", nameIndex)
			j := &memJournal{objects: map[string]int{}}
			txn := db.WriteTxn(tbl)
			must(t, SetJournal(txn, tbl, j, memTableJournal{}))
			it, err := tbl.Changes(txn)
			must(t, err)
			rtxn, err := txn.Commit()
			must(t, err)
			view := map[uint64]*testObject{}
			mdlFeedView(t, view, it, rtxn)

			txn = db.WriteTxn(tbl)
			err = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
				for _, o := range c.objs {
					name := fmt.Sprint(o.id)
					if o.id == 12 {
						name = "10" // the name of object 10
					}
					if !yield(&testObject{ID: o.id, Name: name}, o.rev) {
						return
					}
				}
			}, 0)
			if !errors.Is(err, c.err) {
				t.Fatalf("Restore: err = %v, want %v", err, c.err)
			}
			if n := tbl.NumObjects(txn); n != 0 {
				t.Fatalf("after the failed Restore the transaction sees %d objects", n)
			}
			mustInsert(t, tbl, txn, &testObject{ID: 4, Name: "4"})
			rtxn, err = txn.Commit()
			must(t, err)
			checkIndexesAgree(t, tbl, rtxn)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, []uint64{4}) {
				t.Fatalf("after the failed Restore the table holds %v, want [4]", got)
			}
			if len(j.objects) != 1 {
				t.Fatalf("after the failed Restore the journal holds %v, want object 4 alone", j.objects)
			}
			mdlFeedView(t, view, it, rtxn)
			if got := slices.Sorted(maps.Keys(view)); !slices.Equal(got, []uint64{4}) {
				t.Fatalf("after the failed Restore a feed's view holds %v, want [4]", got)
			}
			it.Close()
		})
	}
}

func TestRestore(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "restored", nameIndex, tagsIndex)
	objs := func(yield func(*testObject, Revision) bool) {
		for i := range uint64(100) {
			if !yield(&testObject{ID: i, Name: strconv.Itoa(int(i))}, 1000+i) {
				return
			}
		}
	}
	txn := db.WriteTxn(tbl)
	if err := Restore(txn, tbl, objs, 5000); err != nil {
		t.Fatal(err)
	}
	rtxn := mustCommit(t, txn)
	if n, rev := tbl.NumObjects(rtxn), tbl.Revision(rtxn); n != 100 || rev != 5000 {
		t.Fatalf("restored %d objects at revision %d", n, rev)
	}
	if o, rev, ok := tbl.Get(rtxn, nameIndex.Query("42")); !ok || o.ID != 42 || rev != 1042 {
		t.Fatalf("Get by name after restore: %v %d %v", o, rev, ok)
	}
	// Revisions go on above the restored ones.
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1000})
	rtxn = mustCommit(t, txn)
	if _, rev, _ := tbl.Get(rtxn, idIndex.Query(1000)); rev != 5001 {
		t.Fatalf("first revision after restore = %d", rev)
	}

	cases := []struct {
		name string
		objs []*testObject
		revs []Revision
		want error
	}{
		{"duplicate key", []*testObject{{ID: 1}, {ID: 1}}, []Revision{1, 2}, ErrRestoreInput},
		{"duplicate revision", []*testObject{{ID: 1}, {ID: 2}}, []Revision{3, 3}, ErrRestoreInput},
		// Revisions too far apart for revisionSet's bitmap: sorted.
		{"duplicate sparse revision", []*testObject{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}}, []Revision{1 << 40, 1, 1 << 40}, ErrRestoreInput},
		{"revision 0", []*testObject{{ID: 1}}, []Revision{0}, ErrRestoreInput},
		{"unique index", []*testObject{{ID: 1, Name: "x"}, {ID: 2, Name: "x"}}, []Revision{1, 2}, ErrUniqueConstraint},
	}
	for _, c := range cases {
		db := New()
		tbl := newTestTable(t, db, "r", nameIndex)
		txn := db.WriteTxn(tbl)
		err := Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
			for i, o := range c.objs {
				if !yield(o, c.revs[i]) {
					return
				}
			}
		}, 0)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want %v", c.name, err, c.want)
		}
		txn.Abort()
		if tbl.NumObjects(db.ReadTxn()) != 0 {
			t.Fatalf("%s: aborted restore left objects", c.name)
		}
	}
	txn = db.WriteTxn(tbl)
	if err := Restore(txn, tbl, objs, 0); !errors.Is(err, ErrTableNotEmpty) {
		t.Fatalf("restore into a full table: %v", err)
	}
	txn.Abort()
}
