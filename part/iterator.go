package part

import (
	"bytes"
	"unsafe"
)

// Iterator walks the keys of a tree in ascending or descending order. It
// keeps an explicit stack of the child slices still to visit, so a scan
// allocates nothing per key.
//
// An Iterator holds the first frames of its stack in itself and points at
// nothing of its own, so an Iterator declared as a local variable stays on
// the goroutine's stack: a scan through it allocates nothing at all unless
// the tree is deeper than the frames it holds (long keys that share many
// prefixes), when the stack moves to the heap once. An Iterator reused
// through its Seek methods keeps that stack.
//
// An Iterator reads the tree it was created from; later commits do not
// affect it. It is not safe for concurrent use. The zero Iterator is empty
// until Reset.
type Iterator[T any] struct {
	root *header
	// n is the number of frames on the stack, which is fixed[:n] until
	// the stack outgrows fixed and spill[:n] from then on. The top frame
	// is visited first.
	n     int
	spill []frame
	// stop, if not nil, is the leaf at which the scan ends (SetEnd): it is
	// not returned, and nothing after it is.
	stop    *header
	reverse bool
	fixed   [iterFrames]frame
}

// iterFrames is the depth of stack an Iterator holds in itself: enough for
// every tree whose keys branch at fewer than 16 depths along any path (a
// million random 8-byte keys need 5).
const iterFrames = 16

// frame is a slice of nodes still to visit: nodes[i:] in an ascending scan,
// nodes[:i] in a descending one. An inner node met in a frame is replaced
// by its children and its own leaf (expand).
type frame struct {
	nodes []*header
	i     int32
	// dense: no slot of nodes is nil, as in the children of every node
	// but a node256, and in a leaf's slot. A frame not known to be dense
	// (a node256's children, any slice a seek pushes) is not.
	dense bool
}

// frames returns the stack's backing array. It is derived from the
// iterator on every call, never stored in it, which keeps an Iterator free
// of pointers to itself.
func (it *Iterator[T]) frames() []frame {
	if it.spill != nil {
		return it.spill
	}
	return it.fixed[:]
}

// push puts the nodes s on the stack, to be visited before those below,
// and returns the stack's backing array, which moves to the heap the first
// time the stack outgrows the iterator.
func (it *Iterator[T]) push(s []*header) []frame {
	st := it.frames()
	if it.n == len(st) {
		grown := make([]frame, 2*len(st))
		copy(grown, st)
		it.spill, st = grown, grown
	}
	f := frame{nodes: s}
	if it.reverse {
		f.i = int32(len(s))
	}
	st[it.n] = f
	it.n++
	return st
}

// expand pushes the inner node n's children and its own leaf, in the order
// of the scan: in an ascending scan the leaf, whose key is a prefix of all
// of theirs, comes first, so it goes on top; in a descending one it comes
// last.
func (it *Iterator[T]) expand(n *header) []frame {
	in := n.inner()
	if it.reverse && in.leaf != nil {
		it.push(unsafe.Slice(&in.leaf, 1))[it.n-1].dense = true
	}
	st := it.push(n.children())
	st[it.n-1].dense = n.kind() != kindNode256
	if !it.reverse && in.leaf != nil {
		st = it.push(unsafe.Slice(&in.leaf, 1))
		st[it.n-1].dense = true
	}
	return st
}

// pushTop pushes the subtree of n, found in the child slot slot (unused if
// n is an inner node).
func (it *Iterator[T]) pushTop(n *header, slot []*header) {
	if n.kind() == kindLeaf {
		it.push(slot)
		return
	}
	it.expand(n)
}

// next returns the next leaf of the scan, or nil at its end.
func (it *Iterator[T]) next() *header {
	if it.reverse {
		return it.prev()
	}
	st := it.frames()
	for it.n > 0 {
		f := &st[it.n-1]
		if int(f.i) >= len(f.nodes) {
			it.n--
			continue
		}
		c := f.nodes[f.i]
		f.i++
		switch {
		case c == nil: // an empty node256 slot
		case c.kind() != kindLeaf:
			st = it.expand(c)
		case c == it.stop:
			it.n = 0
			return nil
		default:
			return c
		}
	}
	return nil
}

