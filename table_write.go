package strata

import (
	"bytes"
	"errors"
	"fmt"
	"iter"

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
	// handle is the name of the handle whose transaction this is.
	handle string
	// dirty: the table's state changed, so the transaction publishes a
	// new one; written: its objects or revision changed, which the
	// journal records (a change log started or dropped, an initializer
	// registered or done, are not).
	dirty, written bool
	// observed: the table has change feeds, so its changes go to the
	// change log, whose end is log (the zero logPos without one). Decided
	// when the transaction begins (and set when a feed registers in it),
	// not per write.
	observed bool
	log      logPos[Obj]
	// logHead is the oldest segment of the log that is not yet reused
	// (newSegment) or trimmed; set by startLog, so it is in the table's
	// log whenever there is one. Kept across transactions.
	logHead *logSegment[Obj]
	// segments is the number of segments the transaction added to the log.
	segments int
	// reuseBelow is the committed end of the log (its seq) when the
	// transaction began to write it: the writer reuses no segment at or
	// after it (changelog_writer.go).
	reuseBelow uint64
	// lowestPin is the lowest of the feeds' pins (feedEntry.pin), as the
	// transaction first read it (lowestFeedPin; set once lowestPinRead).
	lowestPin     uint64
	lowestPinRead bool
	// lastDelete is the revision of the newest delete the table logged
	// (or a higher one: an aborted transaction's). Kept across
	// transactions; see logEntry.prev.
	lastDelete Revision

	primary   part.Txn[object[Obj]]
	secondary []part.Txn[object[Obj]]

	init *initState // the pending initializers if changed, else nil

	// newFeeds lists the feeds registered in the transaction; they are
	// closed if it aborts.
	newFeeds []*feedEntry

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

	// restored collects what Restore adds, to find duplicate revisions
	// and to log the objects in revision order; keepLock is set by a
	// Restore, whose commit keeps the table locked until it is published
	// (keepsLock).
	restored []object[Obj]
	keepLock bool

	// Scratch space, reused across writes. The KeySets live here rather
	// than in locals, so that At's results, which may point into them,
	// never make a local escape.
	newKeys []index.KeySet // per secondary index: the new object's keys
	oldKeys []index.KeySet // per secondary index: the keys of the object replaced or deleted
	// cut holds the objects a DeletePrefix on the primary index removes,
	// and cutKeys their secondary keys, index after index.
	cut     []cutObject[Obj]
	cutKeys []index.KeySet
	keyBuf  []byte
	pkBuf   []byte // the primary key of the object being written
	// opKeys holds the primary keys of ops, which live until the commit.
	opKeys []byte
}

// writeState returns the table's write state in txn, beginning it on the
// transaction's first write to the table.
func (t *table[Obj]) writeState(txn WriteTxn) (*tableTxn[Obj], error) {
	h, _ := txn.(*txnHandle)
	if h == nil || h.w == nil {
		return nil, ErrTransactionClosed
	}
	w := h.w
	if t.meta.db.dbState != w.db.dbState {
		panicOtherDB(&t.meta)
	}
	lt, err := w.writer(&t.meta)
	if err != nil {
		return nil, err
	}
	if lt.w == nil {
		published := t.stateIn(w.root)
		base := published
		if lt.tip != nil {
			base = (*tableState[Obj])(unsafeStatePointer(lt.tip))
		}
		t.writer.begin(base, published, w.db.handle)
		lt.w = &t.writer
	}
	return &t.writer, nil
}

// begin starts the table's part of a transaction from base: the published
// state, or the table's tip (commitqueue.go).
func (tt *tableTxn[Obj]) begin(base, published *tableState[Obj], handle string) {
	tt.handle, tt.keepLock = handle, false
	tt.base, tt.revision, tt.multiKey, tt.dirty, tt.written = base, base.revision, base.multiKey, false, false
	tt.observed, tt.init = tt.t.meta.feeds.live() > 0, nil
	tt.journal, tt.truncated, tt.attach = tt.t.journal, false, nil
	clear(tt.ops)
	tt.ops, tt.opKeys = tt.ops[:0], tt.opKeys[:0]
	tt.primary.Reset(base.primary)
	if tt.secondary == nil {
		tt.secondary = make([]part.Txn[object[Obj]], len(base.secondary))
		tt.newKeys = make([]index.KeySet, len(base.secondary))
		tt.oldKeys = make([]index.KeySet, len(base.secondary))
	}
	for i := range tt.secondary {
		tt.secondary[i].Reset(base.secondary[i])
	}
	clear(tt.newFeeds)
	tt.newFeeds = tt.newFeeds[:0]
	tt.beginLog(base, published)
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
	st.stateHeader = stateHeader{meta: &tt.t.meta, revision: tt.revision, writer: tt.base.writer}
	if tt.written {
		st.writer = tt.handle
	}
	st.primary = finish(&tt.primary)
	st.log = tt.log
	st.multiKey = tt.multiKey
	st.init = tt.initState()
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
	return tt.state(snapshotTree[object[Obj]])
}

