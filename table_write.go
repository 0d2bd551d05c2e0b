package strata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// tableTxn is a table's write state inside a write transaction: one index
// transaction per index, opened together on the first write (the graveyard's
// on first use). Each table owns one and reuses it for every transaction
// that locks the table, so it is touched only under the table lock.
type tableTxn[Obj any] struct {
	t        *table[Obj]
	base     *tableState[Obj] // the state the transaction started from
	revision Revision         // the last revision handed out
	multiKey uint64
	dirty    bool // something was written
	// observed: the table has change feeds, so the revision index is
	// maintained (revIndexed) and deletes go to the graveyard. Decided
	// when the transaction begins (and set when a feed registers in it),
	// not per write.
	observed   bool
	revIndexed bool
	// revOpen: the revision index's transaction is open. It is opened only
	// for tables that have or had feeds, so that other tables' writes pay
	// nothing for it.
	revOpen bool

	primary   part.Txn[object[Obj]]
	revisions part.Txn[object[Obj]]
	secondary []part.Txn[object[Obj]]

	graveyardOpen bool
	graveyard     part.Txn[object[Obj]]
	graveyardRev  part.Txn[object[Obj]]

	init *initState // the pending initializers if changed, else nil

	// registered lists the feeds registered in the transaction; they are
	// closed if it aborts.
	registered []*feedHold

	// journal, when the table is attached to a Journal, receives the
	// transaction's changes at commit; ops records the writes it needs
	// (decided when the transaction begins, not per write), and truncated
	// a DeleteAll.
	journal   TableJournal[Obj]
	ops       []journalOp
	truncated bool
	// attach is the journal SetJournal attached in the transaction, which
	// the table keeps if it commits.
	attach TableJournal[Obj]

	// restoredRevs collects the revisions Restore adds while there is no
	// revision index, to find duplicates.
	restoredRevs []Revision

	// Scratch space, reused across writes.
	newKeys []index.KeySet // per secondary index: the new object's keys
	keyBuf  []byte
	revBuf  [8]byte
}

// writeState returns the table's write state in txn, beginning it on the
// transaction's first write to the table.
func (t *table[Obj]) writeState(txn WriteTxn) (*tableTxn[Obj], error) {
	h, _ := txn.(*txnHandle)
	if h == nil || h.w == nil {
		return nil, ErrTransactionClosed
	}
	w := h.w
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
	tt.observed, tt.revIndexed = tt.t.meta.feeds.live() > 0, base.revIndexed()
	tt.graveyardOpen, tt.init = false, nil
	tt.journal, tt.truncated, tt.attach = tt.t.journal, false, nil
	clear(tt.ops)
	tt.ops = tt.ops[:0]
	tt.primary.Reset(base.primary)
	tt.revOpen = tt.observed || tt.revIndexed
	if tt.revOpen {
		tt.revisions.Reset(base.revisionTree(tt.t))
	}
	if tt.secondary == nil {
		tt.secondary = make([]part.Txn[object[Obj]], len(base.secondary))
		tt.newKeys = make([]index.KeySet, len(base.secondary))
	}
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
	clear(tt.registered)
	tt.registered = tt.registered[:0]
	if base.grave != nil {
		// Before the writes, so that objects inserted again need not be
		// taken out of a graveyard that is about to go.
		tt.collect()
	}
	switch {
	case tt.observed && !tt.revIndexed:
		// A feed registered in a transaction that aborted.
		tt.indexRevisions()
	case !tt.observed && tt.revIndexed:
		// The last feed closed: drop the revision index.
		tt.revisions.DeletePrefix(nil)
		tt.revIndexed, tt.dirty = false, true
	}
}

// indexRevisions builds the revision index from the primary index, for a
// change feed opening on a table that had none.
func (tt *tableTxn[Obj]) indexRevisions() {
	if !tt.revOpen {
		tt.revisions.Reset(tt.base.revisionTree(tt.t))
		tt.revOpen = true
	}
	tt.revisions.DeletePrefix(nil)
	for _, o := range tt.primary.All() {
		tt.revisions.Insert(tt.revKey(o.rev), o)
	}
	tt.revIndexed, tt.dirty = true, true
}

