package strata

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	pending() *writeTxn
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

// dbRoot is a published snapshot: the state of every table, by table
// position. It is never changed after publication.
//
// The n table states follow one another from first on, in the root's own
// allocation (newRoot), so a root is one allocation of 16 bytes plus a word
// per table: a commit allocates a new root, and this keeps it small.
type dbRoot struct {
	db    *DB
	n     int
	first [1]*stateHeader
}

// tables returns the root's table states, by table position.
func (r *dbRoot) tables() []*stateHeader { return unsafe.Slice(&r.first[0], r.n) }

// rootWith is a root with room for len(rest)+1 table states.
type rootWith[A any] struct {
	dbRoot
	//lint:ignore U1000 the room for the table states past first, which tables reaches through unsafe.Slice
	rest A
}

func allocRoot[A any]() *dbRoot { return &new(rootWith[A]).dbRoot }

// newRoot returns a new root holding a copy of tables.
func newRoot(db *DB, tables []*stateHeader) *dbRoot {
	var r *dbRoot
	// The sizes fill the allocator's size classes.
	switch n := len(tables); {
	case n <= 1:
		r = new(dbRoot)
	case n <= 2:
		r = allocRoot[[1]*stateHeader]()
	case n <= 4:
		r = allocRoot[[3]*stateHeader]()
	case n <= 6:
		r = allocRoot[[5]*stateHeader]()
	case n <= 10:
		r = allocRoot[[9]*stateHeader]()
	case n <= 14:
		r = allocRoot[[13]*stateHeader]()
	case n <= 18:
		r = allocRoot[[17]*stateHeader]()
	case n <= 30:
		r = allocRoot[[29]*stateHeader]()
	case n <= 62:
		r = allocRoot[[61]*stateHeader]()
	case n <= 126:
		r = allocRoot[[125]*stateHeader]()
	default:
		// A struct type made for n: the garbage collector sees every
		// table state through the type's pointer map, as above.
		rest := reflect.ArrayOf(n-1, reflect.TypeFor[*stateHeader]())
		t := reflect.StructOf([]reflect.StructField{
			{Name: "Root", Type: reflect.TypeFor[dbRoot]()},
			{Name: "Rest", Type: rest},
		})
		r = (*dbRoot)(reflect.New(t).UnsafePointer())
	}
	r.db, r.n = db, len(tables)
	copy(r.tables(), tables)
	return r
}

func (r *dbRoot) committed() *dbRoot { return r }
func (r *dbRoot) pending() *writeTxn { return nil }

// stateHeader is the first field of every tableState[Obj], so the root can
// hold the states of tables of different object types in one array.
type stateHeader struct {
	meta     *tableMeta
	revision Revision
	// writer is the name of the handle whose transaction last changed
	// the table's objects or revision ("" before any).
	writer string
}

// state returns the header of m's state in this snapshot, or nil if m was
// registered after the snapshot was taken.
func (r *dbRoot) state(m *tableMeta) *stateHeader {
	if m.db == r.db && m.pos < r.n {
		// r.tables()[m.pos]. (Indexing the states as one large array
		// let state inline, but checkptr, which -race turns on, rightly
		// refuses a pointer to an array larger than the root.)
		return unsafe.Slice(&r.first[0], r.n)[m.pos]
	}
	return r.stateAfter(m)
}

// stateAfter is state for a table registered after the snapshot was taken,
// or of another database.
//
//go:noinline
func (r *dbRoot) stateAfter(m *tableMeta) *stateHeader {
	if m.db != r.db {
		panicOtherDB(m) // both are the first handles of their databases
	}
	return nil
}

// panicOtherDB panics for a table used with a transaction of another
// database: a programming error (doc.go).
func panicOtherDB(m *tableMeta) {
	panic(fmt.Sprintf("strata: table %q used with a transaction of another DB", m.name))
}

// tableWriter is the write state of one table inside a write transaction.
// Every table has one, reused by each transaction that locks the table, so
// it is only touched while the table's lock is held.
type tableWriter interface {
	// commit finishes the table's index transactions and returns its new
	// state, or nil if nothing was written.
	commit() *stateHeader
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
	// published, and ends the writer's part of the transaction, so that
	// the table can be unlocked before (early lock release).
	handOff(w *writeTxn)
}

