package reconciler

import (
	"fmt"
	"time"
)

// Op is the kind of an operation, in metrics.
type Op uint8

// The operations.
const (
	OpUpdate Op = iota
	OpDelete
	numOps
)

var opNames = [numOps]string{"update", "delete"}

// String returns "update" or "delete".
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", o)
}

// Outcome is how an operation (or a prune) ended, in metrics.
type Outcome uint8

// The outcomes.
const (
	// OutcomeOK: it succeeded.
	OutcomeOK Outcome = iota
	// OutcomeError: it failed; it will be retried.
	OutcomeError
	// OutcomeTerminal: it failed with a Terminal error; it is not
	// retried until the object changes.
	OutcomeTerminal
	// OutcomePanic: it panicked (handled as OutcomeError otherwise).
	OutcomePanic
	// OutcomeTimeout: it ran past the operation timeout.
	OutcomeTimeout
	// OutcomeRequeue: it succeeded and asked to run again later.
	OutcomeRequeue
	// OutcomeRefused: a prune that exceeded its budget (ErrPruneBudget).
	OutcomeRefused
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "error", "terminal", "panic", "timeout", "requeue", "refused"}

// String returns the outcome's name: "ok", "error", "terminal", "panic",
// "timeout", "requeue" or "refused".
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// Metrics receives the measurements of reconcilers. Implementations must
// be safe for concurrent use. NopMetrics is the default; NewExpVar
// reports to package expvar, and package reconciler/prometheus to
// Prometheus.
type Metrics interface {
	// Reconciler returns the handle through which one reconciler reports.
	// It is called once, by New.
	Reconciler(name string) ReconcilerMetrics
}

// ReconcilerMetrics receives the measurements of one reconciler.
// Implementations must be safe for concurrent use: operations are
// reported by the workers that ran them.
type ReconcilerMetrics interface {
	// Operation reports that an Update or Delete of one object ended, and
	// how long it ran (for BatchOperations: the whole batch call).
	Operation(op Op, outcome Outcome, d time.Duration)
	// QueueWait reports how long an object waited in a lane before its
	// operation started.
	QueueWait(lane Lane, d time.Duration)
	// Reconciled reports, for an object that became Done, the time from
	// its change to the commit of its Done status: retries, the wait in
	// the change feed and in a lane, the operation and the status write
	// included. The table keeps no commit times, so the change's time is
	// the UpdatedAt of the Pending (or Refreshing) status it was written
	// with, which StatusPending (or the refresh mark) reads from the
	// clock just before the writer commits: a writer that sets the status
	// long before it commits makes the figure that much longer. Objects
	// whose status has no time (a zero UpdatedAt), Done statuses of a
	// requeue's run, and objects found in Error when Run started (whose
	// change's time is gone) are not reported.
	Reconciled(d time.Duration)
	// StatusCommit reports a write transaction of statuses: how many
	// were written, how many objects had changed meanwhile (conflicts:
	// merged or dropped), how long it took, and its error, if it failed.
	StatusCommit(written, conflicts int, d time.Duration, err error)
	// Progress reports the reconciler's figures after each round.
	Progress(s Stats)
	// Prune reports a prune and how long it ran.
	Prune(outcome Outcome, d time.Duration)
	// Refresh reports that objects were marked for refresh.
	Refresh(marked int)
}

// NopMetrics discards every measurement. It is the default, and costs
// nothing: the reconciler then reads no clock for metrics.
type NopMetrics struct{}

// Reconciler returns a handle that discards every measurement.
func (NopMetrics) Reconciler(string) ReconcilerMetrics { return nopReconcilerMetrics{} }

type nopReconcilerMetrics struct{}

func (nopReconcilerMetrics) Operation(Op, Outcome, time.Duration)        {}
func (nopReconcilerMetrics) QueueWait(Lane, time.Duration)               {}
func (nopReconcilerMetrics) Reconciled(time.Duration)                    {}
func (nopReconcilerMetrics) StatusCommit(int, int, time.Duration, error) {}
func (nopReconcilerMetrics) Progress(Stats)                              {}
func (nopReconcilerMetrics) Prune(Outcome, time.Duration)                {}
func (nopReconcilerMetrics) Refresh(int)                                 {}

func isNop(m Metrics) bool {
	switch m.(type) {
	case nil, NopMetrics, *NopMetrics:
		return true
	}
	return false
}

// Health receives the reconciler's health: OK while every object is
// reconciled or being reconciled, Degraded while objects fail, a prune
// failed or statuses cannot be written. cilium/hive's cell.Health
// satisfies it. Run reports only when the health changes.
type Health interface {
	// OK reports that the reconciler works as intended.
	OK(status string)
	// Degraded reports a problem.
	Degraded(reason string, err error)
	// Stopped reports that the reconciler stopped.
	Stopped(reason string)
}

type nopHealth struct{}

func (nopHealth) OK(string)              {}
func (nopHealth) Degraded(string, error) {}
func (nopHealth) Stopped(string)         {}
