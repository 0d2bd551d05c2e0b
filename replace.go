package strata

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/strata-db/strata/part"
)

// Replace replaces every object of tbl, in txn, with objects, which keep
// the revisions they carry, and sets the table's revision to revision: a
// replica catching up, in one transaction, with a later state of the
// history its table holds an earlier state of (package replicate restores
// a raft snapshot with it). Readers see the old state or the new, never a
// mix, and afterwards the table holds exactly the objects given, at their
// revisions, with exactly revision as its revision, whatever it held.
//
// The new state must follow the table's state in txn, at revision r: the
// revision is at least r; an object given that the table holds under the
// same primary key at the same revision is taken to be that object, kept;
// every other object given is at a revision above r; and the revisions
// from r+1 to revision that no object given carries are at least as many
// as the objects of the table whose primary key no object given has (each
// of them was deleted after r, at a revision of its own). Otherwise
// Replace fails with ErrWriteOrder: the table does not hold an earlier
// state of the history the objects come from.
//
// Every object is taken out and the given ones put in, so every watch
// channel handed out on the table's old state closes when txn commits,
// those of objects kept too. Change feeds of the table deliver the change
// as the writes that lead from the old state to the new, in revision
// order: each object given that the table did not hold at its revision,
// at its revision, and a deletion of each object whose primary key is
// gone, at the lowest of the revisions above r that no object given
// carries. A journal the table is attached to records a DeleteAll and
// every object given, as DeleteAll followed by Restore would.
//
// Secondary indexes are built as objects are added, and unique ones are
// enforced. Replace fails, as Restore does, with ErrRestoreInput (two
// objects with one primary key or one revision, a revision of 0, or one
// above revision), ErrUniqueConstraint, ErrPrimaryKey, or an LPMIndex's
// ErrInvalidPrefix or ErrPrefixHostBits; an error, or a panic of an index
// function, leaves the table as it was. Like Restore's, the commit keeps
// the table locked until it is published.
func Replace[Obj any](txn WriteTxn, tbl RWTable[Obj], objects iter.Seq2[Obj, Revision], revision Revision) error {
	t := tbl.(*table[Obj])
	tt, err := t.txnFor(txn)
	if err != nil {
		return err
	}
	from := tt.cur.revision
	if revision < from {
		return fmt.Errorf("table %q: replaced by a state at revision %d, the table at %d: %w", t.meta.name, revision, from, ErrWriteOrder)
	}
	r := replacing[Obj]{tt: tt, old: tt.primary.Snapshot(), from: from, multiKey: tt.cur.multiKey}
	// The journal records nothing until the Replace succeeded (r.record):
	// restore notes nothing while tj is nil.
	j := &tt.cur.journal
	r.tj, j.tj = j.tj, nil
	defer r.end()
	tt.cur.restore.keepLock = true
	tt.empty()
	var (
		revs   revisionSet
		maxRev Revision
	)
	for obj, rev := range objects {
		if err := tt.restore(obj, rev, nil, false, nil); err != nil {
			return err
		}
		maxRev = max(maxRev, rev)
		if revs.add(rev) {
			return fmt.Errorf("table %q: revision %d twice: %w", t.meta.name, rev, ErrRestoreInput)
		}
	}
	if rev, found := revs.repeated(); found {
		return fmt.Errorf("table %q: revision %d twice: %w", t.meta.name, rev, ErrRestoreInput)
	}
	if maxRev > revision {
		return fmt.Errorf("table %q: an object at revision %d, above the table's revision %d: %w", t.meta.name, maxRev, revision, ErrRestoreInput)
	}
	if err := r.changes(revision); err != nil {
		return err
	}
	r.done = true
	r.record()
	tt.cur.revision = revision
	tt.cur.dirty, tt.cur.written = true, true
	return nil
}

// replacing is one Replace under way: what the table held before it, to
// put it back if the Replace fails.
type replacing[Obj any] struct {
	tt   *tableTxn[Obj]
	old  part.Tree[object[Obj]]
	from Revision
	// multiKey is the transaction's before the Replace.
	multiKey uint64
	// tj is the table's journal in the transaction, set aside meanwhile.
	tj   TableJournal[Obj]
	done bool
}

// record records the Replace for the table's journal, if it has one, as
// removeAll and Restore would: a DeleteAll of the old objects, then each
// new object at its revision.
func (r *replacing[Obj]) record() {
	tt := r.tt
	j := &tt.cur.journal
	j.tj = r.tj
	if j.tj == nil {
		return
	}
	if r.old.Len() > 0 {
		if j.every != nil {
			var none Obj
			j.ops = append(j.ops, journalOp{rev: r.from + 1, all: true})
			j.objs = append(j.objs, none)
		} else {
			j.truncate()
		}
	}
	for pk, o := range tt.primary.All() {
		j.note(pk, o.rev, false, o.obj)
	}
}

