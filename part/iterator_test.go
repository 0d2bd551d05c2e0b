package part

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// seeker is what positions an Iterator, whatever its value type.
type seeker interface {
	First()
	Last()
	SeekPrefix([]byte)
	SeekReversePrefix([]byte)
	SeekLowerBound([]byte)
	SeekReverseLowerBound([]byte)
	SetEnd([]byte, bool)
	Skip([]byte) bool
}

// drainAll positions three iterators of tree with position and reads them
// with Next, NextValues and YieldPairs (the last on a tree of pairs with
// the same keys); all three must agree. It returns the values.
func drainAll(t *testing.T, tree Tree[int], position func(seeker)) []int {
	t.Helper()
	var a Iterator[int]
	a.Reset(tree)
	position(&a)
	var next []int
	for _, v, ok := a.Next(); ok; _, v, ok = a.Next() {
		next = append(next, v)
	}

	var b Iterator[int]
	b.Reset(tree)
	position(&b)
	var batched []int
	buf := make([]int, 3)
	for {
		n := b.NextValues(buf)
		batched = append(batched, buf[:n]...)
		if n < len(buf) {
			break
		}
	}
	if !slices.Equal(next, batched) {
		t.Fatalf("NextValues gave %v, Next %v", batched, next)
	}

	txn := New[Pair[int, int]]().Txn()
	for k, v := range tree.All() {
		txn.Insert(k, Pair[int, int]{v, -v})
	}
	var c Iterator[Pair[int, int]]
	c.Reset(txn.Commit())
	position(&c)
	var pairs []int
	YieldPairs(&c, func(v, w int) bool {
		if w != -v {
			t.Fatalf("pair (%d, %d)", v, w)
		}
		pairs = append(pairs, v)
		return true
	})
	if !slices.Equal(next, pairs) {
		t.Fatalf("YieldPairs gave %v, Next %v", pairs, next)
	}
	return next
}

// randomKey returns a short key of bytes that make keys share prefixes,
// including 0x00 and 0xff.
func randomKey(r *rand.Rand) []byte {
	k := make([]byte, r.IntN(4))
	for j := range k {
		k[j] = "ab\x00\xff"[r.IntN(4)]
	}
	return k
}

