package strata

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// tableTxn is a table's write state inside a write transaction: one index
// transaction per index, opened together on the first write. Each table
// owns one and reuses it for every transaction that locks the table, so it
// is touched only under the table lock.
type tableTxn[Obj any] struct {
	t        *table[Obj]
	base     *tableState[Obj] // the state the transaction started from
	revision Revision         // the last revision handed out
	multiKey uint64
	dirty    bool // something was written

	primary   part.Txn[object[Obj]]
	revisions part.Txn[object[Obj]]
	secondary []part.Txn[object[Obj]]

	// Scratch space, reused across writes.
	newKeys []index.KeySet // per secondary index: the new object's keys
	keyBuf  []byte
	revBuf  [8]byte
}

// writeState returns the table's write state in txn, beginning it on the
// transaction's first write to the table.
func (t *table[Obj]) writeState(txn WriteTxn) (*tableTxn[Obj], error) {
	w, _ := txn.(*writeTxn)
	if w == nil {
		return nil, ErrTransactionClosed
	}
	lt, err := w.writer(&t.meta)
	if err != nil {
		return nil, err
	}
	if lt.w == nil {
		t.writer.begin(t.stateIn(w.root))
		lt.w = &t.writer
	}
	return &t.writer, nil
}

func (tt *tableTxn[Obj]) begin(base *tableState[Obj]) {
	tt.base, tt.revision, tt.multiKey, tt.dirty = base, base.revision, base.multiKey, false
	tt.primary.Reset(base.primary)
	tt.revisions.Reset(base.revisions)
	if tt.secondary == nil {
		tt.secondary = make([]part.Txn[object[Obj]], len(base.secondary))
		tt.newKeys = make([]index.KeySet, len(base.secondary))
	}
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
}

func (tt *tableTxn[Obj]) indexTxn(pos int) *part.Txn[object[Obj]] {
	if pos == 0 {
		return &tt.primary
	}
	return &tt.secondary[pos-1]
}

// snapshot returns the pending state, for reads through the transaction.
func (tt *tableTxn[Obj]) snapshot() *tableState[Obj] {
	st := &tableState[Obj]{
		stateHeader: stateHeader{meta: &tt.t.meta, revision: tt.revision},
		primary:     tt.primary.Snapshot(),
		revisions:   tt.revisions.Snapshot(),
		multiKey:    tt.multiKey,
	}
	if len(tt.secondary) > 0 {
		st.secondary = make([]part.Tree[object[Obj]], len(tt.secondary))
		for i := range tt.secondary {
			st.secondary[i] = tt.secondary[i].Snapshot()
		}
	}
	return st
}

func (tt *tableTxn[Obj]) commit() *stateHeader {
	if !tt.dirty {
		return nil
	}
	st := &tableState[Obj]{
		stateHeader: stateHeader{meta: &tt.t.meta, revision: tt.revision},
		primary:     tt.primary.CommitOnly(),
		revisions:   tt.revisions.CommitOnly(),
		multiKey:    tt.multiKey,
	}
	if len(tt.secondary) > 0 {
		st.secondary = make([]part.Tree[object[Obj]], len(tt.secondary))
		for i := range tt.secondary {
			st.secondary[i] = tt.secondary[i].CommitOnly()
		}
	}
	return &st.stateHeader
}

func (tt *tableTxn[Obj]) notify() {
	tt.primary.Notify()
	tt.revisions.Notify()
	for i := range tt.secondary {
		tt.secondary[i].Notify()
	}
	tt.base = nil
}

func (tt *tableTxn[Obj]) abort() {
	// Drop the written nodes now rather than at the next transaction.
	base := tt.base
	tt.primary.Reset(base.primary)
	tt.revisions.Reset(base.revisions)
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
	tt.base = nil
}

func (tt *tableTxn[Obj]) revKey(rev Revision) []byte {
	binary.BigEndian.PutUint64(tt.revBuf[:], rev)
	return tt.revBuf[:]
}

// treeKey returns the key under which an object with primary key pk is
// stored for its key k in the secondary index ix. A unique index stores k
// itself. A non-unique index stores k escaped and terminated (so that no
// key is a prefix of another) followed by pk, which keeps the entries of
// different objects with the same k apart. The result may be scratch space
// that the next call overwrites.
func (tt *tableTxn[Obj]) treeKey(ix *indexDef[Obj], k, pk []byte) []byte {
	if ix.unique {
		return k
	}
	tt.keyBuf = append(index.AppendEscaped(tt.keyBuf[:0], k), pk...)
	return tt.keyBuf
}

// writeMode selects the checks an upsert makes.
type writeMode uint8

const (
	modeInsert writeMode = iota
	modeModify
	modeCAS
)

