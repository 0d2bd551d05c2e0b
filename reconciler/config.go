package reconciler

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/strata-db/strata"
)

// Config is what a reconciler needs to know about its table. Table,
// CloneObject, GetObjectStatus, SetObjectStatus and Operations are
// required. The fields keep cilium/statedb's names.
type Config[Obj any] struct {
	// Table is the table of desired objects.
	Table strata.RWTable[Obj]
	// CloneObject returns a shallow copy of an object. The reconciler
	// gives Update a clone, and sets the status on it; it must return a
	// new object, never its argument.
	CloneObject func(Obj) Obj
	// GetObjectStatus returns the reconciler's status in an object.
	GetObjectStatus func(Obj) Status
	// SetObjectStatus sets the reconciler's status in an object (always
	// a clone the reconciler owns) and returns it.
	SetObjectStatus func(Obj, Status) Obj
	// Operations update, delete and prune the outside world.
	Operations Operations[Obj]
	// BatchOperations, optional, replace Operations' Update and Delete
	// with calls that take several objects at once.
	BatchOperations BatchOperations[Obj]
	// OrderingKey, optional, groups objects whose operations must not run
	// at the same time: at most one operation per ordering key is in
	// flight, and the objects of one key are reconciled in the order of
	// the revisions of their changes (a delete at revision 4 before an
	// update at 5, even if the delete came while the object's previous
	// Update ran). An object that failed keeps its place and holds back
	// the later objects of its key until it succeeds, changes, or fails
	// with Terminal; an object waiting for a Requeue holds back nothing
	// until its requeue is due. Without it, only operations on the same
	// object exclude each other.
	OrderingKey func(Obj) string
}

// Lane is a queue of work, by kind. New changes go before retries, and
// retries before refreshes, by weight (WithLaneWeights), and a lane whose
// work waits gains weight with the wait (WithAging): no lane starves.
type Lane uint8

// The lanes.
const (
	// LaneChanges holds objects that changed (Pending) and deletes.
	LaneChanges Lane = iota
	// LaneRetries holds failed objects whose backoff has passed, and
	// objects an operation asked to requeue.
	LaneRetries
	// LaneBackground holds objects marked for refresh (Refreshing).
	LaneBackground
	numLanes
)

var laneNames = [numLanes]string{"changes", "retries", "background"}

// String returns "changes", "retries" or "background".
func (l Lane) String() string {
	if l < numLanes {
		return laneNames[l]
	}
	return fmt.Sprintf("Lane(%d)", l)
}

// Option changes a setting of New. Options with a value out of range make
// New fail with ErrInvalidOption.
type Option func(*options)

type options struct {
	err error

	name        string
	workers     int
	roundSize   int
	roundRate   float64 // rounds per second; 0: no limit
	roundBurst  int
	retryMin    time.Duration
	retryMax    time.Duration
	jitter      float64
	rand        *rand.Rand
	opTimeout   time.Duration
	drain       time.Duration
	weights     [numLanes]int
	aging       time.Duration
	pruneEvery  time.Duration
	pruneGuard  func(strata.ReadTxn) error
	pruneBudget float64

	refreshEvery   time.Duration
	refreshRate    float64
	startupRefresh bool

	metrics Metrics
	logger  *slog.Logger
}

func defaultOptions() options {
	return options{
		workers:        1,
		roundSize:      1000,
		retryMin:       100 * time.Millisecond,
		retryMax:       time.Minute,
		jitter:         0.1,
		opTimeout:      time.Minute,
		drain:          30 * time.Second,
		weights:        [numLanes]int{8, 2, 1},
		aging:          2 * time.Second,
		pruneEvery:     time.Hour,
		refreshEvery:   30 * time.Minute,
		refreshRate:    100,
		startupRefresh: true,
	}
}

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("reconciler: "+format+": %w", append(args, ErrInvalidOption)...)
	}
}