// openGraveyard opens the graveyard's index transactions.
func (tt *tableTxn[Obj]) openGraveyard() {
	if !tt.graveyardOpen {
		g := tt.base.grave
		if g == nil {
			g = tt.t.emptyGrave
		}
		tt.graveyard.Reset(g.byKey)
		tt.graveyardRev.Reset(g.byRev)
		tt.graveyardOpen = true
	}
}

func (tt *tableTxn[Obj]) graveyardLen() int {
	if tt.graveyardOpen {
		return tt.graveyard.Len()
	}
	return tt.base.graveLen()
}

func (tt *tableTxn[Obj]) initState() *initState {
	if tt.init != nil {
		return tt.init
	}
	return tt.base.init
}

func (tt *tableTxn[Obj]) indexTxn(pos int) *part.Txn[object[Obj]] {
	if pos == 0 {
		return &tt.primary
	}
	return &tt.secondary[pos-1]
}

// state builds a tableState from the index transactions; finish turns each
// into a tree (Snapshot for reads inside the transaction, CommitOnly to
// commit).
func (tt *tableTxn[Obj]) state(finish func(*part.Txn[object[Obj]]) part.Tree[object[Obj]]) *tableState[Obj] {
	st := newTableState[Obj](len(tt.secondary))
	st.stateHeader = stateHeader{meta: &tt.t.meta, revision: tt.revision}
	st.primary = finish(&tt.primary)
	st.revs = tt.base.revs
	if tt.revOpen {
		st.revs = nil
		if tt.revIndexed {
			revs := finish(&tt.revisions)
			st.revs = &revs
		}
	}
	st.multiKey = tt.multiKey
	st.grave = tt.base.grave
	st.init = tt.initState()
	for i := range tt.secondary {
		st.secondary[i] = finish(&tt.secondary[i])
	}
	if tt.graveyardOpen {
		st.grave = nil
		if tt.graveyard.Len() > 0 {
			st.grave = &graveyard[Obj]{byKey: finish(&tt.graveyard), byRev: finish(&tt.graveyardRev)}
		}
	}
	return st
}

// newTableState allocates a state with room for n secondary indexes, in one
// allocation for up to four.
func newTableState[Obj any](n int) *tableState[Obj] {
	switch {
	case n == 0:
		return &tableState[Obj]{}
	case n == 1:
		x := &struct {
			tableState[Obj]
			a [1]part.Tree[object[Obj]]
		}{}
		x.secondary = x.a[:]
		return &x.tableState
	case n == 2:
		x := &struct {
			tableState[Obj]
			a [2]part.Tree[object[Obj]]
		}{}
		x.secondary = x.a[:]
		return &x.tableState
	case n <= 4:
		x := &struct {
			tableState[Obj]
			a [4]part.Tree[object[Obj]]
		}{}
		x.secondary = x.a[:n]
		return &x.tableState
	}
	return &tableState[Obj]{secondary: make([]part.Tree[object[Obj]], n)}
}

func snapshotTree[T any](txn *part.Txn[T]) part.Tree[T] { return txn.Snapshot() }
func commitTree[T any](txn *part.Txn[T]) part.Tree[T]   { return txn.CommitOnly() }

// snapshot returns the pending state, for reads through the transaction.
func (tt *tableTxn[Obj]) snapshot() *tableState[Obj] {
	return tt.state(snapshotTree[object[Obj]])
}

func (tt *tableTxn[Obj]) commit() *stateHeader {
	tt.collect()
	if !tt.dirty {
		return nil
	}
	return &tt.state(commitTree[object[Obj]]).stateHeader
}

