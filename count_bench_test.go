package strata

import (
	"flag"
	"fmt"
	"testing"

	"github.com/strata-db/strata/index"
)

var benchCountObjects = flag.Int("strata.countobjects", 1_000_000,
	"number of objects in the table of BenchmarkDB_Count")

// BenchmarkDB_Count: counts of a tenth of a table of -strata.countobjects
// objects (1M by default), beside the loop a user would write to count
// them with a read, in the same run: a prefix of the primary index
// (CountPrefix against Prefix), a key of a non-unique secondary index
// (Count against List) and a range of the primary index (CountRange
// against Range). The ratio of op=iterate to op=count is what a count
// saves:
//
//	go test -run '^$' -bench 'DB_Count$' -count 5 .
//
// Object i has the ID (i%10)<<56 | i, so that the first byte of the ID
// key selects a tenth, and the value i%10.
func BenchmarkDB_Count(b *testing.B) {
	n := *benchCountObjects
	db := New()
	tbl := newTestTable(b, db, "test", valueIndex)
	const batch = 10_000
	for start := 0; start < n; start += batch {
		wtxn := db.WriteTxn(tbl)
		for i := start; i < min(start+batch, n); i++ {
			if _, _, err := tbl.Insert(wtxn, &testObject{ID: uint64(i%10)<<56 | uint64(i), Value: i % 10}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := wtxn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
	}
	txn := db.ReadTxn()
	prefix := idIndex.QueryKey(index.Uint64(3 << 56)[:1])
	key := valueIndex.Query(3)
	from, to := idIndex.Query(5<<56|uint64(n/2)), idIndex.Query(6<<56|uint64(n/2))
	wantTenth, wantRange := 0, 0
	for i := range n {
		switch {
		case i%10 == 3:
			wantTenth++
		case i%10 == 5 && i >= n/2, i%10 == 6 && i < n/2:
			wantRange++
		}
	}
	type query struct {
		name  string
		want  int
		count func() (int, error)
		read  func() func(func(*testObject, Revision) bool)
	}
	for _, q := range []query{
		{"prefix", wantTenth, func() (int, error) { return CountPrefix(txn, tbl, prefix) }, func() func(func(*testObject, Revision) bool) { return tbl.Prefix(txn, prefix) }},
		{"key", wantTenth, func() (int, error) { return Count(txn, tbl, key) }, func() func(func(*testObject, Revision) bool) { return tbl.List(txn, key) }},
		{"range", wantRange, func() (int, error) { return CountRange(txn, tbl, from, to) }, func() func(func(*testObject, Revision) bool) { return tbl.Range(txn, from, to) }},
	} {
		b.Run(fmt.Sprintf("n=%d/query=%s/op=count", n, q.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c, err := q.count(); c != q.want || err != nil {
					b.Fatalf("count = %d, %v; want %d", c, err, q.want)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/query=%s/op=iterate", n, q.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := 0
				for range q.read() {
					c++
				}
				if c != q.want {
					b.Fatalf("read %d objects, want %d", c, q.want)
				}
			}
		})
	}
}