// prev is next for descending scans.
func (it *Iterator[T]) prev() *header {
	st := it.frames()
	for it.n > 0 {
		f := &st[it.n-1]
		if f.i <= 0 {
			it.n--
			continue
		}
		f.i--
		c := f.nodes[f.i]
		switch {
		case c == nil:
		case c.kind() != kindLeaf:
			st = it.expand(c)
		case c == it.stop:
			it.n = 0
			return nil
		default:
			return c
		}
	}
	return nil
}

// Next returns the next key and value. ok is false when the scan is done.
// The key belongs to the tree and must not be modified.
func (it *Iterator[T]) Next() (key []byte, value T, ok bool) {
	if l := it.next(); l != nil {
		lf := asLeaf[T](l)
		return lf.key(), lf.value, true
	}
	return key, value, false
}

// NextValues copies the values of the next keys into dst, in the scan's
// order, and returns how many it copied: len(dst), or fewer once the scan
// is done. A loop over batches of values costs less per key than one call
// of Next per key: the leaves of a node are taken in one tight loop.
func (it *Iterator[T]) NextValues(dst []T) int {
	if it.reverse {
		k := 0
		for ; k < len(dst); k++ {
			l := it.prev()
			if l == nil {
				break
			}
			dst[k] = asLeaf[T](l).value
		}
		return k
	}
	st := it.frames()
	stop := it.stop
	k := 0
	for k < len(dst) && it.n > 0 {
		f := &st[it.n-1]
		nodes, i := f.nodes, int(f.i)
		for ; i < len(nodes) && k < len(dst); i++ {
			c := nodes[i]
			if c == nil {
				continue
			}
			if c.kind() != kindLeaf {
				break
			}
			if c == stop {
				it.n = 0
				return k
			}
			dst[k] = asLeaf[T](c).value
			k++
		}
		switch {
		case i == len(nodes):
			it.n--
		case k == len(dst):
			f.i = int32(i)
		default: // nodes[i] is an inner node
			f.i = int32(i + 1)
			st = it.expand(nodes[i])
		}
	}
	return k
}

// Reset makes the iterator read tree t, positioned before its smallest key.
func (it *Iterator[T]) Reset(t Tree[T]) {
	it.root = t.root
	it.First()
}

// SetTree makes the iterator read tree t, with nothing to scan until
// First, Last or a Seek method positions it: Reset without its First, for
// an iterator about to be positioned elsewhere.
func (it *Iterator[T]) SetTree(t Tree[T]) {
	it.start(false)
	it.root = t.root
}

// First positions the iterator before the smallest key, for an ascending
// scan of the whole tree.
func (it *Iterator[T]) First() {
	it.start(false)
	it.expand(it.root)
}

// Last positions the iterator after the largest key, for a descending scan
// of the whole tree.
func (it *Iterator[T]) Last() {
	it.start(true)
	it.expand(it.root)
}

// SeekPrefix positions the iterator for an ascending scan of the keys that
// start with prefix.
func (it *Iterator[T]) SeekPrefix(prefix []byte) { it.seekPrefix(prefix, false) }

// SeekReversePrefix positions the iterator for a descending scan of the keys
// that start with prefix.
func (it *Iterator[T]) SeekReversePrefix(prefix []byte) { it.seekPrefix(prefix, true) }

// SeekLowerBound positions the iterator for an ascending scan of the keys
// greater than or equal to key.
func (it *Iterator[T]) SeekLowerBound(key []byte) { it.seekLowerBound(key) }

// SeekReverseLowerBound positions the iterator for a descending scan of the
// keys less than or equal to key.
func (it *Iterator[T]) SeekReverseLowerBound(key []byte) { it.seekReverseLowerBound(key) }

// SetEnd ends the scan the last Seek (or First, Last, Reset) positioned at
// key: an ascending scan then returns only the keys less than key, a
// descending one only the keys greater than key; with inclusive, key
// itself too. It finds the leaf the scan stops at once, so that the scan
// compares leaves by identity instead of comparing every key with key.
// Positioning the iterator again removes the end.
func (it *Iterator[T]) SetEnd(key []byte, inclusive bool) {
	// The end is the first leaf past key in the scan's direction, found
	// by a scan of the other direction's Seek from key: an ascending scan
	// ends at the first key >= key (> key if inclusive).
	var e Iterator[T]
	e.root = it.root
	if it.reverse {
		e.seekReverseLowerBound(key)
	} else {
		e.seekLowerBound(key)
	}
	stop := e.next()
	if inclusive && stop != nil && bytes.Equal(stop.leafKey(), key) {
		stop = e.next()
	}
	it.stop = stop // nil if nothing is past key: the scan ends with the tree
	// The scan may start past key already (a Range whose bounds are the
	// wrong way round): then it ends before it starts.
	if l := it.peek(); l != nil {
		c := bytes.Compare(l.leafKey(), key)
		if it.reverse {
			c = -c
		}
		if c > 0 || c == 0 && !inclusive {
			it.n = 0
		}
	}
}

