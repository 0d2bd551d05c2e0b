package strata

import (
	"encoding/binary"
	"iter"
	"unsafe"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// read returns the state reads through txn see: the committed snapshot, or,
// if txn is a write transaction that wrote to the table, its pending state,
// or, if it locked the table while it had a tip (commitqueue.go), the tip.
func (t *table[Obj]) read(txn ReadTxn) *tableState[Obj] {
	switch x := txn.(type) {
	case *dbRoot:
		return t.stateIn(x)
	case *txnRef:
		if w := x.w; w != nil {
			if lt := w.find(&t.meta); lt != nil {
				if lt.txn != nil {
					return t.txn.snapshot()
				}
				if lt.tip != nil {
					// The pending state the transaction builds on.
					return (*tableState[Obj])(unsafeStatePointer(lt.tip))
				}
			}
		}
		return t.stateIn(x.committed())
	}
	panic("strata: unknown ReadTxn implementation")
}

// pendingIn returns the table's tableTxn if w is open and wrote to the
// table.
func (t *table[Obj]) pendingIn(w *txnCore) *tableTxn[Obj] {
	if lt := w.find(&t.meta); lt != nil && lt.txn != nil {
		return &t.txn
	}
	return nil
}

func (t *table[Obj]) NumObjects(txn ReadTxn) int {
	if h, ok := txn.(*txnRef); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil {
			return tt.primary.Len()
		}
	}
	return t.read(txn).primary.Len()
}

func (t *table[Obj]) LastWriter(txn ReadTxn) string {
	if h, ok := txn.(*txnRef); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil && tt.cur.written {
			return tt.cur.handle
		}
	}
	return t.read(txn).lastHandle
}

func (t *table[Obj]) Revision(txn ReadTxn) Revision {
	if h, ok := txn.(*txnRef); ok && h.w != nil {
		if tt := t.pendingIn(h.w); tt != nil {
			return tt.cur.revision
		}
	}
	return t.read(txn).revision
}

// The reads below are the hot paths of Strata's read side. Each is guarded
// by a benchmark of the root suite (benchmarks_test.go) and by bench/compare,
// which runs them beside statedb and a bare go-immutable-radix/v2 tree:
//
//   - a query key of a fixed-width integer index lives in the Query
//     (queryKey), so a Get or a scan from it allocates no key;
//   - a scan is one closure, the iter.Seq2 itself, whose state (a
//     part.Iterator) lives on the goroutine's stack while it runs: a scan
//     allocates that closure and nothing else, and nothing per object;
//   - the iterator hands each object and its revision straight to the
//     caller's loop (part.YieldPairs): one call per object, no adapter
//     between the tree and the loop;
//   - a scan's upper bound is found once, as the leaf where the scan
//     stops (part.Iterator.SetEnd), not compared with every key.

func (t *table[Obj]) Get(txn ReadTxn, q Query[Obj]) (obj Obj, rev Revision, found bool) {
	// index, stateIn and Tree.Get written out or inlined: the common
	// case, a read transaction and the primary index, makes one call on
	// its way to the tree, search (BenchmarkDB_RandomLookup).
	ix := &t.indexes[0]
	if unsafe.StringData(ix.name) != unsafe.StringData(q.index) || len(ix.name) != len(q.index) {
		ix = t.index(q.index)
	}
	if r, ok := txn.(*dbRoot); ok && ix.unique && !ix.lpm {
		st := t.empty
		if h := r.tableState(&t.meta); h != nil {
			st = (*tableState[Obj])(unsafeStatePointer(h))
		}
		o, found := st.tree(ix.pos).Get(q.key.bytes())
		return o.obj, o.rev, found
	}
	return t.get(txn, ix, q)
}

