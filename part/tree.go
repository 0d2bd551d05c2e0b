package part

import (
	"bytes"
	"encoding/binary"
	"iter"
	"sync/atomic"
	"unsafe"
)

// Tree is an immutable map from byte-string keys to values of type T. A Tree
// is a small value (two words) that is cheap to copy; all copies share the
// same nodes. Nothing ever changes a Tree: changes are made in a Txn, whose
// Commit returns a new Tree sharing every unchanged node with the old one.
//
// A Tree is safe for concurrent use by any number of goroutines, including
// while transactions derived from it are being written and committed.
//
// The zero Tree is not usable; create trees with New.
type Tree[T any] struct {
	opts *options
	root *header // an inner node with an empty prefix, never nil; its leaf count is Len
}

type options struct {
	rootOnlyWatch bool
}

// Option configures a Tree created by New.
type Option func(*options)

// RootOnlyWatch makes the tree keep a watch channel for its root only: every
// watch query returns the root's channel, which closes on any change, and a
// commit has a single channel to close. Use it for trees whose readers only
// ever watch the whole tree (such as revision indexes), where per-node
// channels would be bookkeeping nobody reads.
func RootOnlyWatch() Option {
	return func(o *options) { o.rootOnlyWatch = true }
}

// New returns an empty tree.
func New[T any](opts ...Option) Tree[T] {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	return Tree[T]{opts: o, root: newInner(kindNode4, 0, nil, nil)}
}

// lastTxnID hands out transaction ids; see header.txn.
var lastTxnID atomic.Uint64

func nextTxnID() uint64 { return lastTxnID.Add(1) }

// Txn returns a new transaction that starts from t. t itself is not changed
// by anything the transaction does.
func (t Tree[T]) Txn() *Txn[T] {
	txn := &Txn[T]{}
	txn.Reset(t)
	return txn
}

// Len returns the number of keys in the tree.
func (t Tree[T]) Len() int {
	if t.root == nil {
		return 0 // the zero Tree, as before the root kept the count
	}
	return t.root.inner().leaves
}

// Get returns the value stored under key.
func (t Tree[T]) Get(key []byte) (value T, found bool) {
	// Written to inline: a Get costs the caller one call, search's.
	if l := search(t.root, key); l != nil {
		value, found = (*leaf[T])(unsafe.Pointer(l)).value, true
	}
	return
}

// GetWatch returns the value stored under key and a channel that is closed
// when the result of the same lookup changes. If the key is present, the
// channel closes exactly when the key is updated or deleted. If it is absent,
// the channel closes when it is inserted and may also close when keys that
// share a long prefix with it change.
func (t Tree[T]) GetWatch(key []byte) (value T, watch <-chan struct{}, found bool) {
	return getWatch[T](t.opts, t.root, key)
}

// getWatch implements GetWatch for trees and transactions.
func getWatch[T any](opts *options, root *header, key []byte) (value T, watch <-chan struct{}, found bool) {
	l := search(root, key)
	switch {
	case opts.rootOnlyWatch:
		watch = root.watchChan()
	case l != nil:
		watch = l.watchChan()
	default:
		watch = closestNode(root, key).watchChan()
	}
	if l != nil {
		value, found = asLeaf[T](l).value, true
	}
	return value, watch, found
}

// RootWatch returns a channel that is closed when anything in the tree
// changes.
func (t Tree[T]) RootWatch() <-chan struct{} { return t.root.watchChan() }

// search returns the leaf with the given key, or nil. It descends by edge
// bytes only and compares the full key once at the leaf: a leaf holds its
// whole key, so the prefixes passed on the way need not be checked. The
// child lookup is findChild's, written out here so that a lookup makes no
// call on its way down (BenchmarkDB_RandomLookup, bench/compare's
// PointGets_Primary).
func search(root *header, key []byte) *header {
	n := root
	for {
		in := n.inner()
		d := in.depth()
		if d >= len(key) {
			if d == len(key) && in.leaf != nil && equalKey(in.leaf.leafKey(), key) {
				return in.leaf
			}
			return nil
		}
		b := key[d]
		var c *header
		switch n.kind() {
		case kindNode4:
			n4 := n.node4()
			i := indexByte4(&n4.keys, b)
			if i >= int(n4.count) {
				return nil
			}
			c = n4.children[i&3] // i < count <= 4
		case kindNode16:
			n16 := n.node16()
			i := indexByte16(&n16.keys, b)
			if i >= int(n16.count) {
				return nil
			}
			c = n16.children[i&15]
		case kindNode48:
			n48 := n.node48()
			if !has48(&n48.bitmap, b) {
				return nil
			}
			c = n48.children[rank48(&n48.bitmap, b)]
		default:
			c = n.node256().children[b]
		}
		if c == nil {
			return nil
		}
		if c.kind() == kindLeaf {
			if equalKey(c.leafKey(), key) {
				return c
			}
			return nil
		}
		n = c
	}
}

// equalKey is bytes.Equal, with 8-byte keys (the usual integer keys)
// compared in one load each instead of a call.
func equalKey(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 8 {
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b)
	}
	return bytes.Equal(a, b)
}

