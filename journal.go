package strata

import "fmt"

// Journal makes the changes of write transactions durable before they
// become visible. A database has at most one; package persist provides one
// on Pebble. The database calls it only for commits that change a table
// attached to it with SetJournal, and tables that are not attached pay
// nothing for it.
type Journal interface {
	// Begin starts the record of one commit.
	Begin() JournalBatch
}

// JournalBatch is the record of one commit's changes.
type JournalBatch interface {
	// Commit writes the record. The database publishes the commit only if
	// Commit returns nil; otherwise WriteTxn.Commit returns the error and
	// the database is left as it was before the transaction.
	Commit() error
	// Discard drops the record unwritten.
	Discard()
}

// QueuedBatch is a JournalBatch that can be written in two steps, so that
// the commit's tables are unlocked while its record becomes durable, and
// the next writers of those tables build on the commit meanwhile (early
// lock release: docs/early-lock-release.md). The database publishes the
// commit, and Commit returns, only once Wait returned nil for it and for
// every record enqueued before it.
type QueuedBatch interface {
	JournalBatch
	// Queues reports whether the record takes the two steps. If not, the
	// database writes it with Commit, holding the locks. It must not
	// change while any table is attached to the journal.
	Queues() bool
	// Enqueue places the record in the journal's order and returns
	// without waiting for it to be durable. The database calls it for
	// one record at a time, in the order of its commits; a record
	// enqueued after another is never durable without it. If it returns
	// an error, nothing was enqueued, and the database calls Discard.
	Enqueue() error
	// Wait returns once the enqueued record is durable, or could not be
	// made so. If it fails, the journal must fail every record enqueued
	// after it too (they may build on it): none of them is published.
	Wait() error
}

// SettledBatch is a QueuedBatch that is told how its commit ended. A
// journal whose records may become durable although the database does not
// publish their commits needs it: by invariant 4 of the commit queue, once
// a record fails, the commits queued behind it fail too
// (ErrEarlierCommitFailed), also those whose records the journal had made
// durable meanwhile, until the queue drains. A replicating journal, whose
// durable record is applied on other nodes, learns here which of its
// records were published and which were not.
type SettledBatch interface {
	QueuedBatch
	// Settled is called once per enqueued record, when the database
	// settled its commit: with nil once it is published, or with the
	// error its Commit returns. It is called under the database's
	// commit queue lock, in the order of the records: it must not block
	// or call into the database.
	Settled(err error)
}

// TableJournal writes the changes of one table into commit records. The
// database calls it during Commit, once per changed object (each object
// once, in its final state), never concurrently for one batch.
type TableJournal[Obj any] interface {
	// Upsert records that obj, with the given primary key and revision, was
	// inserted or replaced.
	Upsert(b JournalBatch, primaryKey []byte, obj Obj, rev Revision) error
	// Delete records that the object with the primary key was deleted.
	Delete(b JournalBatch, primaryKey []byte) error
	// DeleteAll records that every object of the table was deleted. It
	// comes before the Upserts of the same commit.
	DeleteAll(b JournalBatch) error
	// SetRevision records the table's revision after the commit.
	SetRevision(b JournalBatch, rev Revision) error
}

// SetJournal attaches tbl to journal j: every change made to the table
// after this call, in this transaction and all later ones, is written
// through tj into j's record of the commit before the commit is published.
// txn must have locked tbl. Attaching a table that is already attached
// replaces its TableJournal. If the transaction aborts (or its Commit
// fails), the table stays as it was, and a database no table is attached
// to is bound to no journal.
//
// A nil tj stops journaling the table's writes for the rest of txn, and
// undoes an attachment made earlier in txn; the table keeps the
// TableJournal it had for later transactions. A loader uses it to restore
// what the journal already holds without writing it back: SetJournal(nil),
// Restore, then SetJournal(tj) to attach the table from the commit on.
func SetJournal[Obj any](txn WriteTxn, tbl RWTable[Obj], j Journal, tj TableJournal[Obj]) error {
	t := tbl.(*table[Obj])
	tt, err := t.txnFor(txn)
	if err != nil {
		return err
	}
	db := t.meta.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if tj == nil {
		if tt.cur.journal.attach != nil {
			db.dropJournalClaim()
		}
		tt.cur.journal.use(nil)
		tt.cur.journal.attach = nil
		return nil
	}
	if db.journal != nil && db.journal != j {
		return fmt.Errorf("table %q: %w", t.meta.name, ErrJournalConflict)
	}
	if db.journal == nil {
		// Written only while no table is attached or being attached
		// (journalClaims is 0): commits read db.journal without db.mu,
		// and only those of attached tables do. Rewriting the same value
		// would race with them.
		db.journal = j
	}
	if tt.cur.journal.attach == nil {
		db.journalClaims++ // the transaction's, until it ends
	}
	// The transaction's later writes are journaled now; later
	// transactions only once this one commits (tableTxn.notify).
	tt.cur.journal.use(tj)
	tt.cur.journal.attach = tj
	return nil
}