// peek returns the next leaf of the scan without taking it, or nil at the
// scan's end.
func (it *Iterator[T]) peek() *header {
	l := it.next()
	if l != nil {
		// Put l back: it is the last node taken from the top frame, as
		// next pushes nothing after the leaf it returns.
		f := &it.frames()[it.n-1]
		if it.reverse {
			f.i++
		} else {
			f.i--
		}
	}
	return l
}

// Skip drops the next key of the scan if it equals key, and reports
// whether it did. A descending scan of the keys less than key is
// SeekReverseLowerBound(key) and Skip(key).
func (it *Iterator[T]) Skip(key []byte) bool {
	if l := it.peek(); l != nil && bytes.Equal(l.leafKey(), key) {
		it.next()
		return true
	}
	return false
}

// start empties the stack for a scan in the given direction.
func (it *Iterator[T]) start(reverse bool) {
	if it.n > 0 {
		clear(it.frames()[:it.n])
	}
	it.n, it.stop, it.reverse = 0, nil, reverse
}

func (it *Iterator[T]) seekPrefix(prefix []byte, reverse bool) {
	it.start(reverse)
	top, parent := prefixNode(it.root, prefix)
	switch {
	case top == nil:
	case top.kind() == kindLeaf:
		// The one key with the prefix: its slot in its parent.
		slot := parent.findChild(top.leafKey()[parent.inner().depth()])
		it.push(unsafe.Slice(slot, 1))
	default:
		it.expand(top)
	}
}

// seekLowerBound follows key down from the root, pushing at each inner node
// the children whose edge byte is above key's, so that they are visited
// after everything below the child that key continues into.
func (it *Iterator[T]) seekLowerBound(key []byte) {
	it.start(false)
	n, d0 := it.root, 0 // n's prefix is known to match key before d0
	var self []*header  // n's slot in its parent; nil for the root
	for {
		p := n.inner().prefix()
		m := min(len(p), len(key))
		if c := comparePart(p[d0:m], key[d0:m]); c != 0 {
			if c > 0 {
				it.pushTop(n, self)
			}
			return
		}
		if len(key) <= len(p) {
			// key is a prefix of p: the whole subtree is >= key.
			it.pushTop(n, self)
			return
		}
		kids, i, found := n.seekChild(key[len(p)])
		if !found {
			it.push(kids[i:])
			return
		}
		if i+1 < len(kids) {
			it.push(kids[i+1:])
		}
		c := kids[i]
		self = kids[i : i+1]
		if c.kind() == kindLeaf {
			if compareKey(c.leafKey(), key) >= 0 {
				it.push(self)
			}
			return
		}
		n, d0 = c, len(p)+1
	}
}

// seekReverseLowerBound is seekLowerBound's mirror for descending scans of
// the keys <= key.
func (it *Iterator[T]) seekReverseLowerBound(key []byte) {
	it.start(true)
	n, d0 := it.root, 0
	var self []*header
	for {
		in := n.inner()
		p := in.prefix()
		m := min(len(p), len(key))
		if c := comparePart(p[d0:m], key[d0:m]); c != 0 {
			if c < 0 {
				it.pushTop(n, self)
			}
			return
		}
		if len(key) < len(p) {
			return // key is a proper prefix of p: the whole subtree is > key
		}
		if in.leaf != nil {
			// The node's own key is <= key and comes after its children.
			it.push(unsafe.Slice(&in.leaf, 1))
		}
		if len(key) == len(p) {
			return
		}
		kids, i, found := n.seekChild(key[len(p)])
		if i > 0 {
			it.push(kids[:i])
		}
		if !found {
			return
		}
		c := kids[i]
		self = kids[i : i+1]
		if c.kind() == kindLeaf {
			if compareKey(c.leafKey(), key) <= 0 {
				it.push(self)
			}
			return
		}
		n, d0 = c, len(p)+1
	}
}
