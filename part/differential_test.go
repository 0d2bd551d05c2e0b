package part

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
)

var (
	diffOps  = flag.Int("part.ops", 1_000_000, "operations in TestDifferential")
	diffSeed = flag.Uint64("part.seed", 0, "seed for TestDifferential (0: random)")
)

// chooser supplies the random decisions of a differential run: from a PRNG in
// TestDifferential, from the fuzzer's bytes in FuzzDifferential.
type chooser interface {
	intn(n int) int
	done() bool
}

type randChooser struct {
	r    *rand.Rand
	left int
}

func (c *randChooser) intn(n int) int { return c.r.IntN(n) }
func (c *randChooser) done() bool     { c.left--; return c.left < 0 }

type byteChooser struct{ b []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	if n > 256 && len(c.b) > 1 {
		v = v<<8 | int(c.b[1])
		c.b = c.b[1:]
	}
	c.b = c.b[1:]
	return v % n
}
func (c *byteChooser) done() bool { return len(c.b) == 0 }

// genKey draws keys from a small alphabet with short lengths, so that keys
// share prefixes heavily, are often prefixes of one another, and include the
// empty key; now and then a long key stresses prefixes of many bytes.
func genKey(c chooser) []byte {
	alphabet := []byte{0x00, 0x01, 'a', 'b', 'c', 0xfe, 0xff}
	var n int
	switch c.intn(16) {
	case 0:
		n = 0
	case 1:
		n = 20 + c.intn(300) // long keys sharing a long run
		k := bytes.Repeat([]byte{'x'}, n)
		for range 1 + c.intn(3) {
			k[c.intn(n)] = alphabet[c.intn(len(alphabet))]
		}
		return k
	default:
		n = 1 + c.intn(5)
	}
	k := make([]byte, n)
	for i := range k {
		k[i] = alphabet[c.intn(len(alphabet))]
	}
	if n > 0 && c.intn(8) == 0 {
		// A wider spread of bytes, to make nodes grow to 48 and 256.
		k[c.intn(n)] = byte(c.intn(256))
	}
	return k
}

type kv struct {
	k []byte
	v int
}

func collect(seq func(func([]byte, int) bool)) []kv {
	var out []kv
	for k, v := range seq {
		out = append(out, kv{bytes.Clone(k), v})
	}
	return out
}

func collectIradix(it interface{ Next() ([]byte, int, bool) }) []kv {
	var out []kv
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		out = append(out, kv{k, v})
	}
	return out
}

func collectIradixReverse(it *iradix.ReverseIterator[int]) []kv {
	var out []kv
	for k, v, ok := it.Previous(); ok; k, v, ok = it.Previous() {
		out = append(out, kv{k, v})
	}
	return out
}

func equalKVs(a, b []kv) bool {
	return slices.EqualFunc(a, b, func(x, y kv) bool { return bytes.Equal(x.k, y.k) && x.v == y.v })
}

type snapshotPair struct {
	part  Tree[int]
	model *iradix.Tree[int]
	all   []kv // what part.All returned when the snapshot was taken
}

