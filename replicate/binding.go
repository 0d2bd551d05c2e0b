package replicate

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Binding is a table a Node replicates, with the codec of its objects:
// what Bind returns, for Config.Tables. Every node of a cluster must bind
// the same tables, by the same names, with codecs that read each other's
// values.
type Binding interface {
	// Table returns the bound table.
	Table() strata.TableMeta

	// attach attaches the table to the node's journal in txn.
	attach(txn strata.WriteTxn, j *journal) error
	// detach stops journaling the table's writes for the rest of txn: an
	// entry being applied is not proposed again.
	detach(txn strata.WriteTxn) error
	// check reports whether tc can apply to the table in txn: nil, or why
	// it is a conflict.
	check(txn strata.WriteTxn, tc *TableChanges) error
	// apply makes tc's operations in txn, at their revisions.
	apply(txn strata.WriteTxn, tc *TableChanges) error
	// revisionOf returns the revision of the object with primary key
	// key in txn, 0 if there is none.
	revisionOf(txn strata.ReadTxn, key []byte) uint64
	// snapshotTable and loader write and read the table in the node's
	// raft snapshots (snapshot.go).
	snapshotTable() persist.TableBinding
	loader(info persist.SnapshotTableInfo) (tableLoad, error)
}

// Bind binds tbl, whose objects codec encodes, for replication by a Node.
// The table's primary index must be a strata.Index (or any index with a
// QueryKey method): deletions are carried by primary key and found again
// by it.
func Bind[Obj any](tbl strata.RWTable[Obj], codec persist.Codec[Obj]) Binding {
	return &binding[Obj]{tbl: tbl, codec: codec}
}

type binding[Obj any] struct {
	tbl   strata.RWTable[Obj]
	codec persist.Codec[Obj]
}

// primaryQuerier is what the table's primary index must offer: a query by
// an encoded key.
type primaryQuerier[Obj any] interface {
	QueryKey(index.Key) strata.Query[Obj]
}

func (b *binding[Obj]) Table() strata.TableMeta { return b.tbl }

func (b *binding[Obj]) attach(txn strata.WriteTxn, j *journal) error {
	if _, ok := b.tbl.PrimaryIndexer().(primaryQuerier[Obj]); !ok {
		return fmt.Errorf("replicate: table %q: the primary index has no QueryKey method", b.tbl.Name())
	}
	return strata.SetJournal(txn, b.tbl, j, strata.TableJournal[Obj](&tableJournal[Obj]{b: b}))
}

func (b *binding[Obj]) detach(txn strata.WriteTxn) error {
	return strata.SetJournal[Obj](txn, b.tbl, nil, nil)
}

// errNotUsed is what the TableJournal methods a TableWriteJournal never
// receives return.
var errNotUsed = errors.New("replicate: TableJournal method not used by a TableWriteJournal")

// tableJournal is the TableWriteJournal of a bound table: it encodes each
// write of a commit into the batch's change set.
type tableJournal[Obj any] struct{ b *binding[Obj] }

func (tj *tableJournal[Obj]) Upsert(strata.JournalBatch, []byte, Obj, strata.Revision) error {
	return errNotUsed
}
func (tj *tableJournal[Obj]) Delete(strata.JournalBatch, []byte) error { return errNotUsed }
func (tj *tableJournal[Obj]) DeleteAll(strata.JournalBatch) error      { return errNotUsed }

// Write appends w to the table's part of the batch's change set. The
// table's first write opens its part, whose ReadRevision is the revision
// before that write: a transaction's writes to a table take consecutive
// revisions from the one it began at (TestReadRevisionIsFirstWriteMinusOne).
func (tj *tableJournal[Obj]) Write(jb strata.JournalBatch, w strata.JournalWrite[Obj]) error {
	b := jb.(*batch)
	tc := b.table(string(tj.b.tbl.Name()), w.Revision-1)
	op := Op{Revision: w.Revision}
	switch w.Kind {
	case strata.WriteUpsert:
		v, err := tj.b.codec.Append(nil, w.Object)
		if err != nil {
			return fmt.Errorf("replicate: table %q: encode: %w", tj.b.tbl.Name(), err)
		}
		op.Kind, op.Key, op.CodecVersion, op.Value = OpUpsert, bytes.Clone(w.PrimaryKey), tj.b.codec.Version(), v
	case strata.WriteDelete:
		op.Kind, op.Key = OpDelete, bytes.Clone(w.PrimaryKey)
	case strata.WriteDeleteAll:
		op.Kind = OpDeleteAll
	default:
		return fmt.Errorf("replicate: table %q: write of kind %d", tj.b.tbl.Name(), w.Kind)
	}
	tc.Ops = append(tc.Ops, op)
	return nil
}

