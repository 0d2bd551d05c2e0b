package strata

// Write transactions: the ReadTxn and WriteTxn interfaces, a transaction's
// state (txnCore) and how it locks its tables, commits, aborts and
// releases them. The rest of the family: txn_ref.go (the WriteTxn a
// caller holds, pooling, forgotten transactions), txn_root.go (the
// published roots and table states), txn_journal.go (the commit's journal
// record), commitqueue.go (commits published once durable: early lock
// release), lock.go (the table locks).

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/strata-db/strata/part"
)

// ReadTxn is a consistent snapshot of the database, passed to table reads.
// A ReadTxn from DB.ReadTxn or Commit never changes. A WriteTxn is also a
// ReadTxn: reads through it see its own uncommitted writes to the tables it
// locked, and the snapshot taken when it was created for the others.
//
// A ReadTxn is safe for concurrent use; a WriteTxn is not.
type ReadTxn interface {
	// committed returns the snapshot reads of tables without pending
	// writes go to.
	committed() *dbRoot
	// pending returns the write transaction whose uncommitted writes reads
	// must see, or nil.
	pending() *txnCore

	// WriteJSON writes the named tables (every table, if none is named)
	// of the snapshot to w as one JSON object: the function WriteJSON
	// with this transaction (statedb's method of the same name).
	WriteJSON(w io.Writer, tables ...TableName) error
}

// WriteTxn is a write transaction: created by DB.WriteTxn over a set of
// tables that it holds locked until Commit or Abort.
type WriteTxn interface {
	ReadTxn

	// Commit makes the transaction's writes visible to new readers, all at
	// once, and unlocks its tables. It returns the snapshot that includes
	// them. If it returns an error (ErrTransactionClosed, or a failure of
	// the persistence layer to write the changes), nothing was published
	// and the database is as it was before the transaction.
	//
	// A commit whose changes a journal makes durable may unlock its tables
	// before they are durable, so that the next writers of those tables
	// build on it meanwhile; it still returns, and readers see it, only
	// once it is durable (docs/early-lock-release.md).
	//
	// After Commit, reads through the transaction see the snapshot Commit
	// returned, and writes fail with ErrTransactionClosed.
	//
	// If the persistence layer panics while it writes the changes (a
	// codec's bug, say), Commit aborts the transaction, unlocks its
	// tables, and then panics again with the same value: the transaction
	// is over and the database is as it was before it, as for an error.
	Commit() (ReadTxn, error)

	// Abort throws the transaction's writes away and unlocks its tables.
	// Aborting a transaction that already ended does nothing.
	Abort()
}

// tableCommitter is what a write transaction calls on a table's part of it
// (a tableTxn) to commit, notify, abort or hand off.
// Every table has one, reused by each transaction that locks the table, so
// it is only touched while the table's lock is held.
type tableCommitter interface {
	// commit finishes the table's index transactions and returns its new
	// state, or nil if nothing was written.
	commit() *tableStateHeader
	// notify closes the watch channels the committed writes replaced.
	notify()
	// abort throws the table's writes away.
	abort()
	// journaled reports whether the table's changes must be written to the
	// journal; writeJournal writes them.
	journaled() bool
	writeJournal(JournalBatch) error
	// keepsLock reports whether the transaction changed more than the
	// table's objects (feeds, initializers, the journal binding, the
	// change log, a Restore): it then keeps the table locked until it is
	// published, and notify does the rest.
	keepsLock() bool
	// handOff moves into w what notify would do once the commit is
	// published, and ends the table's part of the transaction, so that
	// the table can be unlocked before (early lock release).
	handOff(w *txnCore)
}

