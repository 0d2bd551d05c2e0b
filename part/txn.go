package part

import (
	"bytes"
	"iter"
	"math"
	"sync/atomic"
	"unsafe"
)

// Txn is a batch of changes to a tree. It starts from a Tree and builds the
// next one: nodes it creates are its own and are changed in place by later
// writes in the same transaction; nodes it shares with the tree it started
// from are copied before they change (path copying), so that tree and every
// older one keep reading exactly as before.
//
// Commit returns the new tree. The Txn stays usable after Commit and goes on
// from the tree it returned. To abandon changes, drop the Txn or Reset it.
//
// A Txn is not safe for concurrent use. Reads through the Txn see its own
// writes.
type Txn[T any] struct {
	opts *options
	root *header // its leaf count is the number of keys (count.go)
	// id owns the nodes this transaction created since it began or last
	// committed (see header.txn), or is noID until it creates one: then it
	// takes a fresh id (nodeID). Commit sets noID again, which freezes
	// everything created before. A transaction that writes nothing takes
	// no id, and one that does takes one atomic add.
	id uint64
	// first is the first id the transaction took since Reset (noID until
	// it took one). Ids only grow, so the nodes it created since are those
	// with an id of at least first: the tree it started from holds only
	// older ones. Discard closes their watch channels.
	first uint64
	// exposed: a reader may have taken a watch channel of a node the
	// transaction created (Snapshot, GetWatch) since Reset. Without it,
	// Discard has no channel to close and walks nothing.
	exposed bool
	// retired lists the nodes of committed trees that this transaction has
	// copied or removed, in no particular order and each once. Notify seals
	// them, closing their watch channels.
	retired []*header
	// path is scratch space for the inner nodes an operation passed
	// through, with the edge byte taken from each, from the root's child
	// down: not the root, which the Txn holds anyway, so that a write
	// that stays near the root records little (replaceUp and recount
	// treat the root apart).
	path []pathEntry

	// Initial backing arrays of retired and path, so that a short
	// transaction allocates neither.
	retiredBuf [8]*header
	pathBuf    [8]pathEntry
}

type pathEntry struct {
	n *header
	b byte
}

// Reset starts the transaction again from tree, dropping its uncommitted
// changes. The watch channels of nodes the dropped changes would have
// replaced stay open. Use it to begin anew after a commit; to throw away
// changes that readers may have watched, use Discard.
func (t *Txn[T]) Reset(tree Tree[T]) {
	t.opts, t.root = tree.opts, tree.root
	t.id, t.first, t.exposed = noID, noID, false
	if t.retired == nil {
		t.retired, t.path = t.retiredBuf[:0], t.pathBuf[:0]
	}
	clear(t.retired)
	t.retired = t.retired[:0]
}

// noID is a Txn's id before it created a node. No node carries it: node
// ids have 56 bits (header.tk).
const noID = math.MaxUint64

// nodeID returns the id to create a node with, taking one if the
// transaction has none yet.
func (t *Txn[T]) nodeID() uint64 {
	if t.id == noID {
		t.id = nextTxnID()
		if t.first == noID {
			t.first = t.id
		}
	}
	return t.id
}

// Discard throws the transaction's changes away, as Reset does, and closes
// the watch channels readers took (through Snapshot or GetWatch) on the
// nodes the transaction created since it began: what those channels watch
// will never be in a committed tree, so they must not stay open. The
// channels of the nodes of committed trees stay open, as with Reset. The
// transaction starts again from tree.
//
// Discard must not be called once a tree the transaction returned
// (Commit, CommitOnly) has been published to readers: it would close the
// channels of that tree's nodes. A caller that may abort after CommitOnly
// (a commit that fails after the tree was built, before it was published)
// calls Discard; one that published calls Reset.
func (t *Txn[T]) Discard(tree Tree[T]) {
	if t.exposed && t.first != noID {
		for _, n := range t.retired {
			if n.txn() >= t.first {
				n.seal()
			}
		}
		sealSince(t.root, t.first)
	}
	t.Reset(tree)
}

