// Package metrics defines what Strata reports about itself, and the
// implementations that come with it: NopMetrics (the default, which costs
// nothing) and ExpVar (package expvar). A Prometheus implementation lives in
// metrics/prometheus, so that only programs that use it import Prometheus.
//
// The database asks its Metrics once per table for a Table, when the table
// is registered, and from then on reports through that handle: the hot path
// never looks a table up by name. With NopMetrics the database skips the
// calls, and the clock reads that would feed them, altogether.
package metrics

import "time"

// Metrics receives the database's measurements. Implementations must be safe
// for concurrent use.
type Metrics interface {
	// Table returns the handle through which measurements of one table are
	// reported. It is called once per table, when the table is registered.
	Table(name string) Table
	// Handle returns what the write transactions of one database handle
	// (strata.DB.NewHandle; "db" for the first) report to. It is called
	// once per handle, when the handle is made.
	Handle(name string) Handle
}

// Handle receives the measurements of the write transactions of one
// database handle: which module wrote. Implementations must be safe for
// concurrent use.
type Handle interface {
	// WriteTxn reports how long a write transaction of the handle held
	// its tables locked, from acquiring the locks to its commit or abort,
	// and whether it committed.
	WriteTxn(held time.Duration, committed bool)
}

// Table receives the measurements of one table. Implementations must be
// safe for concurrent use.
type Table interface {
	// LockWait reports how long a write transaction waited for the table's
	// lock.
	LockWait(d time.Duration)
	// WriteTxn reports how long a write transaction held the table locked,
	// from acquiring the lock to its commit or abort, and whether it
	// committed.
	WriteTxn(held time.Duration, committed bool)
	// Committed reports the table's state after a commit that changed it:
	// the number of objects, its revision, and the number of deletes
	// kept for change feeds that have not read them yet (the graveyard).
	Committed(objects int, revision uint64, graveyard int)
	// ChangeFeeds reports the table's change feeds: how many are open, and
	// how many revisions the slowest is behind the table's revision.
	ChangeFeeds(count int, lag uint64)
}

// Nop reports whether m is NopMetrics (or nil): the database then makes no
// metrics calls and reads no clock for them.
func Nop(m Metrics) bool {
	switch m.(type) {
	case nil, NopMetrics, *NopMetrics:
		return true
	}
	return false
}

// NopMetrics discards every measurement. It is the database's default.
type NopMetrics struct{}

// Table returns a Table that discards every measurement.
func (NopMetrics) Table(string) Table { return nopTable{} }

// Handle returns a Handle that discards every measurement.
func (NopMetrics) Handle(string) Handle { return nopTable{} }

type nopTable struct{}

func (nopTable) LockWait(time.Duration)       {}
func (nopTable) WriteTxn(time.Duration, bool) {}
func (nopTable) Committed(int, uint64, int)   {}
func (nopTable) ChangeFeeds(int, uint64)      {}
