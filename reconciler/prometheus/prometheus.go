// Package prometheus reports reconcilers' measurements to Prometheus. It
// is a package of its own so that only programs that use it import the
// Prometheus client; package reconciler does not.
//
// The metrics, labelled by reconciler name (and as shown), with the
// namespace given to New as the first part of the name:
//
//	<namespace>_reconciler_operations_total{op,outcome}      counter
//	<namespace>_reconciler_operation_duration_seconds{op}     histogram
//	<namespace>_reconciler_queue_wait_seconds{lane}           histogram
//	<namespace>_reconciler_change_to_done_seconds             histogram, change (its Pending status's
//	                                                          UpdatedAt) to Done status committed
//	<namespace>_reconciler_status_commits_total{result}       counter, "ok" or "error"
//	<namespace>_reconciler_statuses_written_total             counter
//	<namespace>_reconciler_status_conflicts_total             counter
//	<namespace>_reconciler_prunes_total{outcome}              counter
//	<namespace>_reconciler_prune_duration_seconds             histogram
//	<namespace>_reconciler_prune_failing                      gauge, 1 if the latest prune did not succeed
//	<namespace>_reconciler_refresh_marked_total               counter
//	<namespace>_reconciler_lag_revisions                      gauge
//	<namespace>_reconciler_queued{lane}                       gauge
//	<namespace>_reconciler_parked, _delayed, _in_flight, _failing
//	                                                          gauges
//	<namespace>_reconciler_oldest_pending_seconds             gauge
//	<namespace>_reconciler_longest_running_seconds            gauge
//
// The gauges show the reconciler after its latest round.
package prometheus

import (
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/strata-db/strata/reconciler"
)

// DurationBuckets are the bucket bounds of the duration histograms, in
// seconds: 10µs to about 100s.
var DurationBuckets = prom.ExponentialBucketsRange(1e-5, 100, 22)

// Metrics implements reconciler.Metrics with Prometheus collectors. It is
// itself a prometheus.Collector of all of them.
type Metrics struct {
	ops                                    *prom.CounterVec
	opDuration, queueWait                  *prom.HistogramVec
	latency, pruneDuration                 *prom.HistogramVec
	commits, prunes                        *prom.CounterVec
	written, conflicts, marked             *prom.CounterVec
	lag, queued, parked, delayed, inFlight *prom.GaugeVec
	failing, oldest, longest, pruneFailing *prom.GaugeVec
}