// txnHandle implements WriteTxn. Each transaction gets a handle of its own,
// which outlives the transaction (a handle used after Commit must say
// ErrTransactionClosed); the state it points to is pooled and reused once
// the transaction ended (BenchmarkDB_WriteTxn_1). Handles are allocated in
// blocks, which carry the cleanup that aborts forgotten transactions.
type txnHandle struct {
	// w is the transaction's state while it is open, nil once it ended.
	w *writeTxn
	// root, once the transaction ended, is the snapshot reads through the
	// handle see: the one Commit published, or the one it started from.
	root *dbRoot
	// open is the handle's slot in its block's openTxns, which holds w
	// while the transaction is open.
	open **writeTxn
}

// monotonicEpoch is the origin of monotonic.
var monotonicEpoch = time.Now()

// monotonic returns the time since monotonicEpoch. It reads the monotonic
// clock alone, where time.Now also reads the wall clock: the metrics' two
// readings per write transaction cost about 60 ns with time.Now and
// time.Since, and 45 ns with this.
func monotonic() time.Duration { return time.Since(monotonicEpoch) }

var writeTxnPool = sync.Pool{New: func() any { return new(writeTxn) }}

// handlesPerBlock is how many handles share an allocation and a cleanup.
// A cleanup costs more than the rest of an empty transaction
// (BenchmarkDB_WriteTxn_CommitOnly_1Table); sharing it makes it cheap. The
// price: a forgotten transaction is aborted once every handle of its block
// is unreachable, and a handle that is kept keeps the snapshots its block's
// other handles read after their transactions ended. Sixteen keeps both
// small.
const handlesPerBlock = 16

// handleBlock is an allocation of handles, handed out in order. Partly
// used blocks wait in handleBlocks; one that the pool drops (the garbage
// collector empties sync.Pools) is cleaned up once its handles are
// unreachable, like a full one.
//
// The cleanup (runtime.AddCleanup) sees only the block's openTxns, not the
// block. A finalizer would see the block, and so keep it, and every
// snapshot its handles read, for one more collection: the garbage
// collector would mark a write-heavy program's old trees once more after
// they died (BenchmarkDB_Changes_Baseline marked 26-30 MB a cycle, against
// under 1 MB with the cleanup).
type handleBlock struct {
	used    int // handles handed out; only the goroutine holding the block touches it
	handles [handlesPerBlock]txnHandle
	open    *openTxns
}

// openTxns holds the transactions of a block's handles that are open.
type openTxns [handlesPerBlock]*writeTxn

var handleBlocks sync.Pool

// newHandle returns a fresh handle for the transaction w.
func newHandle(w *writeTxn) *txnHandle {
	b, _ := handleBlocks.Get().(*handleBlock)
	if b == nil {
		b = &handleBlock{open: new(openTxns)}
		runtime.AddCleanup(b, abortForgotten, b.open)
	}
	h := &b.handles[b.used]
	h.w, h.open = w, &b.open[b.used]
	*h.open = w
	if b.used++; b.used < handlesPerBlock {
		handleBlocks.Put(b)
	}
	return h
}

// writeTxn is the state of an open write transaction.
type writeTxn struct {
	db *DB
	// root is the snapshot taken when the locks were held, which reads of
	// unlocked tables go to.
	root *dbRoot
	// locked lists the locked tables in lock order (table position), each
	// once.
	locked    []lockedTable
	lockedBuf [2]lockedTable
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
	// After an early lock release: the nodes the writers' changes
	// replaced, whose watch channels close once the commit is published
	// (its buffer kept across recycling), and the mark of the nodes the
	// transaction created (tableTxn.handOff).
	retired part.Retired
	mark    part.Mark
}

type lockedTable struct {
	meta  *tableMeta
	w     tableWriter  // nil until the first write to the table
	state *stateHeader // the table's new state, set by Commit
	// tip is the table's pending state the transaction began from
	// (tableMeta.tip), nil to begin from root's.
	tip *stateHeader
	// With metrics: the new state's object count and logged deletes.
	objects    int
	logDeletes uint64
}

func (h *txnHandle) committed() *dbRoot {
	if h.w != nil {
		return h.w.root
	}
	return h.root
}

func (h *txnHandle) pending() *writeTxn { return h.w }

// find returns the locked-table entry of m, or nil.
func (w *writeTxn) find(m *tableMeta) *lockedTable {
	for i := range w.locked {
		if w.locked[i].meta == m {
			return &w.locked[i]
		}
	}
	return nil
}

