package reconciler

import (
	"errors"
	"sync"
	"time"

	"github.com/strata-db/strata"
)

// committer writes the statuses of finished operations back to the table,
// on a goroutine of its own: the workers hand it their batches, it writes
// all it has in one write transaction, and hands them on to the loop,
// which decides what comes next for each object. Deciding after the
// write, in one place, is what keeps retries from being lost when a write
// conflicts (cilium/statedb#176).
//
// Each status is written with a compare-and-swap on the revision of the
// version that was attempted. If the object changed meanwhile:
//   - if the reconciler's status in it still has the attempted ID, only
//     something else changed (another reconciler's status): the status
//     is merged into the current version, and the outcome stands;
//   - otherwise it changed for real (or was deleted): the outcome is
//     dropped, and the newer version is reconciled.
//
// If the transaction fails (a durable table whose store refuses the
// write), nothing is handed on: the outcomes are kept, the objects stay in
// flight, and the write is retried with backoff while health is Degraded.
// Once Run gives up draining (quit), a write that fails is given up, and
// the objects keep the statuses they had.
type committer[Obj any] struct {
	l    *loop[Obj]
	in   chan *batch[Obj]
	quit chan struct{}

	batches []*batch[Obj]
	tries   uint32
}

func (c *committer[Obj]) run(wg *sync.WaitGroup) {
	defer wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if len(c.batches) == 0 {
			b, ok := <-c.in
			if !ok {
				return
			}
			c.batches = append(c.batches, b)
		}
		c.takeAvailable()
		c.l.r.at(holdCommit, holdCommitter)
		err := c.write()
		if err == nil {
			c.l.r.at(holdCommitted, holdCommitter)
			c.handOff()
			continue
		}
		select {
		case <-c.quit:
			c.l.r.log.Error("Statuses not written at shutdown", "error", err, "batches", len(c.batches))
			c.giveUp()
			continue
		default:
		}
		c.tries++
		timer.Reset(c.l.r.o.backoff(c.tries))
		select {
		case b := <-c.in:
			c.batches = append(c.batches, b)
		case <-timer.C:
		case <-c.quit:
		}
		timer.Stop()
	}
}

// takeAvailable adds the batches that wait, without blocking.
func (c *committer[Obj]) takeAvailable() {
	for {
		select {
		case b, ok := <-c.in:
			if !ok {
				return
			}
			c.batches = append(c.batches, b)
		default:
			return
		}
	}
}

// write writes the statuses of c.batches in one write transaction. The
// batches that arrive while it waits for the table's lock go into the
// transaction too: the lock's holder is often another writer's commit
// waiting for its log sync (a durable table), and the outcomes that come
// in meanwhile would otherwise wait for a transaction, and a sync, of
// their own (BenchmarkReconciler/B3 in bench/compare: 30% fewer status
// transactions, 11% fewer syncs).
func (c *committer[Obj]) write() error {
	r := c.l.r
	var (
		wtxn              strata.WriteTxn
		written, conflict int
		start             int64
	)
	if r.metricsOn {
		start = r.mono()
	}
	// c.batches may grow in the loop (takeAvailable).
	for j := 0; j < len(c.batches); j++ {
		b := c.batches[j]
		for i := range b.entries {
			e := &b.entries[i]
			e.written = false
			if e.deleted || e.abandoned {
				continue
			}
			if wtxn == nil {
				wtxn = r.db.WriteTxn(r.cfg.Table)
				c.takeAvailable() // what came in during the lock wait
			}
			if c.writeStatus(wtxn, e) {
				written++
			} else {
				conflict++
			}
		}
	}
	if wtxn == nil {
		return nil
	}
	_, err := wtxn.Commit()
	if r.metricsOn {
		r.m.StatusCommit(written, conflict, time.Duration(r.mono()-start), err)
	}
	if err != nil {
		if c.tries == 0 {
			r.log.Error("Writing statuses failed; keeping the outcomes and retrying", "error", err)
		}
		r.setCommitErr(err)
		return err
	}
	if c.tries > 0 {
		r.log.Info("Writing statuses works again")
		c.tries = 0
		r.setCommitErr(nil)
	}
	return nil
}

func (r *Reconciler[Obj]) setCommitErr(err error) {
	r.mu.Lock()
	r.commitErr = err
	r.mu.Unlock()
	r.wake()
}