// attachCommitted attaches the table to tj: the transaction that called
// SetJournal committed. Its claim on the database's journal becomes the
// table's (one per attached table).
func (t *table[Obj]) attachCommitted(tj TableJournal[Obj]) {
	if t.journal != nil {
		db := t.meta.db
		db.mu.Lock()
		db.journalClaims--
		db.mu.Unlock()
	}
	t.journal = tj
}

// attachAborted drops the claim of a transaction that called SetJournal
// and aborted.
func (t *table[Obj]) attachAborted() {
	db := t.meta.db
	db.mu.Lock()
	defer db.mu.Unlock()
	db.dropJournalClaim()
}

// dropJournalClaim drops a claim on the database's journal: the database
// is bound to no journal once nothing claims it. db.mu is held.
func (db *DB) dropJournalClaim() {
	if db.journalClaims--; db.journalClaims == 0 {
		db.journal = nil
	}
}

// journalTxn is a transaction's part for the table's journal: what the
// journal receives at commit (writeJournal), and a journal SetJournal
// attached. Per transaction: tableTxn.begin replaces it, keeping only
// the capacity of ops and opKeys.
type journalTxn[Obj any] struct {
	// tj, when the table is attached to a Journal, receives the
	// transaction's changes at commit; ops records the writes it needs
	// (decided when the transaction begins, not per write), opKeys holds
	// their primary keys, and truncated records a DeleteAll.
	tj        TableJournal[Obj]
	ops       []journalOp
	opKeys    []byte
	truncated bool
	// every is tj when it is a TableWriteJournal: then ops records every
	// write (a DeleteAll too, instead of truncated), and objs holds each
	// op's object (journal_writes.go).
	every TableWriteJournal[Obj]
	objs  []Obj
	// attach is the journal SetJournal attached in the transaction, which
	// the table keeps if it commits.
	attach TableJournal[Obj]
}

// use makes tj the journal that receives the transaction's writes (nil:
// none), and every its TableWriteJournal if it is one: the one place that
// decides whether the writes are recorded one by one.
func (j *journalTxn[Obj]) use(tj TableJournal[Obj]) {
	j.tj, j.every = tj, nil
	if tj != nil {
		j.every, _ = tj.(TableWriteJournal[Obj])
	}
}

// note records a write for the journal: the object obj with primary key
// pk, written (or, if deleted, deleted) at rev.
func (j *journalTxn[Obj]) note(pk []byte, rev Revision, deleted bool, obj Obj) {
	j.ops = append(j.ops, journalOp{pk: j.keepKey(pk), rev: rev, deleted: deleted})
	if j.every != nil {
		j.objs = append(j.objs, obj)
	}
}

// keepKey returns a copy of pk that lives until the transaction ends.
func (j *journalTxn[Obj]) keepKey(pk []byte) []byte {
	start := len(j.opKeys)
	j.opKeys = append(j.opKeys, pk...)
	return j.opKeys[start:len(j.opKeys):len(j.opKeys)]
}

// truncate records a DeleteAll: the writes before it need not be written.
func (j *journalTxn[Obj]) truncate() {
	j.truncated = true
	clear(j.ops)
	j.ops, j.opKeys = j.ops[:0], j.opKeys[:0]
}

// notify attaches t to the journal SetJournal attached, if any: the
// transaction committed.
func (j *journalTxn[Obj]) notify(t *table[Obj]) {
	if j.attach != nil {
		t.attachCommitted(j.attach)
		j.attach = nil
	}
}

// abort drops the claim of a SetJournal in the transaction, if any.
func (j *journalTxn[Obj]) abort(t *table[Obj]) {
	if j.attach != nil {
		t.attachAborted()
		j.attach = nil
	}
}

// journalOp is a write recorded for the journal: the primary key and the
// revision it took; all is a DeleteAll (recorded only for a
// TableWriteJournal), whose rev is its first deletion's.
type journalOp struct {
	pk           []byte
	rev          Revision
	deleted, all bool
}

// writeJournal writes the transaction's changes of the table into b: each
// changed object once, in its final state. tt's index transactions must be
// committed (CommitOnly) already; they are still readable.
func (tt *tableTxn[Obj]) writeJournal(b JournalBatch) error {
	if tt.cur.journal.every != nil {
		return tt.writeEveryWrite(b)
	}
	tj := tt.cur.journal.tj
	if tt.cur.journal.truncated {
		if err := tj.DeleteAll(b); err != nil {
			return err
		}
	}
	for _, op := range tt.cur.journal.ops {
		o, found := tt.primary.Get(op.pk)
		switch {
		case op.deleted && !found:
			if err := tj.Delete(b, op.pk); err != nil {
				return err
			}
		case !op.deleted && found && o.rev == op.rev:
			// The object's last write in the transaction.
			if err := tj.Upsert(b, op.pk, o.obj, o.rev); err != nil {
				return err
			}
		}
	}
	return tj.SetRevision(b, tt.cur.revision)
}

func (tt *tableTxn[Obj]) journaled() bool { return tt.cur.journal.tj != nil && tt.cur.written }