// WithName names the reconciler in metrics, logs and health reports. The
// default (and WithName("")) is the table's name; stratahive names a
// second unnamed reconciler of a table otherwise (RegisterReconciler).
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// NameOf returns the name opts give a reconciler (the last WithName among
// them decides), and false if none gives one or the last gives "": New
// then names the reconciler after its table. A package that registers
// reconcilers under names it keeps unique (stratahive) asks it to tell
// an unnamed reconciler from a named one.
func NameOf(opts ...Option) (string, bool) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o.name, o.name != ""
}

// WithWorkers sets how many operations may run at once (default 1). At
// most one runs per object (or per ordering key) whatever the number.
func WithWorkers(n int) Option {
	return func(o *options) {
		if n <= 0 {
			o.invalid("WithWorkers(%d): workers must be positive", n)
		}
		o.workers = n
	}
}

// WithRoundSize sets the most objects given to a worker at once, and so
// the largest BatchOperations batch (default 1000). Workers get smaller
// rounds when operations are slow, so that the others get work too.
func WithRoundSize(n int) Option {
	return func(o *options) {
		if n <= 0 {
			o.invalid("WithRoundSize(%d): round size must be positive", n)
		}
		o.roundSize = n
	}
}

// WithRoundRateLimit caps how many rounds the reconciler hands to its
// workers: roundsPerSecond on average, and up to burst at once after a
// quiet spell (a token bucket, golang.org/x/time/rate's, which starts
// full). It is cilium/statedb's round limiter (WithRoundLimits' limiter;
// statedb's benchmark sets 1000 rounds a second with a burst of 10).
//
// A round is the objects given to one worker at once (at most
// WithRoundSize of them, in one BatchOperations call when there are
// batch operations), whatever the number of workers: the limit is the
// reconciler's, not each worker's. While the limit holds the next round
// back, changes are still read and queued, so the round that follows
// takes more of them: the limit trades latency for fewer and larger
// rounds (fewer status write transactions, larger batches). Nothing is
// dropped. Prunes and refresh marks are not rounds (WithRefresh has its
// own rate).
//
// The default is no limit. roundsPerSecond must be positive and finite,
// and burst at least 1; otherwise New fails with ErrInvalidOption.
func WithRoundRateLimit(roundsPerSecond float64, burst int) Option {
	return func(o *options) {
		if !(roundsPerSecond > 0) || math.IsInf(roundsPerSecond, 1) || burst < 1 {
			o.invalid("WithRoundRateLimit(%g, %d): need a positive finite rate and a burst of at least 1", roundsPerSecond, burst)
		}
		o.roundRate, o.roundBurst = roundsPerSecond, burst
	}
}

// WithRetry sets the backoff of failed objects: min after the first
// failure, doubling with each failure since the object last changed, up
// to max (defaults 100ms and 1 minute), with jitter (WithJitter).
func WithRetry(min, max time.Duration) Option {
	return func(o *options) {
		if min <= 0 || max < min {
			o.invalid("WithRetry(%s, %s): need 0 < min <= max", min, max)
		}
		o.retryMin, o.retryMax = min, max
	}
}

// WithJitter sets the jitter of backoffs and refresh ages: each is
// multiplied by a random factor in [1-fraction, 1+fraction] (default 0.1).
// A backoff's factor is drawn when it starts; an object's refresh age is
// drawn once for each version (from its revision), so that it does not
// change between the refresh passes that look at the object. r, if not
// nil, is the random source (for deterministic tests); it is used by the
// reconciler's own goroutine only.
func WithJitter(fraction float64, r *rand.Rand) Option {
	return func(o *options) {
		if fraction < 0 || fraction >= 1 {
			o.invalid("WithJitter(%g): need 0 <= fraction < 1", fraction)
		}
		o.jitter, o.rand = fraction, r
	}
}

// WithOpTimeout sets how long an operation (or a batch call, or a prune)
// may run before its context is cancelled (default 1 minute). The attempt
// then fails with ErrTimeout.
func WithOpTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("WithOpTimeout(%s): timeout must be positive", d)
		}
		o.opTimeout = d
	}
}

