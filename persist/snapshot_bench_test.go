package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// snapBenchObjects sizes the large variant of the snapshot benchmarks; CI's
// smoke run may pass fewer.
var snapBenchObjects = flag.Int("snapshot.objects", 1_000_000, "objects in the large snapshot benchmarks")

// snapBenchObj is a benchmark object: an id and a value, 100 bytes encoded.
type snapBenchObj struct {
	ID    uint64
	Value []byte
}

const snapBenchValueLen = 100 - 8 - 1 // id, value length

func (o *snapBenchObj) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, o.ID)
	b = append(b, byte(len(o.Value)))
	return append(b, o.Value...), nil
}

func (o *snapBenchObj) UnmarshalBinary(b []byte) error {
	if len(b) < 9 || len(b) != 9+int(b[8]) {
		return errors.New("snapBenchObj: malformed")
	}
	o.ID = binary.BigEndian.Uint64(b)
	o.Value = slices.Clone(b[9:])
	return nil
}

var snapBenchByID = strata.Index[*snapBenchObj, uint64]{
	Name:       "id",
	FromObject: func(o *snapBenchObj) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// snapBenchSource is a table of n objects and its snapshot, built once per
// size for every benchmark.
type snapBenchSource struct {
	txn  strata.ReadTxn
	st   TableBinding
	data []byte
}

var snapBenchSources sync.Map // int -> func() *snapBenchSource

func snapBenchSourceOf(b *testing.B, n int) *snapBenchSource {
	f, _ := snapBenchSources.LoadOrStore(n, sync.OnceValue(func() *snapBenchSource {
		db := strata.New()
		tbl := strata.MustNewTable(db, "objects", snapBenchByID)
		txn := db.WriteTxn(tbl)
		value := make([]byte, snapBenchValueLen)
		for i := range n {
			v := slices.Clone(value)
			binary.LittleEndian.PutUint64(v, uint64(i)*0x9e3779b97f4a7c15)
			if _, _, err := tbl.Insert(txn, &snapBenchObj{ID: uint64(i), Value: v}); err != nil {
				panic(err)
			}
		}
		rtxn, err := txn.Commit()
		if err != nil {
			panic(err)
		}
		s := &snapBenchSource{txn: rtxn, st: Table(tbl, Binary[snapBenchObj]())}
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, rtxn, s.st); err != nil {
			panic(err)
		}
		s.data = buf.Bytes()
		return s
	}))
	return f.(func() *snapBenchSource)()
}

func snapBenchSizes() []int { return []int{10_000, *snapBenchObjects} }

// BenchmarkSnapshotExport guards the export loop (snapshotTable.write):
// MB/s of snapshot written, allocations per export (not per object).
func BenchmarkSnapshotExport(b *testing.B) {
	for _, n := range snapBenchSizes() {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			src := snapBenchSourceOf(b, n)
			b.SetBytes(int64(len(src.data)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := WriteSnapshot(io.Discard, src.txn, src.st); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkSnapshotImport guards the import loop (snapshotTable.restore):
// MB/s of snapshot read into an empty table, its tree built.
func BenchmarkSnapshotImport(b *testing.B) {
	for _, n := range snapBenchSizes() {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			src := snapBenchSourceOf(b, n)
			b.SetBytes(int64(len(src.data)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				db := strata.New()
				tbl := strata.MustNewTable(db, "objects", snapBenchByID)
				if _, err := ReadSnapshot(bytes.NewReader(src.data), Table(tbl, Binary[snapBenchObj]())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}