func (tt *tableTxn[Obj]) commit() *stateHeader {
	if !tt.dirty {
		return nil
	}
	if tt.segments > 0 {
		tt.trimLog()
	}
	return &tt.state(commitTree[object[Obj]]).stateHeader
}

func (tt *tableTxn[Obj]) notify() {
	tt.primary.Notify()
	for i := range tt.secondary {
		tt.secondary[i].Notify()
	}
	if tt.init != nil {
		tt.init.committed()
	}
	if len(tt.newFeeds) > 0 {
		tt.t.meta.feeds.registrationDone(tt.newFeeds, false)
	}
	if tt.attach != nil {
		tt.t.attachCommitted(tt.attach)
		tt.attach = nil
	}
	tt.base, tt.init = nil, nil
	if invariants {
		tt.checkLog()
	}
}

// keepsLock implements tableWriter.
func (tt *tableTxn[Obj]) keepsLock() bool {
	return tt.init != nil || len(tt.newFeeds) > 0 || tt.attach != nil || tt.keepLock ||
		!sameLog(tt.base.log, tt.log)
}

// sameLog reports whether a and b are positions in the same log, or both
// in none.
func sameLog[Obj any](a, b logPos[Obj]) bool {
	if a.seg == nil || b.seg == nil {
		return a.seg == b.seg
	}
	return a.seg.chain == b.seg.chain
}

// handOff implements tableWriter: what notify does, but the retired
// nodes' channels, which w keeps to close once the commit is published
// (the commit changed only objects: keepsLock).
func (tt *tableTxn[Obj]) handOff(w *writeTxn) {
	w.mark = min(w.mark, tt.primary.Mark())
	tt.primary.MoveRetired(&w.retired)
	for i := range tt.secondary {
		w.mark = min(w.mark, tt.secondary[i].Mark())
		tt.secondary[i].MoveRetired(&w.retired)
	}
	tt.base = nil
	if invariants {
		tt.checkLog()
	}
}

