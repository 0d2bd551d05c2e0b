package part_test

// Heap bytes per key of a 1M-key tree, part against go-immutable-radix/v2.
// The work is done once per op and b.N does not matter; run it with
//
//	go test -run '^$' -bench MemoryPerKey -benchtime 1x -count 5 ./part
//
// and read the B/key column (ns/op is the build plus four GCs: ignore it).

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/strata-db/strata/part"
)

// heapPerKey measures the live heap that build leaves behind, per key. build
// gets newKey, which allocates a fresh random 8-byte key on every call, so a
// tree that keeps the caller's slice (iradix) and one that copies it (part)
// are both charged for their key storage, and nothing else outlives build.
func heapPerKey(n int, build func(newKey func() []byte) (tree any, size int)) (perKey float64, size int) {
	r := newRand(seedKeys)
	newKey := func() []byte {
		k := make([]byte, 8)
		binary.LittleEndian.PutUint64(k, r.Uint64())
		return k
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	tree, size := build(newKey)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tree)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n), size
}

// 9. Memory: live heap per key of a tree of 1M random 8-byte keys with int
// values, built in one transaction.
func BenchmarkMemoryPerKey(b *testing.B) {
	n := min(1_000_000, *benchMax)
	b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
		forImpls(b, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				var size int
				perKey, size = heapPerKey(n, func(newKey func() []byte) (any, int) {
					txn := part.New[int]().Txn()
					for i := range n {
						txn.Insert(newKey(), i)
					}
					t := txn.Commit()
					return t, t.Len()
				})
				if size != n {
					b.Fatalf("Len = %d, want %d", size, n)
				}
			}
			b.ReportMetric(perKey, "B/key")
		}, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				var size int
				perKey, size = heapPerKey(n, func(newKey func() []byte) (any, int) {
					txn := iradix.New[int]().Txn()
					for i := range n {
						txn.Insert(newKey(), i)
					}
					t := txn.Commit()
					return t, t.Len()
				})
				if size != n {
					b.Fatalf("Len = %d, want %d", size, n)
				}
			}
			b.ReportMetric(perKey, "B/key")
		})
	})
}
