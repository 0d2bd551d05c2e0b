package strata

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// tableTxn is a table's part of a write transaction: one index
// transaction per index, opened together on the first write. Each table
// owns one and reuses it for every transaction that locks the table, so it
// is touched only under the table lock.
//
// It is composed of named parts, so that the concern is named at every
// use (tt.cur.revision, tt.log.cur.end, tt.cur.journal.ops, ...). What
// belongs to one transaction is in cur (and the log appender's log.cur),
// which begin resets in one assignment each: no field of it
// survives into the next transaction (TestTableTxnBeginResets). The rest
// lives across transactions on purpose, as its comment says.
type tableTxn[Obj any] struct {
	t *table[Obj]

	// cur is the transaction's own state; begin resets it.
	cur txnState[Obj]

	// Kept across transactions: the index transactions, which begin
	// Resets to the base's trees (each keeps its scratch and caches).
	primary   part.Txn[object[Obj]]
	secondary []part.Txn[object[Obj]]

	// log appends to the change log (changelog_append.go). Its
	// per-transaction state, log.cur, is reset by its begin; its head and
	// lastDelete are kept across transactions.
	log logAppender[Obj]

	// scratch is space reused across writes and transactions.
	scratch writeScratch[Obj]
}

// txnState is a table's state that belongs to one write transaction.
// tableTxn.begin replaces it with one assignment, carrying over only the
// capacity of its slices.
type txnState[Obj any] struct {
	base     *tableState[Obj] // the state the transaction started from
	revision Revision         // the last revision handed out
	multiKey uint64
	// handle is the name of the handle whose transaction this is.
	handle string
	// dirty: the table's state changed, so the transaction publishes a
	// new one; written: its objects or revision changed, which the
	// journal records (a change log started or dropped, an initializer
	// registered or done, are not).
	dirty, written bool

	init *initializers // the pending initializers if changed, else nil

	// newFeeds lists the feeds registered in the transaction; they are
	// closed if it aborts.
	newFeeds []*feedEntry

	// journal is what the table's journal gets at commit (journal.go).
	journal journalTxn[Obj]

	// restore is what a Restore in the transaction keeps (restore.go).
	restore restoreTxn[Obj]
}

// restoreTxn is a transaction's part for Restore (restore.go).
type restoreTxn[Obj any] struct {
	// restored collects what Restore adds, to find duplicate revisions
	// and to log the objects in revision order; restoring.end drops it.
	restored []object[Obj]
	// keepLock is set by a Restore, whose commit keeps the table locked
	// until it is published (keepsLock).
	keepLock bool
}

// writeScratch is space a table's writes reuse, across writes and
// transactions: nothing in it means anything once a write has returned.
type writeScratch[Obj any] struct {
	// The KeySets live here rather than in locals, so that At's results,
	// which may point into them, never make a local escape.
	newKeys []index.KeySet // per secondary index: the new object's keys
	oldKeys []index.KeySet // per secondary index: the keys of the object replaced or deleted
	// cut holds the objects a bulk delete removes (table_bulk.go), and
	// cutKeys their secondary keys, index after index; pkArena holds the
	// primary keys it computed (appendKey).
	cut     []cutObject[Obj]
	cutKeys []index.KeySet
	pkArena []byte
	// mods holds the objects a ModifyEach writes, with the revisions
	// they were read at.
	mods   []object[Obj]
	keyBuf []byte
	pkBuf  []byte // the primary key of the object being written
}

// txnFor returns the table's tableTxn in txn, beginning it on the
// transaction's first write to the table.
func (t *table[Obj]) txnFor(txn WriteTxn) (*tableTxn[Obj], error) {
	h, _ := txn.(*txnRef)
	if h == nil || h.w == nil {
		return nil, ErrTransactionClosed
	}
	w := h.w
	if t.meta.db.dbShared != w.db.dbShared {
		panicOtherDB(&t.meta)
	}
	lt, err := w.locked(&t.meta)
	if err != nil {
		return nil, err
	}
	if lt.txn == nil {
		published := t.stateIn(w.root)
		base := published
		if lt.tip != nil {
			base = (*tableState[Obj])(unsafeStatePointer(lt.tip))
		}
		t.txn.begin(base, published, w.db.handle)
		lt.txn = &t.txn
	}
	return &t.txn, nil
}

