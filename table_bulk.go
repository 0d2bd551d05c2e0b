package strata

import (
	"bytes"
	"errors"
	"fmt"
	"iter"

	"github.com/strata-db/strata/index"
)

// Writing many objects that a read selects: DeletePrefix, DeleteRange,
// DeleteMatches, DeleteEach and ModifyEach. Each deletion runs in two
// passes:
//
//  1. collect: read the objects to delete from the transaction's own
//     state, and compute every key the deletes need (the primary key and
//     the keys in every secondary index) before the first change, so that
//     an index function that panics leaves the table as it was;
//  2. remove: delete them, each at a revision of its own, in the order the
//     query returned them, with a change-log entry and a journal note each,
//     as Delete would.
//
// Where the objects deleted are every entry under one prefix of the index
// queried (DeletePrefix on the primary index; DeleteMatches and
// DeletePrefix on a secondary index other than an LPM index), that index
// loses them in one cut of its tree (part.Txn.DeletePrefix) rather than a
// delete per key, and the other indexes a delete per key each
// (BenchmarkDB_DeleteMatches; bench/compare's DeleteMatches beside
// statedb's and go-memdb's).

func (t *table[Obj]) DeletePrefix(txn WriteTxn, q Query[Obj]) (int, error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, err
	}
	ix := t.index(q.index)
	switch {
	case ix.pos == 0:
		return tt.cutPrefix(ix, q.key.bytes(), pkIsKey), nil
	case ix.lpm:
		return tt.removeEach(t.Prefix(txn, q))
	case ix.unique:
		return tt.cutPrefix(ix, q.key.bytes(), pkFromObject), nil
	}
	return tt.cutPrefix(ix, index.AppendEscapedPrefix(nil, q.key.bytes()), pkAfterEscaped), nil
}

func (t *table[Obj]) DeleteRange(txn WriteTxn, from, to Query[Obj]) (int, error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, err
	}
	return tt.removeEach(t.Range(txn, from, to))
}

func (t *table[Obj]) DeleteMatches(txn WriteTxn, q Query[Obj]) (int, error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, err
	}
	ix := t.index(q.index)
	if ix.unique || ix.lpm {
		// At most one object (unique), or a longest-prefix match (LPM):
		// nothing to cut.
		return tt.removeEach(t.List(txn, q))
	}
	// Every entry of the key is under its escaped form, followed by the
	// object's primary key.
	return tt.cutPrefix(ix, index.AppendEscaped(nil, q.key.bytes()), pkAfterPrefix), nil
}

// DeleteEach removes from t, in txn, every object objs yields, and returns
// how many it removed. objs is read to its end before the first change, so
// it may be a read of t through txn itself: the result of And, In or Or, or
// of any of t's reads. Objects objs yields that t does not hold (any more)
// are skipped, an object yielded twice is removed once, and an object is
// found by its primary key: the one t holds is removed whatever its
// revision (use CompareAndDelete to delete only what was read).
//
// Like DeleteMatches, every deletion takes a revision of its own and is
// delivered to change feeds and persisted; an index function that panics
// leaves the table as it was.
func DeleteEach[Obj any](txn WriteTxn, t RWTable[Obj], objs iter.Seq2[Obj, Revision]) (int, error) {
	tt, err := tableOf[Obj](t).txnFor(txn)
	if err != nil {
		return 0, err
	}
	return tt.removeEach(objs)
}

// pkFrom says where cutPrefix finds an object's primary key.
type pkFrom uint8

const (
	pkIsKey        pkFrom = iota // the tree's key: the primary index
	pkAfterPrefix                // the rest of the key after the prefix: a non-unique index's entries of one key
	pkAfterEscaped               // the rest after the escaped secondary key: a non-unique index
	pkFromObject                 // computed from the object: a unique secondary index
)

// cutObject is an object a bulk delete removes, and its primary key.
type cutObject[Obj any] struct {
	pk  []byte
	old object[Obj]
}

// cutPrefix removes the objects of the entries of index ix that start with
// prefix (in the form the index's tree stores its keys): from ix in one cut
// of its tree, from the other indexes one key at a time. from says how to
// find an object's primary key from its entry.
func (tt *tableTxn[Obj]) cutPrefix(ix *indexDef[Obj], prefix []byte, from pkFrom) int {
	defer tt.clearCut()
	// An object has one key in an index that never held an object with
	// several: its entry under the prefix, which the cut removes. Its keys
	// in ix need not be computed then.
	skip := -1
	if ix.pos > 0 && tt.cur.multiKey&(1<<ix.pos) == 0 {
		skip = ix.pos
	}
	tt.growCut(tt.indexTxn(ix.pos).CountPrefix(prefix), skip)
	for k, o := range tt.indexTxn(ix.pos).Prefix(prefix) {
		var pk []byte
		switch from {
		case pkIsKey:
			pk = k
		case pkAfterPrefix:
			pk = k[len(prefix):]
		case pkAfterEscaped:
			_, rest, err := index.UnescapeNext(k)
			if err != nil {
				panic(fmt.Sprintf("strata: table %q: index %q holds a malformed key: %v", tt.t.meta.name, ix.name, err))
			}
			pk = rest
		case pkFromObject:
			var ok bool
			if pk, ok = tt.appendKey(o.obj); !ok {
				panic(fmt.Sprintf("strata: table %q: a stored object has no primary key", tt.t.meta.name))
			}
		}
		tt.collect(pk, o, skip)
	}
	if len(tt.scratch.cut) == 0 {
		return 0
	}
	tt.indexTxn(ix.pos).DeletePrefix(prefix)
	return tt.removeCollected(ix.pos, prefix)
}

