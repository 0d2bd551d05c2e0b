// Package prometheus reports Strata's metrics to Prometheus. It is a
// package of its own so that only programs that use it import the
// Prometheus client.
//
// The metrics, each labelled by table (and write_txns_total also by
// outcome, "committed" or "aborted"), with the namespace given to New as
// the first part of the name:
//
//	<namespace>_table_objects                  gauge
//	<namespace>_table_revision                 gauge
//	<namespace>_table_graveyard_objects        gauge
//	<namespace>_table_change_feeds             gauge
//	<namespace>_table_change_feed_lag          gauge, in revisions
//	<namespace>_write_txns_total               counter
//	<namespace>_write_txn_lock_wait_seconds    histogram
//	<namespace>_write_txn_lock_held_seconds    histogram
//
// The gauges show the table after its latest commit that changed it.
package prometheus

import (
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/strata-db/strata/metrics"
)

// DurationBuckets are the bucket bounds of the duration histograms, in
// seconds: 1µs to 1s, about three per decade.
var DurationBuckets = prom.ExponentialBucketsRange(1e-6, 1, 19)

// Metrics implements metrics.Metrics with Prometheus collectors. It is
// itself a prometheus.Collector of all of them.
type Metrics struct {
	objects, revision, graveyard, feeds, feedLag *prom.GaugeVec
	txns, handleTxns                             *prom.CounterVec
	lockWait, held, handleHeld                   *prom.HistogramVec
}

// New returns Metrics whose metric names start with namespace (which may
// be empty), registered with reg. If reg is nil they are not registered:
// register the returned Metrics, a Collector, yourself. The error is
// reg's, for instance a prometheus.AlreadyRegisteredError if metrics of
// the same names are registered already.
func New(reg prom.Registerer, namespace string) (*Metrics, error) {
	gauge := func(name, help string) *prom.GaugeVec {
		return prom.NewGaugeVec(prom.GaugeOpts{
			Namespace: namespace, Subsystem: "table", Name: name, Help: help,
		}, []string{"table"})
	}
	histogram := func(name, help string) *prom.HistogramVec {
		return prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: namespace, Subsystem: "write_txn", Name: name, Help: help,
			Buckets: DurationBuckets,
		}, []string{"table"})
	}
	m := &Metrics{
		objects:   gauge("objects", "Number of objects in the table."),
		revision:  gauge("revision", "Revision of the table's latest change."),
		graveyard: gauge("graveyard_objects", "Deleted objects kept for change feeds that have not delivered them."),
		feeds:     gauge("change_feeds", "Number of open change feeds of the table."),
		feedLag:   gauge("change_feed_lag", "Revisions the slowest change feed of the table is behind the table."),
		txns: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Name: "write_txns_total",
			Help: "Write transactions that locked the table, by outcome.",
		}, []string{"table", "outcome"}),
		lockWait: histogram("lock_wait_seconds", "Time write transactions waited for the table's lock."),
		held:     histogram("lock_held_seconds", "Time write transactions held the table locked, until commit or abort."),
		handleTxns: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Name: "handle_write_txns_total",
			Help: "Write transactions of each database handle (the module that wrote), by outcome.",
		}, []string{"handle", "outcome"}),
		handleHeld: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: namespace, Subsystem: "write_txn", Name: "handle_lock_held_seconds",
			Help:    "Time the write transactions of each database handle held their tables locked.",
			Buckets: DurationBuckets,
		}, []string{"handle"}),
	}
	if reg != nil {
		if err := reg.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) collectors() []prom.Collector {
	return []prom.Collector{m.objects, m.revision, m.graveyard, m.feeds, m.feedLag, m.txns, m.lockWait, m.held, m.handleTxns, m.handleHeld}
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

// Table returns the handle of the table name: the metrics with the table
// label set, looked up once here, so that reporting does no label lookup
// and does not allocate. Tables of the same name share their metrics.
func (m *Metrics) Table(name string) metrics.Table {
	return &table{
		objects:   m.objects.WithLabelValues(name),
		revision:  m.revision.WithLabelValues(name),
		graveyard: m.graveyard.WithLabelValues(name),
		feeds:     m.feeds.WithLabelValues(name),
		feedLag:   m.feedLag.WithLabelValues(name),
		committed: m.txns.WithLabelValues(name, "committed"),
		aborted:   m.txns.WithLabelValues(name, "aborted"),
		lockWait:  m.lockWait.WithLabelValues(name),
		held:      m.held.WithLabelValues(name),
	}
}

// Handle returns what the database handle name reports to: its metrics
// with the handle label set, looked up once here.
func (m *Metrics) Handle(name string) metrics.Handle {
	return &handle{
		committed: m.handleTxns.WithLabelValues(name, "committed"),
		aborted:   m.handleTxns.WithLabelValues(name, "aborted"),
		held:      m.handleHeld.WithLabelValues(name),
	}
}

type handle struct {
	committed, aborted prom.Counter
	held               prom.Observer
}

func (h *handle) WriteTxn(held time.Duration, committed bool) {
	h.held.Observe(held.Seconds())
	if committed {
		h.committed.Inc()
	} else {
		h.aborted.Inc()
	}
}

type table struct {
	objects, revision, graveyard, feeds, feedLag prom.Gauge
	committed, aborted                           prom.Counter
	lockWait, held                               prom.Observer
}

func (t *table) LockWait(d time.Duration) { t.lockWait.Observe(d.Seconds()) }

func (t *table) WriteTxn(held time.Duration, committed bool) {
	t.held.Observe(held.Seconds())
	if committed {
		t.committed.Inc()
	} else {
		t.aborted.Inc()
	}
}

func (t *table) Committed(objects int, revision uint64, graveyard int) {
	t.objects.Set(float64(objects))
	t.revision.Set(float64(revision))
	t.graveyard.Set(float64(graveyard))
}

func (t *table) ChangeFeeds(count int, lag uint64) {
	t.feeds.Set(float64(count))
	t.feedLag.Set(float64(lag))
}

var (
	_ metrics.Metrics = (*Metrics)(nil)
	_ prom.Collector  = (*Metrics)(nil)
)