// begin starts the table's part of a transaction from base: the published
// state, or the table's tip (commitqueue.go).
func (tt *tableTxn[Obj]) begin(base, published *tableState[Obj], handle string) {
	// One assignment resets the whole per-transaction state, then the
	// transaction's starting values are set, and the slices whose
	// capacity it reuses, emptied. (A literal with all of these would be
	// built in a temporary and copied: BenchmarkDB_WriteTxn_1.)
	clear(tt.cur.newFeeds)
	clear(tt.cur.journal.ops)
	clear(tt.cur.journal.objs)
	feeds, ops, opKeys := tt.cur.newFeeds[:0], tt.cur.journal.ops[:0], tt.cur.journal.opKeys[:0]
	objs := tt.cur.journal.objs[:0]
	tt.cur = txnState[Obj]{}
	cur := &tt.cur
	cur.base, cur.revision, cur.multiKey, cur.handle = base, base.revision, base.multiKey, handle
	cur.newFeeds = feeds
	cur.journal.ops, cur.journal.opKeys, cur.journal.objs = ops, opKeys, objs
	cur.journal.use(tt.t.journal)
	tt.primary.Reset(base.primary)
	if tt.secondary == nil {
		tt.secondary = make([]part.Txn[object[Obj]], len(base.secondary))
		tt.scratch.newKeys = make([]index.KeySet, len(base.secondary))
		tt.scratch.oldKeys = make([]index.KeySet, len(base.secondary))
	}
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
	if observed := tt.t.meta.feeds.live() > 0; !observed && base.log.seg == nil {
		tt.log.idle()
	} else if tt.log.begin(base, published, observed) {
		tt.cur.dirty = true
	}
}

// startLog starts a new, empty change log for the table.
func (tt *tableTxn[Obj]) startLog() {
	tt.log.start()
	tt.cur.dirty = true
}

// checkLog checks the change log's invariants (changelog_check.go) with
// end as the committed end of the log. It runs only under the invariants
// build tag.
func (tt *tableTxn[Obj]) checkLog(end logPos[Obj]) {
	if err := tt.log.check(end); err != nil {
		panic(fmt.Sprintf("strata: table %q: change log: %v", tt.t.meta.name, err))
	}
}

func (tt *tableTxn[Obj]) initializers() *initializers {
	if tt.cur.init != nil {
		return tt.cur.init
	}
	return tt.cur.base.init
}

func (tt *tableTxn[Obj]) indexTxn(pos int) *part.Txn[object[Obj]] {
	if pos == 0 {
		return &tt.primary
	}
	return &tt.secondary[pos-1]
}