func (tt *tableTxn[Obj]) notify() {
	tt.primary.Notify()
	if tt.revOpen {
		tt.revisions.Notify()
	}
	for i := range tt.secondary {
		tt.secondary[i].Notify()
	}
	if tt.graveyardOpen {
		tt.graveyard.Notify()
		tt.graveyardRev.Notify()
	}
	if tt.init != nil && len(tt.init.pending) == 0 && len(tt.base.init.pending) > 0 {
		close(tt.init.done)
	}
	if len(tt.registered) > 0 {
		tt.t.meta.feeds.registrationDone(tt.registered, false)
	}
	if tt.attach != nil {
		tt.t.journal, tt.attach = tt.attach, nil
	}
	tt.base, tt.init = nil, nil
}

func (tt *tableTxn[Obj]) abort() {
	// Drop the written nodes now rather than at the next transaction.
	base := tt.base
	tt.primary.Reset(base.primary)
	if tt.revOpen {
		tt.revisions.Reset(base.revisionTree(tt.t))
	}
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
	if tt.graveyardOpen {
		g := base.grave
		if g == nil {
			g = tt.t.emptyGrave
		}
		tt.graveyard.Reset(g.byKey)
		tt.graveyardRev.Reset(g.byRev)
	}
	if len(tt.registered) > 0 {
		// Feeds registered in an aborted transaction are closed.
		tt.t.meta.feeds.registrationDone(tt.registered, true)
	}
	tt.base, tt.init = nil, nil
}

// collect removes from the graveyard the deleted objects that every change
// feed has delivered (all of them when there are no feeds).
func (tt *tableTxn[Obj]) collect() {
	if tt.graveyardLen() == 0 {
		return
	}
	watermark := tt.t.meta.feeds.watermark()
	var tree part.Tree[object[Obj]]
	if tt.graveyardOpen {
		tree = tt.graveyardRev.Snapshot()
	} else {
		tree = tt.base.grave.byRev
	}
	last := tree.Iterator()
	last.Last()
	if k, _, ok := last.Next(); ok && binary.BigEndian.Uint64(k) <= watermark {
		// Every feed is past the newest: drop it all at once.
		tt.openGraveyard()
		tt.graveyard.DeletePrefix(nil)
		tt.graveyardRev.DeletePrefix(nil)
		tt.dirty = true
		return
	}
	for k, o := range tree.All() {
		if binary.BigEndian.Uint64(k) > watermark {
			break
		}
		tt.openGraveyard()
		tt.graveyardRev.Delete(k)
		if pk, err := tt.t.primaryKey(o.obj); err == nil {
			tt.graveyard.Delete(pk)
		}
		tt.dirty = true
	}
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
	if len(pk) > maxKeyLen {
		return oldObj, false, fmt.Errorf("table %q: primary key of %d bytes: %w", t.meta.name, len(pk), ErrKeyTooLong)
	}
	// One descent of the primary index: the checks run on the stored
	// object before anything changes, and a failed check leaves the tree
	// untouched (BenchmarkDB_WriteTxn_1).
	var old object[Obj]
	no := object[Obj]{rev: tt.revision + 1}
	_, _, stored := tt.primary.Update(pk, func(o object[Obj], found bool) (object[Obj], bool) {
		old, hadOld = o, found
		no.obj, err = tt.check(pk, obj, o, found, mode, casRev, merge)
		return no, err == nil
	})
	if !stored {
		clear(tt.newKeys)
		if errors.Is(err, ErrRevisionNotEqual) {
			return old.obj, true, err
		}
		return oldObj, false, err
	}
	tt.revision = no.rev
	if tt.journal != nil {
		tt.ops = append(tt.ops, journalOp{pk: pk, rev: no.rev})
	}
	if tt.revIndexed {
		if hadOld {
			tt.revisions.Delete(tt.revKey(old.rev))
		}
		tt.revisions.Insert(tt.revKey(no.rev), no)
	}
	if !hadOld && tt.graveyardLen() > 0 {
		tt.unbury(pk)
	}
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

// check makes the checks of writing obj over the stored object old (if
// hadOld) and returns the object to store: obj, or for Modify the merge. The
// new object's keys in the secondary indexes are left in tt.newKeys.
func (tt *tableTxn[Obj]) check(pk []byte, obj Obj, old object[Obj], hadOld bool, mode writeMode, casRev Revision, merge func(old, new Obj) Obj) (Obj, error) {
	t := tt.t
	switch mode {
	case modeCAS:
		if !hadOld {
			return obj, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectNotFound)
		}
		if old.rev != casRev {
			return obj, fmt.Errorf("table %q: object at revision %d, not %d: %w", t.meta.name, old.rev, casRev, ErrRevisionNotEqual)
		}
	case modeModify:
		if hadOld {
			obj = merge(old.obj, obj)
			mpk, err := t.primaryKey(obj)
			if err != nil {
				return obj, err
			}
			if !bytes.Equal(mpk, pk) {
				return obj, fmt.Errorf("table %q: %w", t.meta.name, ErrPrimaryKeyChanged)
			}
		}
	}
	if hadOld && t.pointerObj && samePointer(&old.obj, &obj) {
		return obj, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectMutated)
	}
	for i := range tt.secondary {
		ix := &t.indexes[i+1]
		keys := ix.fromObject(obj)
		tt.newKeys[i] = keys
		for j := range keys.Len() {
			if len(keys.At(j)) > maxKeyLen {
				return obj, fmt.Errorf("table %q: index %q: key of %d bytes: %w", t.meta.name, ix.name, len(keys.At(j)), ErrKeyTooLong)
			}
		}
		if !ix.unique {
			continue
		}
		for j := range keys.Len() {
			if e, found := tt.secondary[i].Get(keys.At(j)); found && (!hadOld || e.rev != old.rev) {
				return obj, fmt.Errorf("table %q: index %q: key %s: %w", t.meta.name, ix.name, keys.At(j), ErrUniqueConstraint)
			}
		}
	}
	return obj, nil
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
	if tt.revIndexed {
		tt.revisions.Delete(tt.revKey(old.rev))
	}
	for i := range tt.secondary {
		ix := &t.indexes[i+1]
		keys := ix.fromObject(old.obj)
		for j := range keys.Len() {
			tt.secondary[i].Delete(tt.treeKey(ix, keys.At(j), pk))
		}
	}
	if tt.observed {
		tt.bury(pk, object[Obj]{obj: old.obj, rev: tt.revision})
	}
	if tt.journal != nil {
		tt.ops = append(tt.ops, journalOp{pk: pk, rev: tt.revision, deleted: true})
	}
	tt.dirty = true
	return old.obj, true, nil
}

