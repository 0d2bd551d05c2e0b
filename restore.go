package strata

import (
	"cmp"
	"fmt"
	"iter"
	"math"
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
	t := tbl.(*table[Obj])
	tt, err := t.writeState(txn)
	if err != nil {
		return err
	}
	tt.keepLock = true
	if tt.primary.Len() != 0 {
		return fmt.Errorf("table %q: %w", t.meta.name, ErrTableNotEmpty)
	}
	maxRev := revision
	ops, multiKey, done := len(tt.ops), tt.multiKey, false
	// Only the revisions are collected, to find duplicates: the trees hold
	// the objects, and nothing else copies them, except for change feeds,
	// which get them in revision order.
	logged := tt.log.seg != nil
	var revs []Revision
	lowest := Revision(math.MaxUint64)
	defer func() {
		if !done && tt.primary.Len() > 0 {
			tt.unrestore(ops, multiKey)
		}
		clear(tt.newKeys)
		// Not kept for the next Restore: a table restores once.
		clear(tt.restored)
		tt.restored = nil
	}()
	for obj, rev := range objects {
		if err := tt.restore(obj, rev); err != nil {
			return err
		}
		maxRev, lowest = max(maxRev, rev), min(lowest, rev)
		revs = appendRevision(revs, rev)
		if logged {
			tt.restored = append(tt.restored, object[Obj]{obj: obj, rev: rev})
		}
	}
	if rev, found := repeatedRevision(revs, lowest, maxRev); found {
		return fmt.Errorf("table %q: revision %d twice: %w", t.meta.name, rev, ErrRestoreInput)
	}
	if logged {
		slices.SortFunc(tt.restored, func(a, b object[Obj]) int { return cmp.Compare(a.rev, b.rev) })
		for _, o := range tt.restored {
			tt.appendLog(logEntry[Obj]{obj: o.obj, rev: o.rev, prev: tt.lastDelete, kind: entryRestore})
		}
	}
	tt.revision = max(tt.revision, maxRev)
	tt.dirty, tt.written = true, true
	done = true
	return nil
}

// appendRevision appends rev to revs, doubling the capacity when it is
// full: the revisions of a large restore are copied about once as they
// grow, not four times (append's growth of large slices).
func appendRevision(revs []Revision, rev Revision) []Revision {
	if len(revs) == cap(revs) {
		revs = slices.Grow(revs, max(len(revs), 1024))
	}
	return append(revs, rev)
}

// repeatedRevision returns a revision that revs, all between lowest and
// highest, holds twice, if there is one. Where the range is at most 64
// revisions per element, as in a table that was not rewritten over and
// over, it marks them in a bitmap no larger than revs (one pass, no
// sort); otherwise it sorts revs.
//
// Guarded by BenchmarkRecovery (persist).
func repeatedRevision(revs []Revision, lowest, highest Revision) (Revision, bool) {
	if len(revs) < 2 {
		return 0, false
	}
	if span := highest - lowest; span/64 < uint64(len(revs)) {
		seen := make([]uint64, span/64+1)
		for _, rev := range revs {
			i := rev - lowest
			w, bit := i/64, uint64(1)<<(i%64)
			if seen[w]&bit != 0 {
				return rev, true
			}
			seen[w] |= bit
		}
		return 0, false
	}
	slices.Sort(revs)
	for i := 1; i < len(revs); i++ {
		if revs[i] == revs[i-1] {
			return revs[i], true
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
	clear(tt.ops[ops:])
	tt.ops, tt.multiKey = tt.ops[:ops], multiKey
}

// restore adds one object at its own revision.
func (tt *tableTxn[Obj]) restore(obj Obj, rev Revision) error {
	t := tt.t
	pk, err := t.primaryKey(tt.pkBuf, obj)
	if err != nil {
		return err
	}
	tt.pkBuf = pk
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
		tt.newKeys[i] = ix.fromObject(obj)
		if ix.lpm {
			if err := lpmCheckKeys(&tt.newKeys[i]); err != nil {
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
	// tt.newKeys is cleared by Restore, once: every object sets all of it.
	if t.byRevision {
		tt.insertRevisionKey(no)
	}
	for i := range t.nsec {
		ix := &t.indexes[i+1]
		keys := &tt.newKeys[i]
		if keys.Len() > 1 {
			tt.multiKey |= 1 << ix.pos
		}
		for j := range keys.Len() {
			k := tt.treeKey(ix, keys.At(j), pk)
			if prev, dup := tt.secondary[i].Insert(k, no); dup && prev.rev != rev {
				return t.uniqueConflict(ix, keys.At(j), prev.obj)
			}
		}
	}
	if tt.journal != nil {
		tt.ops = append(tt.ops, journalOp{pk: tt.keepKey(pk), rev: rev})
	}
	return nil
}
