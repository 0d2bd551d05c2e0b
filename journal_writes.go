package strata

// Every write of a transaction, in order, for a replica: a journal that
// receives them (TableWriteJournal) and the function that makes them again
// in another database at the same revisions (ApplyWrite). Package
// replicate ships a leader's writes to its followers with them
// (docs/replication.md).
//
// What a replica must end with, at the same revisions as the database that
// made the writes: the same objects, the same table revision, and change
// feeds that deliver the same changes (a deletion takes a revision of its
// own, and an object inserted and deleted in one transaction is delivered
// as deleted). A TableJournal's record, each changed object once in its
// final state, is not enough for that: it has no deletion's revision and
// no object deleted in the transaction that inserted it. Every write is.

import "fmt"

// WriteKind is the kind of a JournalWrite.
type WriteKind uint8

const (
	// WriteUpsert: Object was inserted or replaced, at Revision.
	WriteUpsert WriteKind = iota + 1
	// WriteDelete: Object, which the table held, was deleted at Revision.
	WriteDelete
	// WriteDeleteAll: every object of the table was deleted, each at a
	// revision of its own, in primary key order from Revision up.
	WriteDeleteAll
)

// JournalWrite is one write of a transaction to a table, as a
// TableWriteJournal receives it and ApplyWrite makes it again.
type JournalWrite[Obj any] struct {
	Kind WriteKind
	// PrimaryKey is the object's primary key (WriteUpsert, WriteDelete).
	// It is only valid during the call that receives it.
	PrimaryKey []byte
	// Object is the object written (WriteUpsert) or deleted
	// (WriteDelete); the zero value for WriteDeleteAll.
	Object Obj
	// Revision is the revision the write took: the object's, the
	// deletion's, or a WriteDeleteAll's first deletion's.
	Revision Revision
}

// TableWriteJournal is a TableJournal that receives every write of a
// transaction, in the order the transaction made it, rather than each
// changed object once in its final state. When a table is attached (with
// SetJournal) to a TableJournal that implements it, Commit calls Write
// for each write of the transaction to the table, then SetRevision with
// the table's revision after the commit; it calls neither Upsert, Delete
// nor DeleteAll. A Restore's objects come as WriteUpserts at their own
// revisions, which need not grow (ApplyWrite refuses those: a replica
// receives a restore as a whole, not write by write).
type TableWriteJournal[Obj any] interface {
	TableJournal[Obj]
	// Write records w into b. An error fails the commit, which leaves
	// the database as it was.
	Write(b JournalBatch, w JournalWrite[Obj]) error
}

// writeEveryWrite writes the transaction's writes to the table into b, in
// order, through the table's TableWriteJournal.
func (tt *tableTxn[Obj]) writeEveryWrite(b JournalBatch) error {
	j := &tt.cur.journal
	for i, op := range j.ops {
		w := JournalWrite[Obj]{Kind: WriteUpsert, PrimaryKey: op.pk, Object: j.objs[i], Revision: op.rev}
		switch {
		case op.all:
			w.Kind = WriteDeleteAll
		case op.deleted:
			w.Kind = WriteDelete
		}
		if err := j.every.Write(b, w); err != nil {
			return err
		}
	}
	return j.every.SetRevision(b, tt.cur.revision)
}

// ApplyWrite makes the write w, which a TableWriteJournal of another
// database received, in txn, at the revision it carries: a replica
// applying the writes its leader made, so that, applied in the order the
// journal received them and committed as the leader committed them, tbl
// ends with the same objects at the same revisions and the same table
// revision, and its change feeds deliver the same changes.
//
// The write must follow the table's state in txn: a revision above the
// table's revision (the revisions a transaction skips, those of writes it
// overwrote, are skipped here too), and a WriteDelete of an object the
// table holds, or a WriteDeleteAll of a table that is not empty; otherwise
// ApplyWrite fails with ErrWriteOrder and changes nothing. It fails as
// Insert does (ErrUniqueConstraint, ErrPrimaryKey, an LPMIndex's errors)
// where the object does not fit the table, which also changes nothing.
// Either means that the replica's state is not its leader's.
func ApplyWrite[Obj any](txn WriteTxn, tbl RWTable[Obj], w JournalWrite[Obj]) error {
	t := tbl.(*table[Obj])
	tt, err := t.txnFor(txn)
	if err != nil {
		return err
	}
	prev := tt.cur.revision
	if w.Revision <= prev {
		return fmt.Errorf("table %q: a write at revision %d, the table at %d: %w", t.meta.name, w.Revision, prev, ErrWriteOrder)
	}
	// The write takes the next revision: make it w's.
	tt.cur.revision = w.Revision - 1
	switch w.Kind {
	case WriteUpsert:
		_, _, err = tt.upsert(w.Object, modeApply, 0, nil)
	case WriteDelete:
		var had bool
		if _, had, err = tt.remove(w.Object, false, 0); err == nil && !had {
			err = fmt.Errorf("table %q: a deletion at revision %d of an object the table does not hold: %w", t.meta.name, w.Revision, ErrWriteOrder)
		}
	case WriteDeleteAll:
		if tt.primary.Len() == 0 {
			err = fmt.Errorf("table %q: a DeleteAll at revision %d of an empty table: %w", t.meta.name, w.Revision, ErrWriteOrder)
		} else {
			tt.removeAll()
		}
	default:
		err = fmt.Errorf("table %q: a write of kind %d: %w", t.meta.name, w.Kind, ErrWriteOrder)
	}
	if err != nil {
		tt.cur.revision = prev
	}
	return err
}