// get is Get for the other cases: a write transaction, a non-unique or an
// LPM index.
func (t *table[Obj]) get(txn ReadTxn, ix *indexDef[Obj], q Query[Obj]) (obj Obj, rev Revision, found bool) {
	key := q.key.bytes()
	if ix.lpm && isContainingKey(key) {
		obj, rev, _, found = lpmGet(t.read(txn).tree(ix.pos), key, !ix.unique) // BenchmarkDB_LPMIndex_Get
		return obj, rev, found
	}
	var tree part.Tree[object[Obj]]
	if r, ok := txn.(*dbRoot); ok {
		tree = t.stateIn(r).tree(ix.pos) // a read transaction: the common case
	} else {
		if h, ok := txn.(*txnRef); ok && h.w != nil && ix.unique {
			if tt := t.pendingIn(h.w); tt != nil {
				o, found := tt.indexTxn(ix.pos).Get(key)
				return o.obj, o.rev, found
			}
		}
		tree = t.read(txn).tree(ix.pos)
	}
	if ix.unique {
		o, found := tree.Get(key) // BenchmarkDB_RandomLookup
		return o.obj, o.rev, found
	}
	var buf [escapedKeyBuf]byte
	return firstWithPrefix(tree, appendEscapedShort(&buf, key))
}

// escapedKeyBuf is the size of the stack buffers that query keys of
// non-unique indexes are escaped into; longer keys are escaped into the
// heap.
const escapedKeyBuf = 64

// firstWithPrefix returns the first object whose key in tree starts with
// prefix.
func firstWithPrefix[Obj any](tree part.Tree[object[Obj]], prefix []byte) (obj Obj, rev Revision, found bool) {
	var it part.Iterator[object[Obj]]
	it.SetTree(tree)
	it.SeekPrefix(prefix)
	_, o, found := it.Next()
	return o.obj, o.rev, found
}

func (t *table[Obj]) GetWatch(txn ReadTxn, q Query[Obj]) (obj Obj, rev Revision, watch <-chan struct{}, found bool) {
	ix := t.index(q.index)
	tree := t.read(txn).tree(ix.pos)
	key := q.key.bytes()
	if ix.lpm && isContainingKey(key) {
		obj, rev, bits, found := lpmGet(tree, key, !ix.unique)
		return obj, rev, lpmGetWatch(tree, key, bits, !ix.unique), found
	}
	if ix.unique {
		o, w, found := tree.GetWatch(key)
		return o.obj, o.rev, w, found
	}
	var buf [escapedKeyBuf]byte
	prefix := appendEscapedShort(&buf, key)
	obj, rev, found = firstWithPrefix(tree, prefix)
	return obj, rev, tree.WatchPrefix(prefix), found
}

func (t *table[Obj]) List(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.list(txn, q, false)
	return seq
}

func (t *table[Obj]) ListWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.list(txn, q, true)
}

// list implements List and ListWatch; the channel is made only if watch
// is set.
func (t *table[Obj]) list(txn ReadTxn, q Query[Obj], watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(q.index)
	if ix.lpm && isContainingKey(q.key.bytes()) {
		st := t.read(txn)
		tree := st.tree(ix.pos)
		var w <-chan struct{}
		if watch {
			w = lpmFamilyWatch(tree, q.key.bytes())
		}
		return lpmList(tree, q.key.bytes(), !ix.unique, st.dedup(ix.pos)), w
	}
	st := t.read(txn)
	tree := st.tree(ix.pos)
	if ix.unique {
		var o object[Obj]
		var w <-chan struct{}
		var found bool
		if watch {
			o, w, found = tree.GetWatch(q.key.bytes())
		} else {
			o, found = tree.Get(q.key.bytes())
		}
		return func(yield func(Obj, Revision) bool) {
			if found {
				yield(o.obj, o.rev)
			}
		}, w
	}
	var w <-chan struct{}
	if watch {
		var buf [escapedKeyBuf]byte
		w = tree.WatchPrefix(appendEscapedShort(&buf, q.key.bytes()))
	}
	return listObjects(st.treeRef(ix.pos), q.key), w
}