// runDifferential applies the operations chosen by c to a part tree and to a
// go-immutable-radix tree and fails at the first difference.
func runDifferential(t testing.TB, c chooser) {
	tree := New[int]()
	model := iradix.New[int]()
	txn, mtxn := tree.Txn(), model.Txn()
	var snaps []snapshotPair
	msize := 0
	step := 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: %s", step, fmt.Sprintf(format, args...))
	}
	for !c.done() {
		step++
		op := c.intn(100)
		switch {
		case op < 30: // insert
			k, v := genKey(c), c.intn(1000)
			var o1 int
			var h1 bool
			if c.intn(4) == 0 {
				o1, h1, _ = txn.InsertWatch(k, v)
			} else {
				o1, h1 = txn.Insert(k, v)
			}
			o2, h2 := mtxn.Insert(k, v)
			if !h2 {
				msize++
			}
			if o1 != o2 || h1 != h2 {
				fail("Insert(%x) = %d,%v; model %d,%v", k, o1, h1, o2, h2)
			}
		case op < 38: // modify
			k := genKey(c)
			var seen int
			var seenFound bool
			fn := func(old int, found bool) int {
				seen, seenFound = old, found
				return old + 1
			}
			var o1 int
			var h1 bool
			if c.intn(4) == 0 {
				o1, h1, _ = txn.ModifyWatch(k, fn)
			} else {
				o1, h1 = txn.Modify(k, fn)
			}
			o2, h2 := mtxn.Get(k)
			mtxn.Insert(k, o2+1)
			if !h2 {
				msize++
			}
			if o1 != o2 || h1 != h2 || seen != o2 || seenFound != h2 {
				fail("Modify(%x) = %d,%v (saw %d,%v); model %d,%v", k, o1, h1, seen, seenFound, o2, h2)
			}
		case op < 55: // delete
			k := genKey(c)
			o1, h1 := txn.Delete(k)
			o2, h2 := mtxn.Delete(k)
			if h2 {
				msize--
			}
			if o1 != o2 || h1 != h2 {
				fail("Delete(%x) = %d,%v; model %d,%v", k, o1, h1, o2, h2)
			}
		case op < 58: // delete prefix
			k := genKey(c)
			if len(k) == 0 && c.intn(4) != 0 {
				k = []byte{'a'}
			}
			it := mtxn.Root().Iterator()
			it.SeekPrefix(k)
			removed := len(collectIradix(it))
			mtxn.DeletePrefix(k)
			msize -= removed
			if n := txn.DeletePrefix(k); n != removed {
				fail("DeletePrefix(%x) = %d; model removed %d", k, n, removed)
			}
		case op < 66: // one-operation writes on the committed tree
			tree, model = txn.Commit(), mtxn.Commit()
			// Full scans now and then: later reads compare the rest.
			scan := c.intn(8) == 0
			var before []kv
			if scan {
				before = collect(tree.All())
			}
			old, k := tree, genKey(c)
			var o1, o2 int
			var h1, h2 bool
			switch c.intn(3) {
			case 0:
				v := c.intn(1000)
				o1, h1, tree = tree.Insert(k, v)
				model, o2, h2 = model.Insert(k, v)
				if !h2 {
					msize++
				}
			case 1:
				o1, h1, tree = tree.Modify(k, func(old int, found bool) int { return old + 2 })
				o2, h2 = model.Get(k)
				model, _, _ = model.Insert(k, o2+2)
				if !h2 {
					msize++
				}
			default:
				o1, h1, tree = tree.Delete(k)
				model, o2, h2 = model.Delete(k)
				if h2 {
					msize--
				}
			}
			if o1 != o2 || h1 != h2 {
				fail("Tree write of %x = %d,%v; model %d,%v", k, o1, h1, o2, h2)
			}
			if tree.Len() != msize {
				fail("Len = %d after a one-operation write; model %d", tree.Len(), msize)
			}
			if scan {
				if got := collect(old.All()); !equalKVs(got, before) {
					fail("a one-operation write changed the tree it started from")
				}
				if got, want := collect(tree.All()), collectIradix(model.Root().Iterator()); !equalKVs(got, want) {
					fail("after a one-operation write: %v; model %v", got, want)
				}
				if err := tree.validate(); err != nil {
					fail("invalid tree after a one-operation write: %v", err)
				}
			}
			txn, mtxn = tree.Txn(), model.Txn()
		case op < 70: // get
			k := genKey(c)
			v1, f1 := txn.Get(k)
			v2, f2 := mtxn.Get(k)
			if v1 != v2 || f1 != f2 {
				fail("Get(%x) = %d,%v; model %d,%v", k, v1, f1, v2, f2)
			}
		case op < 74: // prefix
			k := genKey(c)
			it := mtxn.Root().Iterator()
			it.SeekPrefix(k)
			want := collectIradix(it)
			if got := collect(txn.Prefix(k)); !equalKVs(got, want) {
				fail("Prefix(%x) = %v; model %v", k, got, want)
			}
			rit := mtxn.Root().ReverseIterator()
			rit.SeekPrefix(k)
			want = collectIradixReverse(rit)
			if got := collect(txn.ReversePrefix(k)); !equalKVs(got, want) {
				fail("ReversePrefix(%x) = %v; model %v", k, got, want)
			}
		case op < 78: // lower bound
			k := genKey(c)
			it := mtxn.Root().Iterator()
			it.SeekLowerBound(k)
			want := collectIradix(it)
			if got := collect(txn.LowerBound(k)); !equalKVs(got, want) {
				fail("LowerBound(%x) = %v; model %v", k, got, want)
			}
		case op < 82: // reverse lower bound
			k := genKey(c)
			rit := mtxn.Root().ReverseIterator()
			rit.SeekReverseLowerBound(k)
			want := collectIradixReverse(rit)
			if got := collect(txn.ReverseLowerBound(k)); !equalKVs(got, want) {
				fail("ReverseLowerBound(%x) = %v; model %v", k, got, want)
			}
		case op < 84: // full scans both ways
			want := collectIradix(mtxn.Root().Iterator())
			if got := collect(txn.All()); !equalKVs(got, want) {
				fail("All = %v; model %v", got, want)
			}
			rwant := collectIradixReverse(mtxn.Root().ReverseIterator())
			if got := collect(txn.ReverseAll()); !equalKVs(got, rwant) {
				fail("ReverseAll = %v; model %v", got, rwant)
			}
		case op < 92: // commit
			tree = txn.Commit()
			model = mtxn.Commit()
			if err := tree.validate(); err != nil {
				fail("invalid tree after commit: %v", err)
			}
			// go-immutable-radix's own Len drifts after DeletePrefix, so
			// the model's size is msize, checked against its contents here.
			if n := len(collectIradix(model.Root().Iterator())); tree.Len() != n || msize != n {
				fail("Len = %d; model holds %d keys, counted %d", tree.Len(), n, msize)
			}
			if c.intn(4) == 0 {
				// Keep a snapshot, and sometimes start a fresh Txn
				// rather than reusing the committed one.
				snaps = append(snaps, snapshotPair{tree, model, collect(tree.All())})
				if len(snaps) > 8 {
					snaps = slices.Delete(snaps, 0, 1)
				}
			}
			if c.intn(2) == 0 {
				txn = tree.Txn()
			}
			mtxn = model.Txn()
		case op < 95: // abort
			txn.Reset(tree)
			mtxn = model.Txn()
			msize = len(collectIradix(model.Root().Iterator()))
		default: // an older snapshot still reads as it did
			if len(snaps) == 0 {
				continue
			}
			s := snaps[c.intn(len(snaps))]
			want := collectIradix(s.model.Root().Iterator())
			got := collect(s.part.All())
			if !equalKVs(got, want) || !equalKVs(got, s.all) || s.part.Len() != len(want) {
				fail("snapshot changed: %v; model %v; at snapshot time %v", got, want, s.all)
			}
			k := genKey(c)
			v1, f1 := s.part.Get(k)
			v2, f2 := s.model.Get(k)
			if v1 != v2 || f1 != f2 {
				fail("snapshot Get(%x) = %d,%v; model %d,%v", k, v1, f1, v2, f2)
			}
		}
		if txn.Len() != msize {
			fail("op %d: Len = %d; model %d", op, txn.Len(), msize)
		}
		checkCounts(c, txn, mtxn.Root(), fail)
	}
	tree = txn.Commit()
	if err := tree.validate(); err != nil {
		t.Fatalf("invalid tree at end: %v", err)
	}
}