// upsert inserts obj (or, with modeModify, merges it into the existing
// object). It makes every check before its first change, so an error leaves
// the table as it was.
func (tt *tableTxn[Obj]) upsert(obj Obj, mode writeMode, casRev Revision, merge func(old, new Obj) Obj) (oldObj Obj, hadOld bool, err error) {
	t := tt.t
	pk, err := t.primaryKey(obj)
	if err != nil {
		return oldObj, false, err
	}
	old, hadOld := tt.primary.Get(pk)
	switch mode {
	case modeCAS:
		if !hadOld {
			return oldObj, false, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectNotFound)
		}
		if old.rev != casRev {
			return old.obj, true, fmt.Errorf("table %q: object at revision %d, not %d: %w", t.meta.name, old.rev, casRev, ErrRevisionNotEqual)
		}
	case modeModify:
		if hadOld {
			obj = merge(old.obj, obj)
			mpk, err := t.primaryKey(obj)
			if err != nil {
				return oldObj, false, err
			}
			if !bytes.Equal(mpk, pk) {
				return oldObj, false, fmt.Errorf("table %q: %w", t.meta.name, ErrPrimaryKeyChanged)
			}
		}
	}
	if hadOld && t.pointerObj && samePointer(&old.obj, &obj) {
		return oldObj, false, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectMutated)
	}
	for i := range tt.secondary {
		ix := &t.indexes[i+1]
		keys := ix.fromObject(obj)
		tt.newKeys[i] = keys
		if !ix.unique {
			continue
		}
		for j := range keys.Len() {
			if e, found := tt.secondary[i].Get(keys.At(j)); found && (!hadOld || e.rev != old.rev) {
				clear(tt.newKeys)
				return oldObj, false, fmt.Errorf("table %q: index %q: key %s: %w", t.meta.name, ix.name, keys.At(j), ErrUniqueConstraint)
			}
		}
	}

	tt.revision++
	no := object[Obj]{obj: obj, rev: tt.revision}
	tt.primary.Insert(pk, no)
	if hadOld {
		tt.revisions.Delete(tt.revKey(old.rev))
	}
	tt.revisions.Insert(tt.revKey(no.rev), no)
	for i := range tt.secondary {
		ix := &t.indexes[i+1]
		keys := tt.newKeys[i]
		tt.newKeys[i] = index.KeySet{}
		if keys.Len() > 1 {
			tt.multiKey |= 1 << ix.pos
		}
		if hadOld {
			oldKeys := ix.fromObject(old.obj)
			for j := range oldKeys.Len() {
				if k := oldKeys.At(j); !keys.Contains(k) {
					tt.secondary[i].Delete(tt.treeKey(ix, k, pk))
				}
			}
		}
		for j := range keys.Len() {
			tt.secondary[i].Insert(tt.treeKey(ix, keys.At(j), pk), no)
		}
	}
	tt.dirty = true
	return old.obj, hadOld, nil
}

// remove deletes the object with obj's primary key, checking its revision
// if cas is set.
func (tt *tableTxn[Obj]) remove(obj Obj, cas bool, casRev Revision) (oldObj Obj, hadOld bool, err error) {
	t := tt.t
	pk, err := t.primaryKey(obj)
	if err != nil {
		return oldObj, false, err
	}
	if cas {
		old, found := tt.primary.Get(pk)
		if !found {
			return oldObj, false, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectNotFound)
		}
		if old.rev != casRev {
			return old.obj, true, fmt.Errorf("table %q: object at revision %d, not %d: %w", t.meta.name, old.rev, casRev, ErrRevisionNotEqual)
		}
	}
	old, found := tt.primary.Delete(pk)
	if !found {
		return oldObj, false, nil
	}
	tt.revision++
	tt.revisions.Delete(tt.revKey(old.rev))
	for i := range tt.secondary {
		ix := &t.indexes[i+1]
		keys := ix.fromObject(old.obj)
		for j := range keys.Len() {
			tt.secondary[i].Delete(tt.treeKey(ix, keys.At(j), pk))
		}
	}
	tt.dirty = true
	return old.obj, true, nil
}

func (tt *tableTxn[Obj]) removeAll() {
	if tt.primary.Len() == 0 {
		return
	}
	tt.primary.DeletePrefix(nil)
	tt.revisions.DeletePrefix(nil)
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
	tt.revision++
	tt.dirty = true
}

func (t *table[Obj]) Insert(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeInsert, 0, nil)
}

func (t *table[Obj]) InsertWatch(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, watch <-chan struct{}, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, nil, err
	}
	oldObj, hadOld, err = tt.upsert(obj, modeInsert, 0, nil)
	if err != nil {
		return oldObj, hadOld, nil, err
	}
	pk, _ := t.primaryKey(obj)
	_, watch, _ = tt.primary.GetWatch(pk)
	return oldObj, hadOld, watch, nil
}

func (t *table[Obj]) Modify(txn WriteTxn, obj Obj, merge func(old, new Obj) Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeModify, 0, merge)
}

func (t *table[Obj]) CompareAndSwap(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeCAS, rev, nil)
}

func (t *table[Obj]) Delete(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.remove(obj, false, 0)
}

func (t *table[Obj]) CompareAndDelete(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.remove(obj, true, rev)
}

func (t *table[Obj]) DeleteAll(txn WriteTxn) error {
	tt, err := t.writeState(txn)
	if err != nil {
		return err
	}
	tt.removeAll()
	return nil
}