// listObjects returns the iterator of the objects whose key in *tree, a
// non-unique index, is key: scanObjects for that scan, written out, as
// List on a non-unique index is the most common scan. There is one entry
// per object (the object's key and its primary key), so there is nothing
// to skip.
func listObjects[Obj any](tree *part.Tree[object[Obj]], key queryKey) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		var it part.Iterator[part.Pair[Obj, Revision]]
		it.SetTree(pairTree(*tree))
		k := key // a copy on this stack: the closure keeps key by value
		var buf [escapedKeyBuf]byte
		it.SeekPrefix(appendEscapedShort(&buf, k.bytes()))
		part.YieldPairs(&it, yield)
	}
}

func (t *table[Obj]) Prefix(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.prefix(txn, q, false, false)
	return seq
}

func (t *table[Obj]) PrefixWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.prefix(txn, q, false, true)
}

func (t *table[Obj]) ReversePrefix(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.prefix(txn, q, true, false)
	return seq
}

func (t *table[Obj]) ReversePrefixWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.prefix(txn, q, true, true)
}

// prefix implements the Prefix reads; the channel is made only if watch is
// set.
func (t *table[Obj]) prefix(txn ReadTxn, q Query[Obj], reverse, watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(q.index)
	st := t.read(txn)
	if ix.lpm {
		return t.lpmPrefix(ix, st, q, reverse, watch)
	}
	tree := st.tree(ix.pos)
	s := scan{scanFlags: scanFlags{op: scanPrefix, reverse: reverse, dedup: st.dedup(ix.pos), nonUnique: !ix.unique}, lower: q.key}
	var w <-chan struct{}
	if watch {
		key := q.key.bytes()
		var buf [escapedKeyBuf]byte
		if !ix.unique {
			key = index.AppendEscapedPrefix(buf[:0], key)
		}
		w = tree.WatchPrefix(key)
	}
	return scanObjects(st.treeRef(ix.pos), s), w
}

func (t *table[Obj]) LowerBound(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.LowerBoundWatch(txn, q)
	return seq
}

func (t *table[Obj]) LowerBoundWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.bounded(txn, q.index, scan{scanFlags: scanFlags{lowerSet: true}, lower: q.key})
}

func (t *table[Obj]) ReverseLowerBound(txn ReadTxn, q Query[Obj]) iter.Seq2[Obj, Revision] {
	seq, _ := t.ReverseLowerBoundWatch(txn, q)
	return seq
}

func (t *table[Obj]) ReverseLowerBoundWatch(txn ReadTxn, q Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	return t.bounded(txn, q.index, scan{scanFlags: scanFlags{reverse: true, upperSet: true, upperInclusive: true}, upper: q.key})
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
	return t.bounded(txn, from.index, scan{scanFlags: scanFlags{reverse: reverse, lowerSet: true, upperSet: true}, lower: from.key, upper: to.key})
}

// bounded scans the keys of the named index between the bounds of s. The
// watch channel is the index's root: any change to the index closes it.
func (t *table[Obj]) bounded(txn ReadTxn, indexName string, s scan) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	ix := t.index(indexName)
	if ix.lpm {
		t.lpmCheckBounds(ix, &s)
	}
	st := t.read(txn)
	s.op, s.dedup, s.nonUnique = scanBounded, st.dedup(ix.pos), !ix.unique
	return scanObjects(st.treeRef(ix.pos), s), st.tree(ix.pos).RootWatch()
}

func (t *table[Obj]) All(txn ReadTxn) iter.Seq2[Obj, Revision] {
	return scanObjects(&t.read(txn).primary, scan{})
}

func (t *table[Obj]) AllWatch(txn ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	st := t.read(txn)
	return scanObjects(&st.primary, scan{}), st.primary.RootWatch()
}

func (t *table[Obj]) ReverseAll(txn ReadTxn) iter.Seq2[Obj, Revision] {
	return scanObjects(&t.read(txn).primary, scan{scanFlags: scanFlags{reverse: true}})
}

