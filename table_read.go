package strata

import (
	"bytes"
	"iter"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// read returns the state reads through txn see: the committed snapshot, or,
// if txn is a write transaction that wrote to the table, its pending state.
func (t *table[Obj]) read(txn ReadTxn) *tableState[Obj] {
	switch x := txn.(type) {
	case *dbRoot:
		return t.stateIn(x)
	case *txnHandle:
		if w := x.w; w != nil {
			if tt := t.pendingIn(w); tt != nil {
				return tt.snapshot()
			}
		}
		return t.stateIn(x.committed())
	}
	panic("strata: unknown ReadTxn implementation")
}

// pendingIn returns the table's write state if w is open and wrote to the
// table.
func (t *table[Obj]) pendingIn(w *writeTxn) *tableTxn[Obj] {
	if lt := w.find(&t.meta); lt != nil && lt.w != nil {
		return &t.writer
	}
	return nil
}

func (t *table[Obj]) NumObjects(txn ReadTxn) int {
	if h, ok := txn.(*txnHandle); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil {
			return tt.primary.Len()
		}
	}
	return t.read(txn).primary.Len()
}

func (t *table[Obj]) LastWriter(txn ReadTxn) string {
	if h, ok := txn.(*txnHandle); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil && tt.written {
			return tt.handle
		}
	}
	return t.read(txn).writer
}

func (t *table[Obj]) Revision(txn ReadTxn) Revision {
	if h, ok := txn.(*txnHandle); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil {
			return tt.revision
		}
	}
	return t.read(txn).revision
}

func (t *table[Obj]) Get(txn ReadTxn, q Query[Obj]) (obj Obj, rev Revision, found bool) {
	ix := t.index(q.index)
	if ix.unique {
		var o object[Obj]
		if h, ok := txn.(*txnHandle); ok && h.w != nil {
			if tt := t.pendingIn(h.w); tt != nil {
				o, found = tt.indexTxn(ix.pos).Get(q.key)
				return o.obj, o.rev, found
			}
		}
		o, found = t.read(txn).tree(ix.pos).Get(q.key)
		return o.obj, o.rev, found
	}
	return t.getNonUnique(txn, ix, q.key)
}

// getNonUnique returns the first object with key in the non-unique index ix.
func (t *table[Obj]) getNonUnique(txn ReadTxn, ix *indexDef[Obj], key index.Key) (Obj, Revision, bool) {
	for _, o := range t.read(txn).tree(ix.pos).Prefix(index.AppendEscaped(nil, key)) {
		return o.obj, o.rev, true
	}
	var zero Obj
	return zero, 0, false
}

func (t *table[Obj]) GetWatch(txn ReadTxn, q Query[Obj]) (obj Obj, rev Revision, watch <-chan struct{}, found bool) {
	ix := t.index(q.index)
	tree := t.read(txn).tree(ix.pos)
	if ix.unique {
		o, w, found := tree.GetWatch(q.key)
		return o.obj, o.rev, w, found
	}
	seq, w := tree.PrefixWatch(index.AppendEscaped(nil, q.key))
	for _, o := range seq {
		return o.obj, o.rev, w, true
	}
	return obj, rev, w, false
}

func (t *table[Obj]) List(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	ix := t.index(q.index)
	tree := t.read(txn).tree(ix.pos)
	if ix.unique {
		o, found := tree.Get(q.key)
		return func(yield func(Obj, Revision) bool) {
			if found {
				yield(o.obj, o.rev)
			}
		}
	}
	// Unlike ListWatch, no watch channel is made.
	return objects(tree.Prefix(index.AppendEscaped(nil, q.key)))
}

func (t *table[Obj]) ListWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(q.index)
	tree := t.read(txn).tree(ix.pos)
	if ix.unique {
		o, w, found := tree.GetWatch(q.key)
		return func(yield func(Obj, Revision) bool) {
			if found {
				yield(o.obj, o.rev)
			}
		}, w
	}
	// One entry per object: the key is the object's key and its primary
	// key, so there is nothing to skip.
	seq, w := tree.PrefixWatch(index.AppendEscaped(nil, q.key))
	return objects(seq), w
}

func (t *table[Obj]) Prefix(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.prefix(txn, q, false)
	return seq
}

func (t *table[Obj]) PrefixWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.prefix(txn, q, false)
}

func (t *table[Obj]) ReversePrefix(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.prefix(txn, q, true)
	return seq
}

func (t *table[Obj]) ReversePrefixWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.prefix(txn, q, true)
}

func (t *table[Obj]) prefix(txn ReadTxn, q Query[Obj], reverse bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(q.index)
	st := t.read(txn)
	tree := st.tree(ix.pos)
	key := q.key
	if !ix.unique {
		key = index.AppendEscapedPrefix(nil, key)
	}
	_, w := tree.PrefixWatch(key)
	return scan(tree, scanSpec{prefix: key, usePrefix: true, reverse: reverse, dedup: st.dedup(ix.pos)}), w
}

func (t *table[Obj]) LowerBound(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.LowerBoundWatch(txn, q)
	return seq
}

func (t *table[Obj]) LowerBoundWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.bounded(txn, q.index, bound{key: q.key, set: true}, bound{}, false)
}

func (t *table[Obj]) ReverseLowerBound(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.ReverseLowerBoundWatch(txn, q)
	return seq
}

func (t *table[Obj]) ReverseLowerBoundWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.bounded(txn, q.index, bound{}, bound{key: q.key, set: true, inclusive: true}, true)
}

func (t *table[Obj]) Range(txn ReadTxn, from, to Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.ranged(txn, from, to, false)
	return seq
}

func (t *table[Obj]) RangeWatch(txn ReadTxn, from, to Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.ranged(txn, from, to, false)
}