// empty takes every object out of the table's trees, logging nothing.
func (tt *tableTxn[Obj]) empty() {
	tt.primary.DeletePrefix(nil)
	for i := range tt.secondary {
		tt.secondary[i].DeletePrefix(nil)
	}
}

// end puts the old objects back unless the Replace succeeded, after an
// error or a panic.
func (r *replacing[Obj]) end() {
	tt := r.tt
	clear(tt.scratch.newKeys)
	if !r.done {
		tt.empty()
		for _, o := range r.old.All() {
			// They were in the table: they fit it again.
			if err := tt.restore(o.obj, o.rev, nil, false, nil); err != nil {
				panic(fmt.Sprintf("strata: Replace failed, and putting back the object at revision %d failed: %v", o.rev, err))
			}
		}
		clear(tt.scratch.newKeys)
		tt.cur.multiKey = r.multiKey
	}
	tt.cur.journal.tj = r.tj
}

// changes checks that the table's new state follows its old one (see
// Replace), and logs the writes that lead from the one to the other for
// the change feeds, if the table has any.
func (r *replacing[Obj]) changes(revision Revision) error {
	tt := r.tt
	name := tt.t.meta.name
	logged := tt.log.cur.end.seg != nil
	// The new objects that are not the old ones (upserts) and the old
	// objects whose keys are gone (gone), found by walking both trees in
	// key order.
	var (
		upserts      []logEntry[Obj]
		gone         []object[Obj]
		nUps, nGone  int
		oldIt, newIt part.Iterator[object[Obj]]
		ok, okOld    bool
		key, oldKey  []byte
		o, oldO      object[Obj]
	)
	oldIt.Reset(r.old)
	newIt.Reset(tt.primary.Snapshot())
	oldKey, oldO, okOld = oldIt.Next()
	for key, o, ok = newIt.Next(); ok; key, o, ok = newIt.Next() {
		for okOld && bytes.Compare(oldKey, key) < 0 {
			nGone++
			if logged {
				gone = append(gone, oldO)
			}
			oldKey, oldO, okOld = oldIt.Next()
		}
		had := okOld && bytes.Equal(oldKey, key)
		if had && oldO.rev == o.rev {
			oldKey, oldO, okOld = oldIt.Next()
			continue // the same object
		}
		if o.rev <= r.from {
			return fmt.Errorf("table %q: an object at revision %d, not above the table's %d, that the table does not hold: %w", name, o.rev, r.from, ErrWriteOrder)
		}
		nUps++
		if logged {
			e := logEntry[Obj]{obj: o.obj, rev: o.rev, kind: entryInsert}
			if had {
				e.prev, e.kind = oldO.rev, entryUpdate
			}
			upserts = append(upserts, e)
		}
		if had {
			oldKey, oldO, okOld = oldIt.Next()
		}
	}
	for ; okOld; _, oldO, okOld = oldIt.Next() {
		nGone++
		if logged {
			gone = append(gone, oldO)
		}
	}
	// Every upsert is above from and at most revision, at a revision of
	// its own: the others are free for the deletions.
	if free := int(revision-r.from) - nUps; nGone > free {
		return fmt.Errorf("table %q: %d objects gone, but only %d revisions from %d to %d for their deletions: %w", name, nGone, free, r.from+1, revision, ErrWriteOrder)
	}
	if !logged {
		return nil
	}
	slices.SortFunc(upserts, func(a, b logEntry[Obj]) int { return cmp.Compare(a.rev, b.rev) })
	// Deletions at the lowest free revisions, merged with the upserts in
	// revision order.
	w := &tt.log
	rev, u := r.from, 0
	for _, g := range gone {
		for {
			rev++
			for u < len(upserts) && upserts[u].rev < rev {
				r.appendUpsert(upserts[u])
				u++
			}
			if u == len(upserts) || upserts[u].rev != rev {
				break
			}
		}
		w.append(logEntry[Obj]{obj: g.obj, rev: rev, prev: g.rev, kind: entryDelete})
		w.lastDelete = rev
	}
	for ; u < len(upserts); u++ {
		r.appendUpsert(upserts[u])
	}
	return nil
}

// appendUpsert logs an upsert; an insert's prev is the newest delete
// logged before it (logEntry.prev).
func (r *replacing[Obj]) appendUpsert(e logEntry[Obj]) {
	if e.kind == entryInsert {
		e.prev = r.tt.log.lastDelete
	}
	r.tt.log.append(e)
}