// sealSince seals n and the nodes below it created by transactions with
// an id of at least first. A node created earlier is from a committed
// tree, and so is everything below that node.
func sealSince(n *header, first uint64) {
	if n.txn() < first {
		return
	}
	n.seal()
	if n.kind() == kindLeaf {
		return
	}
	if l := n.inner().leaf; l != nil {
		sealSince(l, first)
	}
	for _, c := range n.children() {
		if c != nil {
			sealSince(c, first)
		}
	}
}

// Len returns the number of keys in the transaction's current tree.
func (t *Txn[T]) Len() int {
	if t.root == nil {
		return 0 // a Txn never Reset
	}
	return t.root.inner().leaves
}

// Get returns the value stored under key, including the transaction's own
// uncommitted writes.
func (t *Txn[T]) Get(key []byte) (value T, found bool) {
	if l := search(t.root, key); l != nil {
		return asLeaf[T](l).value, true
	}
	return value, false
}

// MaxKeyLen is the length of the longest key a tree holds: 4 GiB - 1.
// Insert and Modify panic on a longer key.
const MaxKeyLen = math.MaxUint32

// Insert stores value under key, replacing and returning any previous value.
// The tree keeps its own copy of key.
func (t *Txn[T]) Insert(key []byte, value T) (old T, hadOld bool) {
	old, hadOld, _, _ = t.upsert(key, value, nil)
	return old, hadOld
}

// InsertWatch is Insert that also returns a watch channel for key: it
// closes when a later write replaces or deletes the value stored here and
// that write is committed, whether the write is in this transaction or a
// later one. If the transaction is discarded (Discard), the value is never
// stored and the channel closes; after a Reset it never does. In a RootOnlyWatch tree it is the root's
// channel, as for GetWatch. It costs no second descent of the tree
// (BenchmarkTxn_InsertWatch).
func (t *Txn[T]) InsertWatch(key []byte, value T) (old T, hadOld bool, watch <-chan struct{}) {
	old, hadOld, _, l := t.upsert(key, value, nil)
	return old, hadOld, t.leafWatch(l)
}

// leafWatch returns the watch channel of the leaf l that the transaction
// just wrote. Taking the channel makes the leaf immutable (Txn.mutable),
// so a later write in the transaction replaces the leaf and its Commit
// closes the channel.
func (t *Txn[T]) leafWatch(l *header) <-chan struct{} {
	t.exposed = true
	if t.opts.rootOnlyWatch {
		return t.root.watchChan()
	}
	return l.watchChan()
}

// Modify stores under key the value returned by fn, which is called with the
// current value and whether there is one, and returns the previous value.
func (t *Txn[T]) Modify(key []byte, fn func(old T, found bool) T) (old T, hadOld bool) {
	var zero T
	old, hadOld, _, _ = t.upsert(key, zero, func(old T, found bool) (T, bool) { return fn(old, found), true })
	return old, hadOld
}

// ModifyWatch is Modify that also returns a watch channel for key, as
// InsertWatch does.
func (t *Txn[T]) ModifyWatch(key []byte, fn func(old T, found bool) T) (old T, hadOld bool, watch <-chan struct{}) {
	var zero T
	old, hadOld, _, l := t.upsert(key, zero, func(old T, found bool) (T, bool) { return fn(old, found), true })
	return old, hadOld, t.leafWatch(l)
}

// Update is Modify that may decline: fn is called with the current value and
// whether there is one, before anything changes; if it returns false, the
// tree is left exactly as it was (no node copied, no watch channel to
// close). updated reports whether the value was stored. It spares a caller
// that must look at the old value before deciding a Get and a second
// descent of the tree.
func (t *Txn[T]) Update(key []byte, fn func(old T, found bool) (T, bool)) (old T, hadOld, updated bool) {
	var zero T
	old, hadOld, updated, _ = t.upsert(key, zero, fn)
	return old, hadOld, updated
}

// Delete removes key and returns the value it had.
func (t *Txn[T]) Delete(key []byte) (old T, hadOld bool) {
	old, hadOld, _ = t.deleteIf(key, nil)
	return old, hadOld
}

// DeleteIf is Delete that may decline: if key is stored, cond is called
// with its value before anything changes, and the key is removed only if
// it returns true; otherwise the tree is left exactly as it was. deleted
// reports whether the key was removed. It spares a caller that must look
// at the old value before deciding a Get and a second descent of the tree.
func (t *Txn[T]) DeleteIf(key []byte, cond func(old T) bool) (old T, found, deleted bool) {
	return t.deleteIf(key, cond)
}

