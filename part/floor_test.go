package part

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFloor checks Floor against a sorted list of the keys, on trees of
// keys drawn from a small alphabet so that they share prefixes, are
// prefixes of each other, and fill nodes of every kind; the probes are
// keys in the tree, keys near them and keys of other lengths.
func TestFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		alphabet := []int{2, 5, 20, 60, 256}[round%5]
		n := 1 + r.IntN(300)
		tree := New[int]()
		txn := tree.Txn()
		var keys [][]byte
		randKey := func() []byte {
			k := make([]byte, r.IntN(6))
			for i := range k {
				k[i] = byte(r.IntN(alphabet))
			}
			return k
		}
		for range n {
			k := randKey()
			if _, had := txn.Insert(k, len(keys)); !had {
				keys = append(keys, k)
			}
		}
		// Deletes shrink nodes and leave inner nodes with few children.
		for range r.IntN(n) {
			k := randKey()
			if _, had := txn.Delete(k); had {
				keys = slices.DeleteFunc(keys, func(x []byte) bool { return bytes.Equal(x, k) })
			}
		}
		tree = txn.Commit()
		slices.SortFunc(keys, bytes.Compare)
		for range 200 {
			probe := randKey()
			if len(keys) > 0 && r.IntN(2) == 0 {
				probe = slices.Clone(keys[r.IntN(len(keys))])
				if len(probe) > 0 && r.IntN(2) == 0 {
					probe[len(probe)-1] += byte(r.IntN(3)) - 1
				}
			}
			i, found := slices.BinarySearchFunc(keys, probe, bytes.Compare)
			if !found {
				i--
			}
			k, v, ok := tree.Floor(probe)
			if i < 0 {
				if ok {
					t.Fatalf("Floor(%x) = %x, want none (keys %x)", probe, k, keys)
				}
				continue
			}
			if !ok || !bytes.Equal(k, keys[i]) {
				t.Fatalf("Floor(%x) = %x, %v; want %x (keys %x)", probe, k, ok, keys[i], keys)
			}
			if got, _ := tree.Get(k); got != v {
				t.Fatalf("Floor(%x) value %d, Get %d", probe, v, got)
			}
		}
	}
}

// TestFloorAllocs: Floor allocates nothing.
func TestFloorAllocs(t *testing.T) {
	tree := New[int]()
	txn := tree.Txn()
	for i := range 1000 {
		txn.Insert([]byte{byte(i >> 8), byte(i), 7}, i)
	}
	tree = txn.Commit()
	probe := []byte{2, 100, 8}
	if a := testing.AllocsPerRun(100, func() { tree.Floor(probe) }); a != 0 {
		t.Errorf("Floor allocates %v times", a)
	}
}
