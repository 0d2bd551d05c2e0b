package strata

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"math/bits"
	"slices"
)

// Restore fills the empty table tbl, in txn, with objects that keep the
// revisions they had: a persistence layer loading what it stored, or a
// snapshot being read back. The table's revision becomes the greater of
// revision and the highest object revision, so revisions keep growing
// across restarts. Secondary indexes are built as objects are added, and
// unique ones are enforced.
//
// Objects given in primary key order build the table fastest. Change feeds
// of the table get the restored objects at their own revisions, after the
// changes committed before them, even where those revisions are lower.
// Restore fails with ErrTableNotEmpty, ErrRestoreInput, ErrUniqueConstraint,
// ErrPrimaryKey, or an LPMIndex's ErrInvalidPrefix or ErrPrefixHostBits; an
// error, or a panic of an index function, leaves the table as it was.
func Restore[Obj any](txn WriteTxn, tbl RWTable[Obj], objects iter.Seq2[Obj, Revision], revision Revision) error {
	r, err := beginRestore(txn, tbl, revision)
	if err != nil {
		return err
	}
	defer r.end()
	for obj, rev := range objects {
		if err := r.add(obj, rev, nil, false, nil); err != nil {
			return err
		}
	}
	return r.finish()
}

// StoredObject is an object given to RestoreStored with the primary key it
// was stored under.
type StoredObject[Obj any] struct {
	Obj Obj
	// Key is the primary key the object was stored under. It is only read
	// until the next object is drawn: it may be a buffer that is reused.
	Key []byte
}

// RestoreStored is Restore for objects that come with the primary key they
// were stored under, such as a persistence layer's, which must learn of an
// object whose key in the table's primary index is no longer its stored
// key (the index's encoding changed between versions). Each object's
// primary key is computed from it once, as Restore computes it, and
// compared with its stored key; where they differ, keyChanged is called
// with both, before the next object is drawn (neither slice may be kept
// after the call): if it returns an error, RestoreStored fails with it and
// leaves the table as it was; if it returns nil, the object is restored
// under the key computed now. A nil keyChanged fails with ErrRestoreInput
// instead. Otherwise RestoreStored is Restore, with its errors.
func RestoreStored[Obj any](txn WriteTxn, tbl RWTable[Obj], objects iter.Seq2[StoredObject[Obj], Revision], revision Revision, keyChanged func(stored, now []byte) error) error {
	r, err := beginRestore(txn, tbl, revision)
	if err != nil {
		return err
	}
	defer r.end()
	for o, rev := range objects {
		if err := r.add(o.Obj, rev, o.Key, true, keyChanged); err != nil {
			return err
		}
	}
	return r.finish()
}

// restoring is one Restore (or RestoreStored) under way: the table's
// transaction, what it held before, and what the objects added so far
// make of the table's revision.
type restoring[Obj any] struct {
	tt *tableTxn[Obj]
	// ops and multiKey are the transaction's before the first object, for
	// unrestore.
	ops      int
	multiKey uint64
	// done is set once every object is in and checked: end then keeps them.
	done bool
	// logged: the table has change feeds, which get the objects in
	// revision order (tt.cur.restore.restored) once all are in.
	logged bool
	// Only the revisions are kept, to find one given twice: the trees
	// hold the objects, and nothing else copies them, except for change
	// feeds.
	revs   revisionSet
	maxRev Revision
}

// beginRestore checks that tbl is empty in txn and starts restoring it.
func beginRestore[Obj any](txn WriteTxn, tbl RWTable[Obj], revision Revision) (*restoring[Obj], error) {
	t := tbl.(*table[Obj])
	tt, err := t.txnFor(txn)
	if err != nil {
		return nil, err
	}
	tt.cur.restore.keepLock = true
	if tt.primary.Len() != 0 {
		return nil, fmt.Errorf("table %q: %w", t.meta.name, ErrTableNotEmpty)
	}
	return &restoring[Obj]{
		tt: tt, ops: len(tt.cur.journal.ops), multiKey: tt.cur.multiKey,
		logged: tt.log.cur.end.seg != nil,
		maxRev: revision,
	}, nil
}