// closestNode returns the deepest inner node whose prefix is a prefix of key
// and below which key would be inserted: the node that changes when key is
// inserted.
func closestNode(root *header, key []byte) *header {
	n := root
	for {
		d := n.inner().depth()
		if d >= len(key) {
			return n
		}
		slot := n.findChild(key[d])
		if slot == nil {
			return n
		}
		c := *slot
		if c.kind() == kindLeaf {
			return n
		}
		p := c.inner().prefix()
		if len(p) > len(key) || !bytes.Equal(p[d+1:], key[d+1:len(p)]) {
			return n
		}
		n = c
	}
}

// prefixNode finds the subtree holding exactly the keys that start with
// prefix. It returns the subtree's top node (nil if no key has the prefix),
// and the node whose watch channel closes whenever a key with the prefix
// changes: the subtree's top if its own prefix is exactly prefix, otherwise
// its parent, which changes when a key with the prefix is added beside it.
func prefixNode(root *header, prefix []byte) (top, watch *header) {
	n := root
	if len(prefix) == 0 {
		return n, n
	}
	for {
		d := n.inner().depth()
		slot := n.findChild(prefix[d])
		if slot == nil {
			return nil, n
		}
		c := *slot
		k := c.nodeKey()
		if len(k) < len(prefix) {
			if c.kind() == kindLeaf || !equalPart(k[d+1:], prefix[d+1:len(k)]) {
				return nil, n
			}
			n = c
			continue
		}
		if !equalPart(k[d+1:len(prefix)], prefix[d+1:]) {
			return nil, n
		}
		if c.kind() != kindLeaf && len(k) == len(prefix) {
			return c, c
		}
		return c, n
	}
}

// All returns an iterator over all keys and values in ascending key order.
// The key slices belong to the tree and must not be modified.
func (t Tree[T]) All() iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) { walk(root, yield) }
}

// ReverseAll returns an iterator over all keys and values in descending key
// order.
func (t Tree[T]) ReverseAll() iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) { walkReverse(root, yield) }
}

// Prefix returns an iterator over the keys that start with prefix, in
// ascending order.
func (t Tree[T]) Prefix(prefix []byte) iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) {
		if top, _ := prefixNode(root, prefix); top != nil {
			walk(top, yield)
		}
	}
}

// PrefixWatch is Prefix that also returns a channel that is closed when any
// key starting with prefix is inserted, updated or deleted. It may also close
// when keys that share a long prefix with prefix change.
func (t Tree[T]) PrefixWatch(prefix []byte) (iter.Seq2[[]byte, T], <-chan struct{}) {
	top, w := prefixNode(t.root, prefix)
	if t.opts.rootOnlyWatch {
		w = t.root
	}
	seq := func(yield func([]byte, T) bool) {
		if top != nil {
			walk(top, yield)
		}
	}
	return seq, w.watchChan()
}

// WatchPrefix returns PrefixWatch's channel alone, for readers that scan
// the keys some other way (an Iterator).
func (t Tree[T]) WatchPrefix(prefix []byte) <-chan struct{} {
	if t.opts.rootOnlyWatch {
		return t.root.watchChan()
	}
	_, w := prefixNode(t.root, prefix)
	return w.watchChan()
}

// ReversePrefix returns an iterator over the keys that start with prefix, in
// descending order.
func (t Tree[T]) ReversePrefix(prefix []byte) iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) {
		if top, _ := prefixNode(root, prefix); top != nil {
			walkReverse(top, yield)
		}
	}
}

// LowerBound returns an iterator over the keys greater than or equal to key,
// in ascending order.
func (t Tree[T]) LowerBound(key []byte) iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) { walkFrom(root, key, 0, yield) }
}

// ReverseLowerBound returns an iterator over the keys less than or equal to
// key, in descending order.
func (t Tree[T]) ReverseLowerBound(key []byte) iter.Seq2[[]byte, T] {
	root := t.root
	return func(yield func([]byte, T) bool) { walkTo(root, key, 0, yield) }
}

// Iterator returns an Iterator positioned before the smallest key of t.
// Reuse it with its Seek methods to scan again without allocating.
func (t Tree[T]) Iterator() *Iterator[T] {
	it := &Iterator[T]{root: t.root}
	it.First()
	return it
}

// Insert returns a tree with value stored under key, and the value it
// replaced: a transaction of one Insert, committed. Watch channels of the
// nodes it replaced are closed. t itself is unchanged. Batches of writes
// are cheaper in one Txn.
func (t Tree[T]) Insert(key []byte, value T) (old T, hadOld bool, tree Tree[T]) {
	var txn Txn[T]
	txn.Reset(t)
	old, hadOld = txn.Insert(key, value)
	return old, hadOld, txn.Commit()
}

// Modify returns a tree with the value returned by fn stored under key,
// fn being called with the current value and whether there is one, and
// the value it replaced: a transaction of one Modify, committed.
func (t Tree[T]) Modify(key []byte, fn func(old T, found bool) T) (old T, hadOld bool, tree Tree[T]) {
	var txn Txn[T]
	txn.Reset(t)
	old, hadOld = txn.Modify(key, fn)
	return old, hadOld, txn.Commit()
}

// Delete returns a tree without key, and the value key had: a
// transaction of one Delete, committed. If key is absent, it returns t
// itself.
func (t Tree[T]) Delete(key []byte) (old T, hadOld bool, tree Tree[T]) {
	var txn Txn[T]
	txn.Reset(t)
	if old, hadOld = txn.Delete(key); !hadOld {
		return old, false, t
	}
	return old, true, txn.Commit()
}
