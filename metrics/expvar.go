package metrics

import (
	"expvar"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/internal/expvars"
)

// ExpVar reports to package expvar: one expvar.Map holding, per table, a
// map of the table's figures. Its String method (and, if published, the
// /debug/vars page) shows them as JSON:
//
//	{"hosts": {"change_feed_lag": 0, "change_feeds": 1, "graveyard": 0,
//	  "held_ns_total": 81234, "lock_wait_ns_max": 5121, ...}, ...}
//
// The figures of a table are:
//
//	objects, revision, graveyard       gauges, after the latest commit that changed the table
//	change_feeds, change_feed_lag      gauges, after the latest commit that changed the table
//	write_txns_committed, write_txns_aborted
//	                                   counters of the write transactions that locked the table
//	lock_waits                         counter of lock acquisitions by write transactions
//	lock_wait_ns_total, lock_wait_ns_max
//	                                   sum and maximum of their waits, in nanoseconds
//	held_ns_total                      total time write transactions held the table locked, in nanoseconds
//
// Under the key "__handles__" (which no table name can be), a map holds,
// per database handle (strata.DB.NewHandle), the write transactions it
// opened: write_txns_committed, write_txns_aborted and held_ns_total.
//
// The values of a table are allocated once, by Table, and then updated in
// place with atomic operations: reporting does not allocate, lock, or look
// anything up by name. ExpVar is safe for concurrent use.
type ExpVar struct {
	m       expvar.Map
	err     error
	mu      sync.Mutex
	table   map[string]*expvarTable
	handles expvar.Map
	handle  map[string]*expvarHandle
}

// HandlesKey is the key of the handles' figures in an ExpVar's map.
const HandlesKey = "__handles__"

// ErrPublished is returned by (*ExpVar).Err when the name NewExpVar was
// asked to publish under was taken. It is reconciler.ErrPublished too.
var ErrPublished = expvars.ErrPublished

// NewExpVar returns an ExpVar with no tables. If publish is true, it is
// published with expvar.Publish under the name prefix (which then appears
// on /debug/vars); if that name is already published, by this package or
// another, the ExpVar is not published and Err reports why, instead of the
// panic of expvar.Publish. With publish false, prefix is unused: read the
// figures through String, Map or Values.
func NewExpVar(prefix string, publish bool) *ExpVar {
	e := &ExpVar{table: make(map[string]*expvarTable), handle: make(map[string]*expvarHandle)}
	e.m.Init()
	e.handles.Init()
	e.m.Set(HandlesKey, &e.handles)
	if publish {
		e.err = expvars.Publish("metrics", prefix, &e.m)
	}
	return e
}

// Err returns the error of publishing the ExpVar, or nil if it was
// published or not asked to be.
func (e *ExpVar) Err() error { return e.err }

// Map returns the map of the figures, keyed by table name. Each value is an
// *expvar.Map of the table's figures, keyed as in the ExpVar documentation.
// Change nothing in it.
func (e *ExpVar) Map() *expvar.Map { return &e.m }

// String returns every table's figures as JSON. It implements expvar.Var.
func (e *ExpVar) String() string { return e.m.String() }

// Table returns the handle of the table name, creating its figures on the
// first call. Two tables of the same name (of two databases reporting to
// one ExpVar) share their figures.
func (e *ExpVar) Table(name string) Table {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.table[name]; ok {
		return t
	}
	t := &expvarTable{}
	t.vars.Init()
	for _, kv := range []struct {
		key string
		v   expvar.Var
	}{
		{"objects", &t.objects},
		{"revision", &t.revision},
		{"graveyard", &t.graveyard},
		{"change_feeds", &t.feeds},
		{"change_feed_lag", &t.feedLag},
		{"write_txns_committed", &t.committed},
		{"write_txns_aborted", &t.aborted},
		{"lock_waits", &t.lockWaits},
		{"lock_wait_ns_total", &t.lockWaitTotal},
		{"lock_wait_ns_max", &t.lockWaitMax},
		{"held_ns_total", &t.heldTotal},
	} {
		t.vars.Set(kv.key, kv.v)
	}
	e.table[name] = t
	e.m.Set(name, &t.vars)
	return t
}

// Handle returns what the handle name reports to, creating its figures on
// the first call. Handles of the same name share their figures.
func (e *ExpVar) Handle(name string) Handle {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.handle[name]; ok {
		return h
	}
	h := &expvarHandle{}
	h.vars.Init()
	h.vars.Set("write_txns_committed", &h.committed)
	h.vars.Set("write_txns_aborted", &h.aborted)
	h.vars.Set("held_ns_total", &h.heldTotal)
	e.handle[name] = h
	e.handles.Set(name, &h.vars)
	return h
}

