package strata

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// Counting objects without visiting them (issue 30).
//
// Every node of the radix trees under the indexes keeps the number of
// keys below it (part/count.go), so a count is one or two descents of one
// index tree, in O(key length), however many objects match. A count is
// the number of objects the read of the same query returns: Count that of
// List, CountPrefix that of Prefix, CountRange that of Range, CountAll
// that of All. A non-unique index holds one entry per object and key (the
// escaped key followed by the primary key), so counting its entries
// counts objects, not distinct keys.
//
// Where entries are not objects, a count in O(key length) is impossible,
// and the count returns ErrCannotCount rather than walk the matches:
//
//   - an LPMIndex, whose queries select by containment (LPMIndex);
//   - a prefix, range or whole-index count of an index in which some
//     object has several keys (a tags index, say), since such an object
//     would be counted once per key where the read returns it once. A
//     table marks an index so once an object with several keys in it was
//     written (and the mark stays); a count of one key (Count) is always
//     exact.
//
// The Watch forms return the channel of the tree node whose subtree holds
// every entry the count counts: it closes when an entry below that node
// is inserted, replaced or deleted, so it closes whenever the count may
// have changed, and may also close when it did not (an object replaced,
// or keys near the query's changed). CountAllWatch's closes on any change
// to the table.

// ErrCannotCount: the index cannot count the query's objects without
// visiting them: it is an LPMIndex, or (for a prefix, range or whole-index
// count) some object has several keys in it. See Count. It is returned
// wrapped with the table and index names, and the count changes nothing.
var ErrCannotCount = errors.New("index cannot count")

// Count returns the number of objects List(txn, q) returns: of objects
// whose key in q's index is q's key (at most one in a unique index), in
// O(key length). The error wraps ErrCannotCount if q's index is an
// LPMIndex. Like the reads, it panics if the table has no index of q's
// name.
//
// Through a write transaction that wrote to the table, Count sees its
// writes, and takes no snapshot of the table as a scan does.
func Count[Obj any](txn ReadTxn, t Table[Obj], q Query[Obj]) (int, error) {
	tbl := tableOf(t)
	n, _, err := tbl.count(txn, tbl.index(q.index).pos, QueryList, q.key.bytes(), nil, false)
	return n, err
}

// CountWatch is Count with a watch channel: for a unique index, that of
// the key, which closes when an object of the key is inserted, replaced or
// deleted; for a non-unique one, that of the key's entries (the channel
// ListWatch returns). The channel is nil if the error is not.
func CountWatch[Obj any](txn ReadTxn, t Table[Obj], q Query[Obj]) (int, <-chan struct{}, error) {
	tbl := tableOf(t)
	return tbl.count(txn, tbl.index(q.index).pos, QueryList, q.key.bytes(), nil, true)
}

// CountPrefix returns the number of objects Prefix(txn, q) returns: of
// objects whose key in q's index starts with q's key, in O(key length).
// The error wraps ErrCannotCount if the index is an LPMIndex or holds an
// object under several keys.
func CountPrefix[Obj any](txn ReadTxn, t Table[Obj], q Query[Obj]) (int, error) {
	tbl := tableOf(t)
	n, _, err := tbl.count(txn, tbl.index(q.index).pos, QueryPrefix, q.key.bytes(), nil, false)
	return n, err
}

// CountPrefixWatch is CountPrefix with the watch channel PrefixWatch
// returns for q.
func CountPrefixWatch[Obj any](txn ReadTxn, t Table[Obj], q Query[Obj]) (int, <-chan struct{}, error) {
	tbl := tableOf(t)
	return tbl.count(txn, tbl.index(q.index).pos, QueryPrefix, q.key.bytes(), nil, true)
}

// CountRange returns the number of objects Range(txn, from, to) returns:
// of objects whose key in the index is at least from's key and less than
// to's (from included, to not; 0 if to's key is not above from's), in
// O(key length). The error wraps ErrCannotCount if the index is an
// LPMIndex or holds an object under several keys. Like Range, it panics if
// from and to are queries on different indexes.
//
// The time is that of two descents of the index tree, each of which adds
// up, at each node it passes, the counts of the children on one side of
// its path (at most 128): more than CountPrefix, still independent of the
// number of objects in the range.
func CountRange[Obj any](txn ReadTxn, t Table[Obj], from, to Query[Obj]) (int, error) {
	n, _, err := countRange(txn, t, from, to, false)
	return n, err
}