func (db *DB) writeTxn(ctx context.Context, first TableMeta, rest []TableMeta) (*txnHandle, error) {
	w := writeTxnPool.Get().(*writeTxn)
	w.db = db
	w.locked = w.lockedBuf[:0]
	w.add(first.tableMeta())
	for _, t := range rest {
		w.add(t.tableMeta())
	}
	for i := range w.locked {
		l := &w.locked[i].meta.lock
		var start time.Duration
		if db.opts.metricsOn {
			if l.tryLock() {
				// Not contended: no wait, and no clock read for it.
				w.locked[i].meta.metrics.LockWait(0)
				continue
			}
			start = monotonic()
		}
		if ctx == nil {
			l.lock()
		} else if err := l.lockContext(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				w.locked[j].meta.lock.unlock()
			}
			*w = writeTxn{}
			writeTxnPool.Put(w)
			return nil, err
		}
		if db.opts.metricsOn {
			w.locked[i].meta.metrics.LockWait(monotonic() - start)
		}
	}
	if db.opts.metricsOn {
		w.acquired = monotonic()
	}
	w.takeTips()
	return newHandle(w), nil
}

// lockedWriteTxn returns a write transaction over the table m, whose lock
// the caller already holds.
func (db *DB) lockedWriteTxn(m *tableMeta) *txnHandle {
	w := writeTxnPool.Get().(*writeTxn)
	w.db = db
	w.locked = append(w.lockedBuf[:0], lockedTable{meta: m})
	w.takeTips()
	if db.opts.metricsOn {
		w.acquired = monotonic()
		m.metrics.LockWait(0)
	}
	return newHandle(w)
}

// add inserts m into the lock list, keeping it sorted by table position and
// free of duplicates.
func (w *writeTxn) add(m *tableMeta) {
	if m.db.dbState != w.db.dbState {
		panic(fmt.Sprintf("strata: WriteTxn: table %q belongs to another DB", m.name))
	}
	if len(w.locked) == 0 {
		w.locked = append(w.locked, lockedTable{meta: m})
		return
	}
	i, found := slices.BinarySearchFunc(w.locked, m.pos, func(lt lockedTable, pos int) int { return lt.meta.pos - pos })
	if !found {
		w.locked = slices.Insert(w.locked, i, lockedTable{meta: m})
	}
}

// writer returns the write state of table m in the transaction, beginning
// it on first use.
func (w *writeTxn) writer(m *tableMeta) (*lockedTable, error) {
	lt := w.find(m)
	if lt == nil {
		return nil, fmt.Errorf("table %q: %w", m.name, ErrTableNotLockedForWriting)
	}
	return lt, nil
}

func (h *txnHandle) Commit() (ReadTxn, error) {
	w := h.w
	if w == nil {
		return nil, ErrTransactionClosed
	}
	// Deferred, so that the transaction ends, unlocking its tables, and
	// the handle closes, however commit ends: with a panic too (a bug in
	// a writer, or the journal's panic, raised again below).
	defer h.endCommit(w)
	root, err := w.commit()
	if err != nil {
		if p, ok := err.(*journalPanic); ok {
			panic(p.value)
		}
		return nil, err
	}
	return root, nil
}

func (h *txnHandle) Abort() {
	if w := h.w; w != nil {
		h.close(w)
		w.abort()
		recycle(w)
	}
}

// endCommit ends the transaction w that Commit ran: as committed once it
// published (w.committed), else aborted. The handle is closed first, so
// that if ending the transaction panics (a bug), no Abort of the handle,
// nor its block's cleanup, ends it again and unlocks its tables twice.
func (h *txnHandle) endCommit(w *writeTxn) {
	h.close(w)
	switch {
	case w.released:
		// Unlocked before the commit was published.
		if w.db.opts.metricsOn {
			w.report(w.committed)
		}
	case w.committed:
		w.release(true)
	default:
		w.abort()
	}
	recycle(w)
}

// close closes the handle of w, a transaction that is ending: reads through
// the handle see w.root from now on, Commit and Abort do nothing, and the
// cleanup of the handle's block no longer sees w.
func (h *txnHandle) close(w *writeTxn) { h.root, h.w, *h.open = w.root, nil, nil }

// recycle returns the state of a transaction that ended to the pool.
func recycle(w *writeTxn) {
	*w = writeTxn{retired: w.retired}
	writeTxnPool.Put(w)
}

