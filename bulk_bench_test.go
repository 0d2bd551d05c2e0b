package strata

import (
	"flag"
	"testing"
)

var benchDeleteN = flag.Int("strata.deleten", 1_000_000, "objects in the table of the DeleteMatches and ModifyEach benchmarks (a tenth are deleted or replaced per op)")

// BenchmarkDB_DeleteMatches deletes the tenth of a table that one key of a
// non-unique secondary index selects (100k of 1M objects, by default) in a
// write transaction and commits; putting them back is not timed. The
// index queried loses them in one cut of its tree (table_delete.go).
// _OneByOne is the loop a user without DeleteMatches writes: List, then a
// Delete each. bench/compare's DeleteMatches runs the same beside statedb
// and go-memdb.
func BenchmarkDB_DeleteMatches(b *testing.B)          { benchDeleteMatches(b, false) }
func BenchmarkDB_DeleteMatches_OneByOne(b *testing.B) { benchDeleteMatches(b, true) }

func benchDeleteMatches(b *testing.B, oneByOne bool) {
	db := New()
	tbl := newTestTable(b, db, "test", valueIndex)
	total := *benchDeleteN
	count := total / 10
	mk := func(i int) *testObject { return &testObject{ID: uint64(i), Value: i % 10} }
	fillTable(b, db, tbl, total, mk)
	q := valueIndex.Query(3)
	deleted := make([]*testObject, 0, count)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if oneByOne {
			deleted = deleted[:0]
			for o := range tbl.List(txn, q) {
				deleted = append(deleted, o)
			}
			for _, o := range deleted {
				if _, had, err := tbl.Delete(txn, o); err != nil || !had {
					b.Fatalf("Delete(%d): %v, %v", o.ID, had, err)
				}
			}
		} else if got, err := tbl.DeleteMatches(txn, q); err != nil || got != count {
			b.Fatalf("DeleteMatches = %d, %v; want %d", got, err, count)
		}
		rtxn, err := txn.Commit()
		if err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++

		b.StopTimer()
		if got := tbl.NumObjects(rtxn); got != total-count {
			b.Fatalf("NumObjects = %d after delete, want %d", got, total-count)
		}
		txn = db.WriteTxn(tbl)
		for i := 3; i < total; i += 10 {
			if _, _, err := tbl.Insert(txn, mk(i)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportObjectsPerSec(b, n*count)
}

// BenchmarkDB_ModifyEach replaces the same tenth of the table with new
// objects (the same ID and value, alternating between two generations) by
// ModifyEach over the List of the value, and commits. _OneByOne is the
// loop a user without ModifyEach writes: List into a slice, then an
// Insert each.
func BenchmarkDB_ModifyEach(b *testing.B)          { benchModifyEach(b, false) }
func BenchmarkDB_ModifyEach_OneByOne(b *testing.B) { benchModifyEach(b, true) }

func benchModifyEach(b *testing.B, oneByOne bool) {
	db := New()
	tbl := newTestTable(b, db, "test", valueIndex)
	total := *benchDeleteN
	count := total / 10
	var gens [2][]*testObject
	for g := range gens {
		gens[g] = make([]*testObject, total)
		for i := range total {
			gens[g][i] = &testObject{ID: uint64(i), Value: i % 10}
		}
	}
	fillTable(b, db, tbl, total, func(i int) *testObject { return gens[0][i] })
	q := valueIndex.Query(3)
	objs := make([]*testObject, 0, count)
	cur := 0
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		next := gens[1-cur]
		txn := db.WriteTxn(tbl)
		if oneByOne {
			objs = objs[:0]
			for o := range tbl.List(txn, q) {
				objs = append(objs, o)
			}
			for _, o := range objs {
				if _, _, err := tbl.Insert(txn, next[o.ID]); err != nil {
					b.Fatal(err)
				}
			}
		} else if got, err := ModifyEach(txn, tbl, tbl.List(txn, q), func(o *testObject) (*testObject, bool) {
			return next[o.ID], true
		}); err != nil || got != count {
			b.Fatalf("ModifyEach = %d, %v; want %d", got, err, count)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
		cur = 1 - cur
		n++
	}
	reportObjectsPerSec(b, n*count)
}