func (t *table[Obj]) ReverseAllWatch(txn ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	st := t.read(txn)
	return scanObjects(&st.primary, scan{scanFlags: scanFlags{reverse: true}}), st.primary.RootWatch()
}

// dedup reports whether scans of index pos must skip objects they already
// returned, because some object had several keys in it.
func (s *tableState[Obj]) dedup(pos int) bool { return s.multiKey&(1<<pos) != 0 }

// treeRef returns a pointer to the tree of index pos, which lives as long
// as the state and, like it, never changes.
func (s *tableState[Obj]) treeRef(pos int) *part.Tree[object[Obj]] {
	if pos == 0 {
		return &s.primary
	}
	return &s.secondary[pos-1]
}

// scanOp is what a scan selects in its index.
type scanOp uint8

const (
	scanAll     scanOp = iota // every key
	scanList                  // the entries of the non-unique key lower
	scanPrefix                // the keys that start with lower
	scanBounded               // the keys from lower (if lowerSet) to upper (if upperSet)
)

// scan describes a scan of one index tree, with the query keys as the
// caller gave them: in a non-unique index they are escaped when the scan
// runs (seekScan), into buffers on the stack.
type scan struct {
	scanFlags
	// Lower bounds are inclusive; upper bounds are exclusive unless
	// upperInclusive is set.
	lower, upper queryKey
}

// scanFlags is what a scan does besides its keys, in one word.
type scanFlags struct {
	op        scanOp
	reverse   bool
	nonUnique bool
	// dedup: skip objects already returned (some object has several keys
	// in the index).
	dedup                              bool
	lowerSet, upperSet, upperInclusive bool
}

// scanObjects returns the iterator of the objects of *tree that s selects.
// tree points into a tableState, which is never changed: the iterator
// reads the same tree every time it runs.
//
// The iterator is the one allocation of a scan, and it is kept small,
// because the bytes a scan allocates set how often the collector runs
// while a reader scans: it holds the pointer to the tree, not the tree,
// and only the keys that the scan uses: with its code pointer and the
// generic dictionary every closure of a generic function carries, 48
// bytes for a scan with at most a lower bound, 32 for All, 64 for a
// Range. Its state lives on the stack of the
// goroutine that runs it, and each object goes from the tree to the
// caller's loop in one call (BenchmarkDB_FullIteration_All,
// BenchmarkDB_LowerBound_Primary, bench/compare's List_Tag).
func scanObjects[Obj any](tree *part.Tree[object[Obj]], s scan) iter.Seq2[Obj, Revision] {
	switch {
	case s.upperSet:
		return func(yield func(Obj, Revision) bool) {
			s := s // a copy on this stack: the closure keeps s by value
			runScan(tree, &s, yield)
		}
	case s.op == scanAll:
		reverse := s.reverse
		return func(yield func(Obj, Revision) bool) {
			s := scan{scanFlags: scanFlags{reverse: reverse}}
			runScan(tree, &s, yield)
		}
	default:
		f, lower := s.scanFlags, s.lower
		return func(yield func(Obj, Revision) bool) {
			s := scan{scanFlags: f, lower: lower}
			runScan(tree, &s, yield)
		}
	}
}

// runScan runs the scan s of tree, handing its objects to yield.
func runScan[Obj any](tree *part.Tree[object[Obj]], s *scan, yield func(Obj, Revision) bool) {
	var it part.Iterator[part.Pair[Obj, Revision]]
	it.SetTree(pairTree(*tree))
	seekScan(&it, s)
	if !s.dedup {
		part.YieldPairs(&it, yield)
		return
	}
	var seen map[Revision]struct{}
	part.YieldPairs(&it, func(o Obj, rev Revision) bool {
		if _, dup := seen[rev]; dup {
			return true
		}
		if seen == nil {
			seen = map[Revision]struct{}{}
		}
		seen[rev] = struct{}{}
		return yield(o, rev)
	})
}