func (t *Txn[T]) deleteIf(key []byte, cond func(T) bool) (old T, found, deleted bool) {
	t.path = t.path[:0]
	n := t.root
	for {
		in := n.inner()
		d := in.depth()
		if d >= len(key) {
			l := in.leaf
			if d != len(key) || l == nil || !bytes.Equal(l.leafKey(), key) {
				return old, false, false
			}
			old = asLeaf[T](l).value
			if cond != nil && !cond(old) {
				return old, true, false
			}
			t.retire(l)
			t.recount(t.removeLeaf(n), -1)
			return old, true, true
		}
		b := key[d]
		slot := n.findChild(b)
		if slot == nil {
			return old, false, false
		}
		c := *slot
		if c.kind() == kindLeaf {
			if !bytes.Equal(c.leafKey(), key) {
				return old, false, false
			}
			old = asLeaf[T](c).value
			if cond != nil && !cond(old) {
				return old, true, false
			}
			t.retire(c)
			t.recount(t.removeChild(n, b, c), -1)
			return old, true, true
		}
		if n != t.root {
			t.path = append(t.path, pathEntry{n, b})
		}
		n = c
	}
}

// DeletePrefix removes every key that starts with prefix and returns how
// many it removed.
func (t *Txn[T]) DeletePrefix(prefix []byte) int {
	if len(prefix) == 0 {
		removed := t.Len()
		if t.opts.rootOnlyWatch {
			t.retire(t.root) // only the root has a channel to close
		} else {
			t.retireSubtree(t.root)
		}
		t.root = newInner(kindNode4, t.nodeID(), nil, nil)
		return removed
	}
	t.path = t.path[:0]
	n := t.root
	for {
		d := n.inner().depth()
		b := prefix[d]
		slot := n.findChild(b)
		if slot == nil {
			return 0
		}
		c := *slot
		k := c.nodeKey()
		if len(k) < len(prefix) {
			if c.kind() == kindLeaf || !bytes.Equal(k[d+1:], prefix[d+1:len(k)]) {
				return 0
			}
			if n != t.root {
				t.path = append(t.path, pathEntry{n, b})
			}
			n = c
			continue
		}
		if !bytes.Equal(k[d+1:len(prefix)], prefix[d+1:]) {
			return 0
		}
		removed := t.retireSubtree(c)
		t.recount(t.removeChild(n, b, c), -removed)
		return removed
	}
}

// CommitOnly returns the transaction's tree without closing the watch
// channels of the nodes it replaced; Notify does that. Splitting the two
// lets a caller publish the new tree (and anything built from it) before
// waking the watchers. The transaction goes on from the returned tree.
func (t *Txn[T]) CommitOnly() Tree[T] {
	t.id = noID
	tree := Tree[T]{opts: t.opts, root: t.root}
	if invariants {
		if err := tree.validate(); err != nil {
			panic(err)
		}
	}
	return tree
}

// Notify closes the watch channels of every node that the transaction's
// committed changes replaced or removed.
func (t *Txn[T]) Notify() {
	for _, n := range t.retired {
		n.seal()
	}
	clear(t.retired)
	t.retired = t.retired[:0]
}

// Commit returns the transaction's tree and closes the watch channels of the
// nodes its changes replaced: CommitOnly followed by Notify.
func (t *Txn[T]) Commit() Tree[T] {
	tree := t.CommitOnly()
	t.Notify()
	return tree
}

// Snapshot returns the transaction's current contents as a Tree, without
// ending the transaction or closing any watch channel. The nodes written so
// far become immutable, so later writes in the transaction copy them again
// and leave the snapshot, and iterators over it, undisturbed.
func (t *Txn[T]) Snapshot() Tree[T] {
	t.id, t.exposed = noID, true
	return Tree[T]{opts: t.opts, root: t.root}
}

