// Benchmarks that run part and github.com/hashicorp/go-immutable-radix/v2 on
// the same data in the same run. Every workload builds its data once and then
// runs two sub-benchmarks, impl=part and impl=iradix, whose timed loops do the
// same work through each tree's exported API and check their result.
//
// Names are Benchmark<Workload>/n=<keys>/<key=value...>/impl=<part|iradix>.
//
// Run (full suite, ~1M-key workloads included):
//
//	go test -run '^$' -bench . -benchmem -count 10 ./part | tee /tmp/part.txt
//	benchstat -col /impl /tmp/part.txt
//
// benchstat is installed with `go install golang.org/x/perf/cmd/benchstat@latest`.
// `-col /impl` puts part and iradix side by side; the iradix column's delta is
// relative to part (e.g. +150% sec/op means iradix takes 2.5x as long).
//
// Only the 1000-key workloads (each -bench level is matched separately, so the
// anchors keep n=1000000 out):
//
//	go test -run '^$' -bench '/^n=1000$/' -benchmem -benchtime 200ms -count 3 ./part
//
// CI smoke run (every benchmark once): go test -run '^$' -bench . -benchtime 1x ./part
// Memory per key only: go test -run '^$' -bench MemoryPerKey -benchtime 1x -count 5 ./part
//
// Notes on fairness: part copies the key on insert, iradix keeps the caller's
// slice, so part's insert figures include one key allocation per key.
// iradix has no way to rewind an iterator to the root, so its iterator
// workloads take a fresh Root().Iterator() per op (one small allocation).
package part_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/strata-db/strata/part"
)

// Fixed seeds: every run, and both implementations, see the same keys.
const (
	seedKeys    = 0x5eed_0001 // the keys stored in the tree
	seedMiss    = 0x5eed_0002 // Get misses
	seedShuffle = 0x5eed_0003 // lookup order
	seedSeek    = 0x5eed_0004 // LowerBound seek keys
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// genKeys returns n keys of size bytes (size is a multiple of 8, >= 8).
// order "seq" is a big-endian counter in the last 8 bytes (leading zeros);
// order "rand" is random bytes. All keys share one backing array.
func genKeys(order string, size, n int, seed uint64) [][]byte {
	buf := make([]byte, size*n)
	keys := make([][]byte, n)
	r := newRand(seed)
	for i := range keys {
		k := buf[i*size : (i+1)*size : (i+1)*size]
		switch order {
		case "seq":
			binary.BigEndian.PutUint64(k[size-8:], uint64(i))
		case "rand":
			for j := 0; j < size; j += 8 {
				binary.LittleEndian.PutUint64(k[j:], r.Uint64())
			}
		default:
			panic("unknown order " + order)
		}
		keys[i] = k
	}
	// Random keys are not deduplicated: with fixed seeds a collision would be
	// permanent and every workload below checks Len() == n, so it would show
	// up as a failure, not as a wrong figure.
	return keys
}

func sortedCopy(keys [][]byte) [][]byte {
	s := slices.Clone(keys)
	slices.SortFunc(s, bytes.Compare)
	return s
}

func shuffled(keys [][]byte, seed uint64) [][]byte {
	s := slices.Clone(keys)
	newRand(seed).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

func buildPart(b *testing.B, keys [][]byte) part.Tree[int] {
	txn := part.New[int]().Txn()
	for i, k := range keys {
		txn.Insert(k, i)
	}
	t := txn.Commit()
	if t.Len() != len(keys) {
		b.Fatalf("part: built %d keys, want %d", t.Len(), len(keys))
	}
	return t
}

func buildIradix(b *testing.B, keys [][]byte) *iradix.Tree[int] {
	txn := iradix.New[int]().Txn()
	for i, k := range keys {
		txn.Insert(k, i)
	}
	t := txn.Commit()
	if t.Len() != len(keys) {
		b.Fatalf("iradix: built %d keys, want %d", t.Len(), len(keys))
	}
	return t
}

// forImpls runs one workload for both trees, part first (benchstat's baseline).
func forImpls(b *testing.B, partFn, iradixFn func(b *testing.B)) {
	b.Run("impl=part", partFn)
	b.Run("impl=iradix", iradixFn)
}

// Called after the b.Loop loop: per-key figures for ops that touch keysPerOp keys.
func reportNsPerKey(b *testing.B, keysPerOp int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(keysPerOp)), "ns/key")
}

