package strata

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"weak"

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

// TestManyTables registers tables one by one past every size a root comes
// in (newRoot), committing to each and checking after a garbage collection
// that every snapshot still holds what every table had when it was taken.
func TestManyTables(t *testing.T) {
	const n = 300
	db := New()
	var tables []RWTable[*testObject]
	var snaps []ReadTxn
	for i := range n {
		tbl := newTestTable(t, db, fmt.Sprintf("t%d", i))
		tables = append(tables, tbl)
		// Write object i to table i, and bump table 0 (so the snapshot
		// tells apart a root that lost a write from one that has it).
		txn := db.WriteTxn(tbl, tables[0])
		if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if _, _, err := tables[0].Insert(txn, &testObject{ID: uint64(1000 + i)}); err != nil {
				t.Fatal(err)
			}
		}
		rtxn, err := txn.Commit()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, rtxn)
	}
	runtime.GC()
	for s, rtxn := range snaps {
		for i, tbl := range tables {
			want := 0
			if i <= s {
				want = 1
			}
			if i == 0 {
				want = 1 + s
			}
			if got := tbl.NumObjects(rtxn); got != want {
				t.Fatalf("snapshot %d: table %d has %d objects, want %d", s, i, got, want)
			}
			if i <= s {
				if _, _, ok := tbl.Get(rtxn, idIndex.Query(uint64(i))); !ok {
					t.Fatalf("snapshot %d: table %d lost object %d", s, i, i)
				}
			}
		}
	}
}

// TestEndedWriteTxnsKeepNoGarbage: once the handles of ended write
// transactions are unreachable, one collection frees what only their
// snapshots held. (With a finalizer on the handles' blocks, the collector
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
