package reconciler

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/strata-db/strata"
)

// Operations make the outside world match the table, one object at a time.
//
// The reconciler calls Update for every object whose status is Pending or
// Refreshing, and Delete for every object deleted from the table. It may
// skip versions in between (an object is reconciled in its newest
// version), and may call an operation again for a version it already
// handled, so both must be idempotent. It never runs two operations on
// one object at the same time, nor any operation while Prune runs.
//
// Operations get a context that is cancelled when the operation timeout
// passes (WithOpTimeout) or the reconciler shuts down after its drain
// timeout; they should return soon after. The context is the operation's
// own: do not keep it after returning. The ReadTxn is a snapshot at least
// as new as the object, for looking up other tables.
//
// An error makes the attempt a failure, retried with backoff (see
// Terminal, RetryAfter and Requeue for the other outcomes).
type Operations[Obj any] interface {
	// Update makes the outside world hold obj. obj is a clone
	// (Config.CloneObject) that Update may modify: its changes are
	// written back with the status, unless another reconciler changed
	// the object meanwhile.
	Update(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, obj Obj) error
	// Delete removes obj, which was deleted from the table, from the
	// outside world. Deleting what is not there is not an error.
	Delete(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, obj Obj) error
	// Prune removes from the outside world what objects, the full set of
	// desired objects, does not hold. It runs once the table is
	// initialized (and the prune guard agrees), then periodically and
	// on Reconciler.Prune, never at the same time as another operation.
	// The reconciler does not see what Prune deletes: a prune budget
	// (WithPruneBudget) holds only if Prune calls CheckPruneBudget before
	// deleting, and returns its error, as PruneStrangers does.
	Prune(ctx context.Context, txn strata.ReadTxn, objects iter.Seq2[Obj, strata.Revision]) error
}

// BatchEntry is one object of a batch given to BatchOperations: the
// object (for updates a clone the operation may modify), its revision,
// and Result, which the operation sets to the object's outcome (nil for
// success; Terminal, RetryAfter and Requeue work as for Operations).
type BatchEntry[Obj any] struct {
	Object   Obj
	Revision strata.Revision
	Result   error
}

// BatchOperations, when given (Config.BatchOperations), are used instead
// of Operations' Update and Delete: the reconciler hands them the objects
// of a round together. Operations is still needed for Prune. Each call
// sets the Result of every entry; the same guarantees hold as for
// Operations.
type BatchOperations[Obj any] interface {
	// UpdateBatch updates the objects of the batch.
	UpdateBatch(ctx context.Context, txn strata.ReadTxn, batch []BatchEntry[Obj])
	// DeleteBatch deletes the objects of the batch.
	DeleteBatch(ctx context.Context, txn strata.ReadTxn, batch []BatchEntry[Obj])
}

// outcomeError is an error that tells the reconciler what to do next.
type outcomeError struct {
	kind  outcomeKind
	delay time.Duration
	err   error
}

type outcomeKind uint8

const (
	kindTerminal outcomeKind = iota + 1
	kindRetryAfter
	kindRequeue
)

func (e *outcomeError) Error() string {
	switch e.kind {
	case kindTerminal:
		return e.err.Error()
	case kindRetryAfter:
		return fmt.Sprintf("%v (retry after %s)", e.err, e.delay)
	default:
		return fmt.Sprintf("requeue after %s", e.delay)
	}
}

func (e *outcomeError) Unwrap() error { return e.err }

// Terminal marks err as not worth retrying: the object's status becomes
// Error (with Status.Terminal set) and it is not retried until it changes.
// Terminal(nil) is nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &outcomeError{kind: kindTerminal, err: err}
}

// RetryAfter makes the attempt a failure with err, to be retried after d
// instead of after the backoff. RetryAfter(d, nil) is Requeue(d).
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return Requeue(d)
	}
	return &outcomeError{kind: kindRetryAfter, delay: d, err: err}
}

// Requeue makes the attempt a success (the status becomes Done) and asks
// for the operation to run again on the object after d, as if it were
// refreshed: for objects whose outside state must be watched. The
// request lives in memory only.
func Requeue(d time.Duration) error {
	return &outcomeError{kind: kindRequeue, delay: d}
}

// classify turns an operation's error into what happens next.
func classify(err error) (kind outcomeKind, delay time.Duration) {
	var oe *outcomeError
	if errors.As(err, &oe) {
		return oe.kind, oe.delay
	}
	return 0, 0
}