func reportKeysPerSec(b *testing.B, keysPerOp int) {
	b.ReportMetric(float64(b.N)*float64(keysPerOp)/b.Elapsed().Seconds(), "keys/s")
}

// mallocs returns the process's cumulative allocation count.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// reportAllocsPerKey reports allocations per visited key since m0 (read just
// before the b.Loop loop; includes the handful the testing package makes).
func reportAllocsPerKey(b *testing.B, m0 uint64, keysPerOp int) {
	b.ReportMetric(float64(mallocs()-m0)/(float64(b.N)*float64(keysPerOp)), "allocs/key")
}

// benchMax caps the tree sizes of the benchmarks, so that a smoke run
// (go test -bench . -benchtime=1x -part.bench.max=1000) stays quick.
var benchMax = flag.Int("part.bench.max", 1_000_000, "largest tree size the benchmarks build")

// benchSizes returns the sizes that are at most benchMax.
func benchSizes(sizes ...int) []int {
	var out []int
	for _, n := range sizes {
		if n <= *benchMax {
			out = append(out, n)
		}
	}
	return out
}

var (
	sizesBig   = []int{1000, 1_000_000}
	orders     = []string{"seq", "rand"}
	keySizes   = []int{8, 32}
	sumOfIndex = func(n int) int { return n * (n - 1) / 2 } // values are 0..n-1
)

// 1. Insert n keys in one transaction, then commit. One op = the whole build
// from an empty tree.
func BenchmarkInsert(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		for _, order := range orders {
			for _, size := range keySizes {
				b.Run(fmt.Sprintf("n=%d/order=%s/key=%dB", n, order, size), func(b *testing.B) {
					keys := genKeys(order, size, n, seedKeys)
					forImpls(b, func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							txn := part.New[int]().Txn()
							for i, k := range keys {
								txn.Insert(k, i)
							}
							if t := txn.Commit(); t.Len() != n {
								b.Fatalf("Len = %d, want %d", t.Len(), n)
							}
						}
						reportKeysPerSec(b, n)
					}, func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							txn := iradix.New[int]().Txn()
							for i, k := range keys {
								txn.Insert(k, i)
							}
							if t := txn.Commit(); t.Len() != n {
								b.Fatalf("Len = %d, want %d", t.Len(), n)
							}
						}
						reportKeysPerSec(b, n)
					})
				})
			}
		}
	}
}

// 2. Insert n keys with one transaction (and commit) per key. One op = the
// whole build from an empty tree. Capped at 100,000 keys: at 1M one op took
// 9-22 s for iradix (3-6 s for part), too slow for -count 10 or a CI smoke run.
func BenchmarkInsertTxnPerKey(b *testing.B) {
	for _, n := range benchSizes(1000, 100_000) {
		for _, order := range orders {
			for _, size := range keySizes {
				b.Run(fmt.Sprintf("n=%d/order=%s/key=%dB", n, order, size), func(b *testing.B) {
					keys := genKeys(order, size, n, seedKeys)
					forImpls(b, func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							t := part.New[int]()
							for i, k := range keys {
								txn := t.Txn()
								txn.Insert(k, i)
								t = txn.Commit()
							}
							if t.Len() != n {
								b.Fatalf("Len = %d, want %d", t.Len(), n)
							}
						}
						reportKeysPerSec(b, n)
					}, func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							t := iradix.New[int]()
							for i, k := range keys {
								txn := t.Txn()
								txn.Insert(k, i)
								t = txn.Commit()
							}
							if t.Len() != n {
								b.Fatalf("Len = %d, want %d", t.Len(), n)
							}
						}
						reportKeysPerSec(b, n)
					})
				})
			}
		}
	}
}