func (t *table[Obj]) ReverseRange(txn ReadTxn, from, to Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.ranged(txn, from, to, true)
	return seq
}

func (t *table[Obj]) ReverseRangeWatch(txn ReadTxn, from, to Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.ranged(txn, from, to, true)
}

func (t *table[Obj]) ranged(txn ReadTxn, from, to Query[Obj], reverse bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	if from.index != to.index {
		panic("strata: Range: from and to are queries on different indexes")
	}
	return t.bounded(txn, from.index, bound{key: from.key, set: true}, bound{key: to.key, set: true}, reverse)
}

// bound is one end of a scan: a query key (nil is a valid, empty key), or
// no bound when set is false. Lower bounds are inclusive; upper bounds are
// exclusive unless inclusive is set.
type bound struct {
	key       []byte
	set       bool
	inclusive bool
}

// bounded scans the keys between lower and upper in the named index. The
// watch channel is the index's root: any change to the index closes it.
func (t *table[Obj]) bounded(txn ReadTxn, indexName string, lower, upper bound, reverse bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(indexName)
	st := t.read(txn)
	tree := st.tree(ix.pos)
	spec := scanSpec{reverse: reverse, dedup: st.dedup(ix.pos), lower: lower, upper: upper}
	if !ix.unique {
		// A non-unique index stores escape(key), the terminator 0x00 0x01,
		// then the primary key. Escaped and terminated, the bounds order
		// every entry of a smaller key below and every entry of a greater
		// key above them; an inclusive upper bound becomes the exclusive
		// escape(key) 0x00 0x02, just above all entries of the key itself.
		if lower.set {
			spec.lower.key = index.AppendEscaped(nil, lower.key)
		}
		if upper.set && upper.inclusive {
			spec.upper = bound{key: append(index.AppendEscapedPrefix(nil, upper.key), 0x00, 0x02), set: true}
		} else if upper.set {
			spec.upper.key = index.AppendEscaped(nil, upper.key)
		}
	}
	return scan(tree, spec), tree.RootWatch()
}

func (t *table[Obj]) All(txn ReadTxn) iter.Seq2[Obj, Revision] {
	return objects(t.read(txn).primary.All())
}

func (t *table[Obj]) AllWatch(txn ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	tree := t.read(txn).primary
	return objects(tree.All()), tree.RootWatch()
}

func (t *table[Obj]) ReverseAll(txn ReadTxn) iter.Seq2[Obj, Revision] {
	return scan(t.read(txn).primary, scanSpec{reverse: true})
}

func (t *table[Obj]) ReverseAllWatch(txn ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	tree := t.read(txn).primary
	return scan(tree, scanSpec{reverse: true}), tree.RootWatch()
}

// dedup reports whether scans of index pos must skip objects they already
// returned, because some object had several keys in it.
func (s *tableState[Obj]) dedup(pos int) bool { return s.multiKey&(1<<pos) != 0 }

// scanSpec describes a scan of one index tree: the keys with a prefix, or
// the keys between two bounds, in either direction.
type scanSpec struct {
	prefix       []byte
	usePrefix    bool
	lower, upper bound
	reverse      bool
	// dedup: skip objects already returned (some object has several keys
	// in the index).
	dedup bool
}

// beyondUpper reports whether k is past the scan's upper bound.
func (s *scanSpec) beyondUpper(k []byte) bool {
	if !s.upper.set {
		return false
	}
	c := bytes.Compare(k, s.upper.key)
	return c > 0 || (c == 0 && !s.upper.inclusive)
}

// scan returns an iterator over the objects of tree selected by spec. It
// walks the tree with part's own iterators (BenchmarkDB_FullIteration_All:
// no allocation per scan beyond the closures, none per object).
func scan[Obj any](tree part.Tree[object[Obj]], spec scanSpec) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		var seq iter.Seq2[[]byte, object[Obj]]
		switch {
		case spec.usePrefix && spec.reverse:
			seq = tree.ReversePrefix(spec.prefix)
		case spec.usePrefix:
			seq = tree.Prefix(spec.prefix)
		case spec.reverse && spec.upper.set:
			seq = tree.ReverseLowerBound(spec.upper.key)
		case spec.reverse:
			seq = tree.ReverseAll()
		case spec.lower.set:
			seq = tree.LowerBound(spec.lower.key)
		default:
			seq = tree.All()
		}
		if !spec.upper.set && !spec.dedup && (!spec.reverse || !spec.lower.set) {
			// No bound to check per key, nothing to skip: the loop of
			// objects (BenchmarkDB_Prefix_SecondaryIndex).
			for _, o := range seq {
				if !yield(o.obj, o.rev) {
					return
				}
			}
			return
		}
		var seen map[Revision]struct{}
		for k, o := range seq {
			if spec.reverse {
				if spec.beyondUpper(k) {
					continue // only the exclusive bound itself
				}
				if spec.lower.set && bytes.Compare(k, spec.lower.key) < 0 {
					return
				}
			} else if spec.beyondUpper(k) {
				return
			}
			if spec.dedup {
				if _, dup := seen[o.rev]; dup {
					continue
				}
				if seen == nil {
					seen = map[Revision]struct{}{}
				}
				seen[o.rev] = struct{}{}
			}
			if !yield(o.obj, o.rev) {
				return
			}
		}
	}
}

// objects adapts a tree iterator to objects and revisions, for scans that
// need no bounds or deduplication (BenchmarkDB_FullIteration_All).
func objects[Obj any](seq iter.Seq2[[]byte, object[Obj]]) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		for _, o := range seq {
			if !yield(o.obj, o.rev) {
				return
			}
		}
	}
}