// GetWatch is Get that also returns a watch channel for the key, as
// Tree.GetWatch does. For a key the transaction wrote, the channel closes
// when a commit after this transaction's replaces or deletes the key, or
// when this transaction deletes it and commits.
func (t *Txn[T]) GetWatch(key []byte) (value T, watch <-chan struct{}, found bool) {
	t.exposed = true
	return getWatch[T](t.opts, t.root, key)
}

// All returns an iterator over the transaction's keys and values in
// ascending order. Writes made while iterating are not seen by the iterator.
func (t *Txn[T]) All() iter.Seq2[[]byte, T] { return t.Snapshot().All() }

// ReverseAll is All in descending order.
func (t *Txn[T]) ReverseAll() iter.Seq2[[]byte, T] { return t.Snapshot().ReverseAll() }

// Prefix iterates over the keys starting with prefix in ascending order.
func (t *Txn[T]) Prefix(prefix []byte) iter.Seq2[[]byte, T] {
	return t.Snapshot().Prefix(prefix)
}

// ReversePrefix is Prefix in descending order.
func (t *Txn[T]) ReversePrefix(prefix []byte) iter.Seq2[[]byte, T] {
	return t.Snapshot().ReversePrefix(prefix)
}

// LowerBound iterates over the keys >= key in ascending order.
func (t *Txn[T]) LowerBound(key []byte) iter.Seq2[[]byte, T] {
	return t.Snapshot().LowerBound(key)
}

// ReverseLowerBound iterates over the keys <= key in descending order.
func (t *Txn[T]) ReverseLowerBound(key []byte) iter.Seq2[[]byte, T] {
	return t.Snapshot().ReverseLowerBound(key)
}

// upsert stores value (or, if fn is not nil, fn's result) under key, and
// returns the leaf that holds it (nil if fn declined), for InsertWatch.
func (t *Txn[T]) upsert(key []byte, value T, fn func(T, bool) (T, bool)) (old T, hadOld, updated bool, leaf *header) {
	t.path = t.path[:0]
	n := t.root
	for {
		in := n.inner()
		d := in.depth()
		if d == len(key) {
			// The key ends at n: it is n's own leaf.
			l := in.leaf
			if l != nil {
				old, hadOld = asLeaf[T](l).value, true
			}
			if declined(fn, &value, old, hadOld) {
				return old, hadOld, false, nil
			}
			if l != nil && t.mutable(l) {
				asLeaf[T](l).value = value
				return old, hadOld, true, l
			}
			nl := t.newLeaf(key, value)
			if l != nil {
				t.retire(l)
				t.setLeaf(n, nl)
			} else {
				t.recount(t.setLeaf(n, nl), 1)
			}
			return old, hadOld, true, nl
		}
		b := key[d]
		slot := n.findChild(b)
		if slot == nil {
			if declined(fn, &value, old, false) {
				return old, false, false, nil
			}
			nl := t.newLeaf(key, value)
			t.recount(t.addChild(n, b, nl), 1)
			return old, false, true, nl
		}
		c := *slot
		if c.kind() == kindLeaf {
			ck := c.leafKey()
			if bytes.Equal(ck, key) {
				old, hadOld = asLeaf[T](c).value, true
				if declined(fn, &value, old, true) {
					return old, true, false, nil
				}
				if t.mutable(c) {
					asLeaf[T](c).value = value
					return old, true, true, c
				}
				t.retire(c)
				nl := t.newLeaf(key, value)
				t.setChild(n, slot, b, nl)
				return old, true, true, nl
			}
			if declined(fn, &value, old, false) {
				return old, false, false, nil
			}
			nl := t.newLeaf(key, value)
			t.recount(t.setChild(n, slot, b, t.split(c, ck, nl, d+1)), 1)
			return old, false, true, nl
		}
		p := c.inner().prefix()
		if m := d + 1 + commonPrefix(p[d+1:], key[d+1:]); m < len(p) {
			// key leaves c's prefix early: a new node above c holds both.
			if declined(fn, &value, old, false) {
				return old, false, false, nil
			}
			nl := t.newLeaf(key, value)
			t.recount(t.setChild(n, slot, b, t.split(c, p, nl, d+1)), 1)
			return old, false, true, nl
		}
		if n != t.root {
			t.path = append(t.path, pathEntry{n, b})
		}
		n = c
	}
}