// New returns Metrics whose metric names start with namespace (which may
// be empty), registered with reg. If reg is nil they are not registered:
// register the returned Metrics, a Collector, yourself. The error is reg's.
func New(reg prom.Registerer, namespace string) (*Metrics, error) {
	const sub = "reconciler"
	counter := func(name, help string, labels ...string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Namespace: namespace, Subsystem: sub, Name: name, Help: help},
			append([]string{"reconciler"}, labels...))
	}
	gauge := func(name, help string, labels ...string) *prom.GaugeVec {
		return prom.NewGaugeVec(prom.GaugeOpts{Namespace: namespace, Subsystem: sub, Name: name, Help: help},
			append([]string{"reconciler"}, labels...))
	}
	histogram := func(name, help string, labels ...string) *prom.HistogramVec {
		return prom.NewHistogramVec(prom.HistogramOpts{Namespace: namespace, Subsystem: sub, Name: name, Help: help,
			Buckets: DurationBuckets}, append([]string{"reconciler"}, labels...))
	}
	m := &Metrics{
		ops:           counter("operations_total", "Update and Delete operations, by outcome.", "op", "outcome"),
		opDuration:    histogram("operation_duration_seconds", "Time operations ran (for batch operations: the whole call).", "op"),
		queueWait:     histogram("queue_wait_seconds", "Time objects waited in a lane before their operation started.", "lane"),
		latency:       histogram("change_to_done_seconds", "Time from an object's change (the UpdatedAt of the Pending status it was written with) to the commit of its Done status."),
		pruneDuration: histogram("prune_duration_seconds", "Time prunes ran."),
		commits:       counter("status_commits_total", "Write transactions of statuses, by result.", "result"),
		prunes:        counter("prunes_total", "Prunes, by outcome.", "outcome"),
		written:       counter("statuses_written_total", "Statuses written back to the table."),
		conflicts:     counter("status_conflicts_total", "Objects that changed between their operation and the status write."),
		marked:        counter("refresh_marked_total", "Objects marked for refresh."),
		lag:           gauge("lag_revisions", "Revisions the reconciler's progress is behind the table, as of its last read."),
		queued:        gauge("queued", "Objects waiting in each lane.", "lane"),
		parked:        gauge("parked", "Objects waiting for an operation of their ordering key."),
		delayed:       gauge("delayed", "Objects waiting for a retry or a requeue."),
		inFlight:      gauge("in_flight", "Objects whose operation runs or whose status waits to be written."),
		failing:       gauge("failing", "Objects whose last attempt failed."),
		oldest:        gauge("oldest_pending_seconds", "Age of the oldest change not yet attempted."),
		longest:       gauge("longest_running_seconds", "Time the longest running operation has run."),
		pruneFailing:  gauge("prune_failing", "1 if the latest prune did not succeed, else 0."),
	}
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) collectors() []prom.Collector {
	return []prom.Collector{m.ops, m.opDuration, m.queueWait, m.latency, m.pruneDuration, m.commits, m.prunes,
		m.written, m.conflicts, m.marked, m.lag, m.queued, m.parked, m.delayed, m.inFlight, m.failing, m.oldest, m.longest,
		m.pruneFailing}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prom.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prom.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// Reconciler returns the handle of the reconciler name: the metrics with
// its labels set, looked up once here, so that reporting does no label
// lookup. Reconcilers of the same name share their metrics.
func (m *Metrics) Reconciler(name string) reconciler.ReconcilerMetrics {
	h := &handle{
		latency:       m.latency.WithLabelValues(name),
		pruneDuration: m.pruneDuration.WithLabelValues(name),
		commitsOK:     m.commits.WithLabelValues(name, "ok"),
		commitsErr:    m.commits.WithLabelValues(name, "error"),
		written:       m.written.WithLabelValues(name),
		conflicts:     m.conflicts.WithLabelValues(name),
		marked:        m.marked.WithLabelValues(name),
		lag:           m.lag.WithLabelValues(name),
		parked:        m.parked.WithLabelValues(name),
		delayed:       m.delayed.WithLabelValues(name),
		inFlight:      m.inFlight.WithLabelValues(name),
		failing:       m.failing.WithLabelValues(name),
		oldest:        m.oldest.WithLabelValues(name),
		longest:       m.longest.WithLabelValues(name),
		pruneFailing:  m.pruneFailing.WithLabelValues(name),
	}
	for op := range h.ops {
		o := reconciler.Op(op)
		h.opDuration[op] = m.opDuration.WithLabelValues(name, o.String())
		for out := range h.ops[op] {
			h.ops[op][out] = m.ops.WithLabelValues(name, o.String(), reconciler.Outcome(out).String())
		}
	}
	for out := range h.prunes {
		h.prunes[out] = m.prunes.WithLabelValues(name, reconciler.Outcome(out).String())
	}
	for l := range h.queueWait {
		lane := reconciler.Lane(l).String()
		h.queueWait[l] = m.queueWait.WithLabelValues(name, lane)
		h.queued[l] = m.queued.WithLabelValues(name, lane)
	}
	return h
}

// The label values: two ops, seven outcomes, three lanes.
const (
	numOps      = 2
	numOutcomes = 7
	numLanes    = 3
)

type handle struct {
	ops                            [numOps][numOutcomes]prom.Counter
	opDuration                     [numOps]prom.Observer
	queueWait                      [numLanes]prom.Observer
	queued                         [numLanes]prom.Gauge
	prunes                         [numOutcomes]prom.Counter
	latency, pruneDuration         prom.Observer
	commitsOK, commitsErr          prom.Counter
	written, conflicts, marked     prom.Counter
	lag, parked, delayed, inFlight prom.Gauge
	failing, oldest, longest       prom.Gauge
	pruneFailing                   prom.Gauge
}

func (h *handle) Operation(op reconciler.Op, outcome reconciler.Outcome, d time.Duration) {
	h.ops[op][outcome].Inc()
	h.opDuration[op].Observe(d.Seconds())
}

func (h *handle) QueueWait(lane reconciler.Lane, d time.Duration) {
	h.queueWait[lane].Observe(d.Seconds())
}

func (h *handle) Reconciled(d time.Duration) { h.latency.Observe(d.Seconds()) }

func (h *handle) StatusCommit(written, conflicts int, _ time.Duration, err error) {
	if err != nil {
		h.commitsErr.Inc()
		return
	}
	h.commitsOK.Inc()
	h.written.Add(float64(written))
	h.conflicts.Add(float64(conflicts))
}

func (h *handle) Progress(s reconciler.Stats) {
	h.lag.Set(float64(s.Lag))
	for l := range h.queued {
		h.queued[l].Set(float64(s.Queued[l]))
	}
	h.parked.Set(float64(s.Parked))
	h.delayed.Set(float64(s.Delayed))
	h.inFlight.Set(float64(s.InFlight))
	h.failing.Set(float64(s.Failing))
	h.oldest.Set(s.OldestPending.Seconds())
	h.longest.Set(s.LongestRunning.Seconds())
}

func (h *handle) Prune(outcome reconciler.Outcome, d time.Duration) {
	h.prunes[outcome].Inc()
	h.pruneDuration.Observe(d.Seconds())
	failing := 0.0
	if outcome != reconciler.OutcomeOK {
		failing = 1
	}
	h.pruneFailing.Set(failing)
}

func (h *handle) Refresh(marked int) { h.marked.Add(float64(marked)) }

var (
	_ reconciler.Metrics = (*Metrics)(nil)
	_ prom.Collector     = (*Metrics)(nil)
)
