package strata

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-db/strata/part"
)

func ids(seq func(func(*testObject, Revision) bool)) []uint64 {
	var out []uint64
	for o := range seq {
		out = append(out, o.ID)
	}
	return out
}

func TestBasics(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test", nameIndex, tagsIndex, valueIndex)

	txn := db.WriteTxn(tbl)
	for i := range uint64(10) {
		o := &testObject{ID: i, Name: string(rune('a' + i)), Value: int(i) - 5,
			Tags: part.NewSet("all", []string{"even", "odd"}[i%2])}
		if _, had, err := tbl.Insert(txn, o); err != nil || had {
			t.Fatalf("Insert %d: had %v, err %v", i, had, err)
		}
	}
	// Reads in the transaction see its writes; readers outside do not.
	if n := tbl.NumObjects(txn); n != 10 {
		t.Fatalf("NumObjects in txn = %d", n)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("NumObjects outside txn = %d", n)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.NumObjects(rtxn); n != 10 {
		t.Fatalf("NumObjects = %d", n)
	}
	if r := tbl.Revision(rtxn); r != 10 {
		t.Fatalf("Revision = %d", r)
	}
	if o, rev, ok := tbl.Get(rtxn, idIndex.Query(3)); !ok || o.ID != 3 || rev != 4 {
		t.Fatalf("Get(3) = %v %d %v", o, rev, ok)
	}
	if o, _, ok := tbl.Get(rtxn, nameIndex.Query("e")); !ok || o.ID != 4 {
		t.Fatalf("Get(name e) = %v %v", o, ok)
	}
	if got := ids(tbl.List(rtxn, tagsIndex.Query("even"))); !slices.Equal(got, []uint64{0, 2, 4, 6, 8}) {
		t.Fatalf("List(even) = %v", got)
	}
	if got := ids(tbl.Prefix(rtxn, tagsIndex.Query("o"))); !slices.Equal(got, []uint64{1, 3, 5, 7, 9}) {
		t.Fatalf("Prefix(o) = %v", got)
	}
	// Every object has the tag "all" too, so a prefix scan over all tags
	// must return each object once.
	if got := ids(tbl.Prefix(rtxn, tagsIndex.Query(""))); len(got) != 10 {
		t.Fatalf("Prefix('') over tags = %v", got)
	}
	if got := ids(tbl.LowerBound(rtxn, valueIndex.Query(-1))); !slices.Equal(got, []uint64{4, 5, 6, 7, 8, 9}) {
		t.Fatalf("LowerBound(value -1) = %v", got)
	}
	if got := ids(tbl.ReverseLowerBound(rtxn, valueIndex.Query(-1))); !slices.Equal(got, []uint64{4, 3, 2, 1, 0}) {
		t.Fatalf("ReverseLowerBound(value -1) = %v", got)
	}
	if got := ids(tbl.Range(rtxn, valueIndex.Query(-2), valueIndex.Query(2))); !slices.Equal(got, []uint64{3, 4, 5, 6}) {
		t.Fatalf("Range(value -2..2) = %v", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, valueIndex.Query(-2), valueIndex.Query(2))); !slices.Equal(got, []uint64{6, 5, 4, 3}) {
		t.Fatalf("ReverseRange(value -2..2) = %v", got)
	}
	if got := ids(tbl.Range(rtxn, idIndex.Query(2), idIndex.Query(5))); !slices.Equal(got, []uint64{2, 3, 4}) {
		t.Fatalf("Range(id 2..5) = %v", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, idIndex.Query(2), idIndex.Query(5))); !slices.Equal(got, []uint64{4, 3, 2}) {
		t.Fatalf("ReverseRange(id 2..5) = %v", got)
	}
	if got := ids(tbl.ReverseAll(rtxn)); !slices.Equal(got, []uint64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}) {
		t.Fatalf("ReverseAll = %v", got)
	}

	// Unique secondary index: a second object with name "a" is refused.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 100, Name: "a"}); !errors.Is(err, ErrUniqueConstraint) {
		t.Fatalf("duplicate name: err = %v", err)
	}
	if n := tbl.NumObjects(txn); n != 10 {
		t.Fatalf("failed insert changed the table: %d objects", n)
	}
	// Replacing object 0 under the same name is fine.
	if _, had, err := tbl.Insert(txn, &testObject{ID: 0, Name: "a", Value: 100}); err != nil || !had {
		t.Fatalf("replace: had %v err %v", had, err)
	}
	// The very stored pointer is refused.
	stored, _, _ := tbl.Get(txn, idIndex.Query(1))
	if _, _, err := tbl.Insert(txn, stored); !errors.Is(err, ErrObjectMutated) {
		t.Fatalf("reinserting stored object: err = %v", err)
	}
	_, _, watch, _ := tbl.GetWatch(rtxn, idIndex.Query(0))
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	default:
		t.Fatalf("watch on replaced object not closed")
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrTransactionClosed) {
		t.Fatalf("second commit: %v", err)
	}
	if _, _, err := tbl.Insert(txn, &testObject{ID: 1}); !errors.Is(err, ErrTransactionClosed) {
		t.Fatalf("insert after commit: %v", err)
	}
}