// declined asks fn, if there is one, for the value to store in place of
// the current one (old, if hadOld): it stores fn's result in value, or
// reports that fn declined, in which case nothing is to change. Without
// fn, value stays as given.
func declined[T any](fn func(T, bool) (T, bool), value *T, old T, hadOld bool) bool {
	if fn == nil {
		return false
	}
	v, ok := fn(old, hadOld)
	if ok {
		*value = v
	}
	return !ok
}

// mutable reports whether the leaf l may be changed in place: the
// transaction created it and nobody took its watch channel (GetWatch on the
// transaction), which must close when the value it was taken for is
// replaced.
func (t *Txn[T]) mutable(l *header) bool {
	return l.txn() == t.id && atomic.LoadPointer(&l.watch) == nil
}

// newLeaf returns a leaf owned by the transaction holding a copy of key. A
// key of up to 32 bytes is stored in the leaf's own allocation (a leaf with a
// trailing buffer is still a leaf[T] for every reader), so most leaves cost
// one allocation rather than two.
func (t *Txn[T]) newLeaf(key []byte, value T) *header {
	h := mkHeader(t.nodeID(), kindLeaf)
	switch n := len(key); {
	case n <= 8:
		l := &inlineLeaf[T, [8]byte]{leaf: leaf[T]{header: h, value: value}}
		copy(l.buf[:], key)
		l.kptr, l.klen = &l.buf[0], uint32(n)
		return &l.header
	case n <= 16:
		l := &inlineLeaf[T, [16]byte]{leaf: leaf[T]{header: h, value: value}}
		copy(l.buf[:], key)
		l.kptr, l.klen = &l.buf[0], uint32(n)
		return &l.header
	case n <= 32:
		l := &inlineLeaf[T, [32]byte]{leaf: leaf[T]{header: h, value: value}}
		copy(l.buf[:], key)
		l.kptr, l.klen = &l.buf[0], uint32(n)
		return &l.header
	}
	if uint64(len(key)) > MaxKeyLen {
		panic("part: key longer than MaxKeyLen")
	}
	l := &leaf[T]{header: h, kptr: unsafe.SliceData(bytes.Clone(key)), klen: uint32(len(key)), value: value}
	return &l.header
}

// split returns a new node4 holding the node c (whose key or prefix is ck)
// and the new leaf nl, at the depth where ck and nl's key part. Both are
// known to agree on the bytes before from. c itself is moved, not changed,
// so its watch channel stays open.
func (t *Txn[T]) split(c *header, ck []byte, nl *header, from int) *header {
	nk := nl.leafKey()
	m := from + commonPrefix(ck[from:], nk[from:])
	nn := newInner(kindNode4, t.nodeID(), nk[:m:m], nil)
	n4 := nn.node4()
	n4.leaves = leafCount(c) + 1
	switch {
	case len(ck) == m:
		n4.leaf = c
		n4.keys[0], n4.children[0] = nk[m], nl
		nn.inner().count = 1
	case len(nk) == m:
		n4.leaf = nl
		n4.keys[0], n4.children[0] = ck[m], c
		nn.inner().count = 1
	default:
		nn.inner().count = 2
		if ck[m] < nk[m] {
			n4.keys[0], n4.children[0], n4.keys[1], n4.children[1] = ck[m], c, nk[m], nl
		} else {
			n4.keys[0], n4.children[0], n4.keys[1], n4.children[1] = nk[m], nl, ck[m], c
		}
	}
	return nn
}

// retire records that the node n leaves the tree. A node the transaction
// created is recorded only if it has a watch channel (taken with
// Txn.GetWatch): no reader can have seen it otherwise. With RootOnlyWatch
// only the root carries a channel, so only it is recorded.
func (t *Txn[T]) retire(n *header) {
	if t.opts.rootOnlyWatch && n != t.root {
		return
	}
	if n.txn() == t.id && atomic.LoadPointer(&n.watch) == nil {
		return
	}
	t.retired = append(t.retired, n)
}

