package part

import (
	"bytes"
	"unsafe"
)

// Iterator walks the keys of a tree in ascending or descending order. It
// keeps an explicit stack of the child slices still to visit, so a scan
// allocates nothing per key, and an Iterator reused through its Seek methods
// allocates nothing at all once its stack has grown to the tree's depth.
//
// An Iterator reads the tree it was created from; later commits do not
// affect it. It is not safe for concurrent use.
type Iterator[T any] struct {
	root *header
	// stack holds slices of nodes still to visit; the top is visited first.
	// Ascending scans consume each slice from the front, descending scans
	// from the back. An inner node popped in an ascending scan yields its
	// own leaf and then pushes its children; in a descending scan it pushes
	// its leaf first, so the leaf comes out after all the children.
	stack   []frame
	one     [1]*header // backs the stack entry for a scan that starts at one node
	reverse bool
	buf     [8]frame // initial backing array of stack, deep enough for most trees
}

// frame is a slice of nodes still to visit: nodes[i:] in an ascending scan,
// nodes[:i] in a descending one. Keeping the position as an index makes
// taking a node one store of i.
type frame struct {
	nodes []*header
	i     int
}

// push puts the nodes s on the stack, to be visited before those below.
func (it *Iterator[T]) push(s []*header) {
	f := frame{nodes: s}
	if it.reverse {
		f.i = len(s)
	}
	it.stack = append(it.stack, f)
}

// Next returns the next key and value. ok is false when the scan is done.
// The key belongs to the tree and must not be modified.
func (it *Iterator[T]) Next() (key []byte, value T, ok bool) {
	if it.reverse {
		return it.prev()
	}
	for len(it.stack) > 0 {
		f := &it.stack[len(it.stack)-1]
		if f.i >= len(f.nodes) {
			it.stack = it.stack[:len(it.stack)-1]
			continue
		}
		n := f.nodes[f.i]
		f.i++
		if n == nil {
			continue // an empty node256 slot
		}
		if n.kind() == kindLeaf {
			l := asLeaf[T](n)
			return l.key(), l.value, true
		}
		it.stack = append(it.stack, frame{nodes: n.children()})
		if lh := n.inner().leaf; lh != nil {
			l := asLeaf[T](lh)
			return l.key(), l.value, true
		}
	}
	return key, value, false
}

// prev is Next for descending scans: an inner node's own leaf is pushed
// below its children, so that it comes after all of them.
func (it *Iterator[T]) prev() (key []byte, value T, ok bool) {
	for len(it.stack) > 0 {
		f := &it.stack[len(it.stack)-1]
		if f.i <= 0 {
			it.stack = it.stack[:len(it.stack)-1]
			continue
		}
		f.i--
		n := f.nodes[f.i]
		if n == nil {
			continue
		}
		if n.kind() == kindLeaf {
			l := asLeaf[T](n)
			return l.key(), l.value, true
		}
		in := n.inner()
		if in.leaf != nil {
			it.stack = append(it.stack, frame{nodes: unsafe.Slice(&in.leaf, 1), i: 1})
		}
		kids := n.children()
		it.stack = append(it.stack, frame{nodes: kids, i: len(kids)})
	}
	return key, value, false
}

// Reset makes the iterator read tree t, positioned before its smallest key.
func (it *Iterator[T]) Reset(t Tree[T]) {
	it.root = t.root
	it.seekAll(t.root, false)
}

// First positions the iterator before the smallest key, for an ascending
// scan of the whole tree.
func (it *Iterator[T]) First() { it.seekAll(it.root, false) }

// Last positions the iterator after the largest key, for a descending scan
// of the whole tree.
func (it *Iterator[T]) Last() { it.seekAll(it.root, true) }

// SeekPrefix positions the iterator for an ascending scan of the keys that
// start with prefix.
func (it *Iterator[T]) SeekPrefix(prefix []byte) {
	top, _ := prefixNode(it.root, prefix)
	it.seekSubtree(top, false)
}

// SeekReversePrefix positions the iterator for a descending scan of the keys
// that start with prefix.
func (it *Iterator[T]) SeekReversePrefix(prefix []byte) {
	top, _ := prefixNode(it.root, prefix)
	it.seekSubtree(top, true)
}

// SeekLowerBound positions the iterator for an ascending scan of the keys
// greater than or equal to key.
func (it *Iterator[T]) SeekLowerBound(key []byte) { it.seekLowerBound(it.root, key) }

// SeekReverseLowerBound positions the iterator for a descending scan of the
// keys less than or equal to key.
func (it *Iterator[T]) SeekReverseLowerBound(key []byte) { it.seekReverseLowerBound(it.root, key) }

func (it *Iterator[T]) start(reverse bool) {
	if it.stack == nil {
		it.stack = it.buf[:0]
	}
	clear(it.stack)
	it.stack = it.stack[:0]
	it.reverse = reverse
}

func (it *Iterator[T]) seekAll(root *header, reverse bool) {
	it.seekSubtree(root, reverse)
}

func (it *Iterator[T]) seekSubtree(top *header, reverse bool) {
	it.start(reverse)
	if top != nil {
		it.one[0] = top
		it.push(it.one[:])
	}
}

// seekLowerBound follows key down from the root, pushing at each inner node
// the children whose edge byte is above key's, so that they are visited
// after everything below the child that key continues into.
func (it *Iterator[T]) seekLowerBound(root *header, key []byte) {
	it.start(false)
	it.one[0] = root
	self := it.one[:]
	n, d0 := root, 0 // n's prefix is known to match key before d0
	for {
		p := n.inner().prefix()
		m := min(len(p), len(key))
		if c := bytes.Compare(p[d0:m], key[d0:m]); c != 0 {
			if c > 0 {
				it.push(self)
			}
			return
		}
		if len(key) <= len(p) {
			// key is a prefix of p: the whole subtree is >= key.
			it.push(self)
			return
		}
		b := key[len(p)]
		kids := n.children()
		i := n.lowerBound(b)
		if n.findChild(b) == nil {
			it.push(kids[i:])
			return
		}
		it.push(kids[i+1:])
		c := kids[i]
		self = kids[i : i+1]
		if c.kind() == kindLeaf {
			if bytes.Compare(c.leafKey(), key) >= 0 {
				it.push(self)
			}
			return
		}
		n, d0 = c, len(p)+1
	}
}

// seekReverseLowerBound is seekLowerBound's mirror for descending scans of
// the keys <= key.
func (it *Iterator[T]) seekReverseLowerBound(root *header, key []byte) {
	it.start(true)
	it.one[0] = root
	self := it.one[:]
	n, d0 := root, 0
	for {
		in := n.inner()
		p := in.prefix()
		m := min(len(p), len(key))
		if c := bytes.Compare(p[d0:m], key[d0:m]); c != 0 {
			if c < 0 {
				it.push(self)
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
		b := key[len(p)]
		kids := n.children()
		i := n.lowerBound(b)
		it.push(kids[:i])
		if n.findChild(b) == nil {
			return
		}
		c := kids[i]
		self = kids[i : i+1]
		if c.kind() == kindLeaf {
			if bytes.Compare(c.leafKey(), key) <= 0 {
				it.push(self)
			}
			return
		}
		n, d0 = c, len(p)+1
	}
}