// HandleValues is a snapshot of a handle's figures, read by
// (*ExpVar).HandleValues.
type HandleValues struct {
	Committed uint64 // write transactions committed
	Aborted   uint64 // write transactions aborted
	HeldTotal time.Duration
}

// HandleValues returns the figures of the handle name, and false if Handle
// was never called for it.
func (e *ExpVar) HandleValues(name string) (HandleValues, bool) {
	e.mu.Lock()
	h, ok := e.handle[name]
	e.mu.Unlock()
	if !ok {
		return HandleValues{}, false
	}
	return HandleValues{
		Committed: h.committed.Load(),
		Aborted:   h.aborted.Load(),
		HeldTotal: time.Duration(h.heldTotal.Value()),
	}, true
}

// expvarHandle is one handle's figures.
type expvarHandle struct {
	committed, aborted uintVar
	heldTotal          expvar.Int
	vars               expvar.Map
}

func (h *expvarHandle) WriteTxn(held time.Duration, committed bool) {
	h.heldTotal.Add(int64(held))
	if committed {
		h.committed.Add(1)
	} else {
		h.aborted.Add(1)
	}
}

// TableValues is a snapshot of a table's figures, read by (*ExpVar).Values.
// Each field is read atomically, but not all at once.
type TableValues struct {
	Objects       int
	Revision      uint64
	Graveyard     int
	ChangeFeeds   int
	ChangeFeedLag uint64
	Committed     uint64 // write transactions committed
	Aborted       uint64 // write transactions aborted
	LockWaits     uint64 // lock acquisitions
	LockWaitTotal time.Duration
	LockWaitMax   time.Duration
	HeldTotal     time.Duration
}

// Values returns the figures of the table name, and false if Table was
// never called for it.
func (e *ExpVar) Values(name string) (TableValues, bool) {
	e.mu.Lock()
	t, ok := e.table[name]
	e.mu.Unlock()
	if !ok {
		return TableValues{}, false
	}
	return TableValues{
		Objects:       int(t.objects.Value()),
		Revision:      t.revision.Load(),
		Graveyard:     int(t.graveyard.Value()),
		ChangeFeeds:   int(t.feeds.Value()),
		ChangeFeedLag: t.feedLag.Load(),
		Committed:     t.committed.Load(),
		Aborted:       t.aborted.Load(),
		LockWaits:     t.lockWaits.Load(),
		LockWaitTotal: time.Duration(t.lockWaitTotal.Value()),
		LockWaitMax:   time.Duration(t.lockWaitMax.Load()),
		HeldTotal:     time.Duration(t.heldTotal.Value()),
	}, true
}

// expvarTable is one table's figures. They are fields, not separate
// allocations, and the table's expvar.Map points at them.
type expvarTable struct {
	objects, graveyard, feeds expvar.Int
	revision, feedLag         uintVar
	committed, aborted        uintVar
	lockWaits                 uintVar
	lockWaitTotal, heldTotal  expvar.Int
	lockWaitMax               expvars.Max
	vars                      expvar.Map
}

// The methods below run on every write transaction. Each atomic write costs
// about as much as the rest of a small transaction's bookkeeping, so they
// make none that would leave the value as it was: no sum or maximum of a
// zero wait, and no store of a gauge that did not change.

func (t *expvarTable) LockWait(d time.Duration) {
	t.lockWaits.Add(1)
	if d > 0 {
		t.lockWaitTotal.Add(int64(d))
		t.lockWaitMax.Observe(int64(d))
	}
}

func (t *expvarTable) WriteTxn(held time.Duration, committed bool) {
	t.heldTotal.Add(int64(held))
	if committed {
		t.committed.Add(1)
	} else {
		t.aborted.Add(1)
	}
}

func (t *expvarTable) Committed(objects int, revision uint64, graveyard int) {
	expvars.SetIfChanged(&t.objects, int64(objects))
	t.revision.Store(revision)
	expvars.SetIfChanged(&t.graveyard, int64(graveyard))
}

func (t *expvarTable) ChangeFeeds(count int, lag uint64) {
	expvars.SetIfChanged(&t.feeds, int64(count))
	if t.feedLag.Load() != lag {
		t.feedLag.Store(lag)
	}
}

// uintVar is an unsigned 64-bit expvar.Var: revisions and counters, which
// expvar.Int would show negative past 2^63.
type uintVar struct{ atomic.Uint64 }

func (v *uintVar) String() string { return strconv.FormatUint(v.Load(), 10) }

var (
	_ Metrics    = (*ExpVar)(nil)
	_ expvar.Var = (*ExpVar)(nil)
)