// removeEach removes the objects objs yields, which it reads to the end
// first: they may come from a snapshot of the transaction. Each is found
// by its primary key, and the object the table holds is the one removed;
// one it does not hold is skipped.
func (tt *tableTxn[Obj]) removeEach(objs iter.Seq2[Obj, Revision]) (int, error) {
	defer tt.clearCut()
	primary := tt.indexTxn(0)
	for obj := range objs {
		pk, ok := tt.appendKey(obj)
		if !ok {
			return 0, fmt.Errorf("table %q: index %q: %w", tt.t.meta.name, tt.t.indexes[0].name, ErrPrimaryKey)
		}
		o, found := primary.Get(pk)
		if !found {
			tt.scratch.pkArena = tt.scratch.pkArena[:len(tt.scratch.pkArena)-len(pk)]
			continue
		}
		tt.collect(pk, o, -1)
	}
	if len(tt.scratch.cut) == 0 {
		return 0, nil
	}
	return tt.removeCollected(-1, nil), nil
}

// appendKey appends obj's primary key to the transaction's key arena and
// returns it; ok is false if the primary index does not yield one key.
// The key stays valid when later appends move the arena: its bytes are
// never written again (the arena only grows, or is cut back to before
// the key the caller drops), and the array the arena left keeps them.
func (tt *tableTxn[Obj]) appendKey(obj Obj) (pk []byte, ok bool) {
	keys := tt.t.indexes[0].fromObject(obj)
	if keys.Len() != 1 {
		return nil, false
	}
	s := &tt.scratch
	start := len(s.pkArena)
	s.pkArena = append(s.pkArena, keys.At(0)...)
	return s.pkArena[start:len(s.pkArena):len(s.pkArena)], true
}

// collect records o, whose primary key is pk, as an object to remove,
// with its keys in every secondary index but the one at position skip
// (none if -1).
func (tt *tableTxn[Obj]) collect(pk []byte, o object[Obj], skip int) {
	t := tt.t
	tt.scratch.cut = append(tt.scratch.cut, cutObject[Obj]{pk, o})
	if t.nsec == 1 && skip == 1 {
		return // no keys to keep: removeCollected finds none
	}
	for i := range t.nsec {
		var keys index.KeySet
		if i+1 != skip {
			keys = t.indexes[i+1].fromObject(o.obj)
		}
		tt.scratch.cutKeys = append(tt.scratch.cutKeys, keys)
	}
}

// removeCollected removes the objects collected, in the order collected,
// and returns how many it removed. Each removal after the primary index's
// is remove's, written out rather than shared: a call remove would make
// costs Delete 35 instructions an object (BenchmarkDB_Delete, +1.4%). The entries of index cut under prefix
// are already gone (cut is -1 if none is); an object collected twice is
// removed once.
func (tt *tableTxn[Obj]) removeCollected(cut int, prefix []byte) int {
	t := tt.t
	keys := tt.scratch.cutKeys
	stride := t.nsec // keys per object: none if collect kept none
	if len(keys) == 0 {
		stride = 0
	}
	removed := 0
	for _, c := range tt.scratch.cut {
		ck := keys[:stride]
		keys = keys[stride:]
		if cut != 0 {
			if _, had := tt.primary.Delete(c.pk); !had {
				continue // collected twice
			}
		}
		removed++
		tt.cur.revision++
		if tt.log.cur.end.seg != nil {
			tt.log.append(logEntry[Obj]{obj: c.old.obj, rev: tt.cur.revision, prev: c.old.rev, kind: entryDelete})
			tt.log.lastDelete = tt.cur.revision
		}
		for i := range stride {
			ix := &t.indexes[i+1]
			for j := range ck[i].Len() {
				k := tt.treeKey(ix, ck[i].At(j), c.pk)
				if ix.pos == cut && bytes.HasPrefix(k, prefix) {
					continue
				}
				tt.secondary[i].Delete(k)
			}
		}
		if t.byRevision {
			tt.deleteRevisionKey(c.old.rev)
		}
		if j := &tt.cur.journal; j.tj != nil {
			j.note(c.pk, tt.cur.revision, true, c.old.obj)
		}
	}
	if removed > 0 {
		tt.cur.dirty, tt.cur.written = true, true
	}
	return removed
}

