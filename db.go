package strata

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/metrics"
)

// DB is an in-memory database of tables. Readers take snapshots (ReadTxn)
// that never change and cost one atomic load; writers lock the tables they
// write (WriteTxn), change them as one unit, and publish the result with one
// atomic store.
//
// A DB is a handle on the database: New returns its first, named "db", and
// NewHandle more, named after the modules that use them. Every handle
// reads and writes the same tables; what a handle adds is its name, which
// the metrics of the write transactions it opens carry, and which a table
// records as the last writer of the state it commits (LastWriter).
//
// A DB runs no goroutines of its own and needs no Start or Stop. It is safe
// for concurrent use.
type DB struct {
	// handle is the handle's name: "db" for the one New returns.
	handle string
	// handleMetrics receives the handle's write transactions' figures;
	// nil without metrics.
	handleMetrics metrics.Handle
	*dbShared
}

// dbShared is the database every handle shares.
type dbShared struct {
	// first is the handle New returned: the table's database (TableMeta.DB)
	// and the one snapshots name.
	first *DB

	// root is the published snapshot of every table. It is replaced, never
	// changed, by a commit or a table registration, both under mu.
	root atomic.Pointer[dbRoot]

	// mu serializes changes to root and to tables. Commits hold it only to
	// copy the root array and store the new root.
	mu sync.Mutex
	// tables lists the registered tables by position (registration order,
	// which is also the order write transactions lock them in).
	// Appended under mu; entries never change.
	tables []*tableMeta
	// journal makes commits of attached tables durable (SetJournal).
	// Written under mu, and only while journalClaims is 0.
	journal Journal
	// journalClaims counts the tables attached to journal and the open
	// transactions attaching one (journal.go). Guarded by mu.
	journalClaims int
	// tablesChanged is closed, and forgotten, when a table is registered
	// (tablesWatch). Created on first use; guarded by mu.
	tablesChanged chan struct{}
	// commits counts the commits that published a new root (Commits).
	// Guarded by mu, which every such commit holds anyway.
	commits uint64
	// queue holds the commits enqueued in the journal and not yet
	// published (commitqueue.go). Its mu is taken before mu.
	queue commitQueue
	// hold, set by tests only (before the database is used), is called
	// at each hold point of the commit queue (commitqueue_holds.go), with
	// the transaction that reached it.
	hold func(cqPoint, *txnCore)

	opts dbOptions
}

// DefaultHandle is the name of the handle New returns.
const DefaultHandle = "db"

type dbOptions struct {
	metrics metrics.Metrics
	// metricsOn is false for NopMetrics: the database then makes no
	// metrics calls and reads no clock for them. Decided once, in New.
	metricsOn bool
}

// Option configures a DB created by New.
type Option func(*dbOptions)

// WithMetrics makes the database report to m. The default is
// metrics.NopMetrics, which costs nothing: not even a clock read.
func WithMetrics(m metrics.Metrics) Option {
	return func(o *dbOptions) { o.metrics = m }
}

// New returns an empty database, through its first handle (named
// DefaultHandle).
func New(opts ...Option) *DB {
	st := &dbShared{}
	for _, opt := range opts {
		opt(&st.opts)
	}
	st.opts.metricsOn = !metrics.Nop(st.opts.metrics)
	db := st.handleNamed(DefaultHandle)
	st.first = db
	st.root.Store(&dbRoot{db: db})
	return db
}

// NewHandle returns a handle on the same database, named name: the
// transactions it opens are reported under that name in the metrics
// (metrics.Metrics.Handle), and the states they commit name it as their
// last writer (TableMeta.LastWriter). Give each module of a program its
// own.
func (db *DB) NewHandle(name string) *DB { return db.handleNamed(name) }

func (st *dbShared) handleNamed(name string) *DB {
	h := &DB{handle: name, dbShared: st}
	if st.opts.metricsOn {
		h.handleMetrics = st.opts.metrics.Handle(name)
	}
	return h
}

// HandleName returns the handle's name.
func (db *DB) HandleName() string { return db.handle }

// SameDatabase reports whether db and other are handles on the same
// database.
func (db *DB) SameDatabase(other *DB) bool { return other != nil && db.dbShared == other.dbShared }

// NamePattern is the pattern table and index names must match: a letter,
// then up to 63 letters, digits, '_', '-' or '.'.
const NamePattern = `^[a-zA-Z][a-zA-Z0-9_.\-]{0,63}$`

var nameRegexp = regexp.MustCompile(NamePattern)

// ReadTxn returns a snapshot of the whole database. It never changes: later
// commits are not seen through it. It costs one atomic load and does not
// allocate.
func (db *DB) ReadTxn() ReadTxn { return db.root.Load() }

// WriteTxn returns a write transaction over the given tables, locking them.
// It blocks until every table is free. Tables are locked in one global order
// (their registration order), so transactions over overlapping sets of
// tables never deadlock; a table passed twice is locked once.
//
// The transaction must end with Commit or Abort, which unlock the tables.
// A transaction that is dropped without either is reported (slog.Error)
// and aborted when the garbage collector finds it, but its tables stay
// locked until then. Handles share allocations, sixteen at a time, so the
// collector finds a forgotten one with the others of its allocation: a
// few transactions, or a few collections, later.
//
// WriteTxn panics if a table belongs to another DB.
func (db *DB) WriteTxn(table TableMeta, tables ...TableMeta) WriteTxn {
	//lint:ignore SA1012 beginWrite's nil ctx means "no context": a plain lock, without lockContext's wake channel and select
	txn, _ := db.beginWrite(nil, table, tables)
	return txn
}

// WriteTxnContext is WriteTxn that gives up waiting for the table locks when
// ctx is done, and then returns ctx's error, holding no lock.
func (db *DB) WriteTxnContext(ctx context.Context, table TableMeta, tables ...TableMeta) (WriteTxn, error) {
	txn, err := db.beginWrite(ctx, table, tables)
	if err != nil {
		return nil, err
	}
	return txn, nil
}

// registerTable adds a table: its empty state is published in a new root.
func (db *DB) registerTable(m *tableMeta, empty *tableStateHeader) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, other := range db.tables {
		if other.name == m.name {
			return fmt.Errorf("table %q: %w", m.name, ErrDuplicateTable)
		}
	}
	m.db = db.first
	m.pos = len(db.tables)
	if db.opts.metricsOn {
		m.metrics = db.opts.metrics.Table(m.name)
	}
	db.tables = append(db.tables, m)
	root := newRoot(db.first, append(slices.Clip(db.root.Load().tables()), empty))
	db.root.Store(root)
	if db.tablesChanged != nil {
		close(db.tablesChanged)
		db.tablesChanged = nil
	}
	return nil
}

// tablesWatch returns a channel that is closed when a table is next
// registered (an Expirer of every table watches it).
func (db *DB) tablesWatch() <-chan struct{} {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.tablesChanged == nil {
		db.tablesChanged = make(chan struct{})
	}
	return db.tablesChanged
}

// Tables returns the registered tables in registration order.
func (db *DB) Tables() []TableMeta {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := make([]TableMeta, len(db.tables))
	for i, m := range db.tables {
		out[i] = m.table
	}
	return out
}