// buildState builds a tableState from the index transactions; finish turns each
// into a tree (Snapshot for reads inside the transaction, CommitOnly to
// commit).
func (tt *tableTxn[Obj]) buildState(finish func(*part.Txn[object[Obj]]) part.Tree[object[Obj]]) *tableState[Obj] {
	st := newTableState[Obj](len(tt.secondary))
	st.tableStateHeader = tableStateHeader{meta: &tt.t.meta, revision: tt.cur.revision, lastHandle: tt.cur.base.lastHandle}
	if tt.cur.written {
		st.lastHandle = tt.cur.handle
	}
	st.primary = finish(&tt.primary)
	st.log = tt.log.cur.end
	st.multiKey = tt.cur.multiKey
	st.init = tt.initializers()
	for i := range tt.secondary {
		st.secondary[i] = finish(&tt.secondary[i])
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
	return tt.buildState(snapshotTree[object[Obj]])
}

func (tt *tableTxn[Obj]) commit() *tableStateHeader {
	if !tt.cur.dirty {
		return nil
	}
	if tt.log.cur.segments > 0 {
		tt.log.trim()
	}
	return &tt.buildState(commitTree[object[Obj]]).tableStateHeader
}

func (tt *tableTxn[Obj]) notify() {
	tt.primary.Notify()
	for i := range tt.secondary {
		tt.secondary[i].Notify()
	}
	if tt.cur.init != nil {
		tt.cur.init.committed()
	}
	if len(tt.cur.newFeeds) > 0 {
		tt.t.meta.feeds.registrationDone(tt.cur.newFeeds, false)
	}
	tt.cur.journal.notify(tt.t)
	tt.cur.base, tt.cur.init = nil, nil
	if invariants {
		tt.checkLog(tt.log.cur.end)
	}
}

// keepsLock implements tableCommitter.
func (tt *tableTxn[Obj]) keepsLock() bool {
	return tt.cur.init != nil || len(tt.cur.newFeeds) > 0 || tt.cur.journal.attach != nil || tt.cur.restore.keepLock ||
		!sameLog(tt.cur.base.log, tt.log.cur.end)
}

// sameLog reports whether a and b are positions in the same log, or both
// in none.
func sameLog[Obj any](a, b logPos[Obj]) bool {
	if a.seg == nil || b.seg == nil {
		return a.seg == b.seg
	}
	return a.seg.chain == b.seg.chain
}

// handOff implements tableCommitter: what notify does, but the retired
// nodes' channels, which w keeps to close once the commit is published
// (the commit changed only objects: keepsLock).
func (tt *tableTxn[Obj]) handOff(w *txnCore) {
	w.mark = min(w.mark, tt.primary.Mark())
	tt.primary.MoveRetired(&w.retired)
	for i := range tt.secondary {
		w.mark = min(w.mark, tt.secondary[i].Mark())
		tt.secondary[i].MoveRetired(&w.retired)
	}
	tt.cur.base = nil
	if invariants {
		tt.checkLog(tt.log.cur.end)
	}
}

func (tt *tableTxn[Obj]) abort() {
	// Drop the written nodes now rather than at the next transaction, and
	// close the channels readers took on them: what they watched was never
	// committed.
	base := tt.cur.base
	tt.primary.Discard(base.primary)
	for i := range tt.secondary {
		tt.secondary[i].Discard(base.secondary[i])
	}
	tt.log.abort(base.log)
	if tt.cur.init != nil {
		tt.cur.init.aborted(base.init)
	}
	if len(tt.cur.newFeeds) > 0 {
		// Feeds registered in an aborted transaction are closed.
		tt.t.meta.feeds.registrationDone(tt.cur.newFeeds, true)
	}
	tt.cur.journal.abort(tt.t)
	if invariants {
		tt.checkLog(base.log)
	}
	tt.cur.base, tt.cur.init = nil, nil
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
	tt.scratch.keyBuf = append(index.AppendEscaped(tt.scratch.keyBuf[:0], k), pk...)
	return tt.scratch.keyBuf
}

// writeMode selects the checks an upsert makes.
type writeMode uint8

const (
	modeInsert writeMode = iota
	modeModify
	modeCAS
	// modeApply is modeInsert for ApplyWrite, a replica's replay, which
	// does not check expiries (ExpiryIndex).
	modeApply
)

// upsert inserts obj (or, with modeModify, merges it into the existing
// object). It makes every check before its first change, so an error leaves
// the table as it was.
func (tt *tableTxn[Obj]) upsert(obj Obj, mode writeMode, casRev Revision, merge func(old, new Obj) Obj) (oldObj Obj, hadOld bool, err error) {
	t := tt.t
	pk, err := t.primaryKey(tt.scratch.pkBuf, obj)
	if err != nil {
		return oldObj, false, err
	}
	tt.scratch.pkBuf = pk
	if len(pk) > maxKeyLen {
		return oldObj, false, fmt.Errorf("table %q: primary key of %d bytes: %w", t.meta.name, len(pk), ErrKeyTooLong)
	}
	// One descent of the primary index: the checks run on the stored
	// object before anything changes, and a failed check leaves the tree
	// untouched (BenchmarkDB_WriteTxn_1).
	var old object[Obj]
	no := object[Obj]{rev: tt.cur.revision + 1}
	_, _, stored := tt.primary.Update(pk, func(o object[Obj], found bool) (object[Obj], bool) {
		old, hadOld = o, found
		no.obj, err = tt.check(pk, obj, o, found, mode, casRev, merge)
		return no, err == nil
	})
	if !stored {
		clear(tt.scratch.newKeys)
		clear(tt.scratch.oldKeys)
		if errors.Is(err, ErrRevisionNotEqual) {
			return old.obj, true, err
		}
		return oldObj, false, err
	}
	tt.cur.revision = no.rev
	if j := &tt.cur.journal; j.tj != nil {
		j.note(pk, no.rev, false, no.obj)
	}
	if lw := &tt.log; lw.cur.end.seg != nil {
		// lw.append, inlined.
		s := lw.cur.end.seg
		n := lw.cur.end.seq - s.seq
		if n == changeLogSegment {
			s, n = lw.nextSegment(), 0
		}
		e := &s.entries[n]
		e.obj, e.rev, e.prev, e.kind = no.obj, no.rev, lw.lastDelete, entryInsert
		if hadOld {
			e.prev, e.kind = old.rev, entryUpdate
		}
		lw.cur.end.seq++
		s.sum.maxPrev = max(s.sum.maxPrev, e.prev)
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.scratch.newKeys[i]
		if keys.Len() > 1 {
			tt.cur.multiKey |= 1 << ix.pos
		}
		if hadOld {
			oldKeys := &tt.scratch.oldKeys[i]
			for j := range oldKeys.Len() {
				if k := oldKeys.At(j); !keys.Contains(k) {
					tt.secondary[i].Delete(tt.treeKey(ix, k, pk))
				}
			}
			*oldKeys = index.KeySet{}
		}
		for j := range keys.Len() {
			tt.secondary[i].Insert(tt.treeKey(ix, keys.At(j), pk), no)
		}
		*keys = index.KeySet{}
	}
	if t.byRevision {
		if hadOld {
			tt.deleteRevisionKey(old.rev)
		}
		tt.insertRevisionKey(no)
	}
	tt.cur.dirty, tt.cur.written = true, true
	return old.obj, hadOld, nil
}

// check makes the checks of writing obj over the stored object old (if
// hadOld) and returns the object to store: obj, or for Modify the merge.
// It computes every key the write needs before the first change, so that
// an index function that panics leaves the table as it was: the new
// object's keys in the secondary indexes are left in tt.scratch.newKeys,
// the old object's in tt.scratch.oldKeys.
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
			mpk, err := t.primaryKey(nil, obj)
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
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		if hadOld {
			tt.scratch.oldKeys[i] = ix.fromObject(old.obj)
		}
		tt.scratch.newKeys[i] = ix.fromObject(obj)
		keys := &tt.scratch.newKeys[i]
		if err := t.checkNewKeys(ix, keys, mode); err != nil {
			return obj, err
		}
		if !ix.unique {
			continue
		}
		for j := range keys.Len() {
			if e, found := tt.secondary[i].Get(keys.At(j)); found && (!hadOld || e.rev != old.rev) {
				return obj, t.uniqueConflict(ix, keys.At(j), e.obj)
			}
		}
	}
	return obj, nil
}