// keptCut is the number of objects whose scratch space a bulk delete
// keeps for the next one; the space of a larger one is let go, so that a
// table does not hold on to memory for its largest delete ever.
const keptCut = 1024

// growCut makes room for n objects in the scratch space of a bulk
// delete, which counts them first (in O(key length)), so that collecting
// them allocates once rather than at every doubling; skip is the index
// whose keys collect does not compute.
func (tt *tableTxn[Obj]) growCut(n, skip int) {
	s := &tt.scratch
	if cap(s.cut) < n {
		s.cut = make([]cutObject[Obj], 0, n)
		if !(tt.t.nsec == 1 && skip == 1) {
			s.cutKeys = make([]index.KeySet, 0, n*tt.t.nsec)
		}
	}
}

// clearCut empties the scratch space of a bulk delete, keeping its
// capacity for the next one unless it is larger than keptCut objects.
func (tt *tableTxn[Obj]) clearCut() {
	s := &tt.scratch
	if cap(s.cut) > keptCut || cap(s.mods) > keptCut {
		s.cut, s.cutKeys, s.pkArena, s.mods = nil, nil, nil, nil
		return
	}
	clear(s.cut)
	clear(s.cutKeys)
	clear(s.mods)
	s.cut, s.cutKeys, s.mods = s.cut[:0], s.cutKeys[:0], s.mods[:0]
	s.pkArena = s.pkArena[:0]
}

// ModifyEach replaces each object objs yields with what modify returns
// for it, and returns how many it replaced. objs is read to its end before
// the first change, so it may be a read of t through txn itself: the
// result of And, In or Or, or of any of t's reads, which a loop writing as
// it reads would see change under it. Each object is found by its primary
// key, and modify is given the one t holds; an object t does not hold is
// skipped. modify returns the object to store, with the same primary key,
// and whether to store it at all.
//
// Every object modify returns is checked before the first change, and
// its keys computed: one with another primary key is
// ErrPrimaryKeyChanged, a key too long ErrKeyTooLong, an expiry past
// ErrExpired, and nothing is written; an index function that panics
// leaves the table as it was. The
// writes are then made one by one, as Insert makes them, each at a
// revision of its own and delivered to change feeds: a unique key another
// object holds (ErrUniqueConstraint, which depends on the order of the
// writes) returns with the objects before it written in txn, which the
// caller aborts to undo them.
// An object objs yields twice is replaced once (modify may be called for
// it twice). The object modify returns must be a new one: a pointer
// object changed in place is ErrObjectMutated, as with Insert.
func ModifyEach[Obj any](txn WriteTxn, t RWTable[Obj], objs iter.Seq2[Obj, Revision], modify func(old Obj) (new Obj, write bool)) (int, error) {
	tbl := tableOf[Obj](t)
	tt, err := tbl.txnFor(txn)
	if err != nil {
		return 0, err
	}
	defer tt.clearCut()
	primary := tt.indexTxn(0)
	var pk []byte
	for obj := range objs {
		if pk, err = tbl.primaryKey(pk, obj); err != nil {
			return 0, err
		}
		o, found := primary.Get(pk)
		if !found {
			continue
		}
		nw, write := modify(o.obj)
		if !write {
			continue
		}
		npk, err := tbl.primaryKey(tt.scratch.pkBuf, nw)
		if err != nil {
			return 0, err
		}
		tt.scratch.pkBuf = npk
		if !bytes.Equal(npk, pk) {
			return 0, fmt.Errorf("table %q: %w", tbl.meta.name, ErrPrimaryKeyChanged)
		}
		if err := tt.checkKeys(nw); err != nil {
			return 0, err
		}
		tt.scratch.mods = append(tt.scratch.mods, object[Obj]{obj: nw, rev: o.rev})
	}
	n := 0
	for _, c := range tt.scratch.mods {
		// Written at the revision it was read at: a second copy of an
		// object already written by this call is not written again.
		if _, _, err := tt.upsert(c.obj, modeCAS, c.rev, nil); err != nil {
			if errors.Is(err, ErrRevisionNotEqual) {
				continue
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// checkKeys computes obj's keys in every secondary index and makes the
// checks of them that do not depend on the table (checkNewKeys). The
// write computes them again: keeping them for it costs more, in memory
// the collector scans, than computing them twice (BenchmarkDB_ModifyEach).
func (tt *tableTxn[Obj]) checkKeys(obj Obj) error {
	t := tt.t
	defer clear(tt.scratch.newKeys)
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		tt.scratch.newKeys[i] = ix.fromObject(obj)
		if err := t.checkNewKeys(ix, &tt.scratch.newKeys[i], modeCAS); err != nil {
			return err
		}
	}
	return nil
}
