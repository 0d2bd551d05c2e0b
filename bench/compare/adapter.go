package main

// The adapters: every workload is written once against these interfaces and
// each database implements them in a thin layer that calls its own API the
// way a user of that database would.
//
// Overhead is kept identical across databases: every call is one interface
// dispatch plus the native call, and no adapter allocates on a hot path.
//   - Transactions are not wrapped in fresh values: each adapter owns one
//     read handle and one write handle, ReadTxn/WriteTxn store the native
//     transaction in it and return a pointer to it. A handle is valid until
//     the next ReadTxn (or WriteTxn) call on the same adapter, which is all
//     the single-goroutine workloads need.
//   - Scans (List, Prefix, LowerBound, All) do not hand iterators or
//     callbacks through the interface (that would allocate a closure per call
//     in the adapter); the adapter runs the native scan to completion with
//     its idiomatic loop and returns the count and the sum of the IDs it saw,
//     which the workload checks.
//   - Objects are *Object values built by the workload in setup and shared by
//     all databases; the timed loops allocate no objects of their own.
//   - Keys are encoded with each database's own encoders (strata's index
//     package, statedb's index package, go-memdb's reflection indexers), as a
//     user would: their cost is part of the database's cost.

// Schema selects the indexes of the "objects" table. The primary index is
// always the unique "id" index on Object.ID.
type Schema struct {
	Name        bool // unique secondary index "name" on Object.Name
	Tags        bool // non-unique secondary index "tags" on Object.Tags
	ExtraTables int  // empty tables registered before the objects table
	// ByRevision keeps the objects by revision too: Strata's opt-in
	// RevisionIndex. Every statedb table keeps a revision index whatever
	// the schema; go-memdb has none (byrevision.go).
	ByRevision bool
}

// Result is what a scan saw: the number of objects and the sum of their IDs.
type Result struct {
	N   int
	Sum uint64
}

// DB is a database with one "objects" table of the given Schema.
type DB interface {
	// ReadTxn returns a read snapshot (see the handle note above).
	ReadTxn() RTxn
	// WriteTxn opens a write transaction on the objects table. It must end
	// with Commit or Abort before the next WriteTxn.
	WriteTxn() WTxn
}

// RTxn reads the objects table in one snapshot.
type RTxn interface {
	// Get finds the object by primary key.
	Get(id uint64) (*Object, bool)
	// GetByName finds the object by the unique secondary key.
	GetByName(name string) (*Object, bool)
	// ListByTag scans the objects that have the tag (non-unique index).
	ListByTag(tag string) Result
	// PrefixByTag scans the objects that have a tag starting with prefix.
	PrefixByTag(prefix string) Result
	// LowerBoundByTag scans the objects whose tag is >= tag, in tag order.
	LowerBoundByTag(tag string) Result
	// All scans every object in primary key order.
	All() Result
	// Count returns the number of objects (not used in timed loops).
	Count() int
}

// WTxn is a write transaction; reads through it see its own writes.
type WTxn interface {
	RTxn
	// Insert stores o, replacing the object with the same ID.
	Insert(o *Object) error
	// Modify stores o, merging it with the existing object of the same ID
	// (the merge keeps the new object). statedb and strata have Modify;
	// go-memdb has none, so its adapter does First + Insert.
	Modify(o *Object) error
	// Delete removes the object with o's ID and reports whether it existed.
	Delete(o *Object) (bool, error)
	// DeleteAll removes every object.
	DeleteAll() error
	Commit()
	Abort()
}

// Feeder is a DB with change feeds on its objects table: strata and statedb
// have them (Table.Changes), go-memdb has none.
type Feeder interface {
	// Changes opens a change feed, in a write transaction of its own that
	// it commits.
	Changes() (Feed, error)
}

// Feed is a change feed of the objects table.
type Feed interface {
	// Next consumes the changes committed since the previous call, up to
	// the latest snapshot, and returns what it saw and the channel Next
	// returned (closed by the next change).
	Next() (FeedResult, <-chan struct{})
	// Close closes the feed (and stops what the database ran for it).
	Close()
}

// FeedResult is what one Next delivered: the number of upserts and of
// deletes, and the sum of the IDs of all the changes.
type FeedResult struct {
	Upserts, Deletes int
	Sum              uint64
}

// Factory creates an empty database of one kind.
type Factory struct {
	Name string
	New  func(Schema) (DB, error)
}

// Databases in table order. Strata is the baseline of the ratio columns.
var databases = []Factory{
	{"strata", newStrata},
	{"statedb", newStatedb},
	{"memdb", newMemdb},
}

// Radix is a persistent radix tree of int values, stateful so that the
// adapter never allocates: it holds one committed tree and at most one open
// transaction.
type Radix interface {
	// Begin opens a transaction on a new, empty tree.
	Begin()
	// Insert adds a key in the open transaction.
	Insert(key []byte, v int)
	// Commit ends the transaction, keeps its tree and returns its length.
	Commit() int
	// Get looks key up in the committed tree.
	Get(key []byte) (int, bool)
	// Iterate scans the committed tree in key order, returning the number of
	// keys and the sum of the values.
	Iterate() (n, sum int)
}

// RadixFactory creates a radix tree adapter of one kind.
type RadixFactory struct {
	Name string
	New  func() Radix
}

// Radix trees in table order. Strata's part is the baseline.
var radixTrees = []RadixFactory{
	{"part", newStrataPart},
	{"statedb.part", newStatedbPart},
	{"iradix", newIradix},
}
