package part_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/strata-db/strata/part"
)

// The range semantics of CountRange, case by case, on a tree whose keys
// are prefixes of one another and share bytes, the empty key included.
// (TestDifferential checks both counts against a model at every step.)
func TestCountRangeCases(t *testing.T) {
	tree := part.New[int]()
	for i, k := range []string{"", "a", "ab", "abc", "abd", "b", "ba", "c"} {
		_, _, tree = tree.Insert([]byte(k), i)
	}
	cases := []struct {
		lo, hi string
		want   int
	}{
		{"", "", 0},      // hi <= lo
		{"b", "a", 0},    // hi < lo
		{"a", "a", 0},    // lo included, hi not: empty
		{"", "a", 1},     // the empty key
		{"", "zzz", 8},   // everything
		{"a", "b", 4},    // a, ab, abc, abd
		{"ab", "abd", 2}, // ab, abc
		{"ab", "abd\x00", 3},
		{"a\xff", "b", 0},   // above a's subtree, below b
		{"aa", "ac", 3},     // ab, abc, abd: lo and hi leave the prefixes
		{"abc", "ba", 3},    // abc, abd, b
		{"abe", "b\x00", 1}, // b
		{"c", "d", 1},
		{"c\x00", "d", 0},
	}
	for _, tc := range cases {
		if got := tree.CountRange([]byte(tc.lo), []byte(tc.hi)); got != tc.want {
			t.Errorf("CountRange(%q, %q) = %d, want %d", tc.lo, tc.hi, got, tc.want)
		}
	}
	for p, want := range map[string]int{"": 8, "a": 4, "ab": 3, "abc": 1, "abe": 0, "b": 2, "d": 0} {
		if got := tree.CountPrefix([]byte(p)); got != want {
			t.Errorf("CountPrefix(%q) = %d, want %d", p, got, want)
		}
	}
	// A transaction counts its own writes, before and after it copies.
	txn := tree.Txn()
	txn.Delete([]byte("abc"))
	txn.Insert([]byte("abcd"), 9)
	txn.Insert([]byte("ab\x00"), 10)
	if got := txn.CountPrefix([]byte("ab")); got != 4 {
		t.Errorf("Txn.CountPrefix(ab) = %d, want 4", got)
	}
	if got := txn.CountRange([]byte("ab"), []byte("abd")); got != 3 {
		t.Errorf("Txn.CountRange(ab, abd) = %d, want 3", got)
	}
	if got := tree.CountPrefix([]byte("ab")); got != 3 {
		t.Errorf("the committed tree's CountPrefix(ab) = %d after a transaction wrote, want 3", got)
	}
}

// Counting the keys under a prefix, and in a range, without visiting them.
func ExampleTree_CountRange() {
	txn := part.New[int]().Txn()
	for i, k := range []string{"eu-1", "eu-2", "eu-3", "us-1", "us-2"} {
		txn.Insert([]byte(k), i)
	}
	tree := txn.Commit()

	fmt.Println(tree.CountPrefix([]byte("eu-")))
	fmt.Println(tree.CountRange([]byte("eu-2"), []byte("us-2"))) // eu-2 included, us-2 not
	fmt.Println(tree.Len() - tree.CountRange(nil, []byte("us"))) // the keys from "us" on
	// Output:
	// 3
	// 3
	// 2
}

// BenchmarkCount: a count of the keys under a prefix (query=prefix), and
// in a range (query=range), each matching a tenth of an n-key tree (n is
// -part.bench.max, 1M by default), beside iterating the same keys in the
// same run (op=iterate), with Tree.Prefix and with an Iterator bounded by
// SetEnd. The ratio of op=iterate to op=count is what counting saves:
//
//	go test -run '^$' -bench 'Count$' -count 5 ./part
//
// A key is a byte i%10 and then i as 8 big-endian bytes, so that the
// prefix {3} holds exactly the keys with i%10 == 3, and the range from
// {5, n/2} to {6, n/2} matches about as many without being a subtree: its
// bounds leave the tree's nodes at every level.
func BenchmarkCount(b *testing.B) {
	n := *benchMax
	keys := make([][]byte, n)
	key := func(tenth byte, i int) []byte {
		k := make([]byte, 9)
		k[0] = tenth
		binary.BigEndian.PutUint64(k[1:], uint64(i))
		return k
	}
	for i := range keys {
		keys[i] = key(byte(i%10), i)
	}
	tree := buildPart(b, keys)
	prefix := []byte{3}
	lo, hi := key(5, n/2), key(6, n/2)
	wantPrefix, wantRange := 0, 0
	for i := range n {
		switch {
		case i%10 == 3:
			wantPrefix++
		case i%10 == 5 && i >= n/2, i%10 == 6 && i < n/2:
			wantRange++
		}
	}
	b.Run(fmt.Sprintf("n=%d/query=prefix/op=count", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c := tree.CountPrefix(prefix); c != wantPrefix {
				b.Fatalf("CountPrefix = %d, want %d", c, wantPrefix)
			}
		}
	})
	b.Run(fmt.Sprintf("n=%d/query=prefix/op=iterate", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := 0
			for range tree.Prefix(prefix) {
				c++
			}
			if c != wantPrefix {
				b.Fatalf("Prefix: %d keys, want %d", c, wantPrefix)
			}
		}
	})
	b.Run(fmt.Sprintf("n=%d/query=range/op=count", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c := tree.CountRange(lo, hi); c != wantRange {
				b.Fatalf("CountRange = %d, want %d", c, wantRange)
			}
		}
	})
	b.Run(fmt.Sprintf("n=%d/query=range/op=iterate", n), func(b *testing.B) {
		var it part.Iterator[int]
		it.SetTree(tree)
		b.ReportAllocs()
		for b.Loop() {
			c := 0
			it.SeekLowerBound(lo)
			it.SetEnd(hi, false)
			for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
				c++
			}
			if c != wantRange {
				b.Fatalf("range scan: %d keys, want %d", c, wantRange)
			}
		}
	})
}

// The zero Tree and a Txn never Reset have no keys, as when they kept a
// size of their own.
func TestCountZeroTree(t *testing.T) {
	var tree part.Tree[int]
	var txn part.Txn[int]
	if tree.Len() != 0 || txn.Len() != 0 {
		t.Fatalf("Len of the zero Tree and Txn: %d, %d", tree.Len(), txn.Len())
	}
}
