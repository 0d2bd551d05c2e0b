package part

import "unsafe"

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
// Each key costs one call of yield and little more: the leaves of a node
// are read in one tight loop (yieldRun), which keeps only what it needs
// across the calls of yield, and the iterator's stack is touched only
// between nodes (BenchmarkDB_FullIteration_All and bench/compare's
// FullScan_Primary guard it).
func YieldPairs[A, B any](it *Iterator[Pair[A, B]], yield func(A, B) bool) bool {
	if it.reverse {
		return yieldPairsReverse(it, yield)
	}
	st := it.frames()
	for it.n > 0 {
		f := &st[it.n-1]
		if int(f.i) >= len(f.nodes) {
			it.n--
			continue
		}
		var n *header // the inner node to expand
		if c := f.nodes[f.i]; c != nil && c.kind() != kindLeaf {
			// An inner node first (a node's children are inner nodes
			// or leaves alike): expanded here, without a yieldRun
			// that would return at once.
			f.i++
			n = c
		} else {
			var p **header
			var end int
			switch {
			case it.stop == nil && f.dense:
				p, end = yieldDenseToEnd(&f.nodes[f.i], &f.nodes[len(f.nodes)-1], yield)
			case it.stop == nil:
				p, end = yieldRunToEnd(&f.nodes[f.i], &f.nodes[len(f.nodes)-1], yield)
			default:
				p, end = yieldRun(&f.nodes[f.i], &f.nodes[len(f.nodes)-1], it.stop, yield)
			}
			switch end {
			case runDone: // the frame is done: no position to keep
				it.n--
				continue
			case runInner:
				f.i = int32(slotIndex(f.nodes, p) + 1)
				n = *p
			case runStop:
				it.n = 0
				return true
			default: // runBreak
				f.i = int32(slotIndex(f.nodes, p) + 1)
				return false
			}
		}
		// expand for an ascending scan, written out here, where it runs
		// for every run of leaves: the children go on the stack, then
		// the node's own leaf, which comes first.
		if it.n+2 > len(st) {
			st = it.expand(n)
			continue
		}
		st[it.n] = frame{nodes: n.children(), dense: n.kind() != kindNode256}
		it.n++
		if l := &n.inner().leaf; *l != nil {
			st[it.n] = frame{nodes: unsafe.Slice(l, 1), dense: true}
			it.n++
		}
	}
	return true
}

// slotIndex returns the index in nodes of its slot p.
func slotIndex(nodes []*header, p **header) int {
	return int((uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(&nodes[0]))) / unsafe.Sizeof(p))
}

// How a yieldRun ended.
const (
	runDone  = iota // the nodes are done
	runInner        // the node it ended at is an inner node
	runStop         // the node it ended at is the scan's end leaf
	runBreak        // yield returned false
)

// yieldRun yields the values of the leaves of the node slots from p to
// last (a slot of the same slice, not before p) until it meets an inner
// node or the leaf stop, or yield returns false, and returns the slot it
// ended at and why.
//
// It is a function of its own so that its loop holds few values: Go's
// calling convention saves no register across a call, and every value the
// loop keeps is reloaded after each call of yield. Here they are p, last,
// stop and yield.
//
//go:noinline
func yieldRun[A, B any](p, last **header, stop *header, yield func(A, B) bool) (**header, int) {
	for {
		c := *p
		switch {
		case c == nil: // an empty node256 slot
		case c == stop:
			return p, runStop
		case c.kind() != kindLeaf:
			return p, runInner
		default:
			if v := &asLeaf[Pair[A, B]](c).value; !yield(v.First, v.Second) {
				return p, runBreak
			}
		}
		if p == last {
			return p, runDone
		}
		p = (**header)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(c)))
	}
}

// yieldRunToEnd is yieldRun for a scan without an end leaf, the common
// case (All, Prefix, List, LowerBound): one value fewer to compare with
// each slot and to reload after each call of yield.
//
//go:noinline
func yieldRunToEnd[A, B any](p, last **header, yield func(A, B) bool) (**header, int) {
	for {
		c := *p
		switch {
		case c == nil: // an empty node256 slot
		case c.kind() != kindLeaf:
			return p, runInner
		default:
			if v := &asLeaf[Pair[A, B]](c).value; !yield(v.First, v.Second) {
				return p, runBreak
			}
		}
		if p == last {
			return p, runDone
		}
		p = (**header)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(c)))
	}
}

// yieldDenseToEnd is yieldRunToEnd for slots none of which is nil (a
// dense frame): one compare fewer for each.
//
//go:noinline
func yieldDenseToEnd[A, B any](p, last **header, yield func(A, B) bool) (**header, int) {
	for {
		c := *p
		if c.kind() != kindLeaf {
			return p, runInner
		}
		if v := &asLeaf[Pair[A, B]](c).value; !yield(v.First, v.Second) {
			return p, runBreak
		}
		if p == last {
			return p, runDone
		}
		p = (**header)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(c)))
	}
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