// 3. Get: one lookup per op, cycling through the stored keys in random order
// (result=hit) or through random keys that are not stored (result=miss).
func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		for _, size := range keySizes {
			for _, result := range []string{"hit", "miss"} {
				b.Run(fmt.Sprintf("n=%d/key=%dB/result=%s", n, size, result), func(b *testing.B) {
					keys := genKeys("rand", size, n, seedKeys)
					want := result == "hit"
					var lookups [][]byte
					if want {
						lookups = shuffled(keys, seedShuffle)
					} else {
						sorted := sortedCopy(keys)
						for _, k := range genKeys("rand", size, n, seedMiss) {
							if _, found := slices.BinarySearchFunc(sorted, k, bytes.Compare); !found {
								lookups = append(lookups, k)
							}
						}
					}
					forImpls(b, func(b *testing.B) {
						t := buildPart(b, keys)
						b.ReportAllocs()
						i := 0
						for b.Loop() {
							if _, ok := t.Get(lookups[i]); ok != want {
								b.Fatalf("Get(%x) found = %v, want %v", lookups[i], ok, want)
							}
							if i++; i == len(lookups) {
								i = 0
							}
						}
					}, func(b *testing.B) {
						t := buildIradix(b, keys)
						b.ReportAllocs()
						i := 0
						for b.Loop() {
							if _, ok := t.Get(lookups[i]); ok != want {
								b.Fatalf("Get(%x) found = %v, want %v", lookups[i], ok, want)
							}
							if i++; i == len(lookups) {
								i = 0
							}
						}
					})
				})
			}
		}
	}
}

// 4. Iterate all keys in ascending order. One op = one full scan; ns/key and
// allocs/key are per visited key. part uses Tree.All (range-over-func).
func BenchmarkIterate(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
			keys := genKeys("rand", 8, n, seedKeys)
			wantSum := sumOfIndex(n)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					for _, v := range t.All() {
						c++
						sum += v
					}
					if c != n || sum != wantSum {
						b.Fatalf("visited %d keys (sum %d), want %d (sum %d)", c, sum, n, wantSum)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					it := root.Iterator()
					for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
						c++
						sum += v
					}
					if c != n || sum != wantSum {
						b.Fatalf("visited %d keys (sum %d), want %d (sum %d)", c, sum, n, wantSum)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			})
		})
	}
}

// 4b. Iterate all keys with part's reusable Iterator (First + Next), which
// should allocate nothing per op once warmed up. iradix does the same as in
// BenchmarkIterate (a fresh iterator per op is all its API offers).
func BenchmarkIterateIterator(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
			keys := genKeys("rand", 8, n, seedKeys)
			wantSum := sumOfIndex(n)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				it := t.Iterator()
				for _, _, ok := it.Next(); ok; _, _, ok = it.Next() { // warm-up: grow the stack
				}
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					it.First()
					for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
						c++
						sum += v
					}
					if c != n || sum != wantSum {
						b.Fatalf("visited %d keys (sum %d), want %d (sum %d)", c, sum, n, wantSum)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					it := root.Iterator()
					for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
						c++
						sum += v
					}
					if c != n || sum != wantSum {
						b.Fatalf("visited %d keys (sum %d), want %d (sum %d)", c, sum, n, wantSum)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			})
		})
	}
}

// prefixData is the shared setup of the prefix workloads: random 8-byte keys,
// a cycle of prefixes of plen bytes taken from stored keys, and the expected
// number of keys under each prefix.
func prefixData(n, plen int) (keys, prefixes [][]byte, want []int) {
	keys = genKeys("rand", 8, n, seedKeys)
	counts := make([]int, 1<<(8*plen))
	idx := func(k []byte) int {
		x := 0
		for _, c := range k[:plen] {
			x = x<<8 | int(c)
		}
		return x
	}
	for _, k := range keys {
		counts[idx(k)]++
	}
	r := newRand(seedSeek)
	prefixes = make([][]byte, 4096)
	want = make([]int, len(prefixes))
	for i := range prefixes {
		k := keys[r.IntN(n)]
		prefixes[i] = slices.Clone(k[:plen])
		want[i] = counts[idx(k)]
	}
	return keys, prefixes, want
}

// prefixCases: the 1M-key tree with 2-byte prefixes (~15 keys each) asked
// for, and a 1000-key tree with 1-byte prefixes (~4 keys each) for quick runs.
var prefixCases = []struct{ n, plen int }{{1000, 1}, {1_000_000, 2}}