// txnCore is the core of an open write transaction, pooled and reused;
// the caller holds a txnRef to it (txn_ref.go).
type txnCore struct {
	db *DB
	// root is the snapshot taken when the locks were held, which reads of
	// unlocked tables go to.
	root *dbRoot
	// lockedTables lists the locked tables in lock order (table position), each
	// once.
	lockedTables []lockedTable
	lockedBuf    [2]lockedTable
	// acquired is when the last lock was taken, releasedAt when an early
	// lock release unlocked them (monotonic); set only if the database
	// has metrics.
	acquired, releasedAt time.Duration
	// committed: commit published the transaction's writes (or had none
	// to publish), so it ends as committed.
	committed bool

	// The commit queue's (commitqueue.go). dependent: a locked table had
	// a tip when the locks were taken, so the commit goes through the
	// queue. released: the commit unlocked the tables before it was
	// published (early lock release).
	dependent, released bool
	// record is the commit's enqueued journal record, nil if none.
	record QueuedBatch
	// waited: the record is durable, or failed (result); settled: the
	// queue published the commit (published) or failed it (result), and
	// sent on done unless the owner settled it itself. Guarded by the
	// queue's mu.
	waited, settled bool
	result          error
	published       *dbRoot
	// done wakes the owner of a commit another goroutine settles: made
	// in commitQueue.finish, under the queue's mu, when the owner finds
	// its commit not settled.
	done chan struct{}
	// After an early lock release: the nodes the tables' changes
	// replaced, whose watch channels close once the commit is published
	// (its buffer kept across recycling), and the mark of the nodes the
	// transaction created (tableTxn.handOff).
	retired part.Retired
	mark    part.Mark
}

type lockedTable struct {
	meta  *tableMeta
	txn   tableCommitter    // nil until the first write to the table
	state *tableStateHeader // the table's new state, set by Commit
	// tip is the table's pending state the transaction began from
	// (tableMeta.tip), nil to begin from root's.
	tip *tableStateHeader
	// With metrics: the new state's object count and logged deletes.
	objects    int
	logDeletes uint64
}

// find returns the locked-table entry of m, or nil.
func (w *txnCore) find(m *tableMeta) *lockedTable {
	for i := range w.lockedTables {
		if w.lockedTables[i].meta == m {
			return &w.lockedTables[i]
		}
	}
	return nil
}

func (db *DB) beginWrite(ctx context.Context, first TableMeta, rest []TableMeta) (*txnRef, error) {
	w := txnCorePool.Get().(*txnCore)
	w.db = db
	w.lockedTables = w.lockedBuf[:0]
	w.add(first.tableMeta())
	for _, t := range rest {
		w.add(t.tableMeta())
	}
	for i := range w.lockedTables {
		l := &w.lockedTables[i].meta.lock
		var start time.Duration
		if db.opts.metricsOn {
			if l.tryLock() {
				// Not contended: no wait, and no clock read for it.
				w.lockedTables[i].meta.metrics.LockWait(0)
				continue
			}
			start = monotonic()
		}
		if ctx == nil {
			l.lock()
		} else if err := l.lockContext(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				w.lockedTables[j].meta.lock.unlock()
			}
			*w = txnCore{}
			txnCorePool.Put(w)
			return nil, err
		}
		if db.opts.metricsOn {
			w.lockedTables[i].meta.metrics.LockWait(monotonic() - start)
		}
	}
	if db.opts.metricsOn {
		w.acquired = monotonic()
	}
	w.takeTips()
	return newTxnRef(w), nil
}

// lockedWriteTxn returns a write transaction over the table m, whose lock
// the caller already holds.
func (db *DB) lockedWriteTxn(m *tableMeta) *txnRef {
	w := txnCorePool.Get().(*txnCore)
	w.db = db
	w.lockedTables = append(w.lockedBuf[:0], lockedTable{meta: m})
	w.takeTips()
	if db.opts.metricsOn {
		w.acquired = monotonic()
		m.metrics.LockWait(0)
	}
	return newTxnRef(w)
}

// add inserts m into the lock list, keeping it sorted by table position and
// free of duplicates.
func (w *txnCore) add(m *tableMeta) {
	if m.db.dbShared != w.db.dbShared {
		panic(fmt.Sprintf("strata: WriteTxn: table %q belongs to another DB", m.name))
	}
	if len(w.lockedTables) == 0 {
		w.lockedTables = append(w.lockedTables, lockedTable{meta: m})
		return
	}
	i, found := slices.BinarySearchFunc(w.lockedTables, m.pos, func(lt lockedTable, pos int) int { return lt.meta.pos - pos })
	if !found {
		w.lockedTables = slices.Insert(w.lockedTables, i, lockedTable{meta: m})
	}
}

// locked returns the lockedTable of m in the transaction, beginning
// it on first use.
func (w *txnCore) locked(m *tableMeta) (*lockedTable, error) {
	lt := w.find(m)
	if lt == nil {
		return nil, fmt.Errorf("table %q: %w", m.name, ErrTableNotLockedForWriting)
	}
	return lt, nil
}