// add restores one object; stored is its stored key if check is set
// (RestoreStored).
func (r *restoring[Obj]) add(obj Obj, rev Revision, stored []byte, check bool, keyChanged func(stored, now []byte) error) error {
	if err := r.tt.restore(obj, rev, stored, check, keyChanged); err != nil {
		return err
	}
	r.maxRev = max(r.maxRev, rev)
	if r.revs.add(rev) {
		return fmt.Errorf("table %q: revision %d twice: %w", r.tt.t.meta.name, rev, ErrRestoreInput)
	}
	if r.logged {
		r.tt.cur.restore.restored = append(r.tt.cur.restore.restored, object[Obj]{obj: obj, rev: rev})
	}
	return nil
}

// finish checks the revisions of every object added, logs them for the
// change feeds, and sets the table's revision.
func (r *restoring[Obj]) finish() error {
	tt := r.tt
	if rev, found := r.revs.repeated(); found {
		return fmt.Errorf("table %q: revision %d twice: %w", tt.t.meta.name, rev, ErrRestoreInput)
	}
	if r.logged {
		slices.SortFunc(tt.cur.restore.restored, func(a, b object[Obj]) int { return cmp.Compare(a.rev, b.rev) })
		for _, o := range tt.cur.restore.restored {
			tt.log.append(logEntry[Obj]{obj: o.obj, rev: o.rev, prev: tt.log.lastDelete, kind: entryRestore})
		}
	}
	tt.cur.revision = max(tt.cur.revision, r.maxRev)
	tt.cur.dirty, tt.cur.written = true, true
	r.done = true
	return nil
}

// end takes the objects back out of the table unless finish succeeded,
// after an error or a panic, and drops what the restore kept.
func (r *restoring[Obj]) end() {
	tt := r.tt
	if !r.done && tt.primary.Len() > 0 {
		tt.unrestore(r.ops, r.multiKey)
	}
	clear(tt.scratch.newKeys)
	// Not kept for the next Restore: a table restores once.
	clear(tt.cur.restore.restored)
	tt.cur.restore.restored = nil
}

// revisionSet holds the revisions of the objects restored so far, to find
// one given twice. While they are dense, as in a table that was not
// rewritten over and over, it is a bitmap of the revisions from base on,
// grown as they come, no larger than two words per revision (or 1 MB); once
// they are too sparse for that, it is a list of them (sparse), sorted at
// the end.
//
// Guarded by BenchmarkRecovery (persist).
type revisionSet struct {
	base   Revision // a multiple of 64: bit i of bits[w] is revision base+64w+i
	bits   []uint64
	n      int // revisions added
	sparse bool
	list   []Revision // once sparse: every revision added
}

// add adds rev, which is not 0, and reports whether it was added before;
// while sparse, that is found by repeated.
func (s *revisionSet) add(rev Revision) (twice bool) {
	s.n++
	if s.sparse {
		s.list = append(s.list, rev)
		return false
	}
	if s.n == 1 {
		s.base = rev &^ 63
	}
	if rev < s.base {
		// Grown downwards by at least its length, so that revisions
		// coming in descending order copy it about once.
		base := rev &^ 63
		if grow := Revision(len(s.bits)) * 64; s.base-base < grow {
			base = s.base - min(grow, s.base)
		}
		if !s.fits(int((s.base-base)/64) + len(s.bits)) {
			return s.toList(rev)
		}
		bits := make([]uint64, int((s.base-base)/64)+len(s.bits), 2*len(s.bits)+int((s.base-base)/64))
		copy(bits[(s.base-base)/64:], s.bits)
		s.base, s.bits = base, bits
	}
	w := (rev - s.base) / 64
	if w >= Revision(len(s.bits)) {
		if !s.fits(int(w) + 1) {
			return s.toList(rev)
		}
		s.bits = append(s.bits, make([]uint64, int(w)+1-len(s.bits))...)
	}
	bit := uint64(1) << (rev % 64)
	if s.bits[w]&bit != 0 {
		return true
	}
	s.bits[w] |= bit
	return false
}

// fits reports whether a bitmap of words words is small enough for the
// revisions added: two words each, or 1 MB, whichever is more, so that
// the first revisions of objects that come in random revision order, far
// apart, keep it a bitmap.
func (s *revisionSet) fits(words int) bool { return words <= max(2*s.n, 1<<17) }

