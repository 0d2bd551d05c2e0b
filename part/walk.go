package part

import "bytes"

// walk calls yield for every key in the subtree of n in ascending order and
// reports whether yield asked to go on. Recursion follows inner nodes only;
// leaves are yielded from their parent's loop.
func walk[T any](n *header, yield func([]byte, T) bool) bool {
	if n.kind() == kindLeaf {
		l := asLeaf[T](n)
		return yield(l.key(), l.value)
	}
	if lh := n.inner().leaf; lh != nil {
		l := asLeaf[T](lh)
		if !yield(l.key(), l.value) {
			return false
		}
	}
	for _, c := range n.children() {
		switch {
		case c == nil:
		case c.kind() == kindLeaf:
			l := asLeaf[T](c)
			if !yield(l.key(), l.value) {
				return false
			}
		default:
			if !walk(c, yield) {
				return false
			}
		}
	}
	return true
}

// walkReverse is walk in descending order: children from the last, then the
// node's own leaf, whose key is a prefix of all of theirs.
func walkReverse[T any](n *header, yield func([]byte, T) bool) bool {
	if n.kind() == kindLeaf {
		l := asLeaf[T](n)
		return yield(l.key(), l.value)
	}
	kids := n.children()
	for i := len(kids) - 1; i >= 0; i-- {
		c := kids[i]
		switch {
		case c == nil:
		case c.kind() == kindLeaf:
			l := asLeaf[T](c)
			if !yield(l.key(), l.value) {
				return false
			}
		default:
			if !walkReverse(c, yield) {
				return false
			}
		}
	}
	if lh := n.inner().leaf; lh != nil {
		l := asLeaf[T](lh)
		return yield(l.key(), l.value)
	}
	return true
}

// walkFrom calls yield, in ascending order, for the keys >= key in the
// subtree of n, whose prefix is known to match key before d0. It follows key
// down and walks whole every subtree above it, like seekLowerBound does with
// an explicit stack.
func walkFrom[T any](n *header, key []byte, d0 int, yield func([]byte, T) bool) bool {
	if n.kind() == kindLeaf {
		if bytes.Compare(n.leafKey(), key) >= 0 {
			l := asLeaf[T](n)
			return yield(l.key(), l.value)
		}
		return true
	}
	p := n.inner().prefix()
	m := min(len(p), len(key))
	if c := bytes.Compare(p[d0:m], key[d0:m]); c != 0 || len(key) <= len(p) {
		if c < 0 {
			return true // the whole subtree is below key
		}
		return walk(n, yield) // above key, or key is a prefix of p
	}
	// p is a proper prefix of key: n's own leaf is below key; children
	// from the one key continues into.
	b := key[len(p)]
	kids := n.children()
	i := n.lowerBound(b)
	if n.findChild(b) != nil {
		if !walkFrom(kids[i], key, len(p)+1, yield) {
			return false
		}
		i++
	}
	for _, c := range kids[i:] {
		if c != nil && !walk(c, yield) {
			return false
		}
	}
	return true
}

// walkTo calls yield, in descending order, for the keys <= key in the
// subtree of n: walkFrom's mirror.
func walkTo[T any](n *header, key []byte, d0 int, yield func([]byte, T) bool) bool {
	if n.kind() == kindLeaf {
		if bytes.Compare(n.leafKey(), key) <= 0 {
			l := asLeaf[T](n)
			return yield(l.key(), l.value)
		}
		return true
	}
	in := n.inner()
	p := in.prefix()
	m := min(len(p), len(key))
	if c := bytes.Compare(p[d0:m], key[d0:m]); c != 0 || len(key) < len(p) {
		if c < 0 {
			return walkReverse(n, yield) // the whole subtree is below key
		}
		return true // above key, or key is a proper prefix of p
	}
	if len(key) > len(p) {
		b := key[len(p)]
		kids := n.children()
		i := n.lowerBound(b)
		if n.findChild(b) != nil && !walkTo(kids[i], key, len(p)+1, yield) {
			return false
		}
		for j := i - 1; j >= 0; j-- {
			if c := kids[j]; c != nil && !walkReverse(c, yield) {
				return false
			}
		}
	}
	if in.leaf != nil {
		l := asLeaf[T](in.leaf)
		return yield(l.key(), l.value)
	}
	return true
}

// minLeaf returns the leaf of the smallest key in the subtree of n, or nil
// if it holds none. A node's own leaf, whose key is a prefix of all keys
// below it, is its smallest.
func minLeaf(n *header) *header {
	for n.kind() != kindLeaf {
		if l := n.inner().leaf; l != nil {
			return l
		}
		var first *header
		for _, c := range n.children() {
			if c != nil {
				first = c
				break
			}
		}
		if first == nil {
			return nil
		}
		n = first
	}
	return n
}
