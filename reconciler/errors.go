package reconciler

import "errors"

// Errors from New. Nothing is started when New returns one. They are
// returned wrapped with the field or option they concern; test for them
// with errors.Is.
var (
	// ErrMissingConfig: a required field of Config is nil (Table,
	// CloneObject, GetObjectStatus, SetObjectStatus, or both Operations
	// and BatchOperations).
	ErrMissingConfig = errors.New("required configuration missing")
	// ErrForeignTable: Config.Table is not registered with the DB given
	// to New.
	ErrForeignTable = errors.New("table is not registered with this database")
	// ErrInvalidOption: an option has a value out of range, such as zero
	// or negative workers, a negative interval, or a minimum backoff
	// above the maximum.
	ErrInvalidOption = errors.New("invalid option")
	// ErrUnsupportedIndex: the table's primary index is not a
	// strata.Index, so the reconciler cannot compute primary keys.
	ErrUnsupportedIndex = errors.New("primary index is not a strata.Index")
)

// Errors from Run.
var (
	// ErrAlreadyRunning: Run was called on a Reconciler that is running
	// or has run. A Reconciler runs once; create a new one to run again.
	ErrAlreadyRunning = errors.New("reconciler already started")
)

// Errors the reconciler reports about operations. They appear in
// Inspection.LastError, health reports and logs, wrapped with details.
var (
	// ErrPanic: an operation panicked. The panic is recovered, logged
	// with its stack, counted, and handled as a failed attempt.
	ErrPanic = errors.New("operation panicked")
	// ErrTimeout: an operation did not return within the operation
	// timeout. Its context was cancelled; the attempt counts as failed
	// (the operation's own error is wrapped with it).
	ErrTimeout = errors.New("operation timed out")
	// ErrPruneBudget: a prune would delete more of the outside world than
	// the budget allows (WithPruneBudget). CheckPruneBudget returns it;
	// the reconciler does not retry such a prune until the next interval
	// or a call of Prune, which ignores the budget.
	ErrPruneBudget = errors.New("prune exceeds its budget")
)