// appendEscapedShort returns index.AppendEscaped(buf[:0], k). A short key
// without a 0x00 byte, the usual one, is copied into buf a word at a time
// and terminated, without the calls AppendEscaped makes to grow, search
// and copy.
func appendEscapedShort(buf *[escapedKeyBuf]byte, k []byte) []byte {
	n := len(k)
	if n > len(buf)-2 {
		return index.AppendEscaped(buf[:0], k)
	}
	switch {
	case n >= 8:
		// Whole words, then the last 8 bytes, which may overlap them.
		for i := 0; i+8 <= n; i += 8 {
			w := binary.LittleEndian.Uint64(k[i:])
			if hasZeroByte(w) {
				return index.AppendEscaped(buf[:0], k)
			}
			binary.LittleEndian.PutUint64(buf[i:], w)
		}
		w := binary.LittleEndian.Uint64(k[n-8:])
		if hasZeroByte(w) {
			return index.AppendEscaped(buf[:0], k)
		}
		binary.LittleEndian.PutUint64(buf[n-8:], w)
	case n >= 4:
		// The first 4 bytes and the last 4, which may overlap.
		lo, hi := binary.LittleEndian.Uint32(k), binary.LittleEndian.Uint32(k[n-4:])
		if hasZeroByte(uint64(lo)<<32 | uint64(hi)) {
			return index.AppendEscaped(buf[:0], k)
		}
		binary.LittleEndian.PutUint32(buf[:], lo)
		binary.LittleEndian.PutUint32(buf[n-4:], hi)
	default:
		b := buf[:n]
		for i, c := range k {
			if c == 0 {
				return index.AppendEscaped(buf[:0], k)
			}
			b[i] = c
		}
	}
	buf[n], buf[n+1] = 0x00, 0x01
	return buf[:n+2]
}

// hasZeroByte reports whether one of the 8 bytes of w is 0x00.
func hasZeroByte(w uint64) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	return (w-lows)&^w&highs != 0
}

// seekScan positions it, which reads its tree (SetTree) but is not
// positioned yet, for the scan s.
func seekScan[T any](it *part.Iterator[T], s *scan) {
	switch s.op {
	case scanAll:
		if s.reverse {
			it.Last()
		} else {
			it.First()
		}
	case scanList, scanPrefix:
		var lb [escapedKeyBuf]byte
		p := s.lower.bytes()
		switch {
		case s.nonUnique && s.op == scanList:
			p = appendEscapedShort(&lb, p)
		case s.nonUnique:
			p = index.AppendEscapedPrefix(lb[:0], p)
		}
		if s.reverse {
			it.SeekReversePrefix(p)
		} else {
			it.SeekPrefix(p)
		}
	case scanBounded:
		var lb, ub [escapedKeyBuf]byte
		lower, upper, inclusive := s.lower.bytes(), s.upper.bytes(), s.upperInclusive
		if s.nonUnique {
			// A non-unique index stores escape(key), the terminator
			// 0x00 0x01, then the primary key. Escaped and terminated,
			// the bounds order every entry of a smaller key below and
			// every entry of a greater key above them; an inclusive
			// upper bound becomes the exclusive escape(key) 0x00 0x02,
			// just above all entries of the key itself.
			if s.lowerSet {
				lower = index.AppendEscaped(lb[:0], lower)
			}
			if s.upperSet && inclusive {
				upper = append(index.AppendEscapedPrefix(ub[:0], upper), 0x00, 0x02)
				inclusive = false
			} else if s.upperSet {
				upper = index.AppendEscaped(ub[:0], upper)
			}
		}
		if !s.reverse {
			if s.lowerSet {
				it.SeekLowerBound(lower)
			} else {
				it.First()
			}
			if s.upperSet {
				it.SetEnd(upper, inclusive)
			}
			return
		}
		if s.upperSet {
			it.SeekReverseLowerBound(upper)
			if !inclusive {
				it.Skip(upper)
			}
		} else {
			it.Last()
		}
		if s.lowerSet {
			it.SetEnd(lower, true)
		}
	}
}