func TestDifferential(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -part.seed=%d)", seed, seed)
	ops := *diffOps
	if testing.Short() {
		ops /= 10
	}
	if raceDetector {
		ops /= 10 // one goroutine: see race_on_test.go
	}
	// Several independent runs so that trees start empty now and then.
	const runs = 20
	for i := range runs {
		c := &randChooser{r: rand.New(rand.NewPCG(seed, uint64(i))), left: ops / runs}
		runDifferential(t, c)
	}
}

func FuzzDifferential(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("insert some keys and commit them"))
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3, 90, 91, 92, 250}, 40))
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 2000)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runDifferential(t, &byteChooser{b: data})
	})
}

// checkCounts compares, after every step of a differential run, the
// transaction's CountPrefix and CountRange of random keys (most of them
// long enough to match few keys, so that the check stays cheap) with the
// number of the model's keys that match, counted one by one.
func checkCounts(c chooser, txn *Txn[int], model *iradix.Node[int], fail func(string, ...any)) {
	countKey := func() []byte {
		k := genKey(c)
		for len(k) < 2 && c.intn(16) != 0 {
			k = append(k, genKey(c)...)
		}
		return k
	}
	p := countKey()
	it := model.Iterator()
	it.SeekPrefix(p)
	want := 0
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		want++
	}
	if got := txn.CountPrefix(p); got != want {
		fail("CountPrefix(%x) = %d; model %d", p, got, want)
	}

	lo, hi := countKey(), countKey()
	switch c.intn(4) {
	case 0: // hi <= lo: empty
	case 1: // hi just above lo's subtree or inside it
		hi = append(bytes.Clone(lo), byte(c.intn(256)))
	case 2: // bounds that share a prefix: a narrower range
		hi = append(bytes.Clone(lo[:len(lo)/2+len(lo)%2]), hi...)
		fallthrough
	default: // any two keys, in order: sums at the top of the tree
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
	}
	it = model.Iterator()
	it.SeekLowerBound(lo)
	want = 0
	for k, _, ok := it.Next(); ok && bytes.Compare(k, hi) < 0; k, _, ok = it.Next() {
		want++
	}
	if got := txn.CountRange(lo, hi); got != want {
		fail("CountRange(%x, %x) = %d; model %d", lo, hi, got, want)
	}
	// Rarely: a snapshot freezes the transaction's nodes, and later writes
	// must copy them, so taking one every step would leave in-place
	// writes, and the counts they keep, untested.
	if c.intn(32) == 0 {
		if snap := txn.Snapshot(); snap.CountRange(lo, hi) != want || snap.CountPrefix(p) != txn.CountPrefix(p) {
			fail("the snapshot's counts differ from the transaction's")
		}
	}
}