// bury puts a deleted object in the graveyard, for the change feeds.
func (tt *tableTxn[Obj]) bury(pk []byte, o object[Obj]) {
	tt.openGraveyard()
	if prev, found := tt.graveyard.Insert(pk, o); found {
		tt.graveyardRev.Delete(tt.revKey(prev.rev))
	}
	tt.graveyardRev.Insert(tt.revKey(o.rev), o)
}

// unbury takes an object that is inserted again out of the graveyard, so
// that change feeds see only its newest state.
func (tt *tableTxn[Obj]) unbury(pk []byte) {
	tt.openGraveyard()
	if prev, found := tt.graveyard.Delete(pk); found {
		tt.graveyardRev.Delete(tt.revKey(prev.rev))
	}
}

func (tt *tableTxn[Obj]) removeAll() {
	if tt.primary.Len() == 0 {
		return
	}
	// Each deleted object takes a revision of its own, in primary key
	// order, as if deleted one by one; with change feeds it goes to the
	// graveyard under it.
	if tt.observed {
		for pk, o := range tt.primary.All() {
			tt.revision++
			tt.bury(pk, object[Obj]{obj: o.obj, rev: tt.revision})
		}
	} else {
		tt.revision += Revision(tt.primary.Len())
	}
	if tt.journal != nil {
		tt.truncated = true
		clear(tt.ops)
		tt.ops = tt.ops[:0]
	}
	tt.primary.DeletePrefix(nil)
	if tt.revIndexed {
		tt.revisions.DeletePrefix(nil)
	}
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
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
