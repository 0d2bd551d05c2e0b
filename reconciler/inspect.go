package reconciler

import (
	"fmt"
	"time"

	"github.com/strata-db/strata"
)

// Stats are a reconciler's figures at one moment (Reconciler.Stats, and
// Metrics.Progress after each round).
type Stats struct {
	// Queued is the number of objects waiting in each lane, indexed by
	// Lane.
	Queued [numLanes]int
	// Parked is the number of objects waiting for an operation on
	// another object of their ordering key.
	Parked int
	// Delayed is the number of objects waiting for a retry (backoff,
	// RetryAfter) or a requeue.
	Delayed int
	// InFlight is the number of objects whose operation runs, or whose
	// outcome waits to be written.
	InFlight int
	// Failing is the number of objects whose last attempt failed
	// (waiting for a retry, or for a change after a Terminal error).
	Failing int
	// Revision is the revision up to which every change was attempted at
	// least once (WaitUntilReconciled).
	Revision strata.Revision
	// RetryLowWatermark is the lowest revision of a failing object, or 0.
	RetryLowWatermark strata.Revision
	// Lag is how many revisions Revision is behind the table's, as of
	// the reconciler's last read of the change feed.
	Lag uint64
	// OldestPending is how long ago the oldest change not yet attempted
	// was read from the change feed.
	OldestPending time.Duration
	// LongestRunning is how long the longest running operation has run.
	LongestRunning time.Duration
	// Paused reports a Pause without its Resume.
	Paused bool
	// CommitFailing reports that writing statuses fails (the outcomes are
	// kept and the write retried).
	CommitFailing bool
}

// Phase is where an object is in the reconciler (Inspection.Phase).
type Phase uint8

// The phases.
const (
	// PhaseIdle: nothing to do; the status is Done (or unset).
	PhaseIdle Phase = iota
	// PhaseUnseen: the table holds a change that the reconciler has not
	// read yet.
	PhaseUnseen
	// PhaseQueued: waiting in a lane (Inspection.Lane).
	PhaseQueued
	// PhaseParked: waiting for an operation on another object of its
	// ordering key.
	PhaseParked
	// PhaseInFlight: its operation runs, or its outcome waits to be
	// written.
	PhaseInFlight
	// PhaseBackoff: the last attempt failed; the next is at
	// Inspection.NextAttempt.
	PhaseBackoff
	// PhaseRequeued: the last attempt succeeded and asked to run again
	// at Inspection.NextAttempt.
	PhaseRequeued
	// PhaseFailed: the last attempt failed with a Terminal error; it
	// waits for the object to change.
	PhaseFailed
	// PhaseAbsent: no such object, and nothing to do for it.
	PhaseAbsent
)

var phaseNames = [...]string{"idle", "unseen", "queued", "parked", "in-flight", "backoff", "requeued", "failed", "absent"}

// String returns the phase's name.
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", p)
}

// Inspection is what the reconciler knows about one object
// (Reconciler.Inspect).
type Inspection struct {
	// Phase is where the object is.
	Phase Phase
	// Lane is the lane it waits in, for PhaseQueued.
	Lane Lane
	// Revision is the newest revision of the object the reconciler knows
	// of (from the table, for objects it has nothing to do for).
	Revision strata.Revision
	// Deleted reports that the object was deleted and its Delete is
	// outstanding.
	Deleted bool
	// Status is the reconciler's status in that version of the object.
	Status Status
	// Attempts counts the failed attempts since the object last changed.
	Attempts uint32
	// NextAttempt is when the object is retried or requeued, for
	// PhaseBackoff and PhaseRequeued.
	NextAttempt time.Time
	// LastError is the error of the last failed attempt, if any.
	LastError error
	// Waiting is how long the object has waited in its lane or group,
	// for PhaseQueued and PhaseParked.
	Waiting time.Duration
}
