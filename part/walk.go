package part

// walk calls yield for every key in the subtree of n in ascending order and
// reports whether yield asked to go on. Recursion follows inner nodes only;
// leaves are yielded from their parent's loop.
func walk[T any](n *header, yield func([]byte, T) bool) bool {
	if n.kind() == kindLeaf {
		l := asLeaf[T](n)
		return yield(l.key, l.value)
	}
	if lh := n.inner().leaf; lh != nil {
		l := asLeaf[T](lh)
		if !yield(l.key, l.value) {
			return false
		}
	}
	for _, c := range n.children() {
		switch {
		case c == nil:
		case c.kind() == kindLeaf:
			l := asLeaf[T](c)
			if !yield(l.key, l.value) {
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
		return yield(l.key, l.value)
	}
	kids := n.children()
	for i := len(kids) - 1; i >= 0; i-- {
		c := kids[i]
		switch {
		case c == nil:
		case c.kind() == kindLeaf:
			l := asLeaf[T](c)
			if !yield(l.key, l.value) {
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
		return yield(l.key, l.value)
	}
	return true
}