// retireSubtree retires every node below and including n, and returns the
// number of leaves there.
func (t *Txn[T]) retireSubtree(n *header) int {
	t.retire(n)
	if n.kind() == kindLeaf {
		return 1
	}
	leaves := 0
	if l := n.inner().leaf; l != nil {
		t.retire(l)
		leaves++
	}
	for _, c := range n.children() {
		if c != nil {
			leaves += t.retireSubtree(c)
		}
	}
	return leaves
}

// replaceUp puts r in the place of old, the node the operation reached
// (the child of the last entry of t.path, or of the root if the path is
// empty, or the root itself), copying the ancestors that are not owned and
// stopping at the first that is. The entries of t.path then name the
// copies: every node on the path, and the root, is owned afterwards, which
// recount relies on.
func (t *Txn[T]) replaceUp(old, r *header) {
	for i := len(t.path) - 1; i >= 0; i-- {
		e := &t.path[i]
		if e.n.txn() == t.id {
			*e.n.findChild(e.b) = r
			return
		}
		np := cloneInner(e.n, t.nodeID())
		*np.findChild(e.b) = r
		t.retire(e.n)
		old, e.n, r = e.n, np, np
	}
	if old == t.root {
		t.root = r
		return
	}
	root := t.root
	if root.txn() != t.id {
		root = cloneInner(root, t.nodeID())
		t.retire(t.root)
		t.root = root
	}
	// The root's prefix is empty, so the edge byte of its child is the
	// first byte of the child's key or prefix, and so of r's.
	*root.findChild(r.nodeKey()[0]) = r
}

// own returns n if the transaction owns it, or else a copy that it owns, put
// in n's place in the tree.
func (t *Txn[T]) own(n *header) *header {
	if n.txn() == t.id {
		return n
	}
	nn := cloneInner(n, t.nodeID())
	t.retire(n)
	t.replaceUp(n, nn)
	return nn
}

// The structural changes below (setLeaf to removeChild) return the owned
// node that stands in n's place once they are done, or nil if n left the
// tree, for recount: a change that adds or removes keys must then add to
// the leaf counts of that node and of every node on the path.

// setLeaf makes l the leaf of the inner node n (which the path leads to).
func (t *Txn[T]) setLeaf(n *header, l *header) *header {
	o := t.own(n)
	o.inner().leaf = l
	return o
}

// setChild replaces the child in slot (n's slot for edge byte b) with c.
func (t *Txn[T]) setChild(n *header, slot **header, b byte, c *header) *header {
	if n.txn() == t.id {
		*slot = c
		return n
	}
	o := t.own(n)
	*o.findChild(b) = c
	return o
}

// addChild adds c under the new edge byte b to the inner node n, growing n
// into a bigger kind if it is full.
func (t *Txn[T]) addChild(n *header, b byte, c *header) *header {
	if n.isFull() {
		nn := resized(n, n.kind()+1, t.nodeID())
		nn.insertChild(b, c)
		t.retire(n)
		t.replaceUp(n, nn)
		return nn
	}
	o := t.own(n)
	o.insertChild(b, c)
	return o
}

// removeLeaf removes the leaf of the inner node n; a node left with a single
// child (other than the root) is replaced by that child.
func (t *Txn[T]) removeLeaf(n *header) *header {
	if n != t.root && n.inner().count == 1 {
		t.retire(n)
		t.replaceUp(n, n.firstChild())
		return nil
	}
	o := t.own(n)
	o.inner().leaf = nil
	return o
}

// removeChild removes the child c under edge byte b from the inner node n.
// A node other than the root that is left with one entry is replaced by it,
// and a node that becomes sparse shrinks to a smaller kind.
func (t *Txn[T]) removeChild(n *header, b byte, c *header) *header {
	if n != t.root {
		in := n.inner()
		switch {
		case n.inner().count == 1:
			t.retire(n)
			t.replaceUp(n, in.leaf)
			return nil
		case n.inner().count == 2 && in.leaf == nil:
			t.retire(n)
			for _, o := range n.children() {
				if o != nil && o != c {
					t.replaceUp(n, o)
					return nil
				}
			}
		}
	}
	if n.shouldShrink() {
		nn := resized(n, n.kind()-1, t.nodeID())
		nn.removeChild(b)
		t.retire(n)
		t.replaceUp(n, nn)
		return nn
	}
	o := t.own(n)
	o.removeChild(b)
	return o
}
