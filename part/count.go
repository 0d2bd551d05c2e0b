package part

// Counting keys without visiting them.
//
// Every inner node keeps the number of leaves below it (inner.leaves), so
// that the keys under a prefix, or in a range, are counted by one descent
// of the tree, in O(key length), however many keys match.
//
// Invariants, checked by validate.go after every commit in the tests and
// on every commit in builds with -tags invariants:
//
//  1. For every inner node n of a committed tree, n.leaves is the number
//     of leaves below n: 1 if n.leaf is set, plus, for each child, 1 if it
//     is a leaf, and its own leaves if it is an inner node.
//  2. Hence the root's leaves is the number of keys: it is what Tree.Len
//     and Txn.Len return, and neither keeps a size of its own.
//
// Between two operations of a Txn both hold of the transaction's current
// tree too: a Txn keeps them as it writes. Path copying already rewrites
// every ancestor of a changed node, and a transaction owns every ancestor
// of a node it owns (it copies a node's ancestors when it copies the
// node, Txn.replaceUp), so every node whose count changes is owned once
// the structural change is made: recount then adds the change in place.
// A copy (cloneInner, resized) starts with the count of the node it
// copies; a node made by split starts with the count of what it holds.
//
// The ancestors recount adds to are the root and the nodes on Txn.path,
// which leaves the root out (recording it cost a write more than its count
// does, BenchmarkDelete). So:
//
//  3. When recount runs, the root and every node on t.path are owned,
//     and the root is not on t.path. Builds with -tags invariants check
//     it on every call.

// recount adds delta, the number of keys a write added (or, negative,
// removed), to the leaf count of n, the owned node that stands where the
// write happened (nil if that node left the tree), and to the counts of
// its ancestors, which the write made owned (Txn.replaceUp): the nodes on
// t.path and the root, which the path leaves out (n itself may be the
// root). Only writes that change the number of keys call it; it costs a
// pass over the path (BenchmarkInsert, BenchmarkDelete).
func (t *Txn[T]) recount(n *header, delta int) {
	if invariants {
		t.checkPath()
	}
	if n != nil {
		n.inner().leaves += delta
	}
	for _, e := range t.path {
		e.n.inner().leaves += delta
	}
	if n != t.root {
		t.root.inner().leaves += delta
	}
}

// checkPath panics unless invariant 3 holds.
func (t *Txn[T]) checkPath() {
	if t.root.txn() != t.id {
		panic("part: recount with a root the transaction does not own (count.go, invariant 3)")
	}
	for _, e := range t.path {
		if e.n == t.root || e.n.txn() != t.id {
			panic("part: recount with the root or a node not owned on the path (count.go, invariant 3)")
		}
	}
}

// leafCount returns the number of leaves at and below n.
func leafCount(n *header) int {
	if n.kind() == kindLeaf {
		return 1
	}
	return n.inner().leaves
}

// CountPrefix returns the number of keys that start with prefix (all of
// them for an empty prefix), in O(len(prefix)): it descends to the
// subtree that holds them, as Prefix does, and reads its count
// (BenchmarkCountPrefix).
func (t Tree[T]) CountPrefix(prefix []byte) int { return countPrefix(t.root, prefix) }

// CountRange returns the number of keys k with lo <= k < hi in byte order
// (bytes.Compare): lo is included, hi is not, and the count is 0 if hi <=
// lo. The empty key is the least key, so CountRange(nil, k) counts the
// keys less than k, and Len() - CountRange(nil, k) those at least k.
//
// It descends the tree along lo and along hi, summing at each inner node
// the counts of the children beside the path, so it takes O(len(lo) +
// len(hi)) steps, each of which may read the counts of up to half of a
// node's children (128 for the widest node), however many keys match.
func (t Tree[T]) CountRange(lo, hi []byte) int { return countRange(t.root, lo, hi) }

// CountPrefix is Tree.CountPrefix of the transaction's current tree, its
// own writes included.
func (t *Txn[T]) CountPrefix(prefix []byte) int { return countPrefix(t.root, prefix) }

// CountRange is Tree.CountRange of the transaction's current tree, its own
// writes included.
func (t *Txn[T]) CountRange(lo, hi []byte) int { return countRange(t.root, lo, hi) }

func countPrefix(root *header, prefix []byte) int {
	top, _ := prefixNode(root, prefix)
	if top == nil {
		return 0
	}
	return leafCount(top)
}

func countRange(root *header, lo, hi []byte) int {
	if compareKey(lo, hi) >= 0 {
		return 0
	}
	return countBelow(root, hi) - countBelow(root, lo)
}

// countBelow returns the number of keys of the tree under root that are
// less than key.
//
// At each inner node n the descent has checked that key starts with n's
// prefix up to the byte that selected n (from); it compares the rest of
// the prefix first, since a search skips it: if key leaves the prefix
// below it, every key of n is greater, and above it, every key is less.
// If key ends within the prefix, every key of n is at least key.
// Otherwise n's own leaf (its key is a proper prefix of key) and the
// children under smaller edge bytes are less than key, and the descent
// goes on into the child under key's next byte.
func countBelow(root *header, key []byte) int {
	below := 0
	n, from := root, 0
	for {
		in := n.inner()
		p := in.prefix()
		if m := min(len(key), len(p)); from < m {
			if c := comparePart(key[from:m], p[from:m]); c != 0 {
				if c > 0 {
					below += in.leaves
				}
				return below
			}
		}
		d := len(p)
		if len(key) <= d {
			return below
		}
		if in.leaf != nil {
			below++
		}
		kids, i, found := n.seekChild(key[d])
		below += countBefore(n, kids, i)
		if !found {
			return below
		}
		c := kids[i]
		if c.kind() == kindLeaf {
			if compareKey(c.leafKey(), key) < 0 {
				below++
			}
			return below
		}
		n, from = c, d+1
	}
}

// countBefore returns the number of leaves under kids[:i], the children of
// n before position i. It reads the shorter side: the children before i,
// or those from i on, whose counts it takes from n's.
func countBefore(n *header, kids []*header, i int) int {
	if i <= len(kids)-i {
		s := 0
		for _, c := range kids[:i] {
			if c != nil {
				s += leafCount(c)
			}
		}
		return s
	}
	in := n.inner()
	s := in.leaves
	if in.leaf != nil {
		s--
	}
	for _, c := range kids[i:] {
		if c != nil {
			s -= leafCount(c)
		}
	}
	return s
}