// writeStatus writes e's outcome (its clone with the new status) and
// reports whether it was written.
func (c *committer[Obj]) writeStatus(wtxn strata.WriteTxn, e *entry[Obj]) bool {
	r := c.l.r
	tbl := r.cfg.Table
	_, _, err := tbl.CompareAndSwap(wtxn, e.rev, e.work)
	if err == nil {
		e.written, e.newRev = true, tbl.Revision(wtxn)
		return true
	}
	if !errors.Is(err, strata.ErrRevisionNotEqual) {
		if !errors.Is(err, strata.ErrObjectNotFound) {
			r.log.Error("Writing a status failed", "error", err, "key", e.key)
		}
		return false
	}
	cur, _, found := tbl.Get(wtxn, r.query(e.key))
	if !found || r.cfg.GetObjectStatus(cur).ID != e.flightID {
		return false
	}
	merged := r.cfg.SetObjectStatus(r.cfg.CloneObject(cur), e.status)
	if _, _, err := tbl.Insert(wtxn, merged); err != nil {
		r.log.Error("Writing a status failed", "error", err, "key", e.key)
		return false
	}
	e.work, e.written, e.newRev = merged, true, tbl.Revision(wtxn)
	return true
}

func (c *committer[Obj]) handOff() {
	for i, b := range c.batches {
		c.l.done <- b
		c.batches[i] = nil
	}
	c.batches = c.batches[:0]
}

// giveUp hands the batches on with nothing written: at shutdown, once the
// store has refused the write.
func (c *committer[Obj]) giveUp() {
	for _, b := range c.batches {
		for i := range b.entries {
			b.entries[i].written = false
			b.entries[i].abandoned = true
		}
	}
	c.handOff()
}

// backoff returns the backoff after attempts failures, without jitter
// (for the committer, which does not own the random source).
func (o *options) backoff(attempts uint32) time.Duration {
	d := o.retryMin
	for i := uint32(1); i < attempts && d < o.retryMax; i++ {
		d *= 2
	}
	return min(d, o.retryMax)
}

// decide moves the item of e on, after its status was written (or not).
func (l *loop[Obj]) decide(e *entry[Obj], now int64) {
	r := l.r
	s := &r.s
	it := e.it
	s.inflight--
	it.phase = PhaseIdle
	it.flightRev, it.flightID = 0, 0
	if g := it.flightGroup; g != nil {
		it.flightGroup = nil
		s.groupDone(g)
	}
	if e.written && e.newRev >= it.rev {
		// The version just written is the newest the loop knows of. If
		// the loop read a newer change while the status committed, that
		// change is the item's work now (dirty), and stays.
		it.obj, it.rev, it.statusID = e.work, e.newRev, e.status.ID
	}
	switch {
	case e.abandoned:
		// Shutting down: the status stays as it was (Pending), so that
		// the next run reconciles the object.
		l.again(it, now)
	case !e.deleted && !e.written:
		// The object changed meanwhile: the outcome is for an old
		// version.
		l.again(it, now)
	case e.succeeded():
		s.clearFailing(it)
		if !e.deleted && r.metricsOn && it.flightChangedAt != 0 && now >= it.flightChangedAt {
			r.m.Reconciled(time.Duration(now - it.flightChangedAt))
		}
		if it.pendingRev == 0 {
			// No newer change waits: a requeue's run is not a change.
			it.changedAt = 0
		}
		switch {
		case it.dirty:
			l.again(it, now)
		case e.outcome == OutcomeRequeue:
			// Not a change: it holds back no other object of its
			// ordering key while it waits (promote puts it back).
			s.quit(it)
			it.retryKind = StatusKindRefreshing
			s.delay(it, PhaseRequeued, now+int64(e.delay))
		default:
			s.release(it)
		}
	default:
		if it.dirty {
			// A new version replaces the one that failed.
			l.again(it, now)
			return
		}
		it.attempts = e.attempts + 1
		if it.retryKind == StatusKindUnset {
			it.retryKind = StatusKindPending
			if e.lane == LaneBackground {
				it.retryKind = StatusKindRefreshing
			}
		}
		s.setFailing(it, e.err, e.rev)
		switch e.outcome {
		case OutcomeTerminal:
			// It waits for a change: the others of its ordering key go
			// on.
			s.quit(it)
			it.phase = PhaseFailed
			s.terminal++
		default:
			d := e.delay
			if e.next != kindRetryAfter {
				d = l.backoff(it.attempts)
			}
			s.delay(it, PhaseBackoff, now+int64(d))
		}
	}
}

// again queues it for its newest version if a change arrived while it was
// in flight, and otherwise forgets it: a change not read yet will bring
// it back.
func (l *loop[Obj]) again(it *item[Obj], now int64) {
	s := &l.r.s
	if it.dirty || it.pendingRev != 0 {
		it.dirty = false
		s.enqueue(it, it.lane, now)
		return
	}
	s.release(it)
}