// SetRevision ends the table's part with its revision after the commit.
func (tj *tableJournal[Obj]) SetRevision(jb strata.JournalBatch, rev strata.Revision) error {
	b := jb.(*batch)
	tc := b.table(string(tj.b.tbl.Name()), rev)
	tc.Ops = append(tc.Ops, Op{Kind: OpSetRevision, Revision: rev})
	b.noteRevision(string(tj.b.tbl.Name()), rev)
	return nil
}

// check: the table is at the revision the transaction read, and the
// operations' revisions grow from it (the applier refuses the others).
func (b *binding[Obj]) check(txn strata.WriteTxn, tc *TableChanges) error {
	cur := b.tbl.Revision(txn)
	if tc.ReadRevision != 0 && tc.ReadRevision != cur {
		return fmt.Errorf("table %q at revision %d, read at %d", tc.Table, cur, tc.ReadRevision)
	}
	for _, r := range tc.Reads {
		_, rev, found := b.tbl.Get(txn, b.primary(r.Key))
		if r.Revision == 0 && found || r.Revision != 0 && (!found || rev != r.Revision) {
			return fmt.Errorf("table %q: object %x read at revision %d, now at %d (found %v)", tc.Table, r.Key, r.Revision, rev, found)
		}
	}
	last := cur
	for _, op := range tc.Ops {
		switch {
		case op.Kind == OpSetRevision:
			if op.Revision < last {
				return fmt.Errorf("table %q: revision %d set after a write at %d", tc.Table, op.Revision, last)
			}
		case op.Revision <= last:
			return fmt.Errorf("table %q: a write at revision %d after %d", tc.Table, op.Revision, last)
		default:
			last = op.Revision
		}
	}
	return nil
}

func (b *binding[Obj]) revisionOf(txn strata.ReadTxn, key []byte) uint64 {
	if _, rev, found := b.tbl.Get(txn, b.primary(key)); found {
		return rev
	}
	return 0
}

func (b *binding[Obj]) primary(key []byte) strata.Query[Obj] {
	return b.tbl.PrimaryIndexer().(primaryQuerier[Obj]).QueryKey(index.Key(key))
}

func (b *binding[Obj]) apply(txn strata.WriteTxn, tc *TableChanges) error {
	for i := range tc.Ops {
		op := &tc.Ops[i]
		w := strata.JournalWrite[Obj]{PrimaryKey: op.Key, Revision: op.Revision}
		switch op.Kind {
		case OpUpsert:
			obj, err := b.codec.Decode(op.Value, op.CodecVersion)
			if err != nil {
				return fmt.Errorf("table %q: decode the object at revision %d: %w", tc.Table, op.Revision, err)
			}
			w.Kind, w.Object = strata.WriteUpsert, obj
		case OpDelete:
			obj, _, found := b.tbl.Get(txn, b.primary(op.Key))
			if !found {
				return fmt.Errorf("table %q: deletion at revision %d of an object the table does not hold: %w", tc.Table, op.Revision, strata.ErrWriteOrder)
			}
			w.Kind, w.Object = strata.WriteDelete, obj
		case OpDeleteAll:
			w.Kind = strata.WriteDeleteAll
		case OpSetRevision:
			if got := b.tbl.Revision(txn); got != op.Revision {
				return fmt.Errorf("table %q: at revision %d after the writes, the proposer at %d: %w", tc.Table, got, op.Revision, strata.ErrWriteOrder)
			}
			continue
		default:
			return fmt.Errorf("table %q: op of kind %d", tc.Table, op.Kind)
		}
		if err := strata.ApplyWrite(txn, b.tbl, w); err != nil {
			return err
		}
	}
	return nil
}
