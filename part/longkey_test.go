package part

import (
	"bytes"
	"slices"
	"testing"
)

// TestLongKeys stores keys of lengths around every boundary a length field
// could overflow at, including pairs that share all but their last byte and
// keys that are prefixes of one another, and checks that each is found,
// counted, iterated in order and deleted.
func TestLongKeys(t *testing.T) {
	var keys [][]byte
	for _, n := range []int{0, 1, 255, 256, 65535, 65536, 70000, 1 << 20} {
		a := bytes.Repeat([]byte{'k'}, n)
		keys = append(keys, a)
		if n > 0 {
			b := bytes.Clone(a)
			b[n-1] = 'z' // differs from a only in the last byte
			keys = append(keys, b)
			keys = append(keys, append(bytes.Clone(a), 0)) // a is a prefix of it
		}
	}
	tree := New[int]()
	txn := tree.Txn()
	for i, k := range keys {
		if _, had := txn.Insert(k, i); had {
			t.Fatalf("key of length %d inserted twice", len(k))
		}
	}
	tree = txn.Commit()
	if err := tree.validate(); err != nil {
		t.Fatal(err)
	}
	if tree.Len() != len(keys) {
		t.Fatalf("Len = %d, want %d", tree.Len(), len(keys))
	}
	for i, k := range keys {
		if v, ok := tree.Get(k); !ok || v != i {
			t.Fatalf("Get(key of length %d) = %d, %v; want %d", len(k), v, ok, i)
		}
	}
	want := slices.Clone(keys)
	slices.SortFunc(want, bytes.Compare)
	var got [][]byte
	for k := range tree.All() {
		got = append(got, k)
	}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("All returned %d keys out of order", len(got))
	}
	// Keys starting with 65536 'k's: both 65536-byte keys but the one
	// ending in 'z', and all three of each longer length.
	if got := collect(tree.Prefix(bytes.Repeat([]byte{'k'}, 65536))); len(got) != 8 {
		t.Fatalf("Prefix of 65536 bytes matched %d keys, want 8", len(got))
	}
	txn = tree.Txn()
	for i, k := range keys {
		if v, ok := txn.Delete(k); !ok || v != i {
			t.Fatalf("Delete(key of length %d) = %d, %v", len(k), v, ok)
		}
	}
	if empty := txn.Commit(); empty.Len() != 0 || empty.validate() != nil {
		t.Fatalf("tree not empty after deleting every key")
	}
}

// TestIteratorReuse checks the reusable Iterator against the iter.Seq2
// methods, and that reusing it allocates nothing.
func TestIteratorReuse(t *testing.T) {
	tree := New[int]()
	txn := tree.Txn()
	for i := range 5000 {
		txn.Insert([]byte{byte(i >> 8), byte(i), byte(i * 7)}, i)
	}
	tree = txn.Commit()
	it := tree.Iterator()
	collectIt := func() []kv {
		var out []kv
		for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
			out = append(out, kv{k, v})
		}
		return out
	}
	check := func(name string, got []kv, seq func(func([]byte, int) bool)) {
		t.Helper()
		if want := collect(seq); !equalKVs(got, want) || len(want) == 0 {
			t.Fatalf("%s: Iterator gave %d entries, Seq2 %d", name, len(got), len(want))
		}
	}
	check("First", collectIt(), tree.All())
	it.Last()
	check("Last", collectIt(), tree.ReverseAll())
	it.SeekPrefix([]byte{3})
	check("SeekPrefix", collectIt(), tree.Prefix([]byte{3}))
	it.SeekReversePrefix([]byte{3})
	check("SeekReversePrefix", collectIt(), tree.ReversePrefix([]byte{3}))
	it.SeekLowerBound([]byte{10, 7})
	check("SeekLowerBound", collectIt(), tree.LowerBound([]byte{10, 7}))
	it.SeekReverseLowerBound([]byte{10, 7})
	check("SeekReverseLowerBound", collectIt(), tree.ReverseLowerBound([]byte{10, 7}))

	// Once the stack has grown, repositioning and scanning allocate nothing.
	allocs := testing.AllocsPerRun(100, func() {
		it.SeekLowerBound([]byte{4})
		n := 0
		for _, _, ok := it.Next(); ok && n < 100; _, _, ok = it.Next() {
			n++
		}
		it.First()
		for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		}
	})
	if allocs != 0 {
		t.Fatalf("reused Iterator allocated %v times per run", allocs)
	}
	var other Iterator[int]
	other.Reset(tree)
	if got := collectIterator(&other); len(got) != tree.Len() {
		t.Fatalf("Reset iterator saw %d keys, want %d", len(got), tree.Len())
	}
}

func collectIterator(it *Iterator[int]) []kv {
	var out []kv
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		out = append(out, kv{k, v})
	}
	return out
}

// TestUpdateDeclined checks that an Update whose function declines leaves
// the tree exactly as it was: same root, no watch channel closed, and that
// one that accepts stores the value.
func TestUpdateDeclined(t *testing.T) {
	tree := New[int]()
	txn := tree.Txn()
	for i := range 300 {
		txn.Insert([]byte{byte(i), byte(i >> 8)}, i)
	}
	tree = txn.Commit()
	_, watch, _ := tree.GetWatch([]byte{7, 0})
	rootWatch := tree.RootWatch()

	txn = tree.Txn()
	for _, k := range [][]byte{{7, 0}, {7, 1}, nil} {
		old, had, updated := txn.Update(k, func(old int, found bool) (int, bool) { return old + 1, false })
		if updated {
			t.Fatalf("Update(%x) stored a declined value (old %d, had %v)", k, old, had)
		}
	}
	after := txn.Commit()
	if after.root != tree.root || isClosed(watch) || isClosed(rootWatch) {
		t.Fatalf("declined Updates changed the tree")
	}
	txn = after.Txn()
	if old, had, updated := txn.Update([]byte{7, 0}, func(old int, found bool) (int, bool) { return old + 1, found }); !updated || !had || old != 7 {
		t.Fatalf("accepted Update = %d %v %v", old, had, updated)
	}
	if v, _ := txn.Get([]byte{7, 0}); v != 8 {
		t.Fatalf("value after Update = %d, want 8", v)
	}
	txn.Commit()
	if !isClosed(watch) {
		t.Fatalf("watch not closed after the key was updated")
	}
}