func (tt *tableTxn[Obj]) abort() {
	// Drop the written nodes now rather than at the next transaction, and
	// close the channels readers took on them: what they watched was never
	// committed.
	base := tt.base
	tt.primary.Discard(base.primary)
	for i := range tt.secondary {
		tt.secondary[i].Discard(base.secondary[i])
	}
	sameLog := base.log.seg != nil && tt.log.seg != nil && base.log.seg.chain == tt.log.seg.chain
	if sameLog {
		base.log.discard(tt.log)
	} else {
		// The transaction started or dropped a log: the writer's head
		// is not in the committed one, if any. Its end's segment is the
		// oldest the writer knows it may reach.
		tt.logHead = base.log.seg
	}
	if tt.init != nil {
		tt.init.aborted(base.init)
	}
	if len(tt.newFeeds) > 0 {
		// Feeds registered in an aborted transaction are closed.
		tt.t.meta.feeds.registrationDone(tt.newFeeds, true)
	}
	if tt.attach != nil {
		tt.t.attachAborted()
		tt.attach = nil
	}
	if invariants {
		tt.log = base.log
		tt.checkLog()
	}
	tt.log = logPos[Obj]{}
	tt.base, tt.init = nil, nil
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
	pk, err := t.primaryKey(tt.pkBuf, obj)
	if err != nil {
		return oldObj, false, err
	}
	tt.pkBuf = pk
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
		clear(tt.oldKeys)
		if errors.Is(err, ErrRevisionNotEqual) {
			return old.obj, true, err
		}
		return oldObj, false, err
	}
	tt.revision = no.rev
	if tt.journal != nil {
		tt.ops = append(tt.ops, journalOp{pk: tt.keepKey(pk), rev: no.rev})
	}
	if s := tt.log.seg; s != nil {
		// appendLog, inlined.
		n := tt.log.seq - s.seq
		if n == changeLogSegment {
			s, n = tt.nextSegment(), 0
		}
		e := &s.entries[n]
		e.obj, e.rev, e.prev, e.kind = no.obj, no.rev, tt.lastDelete, entryInsert
		if hadOld {
			e.prev, e.kind = old.rev, entryUpdate
		}
		tt.log.seq++
		s.sum.maxPrev = max(s.sum.maxPrev, e.prev)
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.newKeys[i]
		if keys.Len() > 1 {
			tt.multiKey |= 1 << ix.pos
		}
		if hadOld {
			oldKeys := &tt.oldKeys[i]
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
	tt.dirty, tt.written = true, true
	return old.obj, hadOld, nil
}

// keepKey returns a copy of pk that lives until the transaction ends.
func (tt *tableTxn[Obj]) keepKey(pk []byte) []byte {
	start := len(tt.opKeys)
	tt.opKeys = append(tt.opKeys, pk...)
	return tt.opKeys[start:len(tt.opKeys):len(tt.opKeys)]
}

// check makes the checks of writing obj over the stored object old (if
// hadOld) and returns the object to store: obj, or for Modify the merge.
// It computes every key the write needs before the first change, so that
// an index function that panics leaves the table as it was: the new
// object's keys in the secondary indexes are left in tt.newKeys, the old
// object's in tt.oldKeys.
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
			tt.oldKeys[i] = ix.fromObject(old.obj)
		}
		tt.newKeys[i] = ix.fromObject(obj)
		keys := &tt.newKeys[i]
		for j := range keys.Len() {
			if len(keys.At(j)) > maxKeyLen {
				return obj, fmt.Errorf("table %q: index %q: key of %d bytes: %w", t.meta.name, ix.name, len(keys.At(j)), ErrKeyTooLong)
			}
		}
		if ix.lpm {
			if err := lpmCheckKeys(keys); err != nil {
				return obj, fmt.Errorf("table %q: index %q: %w", t.meta.name, ix.name, err)
			}
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

// remove deletes the object with obj's primary key, checking its revision
// if cas is set. The old object's secondary keys are computed before the
// object leaves the primary index, so that an index function that panics
// leaves the table as it was.
func (tt *tableTxn[Obj]) remove(obj Obj, cas bool, casRev Revision) (oldObj Obj, hadOld bool, err error) {
	t := tt.t
	pk, err := t.primaryKey(tt.pkBuf, obj)
	if err != nil {
		return oldObj, false, err
	}
	tt.pkBuf = pk
	// One descent of the primary index, as in upsert (BenchmarkDB_Delete).
	old, found, deleted := tt.primary.DeleteIf(pk, func(o object[Obj]) bool {
		if cas && o.rev != casRev {
			err = fmt.Errorf("table %q: object at revision %d, not %d: %w", t.meta.name, o.rev, casRev, ErrRevisionNotEqual)
			return false
		}
		for i := range t.nsec {
			tt.oldKeys[i] = t.indexes[i+1].fromObject(o.obj)
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
	tt.revision++
	if tt.log.seg != nil {
		tt.appendLog(logEntry[Obj]{obj: old.obj, rev: tt.revision, prev: old.rev, kind: entryDelete})
		tt.lastDelete = tt.revision
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.oldKeys[i]
		for j := range keys.Len() {
			tt.secondary[i].Delete(tt.treeKey(ix, keys.At(j), pk))
		}
		*keys = index.KeySet{}
	}
	if t.byRevision {
		tt.deleteRevisionKey(old.rev)
	}
	if tt.journal != nil {
		tt.ops = append(tt.ops, journalOp{pk: tt.keepKey(pk), rev: tt.revision, deleted: true})
	}
	tt.dirty, tt.written = true, true
	return old.obj, true, nil
}

func (tt *tableTxn[Obj]) removeAll() {
	if tt.primary.Len() == 0 {
		return
	}
	// Each deleted object takes a revision of its own, in primary key
	// order, as if deleted one by one. The change log keeps the tree
	// rather than an entry per object.
	if tt.log.seg != nil {
		tt.appendTruncate(tt.primary.Snapshot(), tt.revision+1)
		tt.lastDelete = tt.revision + Revision(tt.primary.Len())
	}
	tt.revision += Revision(tt.primary.Len())
	if tt.journal != nil {
		tt.truncated = true
		clear(tt.ops)
		tt.ops, tt.opKeys = tt.ops[:0], tt.opKeys[:0]
	}
	tt.primary.DeletePrefix(nil)
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
	tt.dirty, tt.written = true, true
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
	pk, _ := t.primaryKey(tt.pkBuf, obj)
	tt.pkBuf = pk
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

func (t *table[Obj]) DeletePrefix(txn WriteTxn, q Query[Obj]) (int, error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return 0, err
	}
	if ix := t.index(q.index); ix.pos == 0 {
		return tt.cutPrimaryPrefix(q.key.bytes()), nil
	}
	return tt.removeEach(t.Prefix(txn, q))
}

func (t *table[Obj]) DeleteRange(txn WriteTxn, from, to Query[Obj]) (int, error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return 0, err
	}
	return tt.removeEach(t.Range(txn, from, to))
}

func (t *table[Obj]) DeleteMatches(txn WriteTxn, q Query[Obj]) (int, error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return 0, err
	}
	return tt.removeEach(t.List(txn, q))
}

// removeEach removes the objects objs yields, which it reads to the end
// first: they come from a snapshot of the transaction. It computes the
// keys of every object as it reads them, before the first change, so that
// an index function that panics leaves the table as it was (remove
// computes them again).
func (tt *tableTxn[Obj]) removeEach(objs iter.Seq2[Obj, Revision]) (int, error) {
	t := tt.t
	var list []Obj
	for o := range objs {
		list = append(list, o)
		tt.pkBuf, _ = t.primaryKey(tt.pkBuf, o)
		for i := range t.nsec {
			t.indexes[i+1].fromObject(o)
		}
	}
	n := 0
	for _, o := range list {
		_, had, err := tt.remove(o, false, 0)
		if err != nil {
			return n, err
		}
		if had {
			n++
		}
	}
	return n, nil
}

// cutObject is an object a DeletePrefix on the primary index removes.
type cutObject[Obj any] struct {
	pk  []byte
	old object[Obj]
}

// cutPrimaryPrefix removes the objects whose primary key starts with
// prefix: from the primary index in one cut of the tree, from the
// secondary indexes one key at a time. Every key is computed before the
// first change, so that an index function that panics leaves the table as
// it was (BenchmarkDB_DeletePrefix).
func (tt *tableTxn[Obj]) cutPrimaryPrefix(prefix []byte) int {
	t := tt.t
	defer func() {
		clear(tt.cut)
		clear(tt.cutKeys)
		tt.cut, tt.cutKeys = tt.cut[:0], tt.cutKeys[:0]
	}()
	for pk, o := range tt.primary.Prefix(prefix) {
		tt.cut = append(tt.cut, cutObject[Obj]{pk, o})
		for i := range t.nsec {
			tt.cutKeys = append(tt.cutKeys, t.indexes[i+1].fromObject(o.obj))
		}
	}
	if len(tt.cut) == 0 {
		return 0
	}
	tt.primary.DeletePrefix(prefix)
	keys := tt.cutKeys
	for _, c := range tt.cut {
		tt.revision++
		if tt.log.seg != nil {
			tt.appendLog(logEntry[Obj]{obj: c.old.obj, rev: tt.revision, prev: c.old.rev, kind: entryDelete})
			tt.lastDelete = tt.revision
		}
		for i := range t.nsec {
			ix := &t.indexes[i+1]
			for j := range keys[i].Len() {
				tt.secondary[i].Delete(tt.treeKey(ix, keys[i].At(j), c.pk))
			}
		}
		keys = keys[t.nsec:]
		if t.byRevision {
			tt.deleteRevisionKey(c.old.rev)
		}
		if tt.journal != nil {
			tt.ops = append(tt.ops, journalOp{pk: tt.keepKey(c.pk), rev: tt.revision, deleted: true})
		}
	}
	tt.dirty, tt.written = true, true
	return len(tt.cut)
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