// checkNewKeys makes the checks of an object's keys in index ix that do
// not depend on what the table holds: their length, an LPM index's
// prefixes, and (but for modeApply) an expiry index's time.
func (t *table[Obj]) checkNewKeys(ix *indexDef[Obj], keys *index.KeySet, mode writeMode) error {
	for j := range keys.Len() {
		if len(keys.At(j)) > maxKeyLen {
			return fmt.Errorf("table %q: index %q: key of %d bytes: %w", t.meta.name, ix.name, len(keys.At(j)), ErrKeyTooLong)
		}
	}
	if ix.lpm {
		if err := lpmCheckKeys(keys); err != nil {
			return fmt.Errorf("table %q: index %q: %w", t.meta.name, ix.name, err)
		}
	}
	if ix.expiry && mode != modeApply {
		return t.checkExpiry(ix, keys, time.Now())
	}
	return nil
}

// remove deletes the object with obj's primary key, checking its revision
// if cas is set. The old object's secondary keys are computed before the
// object leaves the primary index, so that an index function that panics
// leaves the table as it was.
func (tt *tableTxn[Obj]) remove(obj Obj, cas bool, casRev Revision) (oldObj Obj, hadOld bool, err error) {
	t := tt.t
	pk, err := t.primaryKey(tt.scratch.pkBuf, obj)
	if err != nil {
		return oldObj, false, err
	}
	tt.scratch.pkBuf = pk
	// One descent of the primary index, as in upsert (BenchmarkDB_Delete).
	old, found, deleted := tt.primary.DeleteIf(pk, func(o object[Obj]) bool {
		if cas && o.rev != casRev {
			err = fmt.Errorf("table %q: object at revision %d, not %d: %w", t.meta.name, o.rev, casRev, ErrRevisionNotEqual)
			return false
		}
		for i := range t.nsec {
			tt.scratch.oldKeys[i] = t.indexes[i+1].fromObject(o.obj)
		}
		return true
	})
	switch {
	case !found && cas:
		return oldObj, false, fmt.Errorf("table %q: %w", t.meta.name, ErrObjectNotFound)
	case !found:
		return oldObj, false, nil
	case !deleted:
		return old.obj, true, err
	}
	tt.cur.revision++
	if tt.log.cur.end.seg != nil {
		tt.log.append(logEntry[Obj]{obj: old.obj, rev: tt.cur.revision, prev: old.rev, kind: entryDelete})
		tt.log.lastDelete = tt.cur.revision
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.scratch.oldKeys[i]
		for j := range keys.Len() {
			tt.secondary[i].Delete(tt.treeKey(ix, keys.At(j), pk))
		}
		*keys = index.KeySet{}
	}
	if t.byRevision {
		tt.deleteRevisionKey(old.rev)
	}
	if j := &tt.cur.journal; j.tj != nil {
		j.note(pk, tt.cur.revision, true, old.obj)
	}
	tt.cur.dirty, tt.cur.written = true, true
	return old.obj, true, nil
}