// CountRangeWatch is CountRange with a watch channel: that of the tree
// node under which every key from from's to to's lies (the node of the
// keys' longest common prefix), which closes when an object with a key
// under it is inserted, replaced or deleted. It is narrower than
// RangeWatch's, which closes on any change to the index.
func CountRangeWatch[Obj any](txn ReadTxn, t Table[Obj], from, to Query[Obj]) (int, <-chan struct{}, error) {
	return countRange(txn, t, from, to, true)
}

func countRange[Obj any](txn ReadTxn, t Table[Obj], from, to Query[Obj], watch bool) (int, <-chan struct{}, error) {
	if from.index != to.index {
		panic("strata: CountRange: from and to are queries on different indexes")
	}
	tbl := tableOf(t)
	return tbl.count(txn, tbl.index(from.index).pos, QueryRange, from.key.bytes(), to.key.bytes(), watch)
}

// CountAll returns the number of objects in the table: NumObjects, under
// the name of the other counts.
func CountAll[Obj any](txn ReadTxn, t Table[Obj]) int { return t.NumObjects(txn) }

// CountAllWatch is CountAll with a channel that closes on any change to
// the table, the channel AllWatch returns.
func CountAllWatch[Obj any](txn ReadTxn, t Table[Obj]) (int, <-chan struct{}) {
	n, ch, _ := tableOf(t).count(txn, 0, QueryAll, nil, nil, true)
	return n, ch
}

// tableOf returns the table t is, or wraps (a Table of another package
// that embeds one): its untyped side is the table itself.
func tableOf[Obj any](t Table[Obj]) *table[Obj] { return t.untyped().(*table[Obj]) }

// indexCounter is what a count reads: an index's tree in a snapshot, or
// a write transaction's part.Txn of it (txn set). A struct rather than an
// interface, so that the keys a count passes it stay on the stack.
type indexCounter[Obj any] struct {
	tree *part.Tree[object[Obj]]
	txn  *part.Txn[object[Obj]]
}

func (c indexCounter[Obj]) len() int {
	if c.txn != nil {
		return c.txn.Len()
	}
	return c.tree.Len()
}

func (c indexCounter[Obj]) has(key []byte) bool {
	if c.txn != nil {
		_, found := c.txn.Get(key)
		return found
	}
	_, found := c.tree.Get(key)
	return found
}

func (c indexCounter[Obj]) prefix(p []byte) int {
	if c.txn != nil {
		return c.txn.CountPrefix(p)
	}
	return c.tree.CountPrefix(p)
}

func (c indexCounter[Obj]) between(lo, hi []byte) int {
	if c.txn != nil {
		return c.txn.CountRange(lo, hi)
	}
	return c.tree.CountRange(lo, hi)
}