// 5. Prefix scan: one op = seek a prefix and read every key under it.
// part uses Tree.Prefix (range-over-func).
func BenchmarkPrefix(b *testing.B) {
	for _, pc := range prefixCases {
		if pc.n > *benchMax {
			continue
		}
		b.Run(fmt.Sprintf("n=%d/key=8B/plen=%d", pc.n, pc.plen), func(b *testing.B) {
			keys, prefixes, want := prefixData(pc.n, pc.plen)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					for range t.Prefix(prefixes[i]) {
						c++
					}
					if c != want[i] {
						b.Fatalf("Prefix(%x): %d keys, want %d", prefixes[i], c, want[i])
					}
					if i++; i == len(prefixes) {
						i = 0
					}
				}
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					it := root.Iterator()
					it.SeekPrefix(prefixes[i])
					for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
						c++
					}
					if c != want[i] {
						b.Fatalf("SeekPrefix(%x): %d keys, want %d", prefixes[i], c, want[i])
					}
					if i++; i == len(prefixes) {
						i = 0
					}
				}
			})
		})
	}
}

// 5b. Prefix scan with part's reusable Iterator (SeekPrefix + Next).
func BenchmarkPrefixIterator(b *testing.B) {
	for _, pc := range prefixCases {
		if pc.n > *benchMax {
			continue
		}
		b.Run(fmt.Sprintf("n=%d/key=8B/plen=%d", pc.n, pc.plen), func(b *testing.B) {
			keys, prefixes, want := prefixData(pc.n, pc.plen)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				it := t.Iterator()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					it.SeekPrefix(prefixes[i])
					for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
						c++
					}
					if c != want[i] {
						b.Fatalf("SeekPrefix(%x): %d keys, want %d", prefixes[i], c, want[i])
					}
					if i++; i == len(prefixes) {
						i = 0
					}
				}
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					it := root.Iterator()
					it.SeekPrefix(prefixes[i])
					for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
						c++
					}
					if c != want[i] {
						b.Fatalf("SeekPrefix(%x): %d keys, want %d", prefixes[i], c, want[i])
					}
					if i++; i == len(prefixes) {
						i = 0
					}
				}
			})
		})
	}
}

const lowerBoundReads = 10

// lowerBoundData: random 8-byte keys, a cycle of random seek keys (almost
// never stored), and for each the expected number of keys read (up to 10)
// and the expected first key.
func lowerBoundData(n int) (keys, seeks [][]byte, wantCount []int, wantFirst [][]byte) {
	keys = genKeys("rand", 8, n, seedKeys)
	sorted := sortedCopy(keys)
	seeks = genKeys("rand", 8, 4096, seedSeek)
	wantCount = make([]int, len(seeks))
	wantFirst = make([][]byte, len(seeks))
	for i, s := range seeks {
		pos, _ := slices.BinarySearchFunc(sorted, s, bytes.Compare)
		wantCount[i] = min(lowerBoundReads, n-pos)
		if pos < n {
			wantFirst[i] = sorted[pos]
		}
	}
	return keys, seeks, wantCount, wantFirst
}

// 6. LowerBound: one op = seek to the first key >= a random key and read up
// to 10 keys. part uses Tree.LowerBound (range-over-func).
func BenchmarkLowerBound(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
			keys, seeks, wantCount, wantFirst := lowerBoundData(n)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					var first []byte
					for k := range t.LowerBound(seeks[i]) {
						if c == 0 {
							first = k
						}
						if c++; c == lowerBoundReads {
							break
						}
					}
					if c != wantCount[i] || !bytes.Equal(first, wantFirst[i]) {
						b.Fatalf("LowerBound(%x): %d keys from %x, want %d from %x", seeks[i], c, first, wantCount[i], wantFirst[i])
					}
					if i++; i == len(seeks) {
						i = 0
					}
				}
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					var first []byte
					it := root.Iterator()
					it.SeekLowerBound(seeks[i])
					for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
						if c == 0 {
							first = k
						}
						if c++; c == lowerBoundReads {
							break
						}
					}
					if c != wantCount[i] || !bytes.Equal(first, wantFirst[i]) {
						b.Fatalf("SeekLowerBound(%x): %d keys from %x, want %d from %x", seeks[i], c, first, wantCount[i], wantFirst[i])
					}
					if i++; i == len(seeks) {
						i = 0
					}
				}
			})
		})
	}
}

