package part

import "bytes"

// Floor returns the greatest key that is less than or equal to key, and
// its value; ok is false if every key is greater. It is the first key of
// ReverseLowerBound(key), found in one descent that keeps no stack and
// allocates nothing: the search of Strata's longest-prefix-match index
// is a few of these. The key belongs to the tree and must not be
// modified.
func (t Tree[T]) Floor(key []byte) (k []byte, value T, ok bool) {
	if l := floor(t.root, key); l != nil {
		lf := asLeaf[T](l)
		return lf.key(), lf.value, true
	}
	return nil, value, false
}

// floor returns the leaf with the greatest key <= key, or nil. It follows
// key down from the root, remembering in below the deepest subtree met
// whose keys are all less than key: a child whose edge byte is below
// key's, or an inner node's own leaf (its key is a proper prefix of key).
// A deeper one holds greater keys than a shallower, and at one node the
// child with the greatest edge below key's byte holds greater keys than
// the node's leaf. Where key leaves the tree, the answer is key itself if
// present, or else the greatest key of below.
func floor(root *header, key []byte) *header {
	var below *header
	n, d0 := root, 0 // n's prefix is known to match key before d0
	for {
		in := n.inner()
		p := in.prefix()
		m := min(len(p), len(key))
		if d0 < m { // most nodes add no bytes to their parent's prefix
			if c := bytes.Compare(p[d0:m], key[d0:m]); c != 0 {
				if c < 0 {
					return lastLeaf(n) // the whole subtree is < key
				}
				return lastLeaf(below)
			}
		}
		if len(key) <= len(p) {
			// key is p, whose leaf is the answer if there is one, or a
			// proper prefix of p: every key below n is greater.
			if len(key) == len(p) && in.leaf != nil {
				return in.leaf
			}
			return lastLeaf(below)
		}
		if in.leaf != nil {
			below = in.leaf
		}
		// The children below key's byte b, and the one at b, if any.
		b := key[len(p)]
		kids := n.children()
		var c *header
		i := 0
		switch n.kind() {
		case kindNode256:
			c, i = kids[b], int(b)
			for i > 0 && kids[i-1] == nil {
				i--
			}
		case kindNode48:
			bm := &n.node48().bitmap
			if i = rank48(bm, b); has48(bm, b) {
				c = kids[i]
			}
		default:
			if i = n.lowerBound(b); i < len(kids) && n.edgeAt(i) == b {
				c = kids[i]
			}
		}
		if i > 0 {
			below = kids[i-1]
		}
		switch {
		case c == nil:
			return lastLeaf(below)
		case c.kind() == kindLeaf:
			if bytes.Compare(c.leafKey(), key) <= 0 {
				return c
			}
			return lastLeaf(below)
		}
		n, d0 = c, len(p)+1
	}
}

// lastLeaf returns the leaf with the greatest key in the subtree of n (a
// leaf or an inner node), or nil if n is nil.
func lastLeaf(n *header) *header {
	for n != nil && n.kind() != kindLeaf {
		kids := n.children()
		var last *header
		for j := len(kids) - 1; j >= 0 && last == nil; j-- {
			last = kids[j]
		}
		if last == nil {
			return n.inner().leaf
		}
		n = last
	}
	return n
}
