package strata

import (
	"flag"
	"fmt"
	"testing"

	"github.com/strata-db/strata/index"
)

var benchAndObjects = flag.Int("strata.andobjects", 1_000_000,
	"number of objects in the table of BenchmarkAnd")

// andObject is the object of BenchmarkAnd: Kind has 10 values (a tenth of
// the table each), Group 10007 (about 100 objects each, a tenth of which
// have any one Kind).
type andObject struct {
	ID    uint64
	Kind  uint32
	Group uint32
}

var (
	andByID = Index[*andObject, uint64]{
		Name:       "id",
		FromObject: func(o *andObject) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	andByKind = Index[*andObject, uint32]{
		Name:       "kind",
		FromObject: func(o *andObject) index.KeySet { return index.KeySetOf(index.Uint32(o.Kind)) },
		FromKey:    index.Uint32,
	}
	andByGroup = Index[*andObject, uint32]{
		Name:       "group",
		FromObject: func(o *andObject) index.KeySet { return index.KeySetOf(index.Uint32(o.Group)) },
		FromKey:    index.Uint32,
	}
)

// BenchmarkAnd: the And of a rare key (Group 3: 100 objects) and a common
// one (Kind 3: 100k objects) in a table of -strata.andobjects objects (1M
// by default), 10 objects matching both, beside the loops a user would
// write, in the same run:
//
//   - strata-and: And, whose plan (multiquery.go) counts both inputs,
//     iterates the rare one and looks each object's entry up in the
//     common key's index;
//   - eval-keys: the other plan And could take, written with List: the
//     rare key's objects, each kept if the common key is among its keys
//     in the other index (the index's FromObject);
//   - naive-filter: what a go-memdb or statedb user writes without an
//     index intersection: the objects of the common key, filtered by the
//     rare one's field.
//
// The goal is naive-filter / strata-and of at least 100:
//
//	go test -run '^$' -bench 'BenchmarkAnd$' -count 6 -benchmem .
func BenchmarkAnd(b *testing.B) {
	n := *benchAndObjects
	db := New()
	tbl, err := NewTable(db, "and", andByID, andByKind, andByGroup)
	if err != nil {
		b.Fatal(err)
	}
	const batch = 10_000
	want, rare, common := 0, 0, 0
	for start := 0; start < n; start += batch {
		wtxn := db.WriteTxn(tbl)
		for i := start; i < min(start+batch, n); i++ {
			o := &andObject{ID: uint64(i), Kind: uint32(i % 10), Group: uint32(i % 10007)}
			if _, _, err := tbl.Insert(wtxn, o); err != nil {
				b.Fatalf("Insert: %s", err)
			}
			rare += b2i(o.Group == 3)
			common += b2i(o.Kind == 3)
			want += b2i(o.Group == 3 && o.Kind == 3)
		}
		if _, err := wtxn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
	}
	txn := db.ReadTxn()
	rareQ, commonQ := andByGroup.Query(3), andByKind.Query(3)
	commonKey := index.Uint32(3)
	b.Logf("%d objects: rare key %d, common key %d, both %d", n, rare, common, want)
	check := func(b *testing.B, got int) {
		if got != want {
			b.Fatalf("%d objects, want %d", got, want)
		}
	}
	b.Run(fmt.Sprintf("n=%d/strata-and", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			seq, err := And(txn, tbl, commonQ, rareQ)
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for range seq {
				got++
			}
			check(b, got)
		}
	})
	b.Run(fmt.Sprintf("n=%d/eval-keys", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got := 0
			for o := range tbl.List(txn, rareQ) {
				if keys := andByKind.FromObject(o); keys.Contains(commonKey) {
					got++
				}
			}
			check(b, got)
		}
	})
	b.Run(fmt.Sprintf("n=%d/naive-filter", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got := 0
			for o := range tbl.List(txn, commonQ) {
				if o.Group == 3 {
					got++
				}
			}
			check(b, got)
		}
	})
}