// 6b. LowerBound with part's reusable Iterator (SeekLowerBound + Next).
func BenchmarkLowerBoundIterator(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
			keys, seeks, wantCount, wantFirst := lowerBoundData(n)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				it := t.Iterator()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					var first []byte
					it.SeekLowerBound(seeks[i])
					for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
						if c == 0 {
							first = k
						}
						if c++; c == lowerBoundReads {
							break
						}
					}
					if c != wantCount[i] || !bytes.Equal(first, wantFirst[i]) {
						b.Fatalf("SeekLowerBound(%x): %d keys from %x, want %d from %x", seeks[i], c, first, wantCount[i], wantFirst[i])
					}
					if i++; i == len(seeks) {
						i = 0
					}
				}
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					c := 0
					var first []byte
					it := root.Iterator()
					it.SeekLowerBound(seeks[i])
					for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
						if c == 0 {
							first = k
						}
						if c++; c == lowerBoundReads {
							break
						}
					}
					if c != wantCount[i] || !bytes.Equal(first, wantFirst[i]) {
						b.Fatalf("SeekLowerBound(%x): %d keys from %x, want %d from %x", seeks[i], c, first, wantCount[i], wantFirst[i])
					}
					if i++; i == len(seeks) {
						i = 0
					}
				}
			})
		})
	}
}

// 7. Delete every key of an n-key tree in one transaction, then commit. Each
// op starts again from the same (persistent, unchanged) full tree.
func BenchmarkDelete(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		for _, order := range orders {
			b.Run(fmt.Sprintf("n=%d/order=%s/key=8B", n, order), func(b *testing.B) {
				keys := genKeys(order, 8, n, seedKeys)
				forImpls(b, func(b *testing.B) {
					base := buildPart(b, keys)
					b.ReportAllocs()
					for b.Loop() {
						txn := base.Txn()
						c := 0
						for _, k := range keys {
							if _, ok := txn.Delete(k); ok {
								c++
							}
						}
						if t := txn.Commit(); c != n || t.Len() != 0 {
							b.Fatalf("deleted %d of %d keys, %d left", c, n, t.Len())
						}
					}
					reportKeysPerSec(b, n)
				}, func(b *testing.B) {
					base := buildIradix(b, keys)
					b.ReportAllocs()
					for b.Loop() {
						txn := base.Txn()
						c := 0
						for _, k := range keys {
							if _, ok := txn.Delete(k); ok {
								c++
							}
						}
						if t := txn.Commit(); c != n || t.Len() != 0 {
							b.Fatalf("deleted %d of %d keys, %d left", c, n, t.Len())
						}
					}
					reportKeysPerSec(b, n)
				})
			})
		}
	}
}

// 7b. Delete every key of a 1000-key tree with one transaction per key.
func BenchmarkDeleteTxnPerKey(b *testing.B) {
	const n = 1000
	for _, order := range orders {
		b.Run(fmt.Sprintf("n=%d/order=%s/key=8B", n, order), func(b *testing.B) {
			keys := genKeys(order, 8, n, seedKeys)
			forImpls(b, func(b *testing.B) {
				base := buildPart(b, keys)
				b.ReportAllocs()
				for b.Loop() {
					t, c := base, 0
					for _, k := range keys {
						txn := t.Txn()
						if _, ok := txn.Delete(k); ok {
							c++
						}
						t = txn.Commit()
					}
					if c != n || t.Len() != 0 {
						b.Fatalf("deleted %d of %d keys, %d left", c, n, t.Len())
					}
				}
				reportKeysPerSec(b, n)
			}, func(b *testing.B) {
				base := buildIradix(b, keys)
				b.ReportAllocs()
				for b.Loop() {
					t, c := base, 0
					for _, k := range keys {
						txn := t.Txn()
						if _, ok := txn.Delete(k); ok {
							c++
						}
						t = txn.Commit()
					}
					if c != n || t.Len() != 0 {
						b.Fatalf("deleted %d of %d keys, %d left", c, n, t.Len())
					}
				}
				reportKeysPerSec(b, n)
			})
		})
	}
}