// abortForgotten runs when the garbage collector found every handle of a
// block unreachable: a transaction still open in it was neither committed
// nor aborted, and is reported and aborted, which unlocks its tables.
func abortForgotten(open *openTxns) {
	for _, w := range open {
		if w == nil {
			continue
		}
		names := make([]string, len(w.locked))
		for i, lt := range w.locked {
			names[i] = lt.meta.name
		}
		slog.Error("strata: write transaction was neither committed nor aborted; aborting it",
			"tables", strings.Join(names, ","))
		w.abort()
		recycle(w)
	}
}

// commit publishes the transaction's writes, returning the new snapshot,
// and sets w.committed once it did; its caller (txnHandle.endCommit) then
// ends the transaction, as committed or aborted. Afterwards w.root is the
// snapshot reads through the handle see.
func (w *writeTxn) commit() (*dbRoot, error) {
	changed := false
	for i := range w.locked {
		lt := &w.locked[i]
		if lt.w != nil {
			lt.state = lt.w.commit()
			changed = changed || lt.state != nil
		}
	}
	if !changed && !w.dependent {
		// Nothing to publish, but the writers end as committed
		// (registered feeds, attached journals).
		w.committed = true
		w.root = w.db.root.Load()
		for i := range w.locked {
			if lt := &w.locked[i]; lt.w != nil {
				lt.w.notify()
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
	root := db.publishLocked(w.locked)
	db.mu.Unlock()
	w.committed, w.root = true, root

	for i := range w.locked {
		if lt := &w.locked[i]; lt.w != nil {
			lt.w.notify()
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

// firstJournaled returns the position in w.locked of the first table whose
// changes the journal records, or -1 if there is none.
func (w *writeTxn) firstJournaled() int {
	for i := range w.locked {
		if lt := &w.locked[i]; lt.state != nil && lt.w.journaled() {
			return i
		}
	}
	return -1
}

// journalPanic is the error writeRecord returns for a panic in the
// journal: commit cleans up as for any error, and Commit panics again with
// value.
type journalPanic struct{ value any }

func (p *journalPanic) Error() string { return fmt.Sprintf("journal panicked: %v", p.value) }

// writeRecord writes the changes of the journaled tables, the first of
// which is w.locked[first], into a new record of the database's journal,
// and returns it unwritten. It runs before the root is published and
// outside db.mu, so commits of other tables can share the journal's
// writes (group commit). The journal is code of the persistence layer
// and of its user (codecs): a panic in it is recovered into a
// *journalPanic, so that the transaction is aborted and its tables
// unlocked before the panic goes on (TestJournalPanic).
func (w *writeTxn) writeRecord(first int) (b JournalBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				b.Discard()
			}
			b, err = nil, &journalPanic{value: r}
		}
	}()
	b = w.db.journal.Begin()
	for i := first; i < len(w.locked); i++ {
		lt := &w.locked[i]
		if lt.state == nil || !lt.w.journaled() {
			continue
		}
		if err := lt.w.writeJournal(b); err != nil {
			b.Discard()
			return nil, fmt.Errorf("table %q: journal: %w", lt.meta.name, err)
		}
	}
	return b, nil
}

// commitRecord writes the record b (JournalBatch.Commit), recovering a
// panic of the journal as writeRecord does.
func commitRecord(b JournalBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &journalPanic{value: r}
		}
	}()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// report sends the transaction's figures to the tables' metrics and to its
// handle's: how long each table was held, and the state of those the
// transaction changed. It runs after the tables are unlocked.
func (w *writeTxn) report(committed bool) {
	held := monotonic() - w.acquired
	if w.released {
		held = w.releasedAt - w.acquired
	}
	w.db.handleMetrics.WriteTxn(held, committed)
	for i := range w.locked {
		lt := &w.locked[i]
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
func (w *writeTxn) abort() {
	defer w.release(false)
	for i := range w.locked {
		if lt := &w.locked[i]; lt.w != nil {
			lt.w.abort()
		}
	}
}

// release ends the transaction, committed or not: it unlocks the tables in
// reverse order and forgets the writers, which belong to the tables, then
// reports to the metrics.
func (w *writeTxn) release(committed bool) {
	for i := len(w.locked) - 1; i >= 0; i-- {
		lt := &w.locked[i]
		lt.w = nil
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
