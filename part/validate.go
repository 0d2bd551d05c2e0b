package part

import (
	"bytes"
	"fmt"
	"math/bits"
)

// validate checks the structural invariants of the tree, the leaf counts
// of count.go included, and returns the first violation found. It walks every node, so tests call it after every
// commit and builds with the invariants tag call it on every commit.
func (t Tree[T]) validate() error {
	r := t.root
	if r == nil || r.kind() == kindLeaf {
		return fmt.Errorf("root is not an inner node")
	}
	if r.inner().depth() != 0 {
		return fmt.Errorf("root has prefix %x", r.inner().prefix())
	}
	// The root's count, Len, is checked with every other node's.
	_, err := validateNode(r, true)
	return err
}

func validateNode(n *header, isRoot bool) (int, error) {
	in := n.inner()
	p := in.prefix()
	kids := n.children()
	count := 0
	for _, c := range kids {
		if c != nil {
			count++
		}
	}
	if count != int(n.inner().count) {
		return 0, fmt.Errorf("node %x: count %d but %d children", p, n.inner().count, count)
	}
	lo, hi := childRange(n.kind())
	if count < lo || count > hi {
		return 0, fmt.Errorf("node %x: kind %d with %d children", p, n.kind(), count)
	}
	if n.kind() == kindNode48 {
		bm := n.node48().bitmap
		if pc := bits.OnesCount64(bm[0]) + bits.OnesCount64(bm[1]) + bits.OnesCount64(bm[2]) + bits.OnesCount64(bm[3]); pc != count {
			return 0, fmt.Errorf("node48 %x: bitmap has %d bits for %d children", p, pc, count)
		}
	}
	leaves := 0
	entries := count
	if in.leaf != nil {
		entries++
		leaves++
		if in.leaf.kind() != kindLeaf {
			return 0, fmt.Errorf("node %x: leaf field holds a non-leaf", p)
		}
		if !bytes.Equal(in.leaf.leafKey(), p) {
			return 0, fmt.Errorf("node %x: leaf key %x differs from prefix", p, in.leaf.leafKey())
		}
	}
	if !isRoot && entries < 2 {
		return 0, fmt.Errorf("node %x: only %d entries below a non-root node", p, entries)
	}
	prevEdge := -1
	for i, c := range kids {
		if c == nil {
			continue
		}
		b := n.edgeAt(i)
		if int(b) <= prevEdge {
			return 0, fmt.Errorf("node %x: children out of order at edge %d", p, b)
		}
		prevEdge = int(b)
		if slot := n.findChild(b); slot == nil || *slot != c {
			return 0, fmt.Errorf("node %x: findChild(%d) does not find child %d", p, b, i)
		}
		k := c.nodeKey()
		if len(k) <= len(p) || !bytes.Equal(k[:len(p)], p) || k[len(p)] != b {
			return 0, fmt.Errorf("node %x: child under edge %d has key or prefix %x", p, b, k)
		}
		if c.kind() == kindLeaf {
			leaves++
			continue
		}
		l, err := validateNode(c, false)
		if err != nil {
			return 0, err
		}
		leaves += l
	}
	if in.leaves != leaves {
		return 0, fmt.Errorf("node %x: leaf count %d but %d leaves below (count.go, invariant 1)", p, in.leaves, leaves)
	}
	return leaves, nil
}

// childRange returns the least and greatest child count a node of kind k may
// have (the root may also have fewer than the least).
func childRange(k kind) (lo, hi int) {
	switch k {
	case kindNode4:
		return 0, 4
	case kindNode16:
		return shrink16 + 1, 16
	case kindNode48:
		return shrink48 + 1, 48
	default:
		return shrink256 + 1, 256
	}
}