// commit publishes the transaction's writes, returning the new snapshot,
// and sets w.committed once it did; its caller (txnRef.endCommit) then
// ends the transaction, as committed or aborted. Afterwards w.root is the
// snapshot reads through the handle see.
func (w *txnCore) commit() (*dbRoot, error) {
	changed := false
	for i := range w.lockedTables {
		lt := &w.lockedTables[i]
		if lt.txn != nil {
			lt.state = lt.txn.commit()
			changed = changed || lt.state != nil
		}
	}
	if !changed && !w.dependent {
		// Nothing to publish, but the tables' parts end as committed
		// (registered feeds, attached journals).
		w.committed = true
		w.root = w.db.root.Load()
		for i := range w.lockedTables {
			if lt := &w.lockedTables[i]; lt.txn != nil {
				lt.txn.notify()
			}
		}
		return w.root, nil
	}

	db := w.db
	var b JournalBatch
	if first := w.firstJournaled(); first >= 0 {
		var err error
		if b, err = w.writeRecord(first); err != nil {
			w.root = db.root.Load()
			return w.root, err
		}
	}
	if qb, ok := b.(QueuedBatch); w.dependent || ok && qb.Queues() {
		return w.commitQueued(b)
	}
	if b != nil {
		if err := commitRecord(b); err != nil {
			w.root = db.root.Load()
			return w.root, err
		}
	}
	db.mu.Lock()
	root := db.publishLocked(w.lockedTables)
	db.mu.Unlock()
	w.committed, w.root = true, root

	for i := range w.lockedTables {
		if lt := &w.lockedTables[i]; lt.txn != nil {
			lt.txn.notify()
		}
	}
	return root, nil
}

// publishLocked stores a new root holding the states the tables of locked
// committed (lockedTable.state), the other tables' as published, and
// returns it. db.mu is held.
func (db *DB) publishLocked(locked []lockedTable) *dbRoot {
	root := newRoot(db.first, db.root.Load().tables())
	tables := root.tables()
	for i := range locked {
		if lt := &locked[i]; lt.state != nil {
			tables[lt.meta.pos] = lt.state
		}
	}
	db.root.Store(root)
	db.commits++
	return root
}

// report sends the transaction's figures to the tables' metrics and to its
// handle's: how long each table was held, and the state of those the
// transaction changed. It runs after the tables are unlocked.
func (w *txnCore) report(committed bool) {
	held := monotonic() - w.acquired
	if w.released {
		held = w.releasedAt - w.acquired
	}
	w.db.handleMetrics.WriteTxn(held, committed)
	for i := range w.lockedTables {
		lt := &w.lockedTables[i]
		m := lt.meta.metrics
		m.WriteTxn(held, committed)
		if st := lt.state; st != nil && committed {
			live, lag, graveyard := lt.meta.feeds.stats(st.revision, lt.logDeletes)
			m.Committed(lt.objects, st.revision, graveyard)
			m.ChangeFeeds(live, lag)
		}
		lt.state = nil
	}
}

// abort throws the transaction's writes away and ends it. The tables are
// unlocked even if a writer's abort panics (a bug): a table left locked
// would block every later writer for ever.
func (w *txnCore) abort() {
	defer w.release(false)
	for i := range w.lockedTables {
		if lt := &w.lockedTables[i]; lt.txn != nil {
			lt.txn.abort()
		}
	}
}

// release ends the transaction, committed or not: it unlocks the tables in
// reverse order and forgets the tables' parts (lockedTable.txn), which
// belong to the tables, then reports to the metrics.
func (w *txnCore) release(committed bool) {
	for i := len(w.lockedTables) - 1; i >= 0; i-- {
		lt := &w.lockedTables[i]
		lt.txn = nil
		if !w.db.opts.metricsOn {
			lt.state = nil // else report needs it, and clears it
		} else if lt.state != nil {
			// Read while locked: the change log's segments are reused
			// by later writers.
			lt.objects, lt.logDeletes = lt.meta.table.stateStats(lt.state)
		}
		lt.meta.lock.unlock()
		if lt.meta.feeds.dropLogAtUnlock.Load() && lt.meta.feeds.dropLogAtUnlock.CompareAndSwap(true, false) {
			// The last feed closed while the table was locked.
			lt.meta.table.dropUnobservedLog()
		}
	}
	if w.db.opts.metricsOn {
		w.report(committed)
	}
}
