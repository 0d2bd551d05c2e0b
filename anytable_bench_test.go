package strata

import (
	"testing"

	"github.com/strata-db/strata/index"
)

// BenchmarkAnyTable compares AnyTable's reads with the typed table's on
// 1000 objects: a full scan, a point read by a unique key, and paging
// through the table 10 objects at a time with cursors.
func BenchmarkAnyTable(b *testing.B) {
	const n = 1000
	db, tbl, at := anyTestDB(b)
	objs := make([]*testObject, n)
	for i := range objs {
		objs[i] = &testObject{ID: uint64(i), Name: string(index.Uint64(uint64(i)))}
	}
	txn := mustInsertAll(b, db, tbl, objs...)
	b.Run("All/typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := 0
			for range tbl.All(txn) {
				c++
			}
			if c != n {
				b.Fatal(c)
			}
		}
	})
	b.Run("All/any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			seq, _ := at.Read(txn, AnyQuery{})
			c := 0
			for range seq {
				c++
			}
			if c != n {
				b.Fatal(c)
			}
		}
	})
	key := index.Uint64(500)
	b.Run("Get/typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, found := tbl.Get(txn, idIndex.QueryKey(key)); !found {
				b.Fatal("not found")
			}
		}
	})
	b.Run("Get/any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			seq, _ := at.Read(txn, AnyQuery{Op: QueryList, Key: key})
			found := false
			for range seq {
				found = true
			}
			if !found {
				b.Fatal("not found")
			}
		}
	})
	b.Run("Pages10/any", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q, c := AnyQuery{}, 0
			for {
				seq, _ := at.Read(txn, q)
				got := 0
				for o := range seq {
					c++
					q.After = o.Cursor
					if got++; got == 10 {
						break
					}
				}
				if got < 10 {
					break
				}
			}
			if c != n {
				b.Fatal(c)
			}
		}
	})
}
