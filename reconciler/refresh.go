package reconciler

import (
	"iter"
	"math"
	"time"

	"github.com/strata-db/strata"
)

// refreshState walks the table in primary key order, a batch at a time,
// and marks the Done objects whose status is older than the refresh
// interval (with jitter) Refreshing, at the refresh rate: the marks come
// back through the change feed and are reconciled in the background lane.
// The first pass after Run starts also marks every object found Done
// with a status from before the start (WithStartupRefresh).
//
// An object's refresh age (the interval times its jitter factor) is a
// function of its revision, not a draw per look: the passes that examine
// it before it is due agree on when it will be, so that the ages spread
// evenly over the jitter window. A draw per pass would refresh most
// objects near the window's start, the first pass whose draw fell short.
type refreshState struct {
	every     time.Duration // 0: no periodic refresh
	jitter    float64
	salt      uint64 // mixed into the revisions, from the random source
	batch     int
	batchGap  int64 // between batches, for the rate
	startupOn bool  // WithStartupRefresh

	active bool
	// doneAtStart counts the objects the first read of the change feed
	// found Done: the startup pass runs only if there are any.
	doneAtStart int
	// startup: this pass also marks what was Done before runStart.
	startup  bool
	runStart time.Time
	cursor   []byte // the key to continue from; empty: the start
	nextAt   int64
	// minDue is the earliest time an object seen in the pass, not due
	// yet, becomes due.
	minDue time.Time
	// markFailing: the last write of marks failed (reported to
	// ReportRefresh until one works).
	markFailing bool
}

// maxExamine bounds the objects one refresh tick reads, so that a large
// table with little to refresh does not hold the loop.
const maxExamine = 4096

func (f *refreshState) init(o *options, salt uint64, runStart time.Time) {
	f.every, f.startupOn, f.runStart = o.refreshEvery, o.startupRefresh, runStart
	f.jitter, f.salt = o.jitter, salt
	f.batch = max(1, int(o.refreshRate/10))
	f.batchGap = int64(float64(f.batch) / o.refreshRate * float64(time.Second))
	f.nextAt = math.MaxInt64
}

func (f *refreshState) next() int64 { return f.nextAt }

// age returns how long after its status was written the version of an
// object at rev is due for refresh: the interval times a factor in
// [1-jitter, 1+jitter], uniform over the revisions.
func (f *refreshState) age(rev strata.Revision) time.Duration {
	if f.jitter == 0 {
		return f.every
	}
	u := float64(mix64(uint64(rev)^f.salt)>>11) / (1 << 53) // in [0, 1)
	return time.Duration(float64(f.every) * (1 + f.jitter*(2*u-1)))
}

// mix64 is splitmix64's finalizer: a bijection of uint64 whose output
// bits each depend on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// begin starts a pass over the table, if refreshing is on.
func (f *refreshState) begin(now int64, startup bool) {
	f.startup = startup && f.startupOn && f.doneAtStart > 0
	if f.every == 0 && !f.startup {
		f.nextAt = math.MaxInt64
		return
	}
	f.active = true
	f.cursor = f.cursor[:0]
	f.minDue = time.Time{}
	f.nextAt = now
}

// refreshTick marks the next batch, if due.
func (l *loop[Obj]) refreshTick(now int64) {
	f := &l.refresh
	if now < f.nextAt {
		return
	}
	if !f.active {
		if f.begin(now, false); !f.active {
			return
		}
		l.r.reportRefresh(refreshPassing, 0)
	}
	r := l.r
	txn := r.db.ReadTxn()
	var objs iter.Seq2[Obj, strata.Revision]
	if len(f.cursor) == 0 {
		objs = r.cfg.Table.All(txn)
	} else {
		objs = r.cfg.Table.LowerBound(txn, r.query(f.cursor))
	}
	wallNow := time.Now()
	var marks []mark[Obj]
	examined, ended := 0, true
	for obj, rev := range objs {
		if examined == maxExamine || len(marks) == f.batch {
			f.cursor = append(f.cursor[:0], l.key(obj)...)
			ended = false
			break
		}
		examined++
		st := r.cfg.GetObjectStatus(obj)
		if st.Kind != StatusKindDone {
			continue
		}
		due := f.startup && st.UpdatedAt.Before(f.runStart)
		if !due && f.every > 0 {
			dueAt := st.UpdatedAt.Add(f.age(rev))
			if due = !dueAt.After(wallNow); !due && (f.minDue.IsZero() || dueAt.Before(f.minDue)) {
				f.minDue = dueAt
			}
		}
		if due {
			marks = append(marks, mark[Obj]{obj, rev})
		}
	}
	if len(marks) > 0 {
		r.at(holdRefresh, holdLoop)
		l.markRefreshing(marks)
	}
	switch {
	case !ended && len(marks) > 0:
		f.nextAt = now + f.batchGap
	case !ended:
		f.nextAt = now
	default:
		l.endRefreshPass(now, wallNow)
	}
}

type mark[Obj any] struct {
	obj Obj
	rev strata.Revision
}

func (l *loop[Obj]) endRefreshPass(now int64, wallNow time.Time) {
	f := &l.refresh
	f.active, f.startup = false, false
	f.cursor = f.cursor[:0]
	if f.every == 0 {
		f.nextAt = math.MaxInt64
		l.r.reportRefresh(refreshOff, 0)
		return
	}
	next := now + int64(f.every/2)
	if !f.minDue.IsZero() {
		next = min(next, now+int64(f.minDue.Sub(wallNow)))
	}
	f.nextAt = max(next, now+int64(f.every/16))
	l.r.reportRefresh(refreshWaiting, f.nextAt)
}

// markRefreshing sets the Refreshing status on objects that did not change
// since they were read, in one write transaction.
func (l *loop[Obj]) markRefreshing(marks []mark[Obj]) {
	r := l.r
	wtxn := r.db.WriteTxn(r.cfg.Table)
	n := 0
	for _, m := range marks {
		obj := r.cfg.SetObjectStatus(r.cfg.CloneObject(m.obj), StatusRefreshing())
		if _, _, err := r.cfg.Table.CompareAndSwap(wtxn, m.rev, obj); err == nil {
			n++
		}
	}
	if _, err := wtxn.Commit(); err != nil {
		r.log.Warn("Marking objects for refresh failed", "error", err)
		l.refresh.markFailing = true
		r.reportMarkErr(err)
		return
	}
	if l.refresh.markFailing {
		l.refresh.markFailing = false
		r.reportMarkErr(nil)
	}
	if r.metricsOn {
		r.m.Refresh(n)
	}
}