// TestIteratorBounds checks SeekLowerBound, SeekReverseLowerBound, SetEnd
// and Skip, read three ways, against a sorted list of the keys, bounds the
// wrong way round included.
func TestIteratorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rounds := 300
	if raceDetector {
		rounds /= 10 // one goroutine: see race_on_test.go
	}
	for round := range rounds {
		txn := New[int]().Txn()
		for i := range r.IntN(300) {
			txn.Insert(randomKey(r), i)
		}
		tree := txn.Commit()
		type kv struct {
			k []byte
			v int
		}
		var all []kv
		for k, v := range tree.All() {
			all = append(all, kv{k, v})
		}
		for range 20 {
			from, to, incl := randomKey(r), randomKey(r), r.IntN(2) == 0
			var want []int
			for _, e := range all {
				c := bytes.Compare(e.k, to)
				if bytes.Compare(e.k, from) >= 0 && (c < 0 || c == 0 && incl) {
					want = append(want, e.v)
				}
			}
			got := drainAll(t, tree, func(it seeker) {
				it.SeekLowerBound(from)
				it.SetEnd(to, incl)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: from %x to %x (inclusive %v): got %v, want %v", round, from, to, incl, got, want)
			}
			slices.Reverse(want)
			got = drainAll(t, tree, func(it seeker) {
				it.SeekReverseLowerBound(to)
				if !incl {
					it.Skip(to)
				}
				it.SetEnd(from, true)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: descending from %x to %x (inclusive %v): got %v, want %v", round, to, from, incl, got, want)
			}
			p := randomKey(r)
			want = want[:0]
			for _, e := range all {
				if bytes.HasPrefix(e.k, p) {
					want = append(want, e.v)
				}
			}
			if got := drainAll(t, tree, func(it seeker) { it.SeekPrefix(p) }); !slices.Equal(got, want) {
				t.Fatalf("round %d: prefix %x: got %v, want %v", round, p, got, want)
			}
			slices.Reverse(want)
			if got := drainAll(t, tree, func(it seeker) { it.SeekReversePrefix(p) }); !slices.Equal(got, want) {
				t.Fatalf("round %d: reverse prefix %x: got %v, want %v", round, p, got, want)
			}
		}
	}
}

// TestIteratorWideNodes scans trees whose nodes are node48s and node256s
// with empty slots, read three ways, whole, between bounds and stopped
// early: the slots a scan skips and the end leaf it stops at must not be
// confused (a nil slot is not the end of a scan that has none).
func TestIteratorWideNodes(t *testing.T) {
	for _, width := range []int{30, 200} { // node48, node256
		txn := New[int]().Txn()
		var keys [][]byte
		for i := range 256 {
			if i%3 == 0 && width > 48 || i >= width {
				continue // holes
			}
			k := []byte{byte(i)}
			keys = append(keys, k, []byte{byte(i), 'x'})
		}
		for i, k := range keys {
			txn.Insert(k, i)
		}
		tree := txn.Commit()
		if got := drainAll(t, tree, func(it seeker) { it.First() }); len(got) != len(keys) || !slices.IsSorted(got) {
			t.Fatalf("width %d: ascending scan gave %v, want 0..%d", width, got, len(keys)-1)
		}
		if got := drainAll(t, tree, func(it seeker) { it.Last() }); len(got) != len(keys) || got[0] != len(keys)-1 {
			t.Fatalf("width %d: descending scan gave %v", width, got)
		}
		from, to := keys[10], keys[len(keys)-10]
		got := drainAll(t, tree, func(it seeker) { it.SeekLowerBound(from); it.SetEnd(to, false) })
		if len(got) != len(keys)-20 || got[0] != 10 {
			t.Fatalf("width %d: scan of [%x, %x) gave %v", width, from, to, got)
		}

		ptxn := New[Pair[int, int]]().Txn()
		for k, v := range tree.All() {
			ptxn.Insert(k, Pair[int, int]{v, v})
		}
		var it Iterator[Pair[int, int]]
		it.Reset(ptxn.Commit())
		var seen []int
		ran := YieldPairs(&it, func(v, _ int) bool { seen = append(seen, v); return len(seen) < 25 })
		if ran || len(seen) != 25 || seen[24] != 24 {
			t.Fatalf("width %d: YieldPairs stopped at 25 reported %v, saw %v", width, ran, seen)
		}
	}
}

// TestIteratorDeep: a tree deeper than the frames an Iterator holds moves
// the stack to the heap and still scans every key, both ways.
func TestIteratorDeep(t *testing.T) {
	txn := New[int]().Txn()
	const n = 3 * iterFrames
	for i := range n {
		k := bytes.Repeat([]byte{'a'}, i+1)
		txn.Insert(k, i)
		txn.Insert(append(k, 'b'), n+i)
	}
	tree := txn.Commit()
	got := drainAll(t, tree, func(it seeker) { it.First() })
	if len(got) != 2*n {
		t.Fatalf("ascending scan saw %d keys, want %d", len(got), 2*n)
	}
	if got := drainAll(t, tree, func(it seeker) { it.Last() }); len(got) != 2*n || got[0] != n { // "ab" is the largest key
		t.Fatalf("descending scan saw %d keys starting with %v, want %d from %d", len(got), got[:1], 2*n, n)
	}
}

// TestIteratorOnStack: an Iterator declared as a local variable stays on
// the stack, so a scan through it allocates nothing, YieldPairs included.
func TestIteratorOnStack(t *testing.T) {
	txn := New[Pair[int, uint64]]().Txn()
	for i := range 5000 {
		txn.Insert([]byte{byte(i >> 8), byte(i), byte(i * 7)}, Pair[int, uint64]{i, uint64(i)})
	}
	tree := txn.Commit()
	sum := 0
	add := func(v int, _ uint64) bool { sum += v; return true }
	allocs := testing.AllocsPerRun(50, func() {
		var it Iterator[Pair[int, uint64]]
		it.Reset(tree)
		it.SeekLowerBound([]byte{3})
		it.SetEnd([]byte{12}, false)
		YieldPairs(&it, add)
	})
	if allocs != 0 || sum == 0 {
		t.Fatalf("a scan with a local Iterator allocated %v times (sum %d)", allocs, sum)
	}
}