// 8. Iterate all keys in descending order: part's ReverseAll against iradix's
// ReverseIterator/Previous. One op = one full scan; checks count, sum and
// that the first key is the largest.
func BenchmarkReverse(b *testing.B) {
	for _, n := range benchSizes(sizesBig...) {
		b.Run(fmt.Sprintf("n=%d/key=8B", n), func(b *testing.B) {
			keys := genKeys("rand", 8, n, seedKeys)
			wantSum := sumOfIndex(n)
			maxKey := slices.MaxFunc(keys, bytes.Compare)
			forImpls(b, func(b *testing.B) {
				t := buildPart(b, keys)
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					var first []byte
					for k, v := range t.ReverseAll() {
						if c == 0 {
							first = k
						}
						c++
						sum += v
					}
					if c != n || sum != wantSum || !bytes.Equal(first, maxKey) {
						b.Fatalf("visited %d keys (sum %d) from %x, want %d (sum %d) from %x", c, sum, first, n, wantSum, maxKey)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			}, func(b *testing.B) {
				t := buildIradix(b, keys)
				root := t.Root()
				b.ReportAllocs()
				m0 := mallocs()
				for b.Loop() {
					c, sum := 0, 0
					var first []byte
					it := root.ReverseIterator()
					for k, v, ok := it.Previous(); ok; k, v, ok = it.Previous() {
						if c == 0 {
							first = k
						}
						c++
						sum += v
					}
					if c != n || sum != wantSum || !bytes.Equal(first, maxKey) {
						b.Fatalf("visited %d keys (sum %d) from %x, want %d (sum %d) from %x", c, sum, first, n, wantSum, maxKey)
					}
				}
				reportNsPerKey(b, n)
				reportAllocsPerKey(b, m0, n)
			})
		})
	}
}

// 9. Insert n keys with one-operation writes on the tree itself
// (part's Tree.Insert, iradix's Tree.Insert), each returning the new tree,
// then delete them the same way. One op = the whole build and teardown.
func BenchmarkTreeOneOp(b *testing.B) {
	const n = 1000
	for _, order := range orders {
		b.Run(fmt.Sprintf("n=%d/order=%s/key=8B", n, order), func(b *testing.B) {
			keys := genKeys(order, 8, n, seedKeys)
			forImpls(b, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					t := part.New[int]()
					for i, k := range keys {
						_, _, t = t.Insert(k, i)
					}
					if t.Len() != n {
						b.Fatalf("Len = %d, want %d", t.Len(), n)
					}
					for _, k := range keys {
						_, _, t = t.Delete(k)
					}
					if t.Len() != 0 {
						b.Fatalf("Len = %d after deleting all", t.Len())
					}
				}
				reportKeysPerSec(b, n)
			}, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					t := iradix.New[int]()
					for i, k := range keys {
						t, _, _ = t.Insert(k, i)
					}
					if t.Len() != n {
						b.Fatalf("Len = %d, want %d", t.Len(), n)
					}
					for _, k := range keys {
						t, _, _ = t.Delete(k)
					}
					if t.Len() != 0 {
						b.Fatalf("Len = %d after deleting all", t.Len())
					}
				}
				reportKeysPerSec(b, n)
			})
		})
	}
}

// BenchmarkTxn_InsertWatch: inserting n keys and taking each one's watch
// channel, with InsertWatch (one descent) and with Insert then GetWatch
// (two). Both create the same channels.
func BenchmarkTxn_InsertWatch(b *testing.B) {
	const n = 1000
	keys := genKeys("rand", 8, n, seedKeys)
	for _, how := range []string{"InsertWatch", "Insert+GetWatch"} {
		b.Run("how="+how, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				txn := part.New[int]().Txn()
				open := 0
				for i, k := range keys {
					var w <-chan struct{}
					if how == "InsertWatch" {
						_, _, w = txn.InsertWatch(k, i)
					} else {
						txn.Insert(k, i)
						_, w, _ = txn.GetWatch(k)
					}
					if w != nil {
						open++
					}
				}
				if t := txn.Commit(); t.Len() != n || open != n {
					b.Fatalf("Len = %d, %d channels; want %d", t.Len(), open, n)
				}
			}
			reportKeysPerSec(b, n)
		})
	}
}