// WithDrainTimeout sets how long Run waits, once its context is done, for
// the operations in flight to finish before it cancels them (default 30
// seconds). Run then waits for them to return, writes the statuses of
// those that finished, and returns.
func WithDrainTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.invalid("WithDrainTimeout(%s): timeout must not be negative", d)
		}
		o.drain = d
	}
}

// WithLaneWeights sets the shares of the lanes when all have work
// (default 8, 2, 1).
func WithLaneWeights(changes, retries, background int) Option {
	return func(o *options) {
		if changes <= 0 || retries <= 0 || background <= 0 {
			o.invalid("WithLaneWeights(%d, %d, %d): weights must be positive", changes, retries, background)
		}
		o.weights = [numLanes]int{changes, retries, background}
	}
}

// WithAging sets how fast a waiting lane gains weight: its weight grows by
// its own for every d its oldest object has waited (default 2 seconds).
func WithAging(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("WithAging(%s): must be positive", d)
		}
		o.aging = d
	}
}

// WithPruning makes the reconciler prune every interval (default 1 hour),
// once the table is initialized. Prune forces a prune at any time.
func WithPruning(interval time.Duration) Option {
	return func(o *options) {
		if interval <= 0 {
			o.invalid("WithPruning(%s): interval must be positive (WithoutPruning disables it)", interval)
		}
		o.pruneEvery = interval
	}
}

// WithoutPruning turns periodic pruning off, including the prune when
// the table becomes initialized. Prune still prunes.
func WithoutPruning() Option {
	return func(o *options) { o.pruneEvery = 0 }
}

// WithPruneGuard sets a check run before every prune, on the snapshot the
// prune would get: a prune runs only if it returns nil, and is otherwise
// tried again with backoff. Use it to hold pruning until the desired state
// is complete in ways table initializers do not express.
func WithPruneGuard(guard func(strata.ReadTxn) error) Option {
	return func(o *options) { o.pruneGuard = guard }
}

// WithPruneBudget limits the periodic prunes to deleting at most fraction
// (0 < fraction <= 1) of the outside world's objects: CheckPruneBudget
// refuses more. A prune forced with Prune has no budget.
//
// The budget is enforced only if the Prune operation asks
// CheckPruneBudget before deleting and returns its error (PruneStrangers
// does both): the reconciler does not see what Prune deletes. A prune that
// returns without asking is logged as a warning, once.
func WithPruneBudget(fraction float64) Option {
	return func(o *options) {
		if fraction <= 0 || fraction > 1 {
			o.invalid("WithPruneBudget(%g): need 0 < fraction <= 1", fraction)
		}
		o.pruneBudget = fraction
	}
}

// WithRefresh makes the reconciler refresh Done objects whose status is
// older than interval (with jitter), marking at most marksPerSecond of
// them Refreshing per second, in batches, for the background lane.
// The default is every 30 minutes at 100 per second.
func WithRefresh(interval time.Duration, marksPerSecond float64) Option {
	return func(o *options) {
		if interval <= 0 || marksPerSecond <= 0 {
			o.invalid("WithRefresh(%s, %g): interval and rate must be positive (WithoutRefresh disables it)", interval, marksPerSecond)
		}
		o.refreshEvery, o.refreshRate = interval, marksPerSecond
	}
}

// WithoutRefresh turns refreshing off, the refresh after start included.
func WithoutRefresh() Option {
	return func(o *options) { o.refreshEvery, o.startupRefresh = 0, false }
}

// WithStartupRefresh sets whether the objects found Done when Run starts
// are refreshed, at the refresh rate (default true). A Done status from
// before the start, such as one loaded from a durable table, is a claim
// about an outside world that may have changed since.
func WithStartupRefresh(enabled bool) Option {
	return func(o *options) { o.startupRefresh = enabled }
}

// WithMetrics sets where the reconciler reports its measurements (default
// NopMetrics, which costs nothing).
func WithMetrics(m Metrics) Option {
	return func(o *options) { o.metrics = m }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