// count returns the number of objects of the index at pos that op
// selects with key (and to, QueryRange's end), as the read of the same
// query returns them, and, if watch is set, the channel of the node that
// holds every entry counted. QueryAll counts the index's objects, and
// QueryLowerBound those with a key of at least key.
func (t *table[Obj]) count(txn ReadTxn, pos int, op QueryOp, key, to []byte, watch bool) (int, <-chan struct{}, error) {
	ix := &t.indexes[pos]
	if ix.lpm {
		return 0, nil, fmt.Errorf("table %q: index %q: %w: an LPM index selects by containment", t.meta.name, ix.name, ErrCannotCount)
	}
	var c indexCounter[Obj]
	var multiKey uint64
	if h, ok := txn.(*txnRef); ok && h.w != nil && !watch {
		// The transaction's own index: counting it freezes nothing.
		if tt := t.pendingIn(h.w); tt != nil {
			c.txn, multiKey = tt.indexTxn(pos), tt.cur.multiKey
		}
	}
	if c.txn == nil {
		st := t.read(txn)
		c.tree, multiKey = st.treeRef(pos), st.multiKey
	}
	tree := c.tree // with watch set, the snapshot's tree
	if op != QueryList && multiKey&(1<<pos) != 0 {
		return 0, nil, fmt.Errorf("table %q: index %q: %w: an object has several keys in it, and would be counted once per key",
			t.meta.name, ix.name, ErrCannotCount)
	}
	// The keys of a non-unique index's entries are escaped (index.AppendEscaped)
	// and followed by the primary key: the bounds are escaped the same way
	// (seekScan).
	var kb, tb [escapedKeyBuf]byte
	var n int
	var node []byte // the prefix whose node's channel is the watch channel
	switch op {
	case QueryAll:
		n = c.len()
		if watch {
			return n, tree.RootWatch(), nil
		}
	case QueryList:
		if ix.unique {
			if watch {
				_, ch, found := tree.GetWatch(key)
				return b2i(found), ch, nil
			}
			return b2i(c.has(key)), nil, nil
		}
		node = appendEscapedShort(&kb, key)
		n = c.prefix(node)
	case QueryPrefix:
		node = key
		if !ix.unique {
			node = index.AppendEscapedPrefix(kb[:0], key)
		}
		n = c.prefix(node)
	case QueryLowerBound:
		lo := key
		if !ix.unique {
			lo = index.AppendEscaped(kb[:0], key)
		}
		n = c.len() - c.between(nil, lo)
		if watch {
			return n, tree.RootWatch(), nil
		}
	case QueryRange:
		lo, hi := key, to
		if !ix.unique {
			lo, hi = index.AppendEscaped(kb[:0], key), index.AppendEscaped(tb[:0], to)
		}
		n = c.between(lo, hi)
		// Every key k with lo <= k < hi starts with the bounds' common
		// prefix: where k leaves it, it would be below lo or above hi.
		node = lo[:commonPrefixLen(lo, hi)]
	}
	if !watch {
		return n, nil, nil
	}
	return n, tree.WatchPrefix(node), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// commonPrefixLen returns the length of the longest common prefix of a
// and b.
func commonPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Count returns the number of objects Read(txn, q) returns, without
// visiting them (see the package function Count): of the table for
// QueryAll on the primary index, of the index's objects for QueryAll on a
// secondary index, of the objects with the key for QueryList, with a key
// starting with it for QueryPrefix, at least it for QueryLowerBound and
// from it to To (excluded) for QueryRange. The error wraps
// ErrIndexNotFound, ErrInvalidQuery (as Read's, or After set: a count
// takes no cursor), or ErrCannotCount if the index cannot count the query
// (an LPMIndex; a prefix, range, lower-bound or whole-index count of an
// index where an object has several keys); a bad query changes nothing.
func (t AnyTable) Count(txn ReadTxn, q AnyQuery) (int, error) {
	n, _, err := t.count(txn, q, false)
	return n, err
}

// CountWatch is Count with a channel that closes when the count may have
// changed (see CountWatch, CountPrefixWatch and CountRangeWatch; for
// QueryAll and QueryLowerBound, the channel of the whole index).
func (t AnyTable) CountWatch(txn ReadTxn, q AnyQuery) (int, <-chan struct{}, error) {
	return t.count(txn, q, true)
}

func (t AnyTable) count(txn ReadTxn, q AnyQuery, watch bool) (int, <-chan struct{}, error) {
	switch {
	case q.Op > QueryRange:
		return 0, nil, fmt.Errorf("table %q: %w: %v", t.Meta.Name(), ErrInvalidQuery, q.Op)
	case q.To != nil && q.Op != QueryRange:
		return 0, nil, fmt.Errorf("table %q: %w: To set for %v", t.Meta.Name(), ErrInvalidQuery, q.Op)
	case q.After != nil:
		return 0, nil, fmt.Errorf("table %q: %w: After set for a count", t.Meta.Name(), ErrInvalidQuery)
	}
	u := t.Meta.untyped()
	pos, err := u.indexPos(q.Index)
	if err != nil {
		return 0, nil, err
	}
	return u.anyCount(txn, pos, q, watch)
}

func (t *table[Obj]) anyCount(txn ReadTxn, pos int, q AnyQuery, watch bool) (int, <-chan struct{}, error) {
	return t.count(txn, pos, q.Op, q.Key, q.To, watch)
}
