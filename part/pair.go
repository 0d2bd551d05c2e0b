package part

// Pair is a value made of two parts. A scan of a tree of pairs can hand the
// parts to a function of two arguments directly (YieldPairs): the form in
// which a database returns an object and its revision as an iter.Seq2,
// with nothing between the tree and the caller's loop.
type Pair[A, B any] struct {
	First  A
	Second B
}

// YieldPairs calls yield with the parts of the values of the rest of it's
// scan, in the scan's order, until yield returns false, and reports whether
// the scan ran to its end.
//
// Each key costs one call of yield and no more: the leaves of a node are
// read in one loop, and the iterator's stack is touched only between nodes
// (BenchmarkDB_FullIteration_All and bench/compare's FullScan_Primary guard
// it).
func YieldPairs[A, B any](it *Iterator[Pair[A, B]], yield func(A, B) bool) bool {
	if it.reverse {
		return yieldPairsReverse(it, yield)
	}
	st := it.frames()
	stop := it.stop
	for it.n > 0 {
		f := &st[it.n-1]
		nodes, i := f.nodes, f.i
		for i < len(nodes) {
			c := nodes[i]
			i++
			if c == nil {
				continue
			}
			if c.kind() != kindLeaf {
				f.i = i
				st = it.expand(c)
				goto next
			}
			if c == stop {
				it.n = 0
				return true
			}
			if v := &asLeaf[Pair[A, B]](c).value; !yield(v.First, v.Second) {
				f.i = i
				return false
			}
		}
		it.n--
	next:
	}
	return true
}

// yieldPairsReverse is YieldPairs for descending scans.
func yieldPairsReverse[A, B any](it *Iterator[Pair[A, B]], yield func(A, B) bool) bool {
	st := it.frames()
	stop := it.stop
	for it.n > 0 {
		f := &st[it.n-1]
		nodes, i := f.nodes, f.i
		for i > 0 {
			i--
			c := nodes[i]
			if c == nil {
				continue
			}
			if c.kind() != kindLeaf {
				f.i = i
				st = it.expand(c)
				goto next
			}
			if c == stop {
				it.n = 0
				return true
			}
			if v := &asLeaf[Pair[A, B]](c).value; !yield(v.First, v.Second) {
				f.i = i
				return false
			}
		}
		it.n--
	next:
	}
	return true
}