func (tt *tableTxn[Obj]) removeAll() {
	if tt.primary.Len() == 0 {
		return
	}
	// Each deleted object takes a revision of its own, in primary key
	// order, as if deleted one by one. The change log keeps the tree
	// rather than an entry per object.
	if tt.log.cur.end.seg != nil {
		tt.log.appendTruncate(tt.primary.Snapshot(), tt.cur.revision+1)
		tt.log.lastDelete = tt.cur.revision + Revision(tt.primary.Len())
	}
	if j := &tt.cur.journal; j.every != nil {
		var none Obj
		j.ops = append(j.ops, journalOp{rev: tt.cur.revision + 1, all: true})
		j.objs = append(j.objs, none)
	} else if j.tj != nil {
		j.truncate()
	}
	tt.cur.revision += Revision(tt.primary.Len())
	tt.primary.DeletePrefix(nil)
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
	tt.cur.dirty, tt.cur.written = true, true
}

func (t *table[Obj]) Insert(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeInsert, 0, nil)
}

func (t *table[Obj]) InsertWatch(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, watch <-chan struct{}, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, nil, err
	}
	oldObj, hadOld, err = tt.upsert(obj, modeInsert, 0, nil)
	if err != nil {
		return oldObj, hadOld, nil, err
	}
	pk, _ := t.primaryKey(tt.scratch.pkBuf, obj)
	tt.scratch.pkBuf = pk
	_, watch, _ = tt.primary.GetWatch(pk)
	return oldObj, hadOld, watch, nil
}

func (t *table[Obj]) Modify(txn WriteTxn, obj Obj, merge func(old, new Obj) Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeModify, 0, merge)
}

func (t *table[Obj]) CompareAndSwap(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.upsert(obj, modeCAS, rev, nil)
}

func (t *table[Obj]) Delete(txn WriteTxn, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.remove(obj, false, 0)
}

func (t *table[Obj]) CompareAndDelete(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return oldObj, false, err
	}
	return tt.remove(obj, true, rev)
}

func (t *table[Obj]) DeleteAll(txn WriteTxn) error {
	tt, err := t.txnFor(txn)
	if err != nil {
		return err
	}
	tt.removeAll()
	return nil
}

// insertRevisionKey adds o to the revision index (RevisionIndex), which is
// the last of the table's secondary trees.
func (tt *tableTxn[Obj]) insertRevisionKey(o object[Obj]) {
	var buf [8]byte
	tt.secondary[tt.t.nsec].Insert(index.AppendUint64(buf[:0], o.rev), o)
}

// deleteRevisionKey removes the object at rev from the revision index.
func (tt *tableTxn[Obj]) deleteRevisionKey(rev Revision) {
	var buf [8]byte
	tt.secondary[tt.t.nsec].Delete(index.AppendUint64(buf[:0], rev))
}