// toList makes the set a list, of the revisions in the bitmap and rev.
func (s *revisionSet) toList(rev Revision) bool {
	s.list = make([]Revision, 0, 2*s.n)
	for w, word := range s.bits {
		for ; word != 0; word &= word - 1 {
			s.list = append(s.list, s.base+Revision(w)*64+Revision(bits.TrailingZeros64(word)))
		}
	}
	s.list = append(s.list, rev)
	s.sparse, s.bits = true, nil
	return false
}

// repeated returns a revision added twice while the set was sparse, if
// there is one (add reports the others).
func (s *revisionSet) repeated() (Revision, bool) {
	if !s.sparse {
		return 0, false
	}
	slices.Sort(s.list)
	for i := 1; i < len(s.list); i++ {
		if s.list[i] == s.list[i-1] {
			return s.list[i], true
		}
	}
	return 0, false
}

// unrestore takes back what a Restore that failed added to the table,
// which was empty before it: the objects in its trees, the journal's ops
// after the first ops, and multiKey as it was. Nothing was logged yet.
func (tt *tableTxn[Obj]) unrestore(ops int, multiKey uint64) {
	tt.primary.DeletePrefix(nil)
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
	j := &tt.cur.journal
	clear(j.ops[ops:])
	j.ops, tt.cur.multiKey = j.ops[:ops], multiKey
	if j.every != nil {
		clear(j.objs[ops:])
		j.objs = j.objs[:ops]
	}
}

// restore adds one object at its own revision. If check is set, stored is
// the key the object was stored under, compared with its primary key (see
// RestoreStored).
func (tt *tableTxn[Obj]) restore(obj Obj, rev Revision, stored []byte, check bool, keyChanged func(stored, now []byte) error) error {
	t := tt.t
	pk, err := t.primaryKey(tt.scratch.pkBuf, obj)
	if err != nil {
		return err
	}
	tt.scratch.pkBuf = pk
	if check && !bytes.Equal(pk, stored) {
		if keyChanged == nil {
			return fmt.Errorf("table %q: object stored under key %q has key %q: %w", t.meta.name, t.indexes[0].keyString(stored), t.indexes[0].keyString(pk), ErrRestoreInput)
		}
		if err := keyChanged(stored, pk); err != nil {
			return err
		}
	}
	if len(pk) > maxKeyLen {
		return fmt.Errorf("table %q: primary key of %d bytes: %w", t.meta.name, len(pk), ErrKeyTooLong)
	}
	if rev == 0 {
		return fmt.Errorf("table %q: object %q: revision 0: %w", t.meta.name, t.indexes[0].keyString(pk), ErrRestoreInput)
	}
	// Every key is computed before the first change, so that an index
	// function that panics leaves the table as it was.
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		tt.scratch.newKeys[i] = ix.fromObject(obj)
		if ix.lpm {
			if err := lpmCheckKeys(&tt.scratch.newKeys[i]); err != nil {
				return fmt.Errorf("table %q: index %q: %w", t.meta.name, ix.name, err)
			}
		}
	}
	no := object[Obj]{obj: obj, rev: rev}
	// A primary key given twice replaces the first object: Restore fails,
	// and empties the table again.
	if _, dup := tt.primary.Insert(pk, no); dup {
		return fmt.Errorf("table %q: primary key %q twice: %w", t.meta.name, t.indexes[0].keyString(pk), ErrRestoreInput)
	}
	// tt.scratch.newKeys is cleared by Restore, once: every object sets
	// all of it.
	if t.byRevision {
		tt.insertRevisionKey(no)
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.scratch.newKeys[i]
		if keys.Len() > 1 {
			tt.cur.multiKey |= 1 << ix.pos
		}
		for j := range keys.Len() {
			k := tt.treeKey(ix, keys.At(j), pk)
			if prev, dup := tt.secondary[i].Insert(k, no); dup && prev.rev != rev {
				return t.uniqueConflict(ix, keys.At(j), prev.obj)
			}
		}
	}
	if j := &tt.cur.journal; j.tj != nil {
		j.note(pk, rev, false, obj)
	}
	return nil
}
