package reconciler

import (
	"errors"
	"time"

	"github.com/strata-db/strata"
)

// observe records a chunk of changes read from the change feed. first is
// set for the feed's first read, which holds every object of the table.
//
// The rule that keeps status writes from causing operations: an object's
// version matters only if the reconciler's status in it is new (a new
// Pending or Refreshing ID), or it was deleted. A version whose status has
// the ID the reconciler already knows for the object (the one it
// attempts, or the one it wrote) only changed in some other way, such as
// another reconciler's status: it is kept as the newest version (for the
// compare-and-swap of the status write) and nothing else.
func (l *loop[Obj]) observe(changes []strata.Change[Obj], now int64, first bool) {
	if len(changes) == 0 {
		return
	}
	r := l.r
	s := &r.s
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range changes {
		c := &changes[i]
		var st Status
		if !c.Deleted {
			st = r.cfg.GetObjectStatus(c.Object)
			if !st.IsPendingOrRefreshing() {
				if first && st.Kind == StatusKindDone {
					l.refresh.doneAtStart++
				}
				// Done, Error or unset: work only if it concerns an
				// item, or is an Error the reconciler did not know of.
				// A Done it wrote itself is known already (decide): the
				// common case, told by the tag without a lookup.
				if st.Kind != StatusKindError && (s.items.n == 0 || st.ID&^idMask == r.tag) {
					continue
				}
				l.observeSettled(c, st, now)
				continue
			}
		}
		it := s.items.get(l.key(c.Object))
		if it == nil {
			it = s.items.add(l.keyBuf)
			it.phase = PhaseIdle
			l.newChange(it, c, st, now)
			continue
		}
		if !c.Deleted && !it.deleted && (st.ID == it.statusID || (it.phase == PhaseInFlight && st.ID == it.flightID)) {
			it.obj, it.rev = c.Object, c.Revision
			continue
		}
		l.newChange(it, c, st, now)
	}
}

// key returns obj's primary key, in the loop's buffer.
func (l *loop[Obj]) key(obj Obj) []byte {
	ks := l.r.primaryKey(obj)
	if ks.Len() == 0 {
		l.keyBuf = l.keyBuf[:0]
	} else {
		l.keyBuf = append(l.keyBuf[:0], ks.At(0)...)
	}
	return l.keyBuf
}

// newChange records a new version of it's object (or its delete): the work
// to do is now for that version.
func (l *loop[Obj]) newChange(it *item[Obj], c *strata.Change[Obj], st Status, now int64) {
	s := &l.r.s
	it.obj, it.rev, it.deleted, it.statusID = c.Object, c.Revision, c.Deleted, st.ID
	lane := LaneChanges
	if st.Kind == StatusKindRefreshing {
		lane = LaneBackground
	}
	var changedAt int64
	if l.r.metricsOn && !c.Deleted && !st.UpdatedAt.IsZero() {
		changedAt = l.r.monoOf(st.UpdatedAt)
	}
	// The change feed delivers an object once per batch, in its newest
	// version: the object's first change not yet attempted may be any
	// after the previous batch, which is what holds the progress back.
	s.notePending(it, min(c.Revision, s.feedRev+1), changedAt, now)
	// The failures were those of an older version.
	s.clearFailing(it)
	if key := l.r.cfg.OrderingKey; key != nil {
		// Its place in its group is that of this change.
		s.join(it, key(c.Object), c.Revision)
	}
	switch it.phase {
	case PhaseInFlight:
		it.dirty = true
		it.lane = lane
	case PhaseParked:
		it.lane = lane
	case PhaseQueued:
		if it.lane == lane {
			return
		}
		s.leave(it)
		s.enqueue(it, lane, now)
	default:
		s.leave(it)
		s.enqueue(it, lane, now)
	}
}

// observeSettled records a version whose status is Done, Error or unset.
func (l *loop[Obj]) observeSettled(c *strata.Change[Obj], st Status, now int64) {
	s := &l.r.s
	it := s.items.get(l.key(c.Object))
	if it == nil {
		if st.Kind == StatusKindError {
			l.restoreError(c, st, now)
		}
		return
	}
	if st.ID == it.statusID || (it.phase == PhaseInFlight && st.ID == it.flightID) {
		it.obj, it.rev = c.Object, c.Revision
		return
	}
	if it.deleted {
		// Created again, with a settled status, while its delete is
		// outstanding: reconcile the new object, so that the delete
		// cannot leave the world without it.
		l.newChange(it, c, Status{ID: st.ID}, now)
		return
	}
	// Someone else set the reconciler's status.
	it.obj, it.rev, it.statusID = c.Object, c.Revision, st.ID
	switch {
	case it.phase == PhaseInFlight:
		// The status write will find the ID changed and drop the outcome.
		it.dirty = false
	case st.Kind == StatusKindError:
		// Keep the work as it is.
	default:
		// Declared done: nothing left to do.
		s.release(it)
	}
}

// restoreError takes up an object found in Error without an item: written
// before the reconciler started (a durable table), or by someone else. Its
// attempts resume their backoff: the next attempt is when the status says
// (its time plus the backoff of its attempts), or, if that has passed,
// within one such backoff from now, so that objects found in Error
// together are not all retried at once.
func (l *loop[Obj]) restoreError(c *strata.Change[Obj], st Status, now int64) {
	s := &l.r.s
	it := s.items.add(l.keyBuf)
	it.phase = PhaseIdle
	it.obj, it.rev, it.statusID = c.Object, c.Revision, st.ID
	it.attempts = max(st.Attempts, 1)
	it.retryKind = StatusKindPending
	s.setFailing(it, errors.New(st.GetError()), c.Revision)
	if st.Terminal {
		// Not a member of its group: a terminal failure holds nothing
		// back.
		it.phase = PhaseFailed
		s.terminal++
		return
	}
	if key := l.r.cfg.OrderingKey; key != nil {
		s.join(it, key(c.Object), c.Revision)
	}
	// The end of the backoff is converted from the status's time as it
	// is, not as an offset from now: now was read when the loop's round
	// began, and time.Until's clock since, so an offset would bring the
	// retry forward by however long the round has run.
	backoff := l.backoff(it.attempts)
	due := l.r.monoOf(st.UpdatedAt.Add(backoff))
	if st.UpdatedAt.IsZero() || due <= now {
		due = now + int64(float64(backoff)*l.r.rand.Float64())
	}
	s.delay(it, PhaseBackoff, due)
}

// backoff returns the wait before the next attempt of an object whose
// last attempts failed: retryMin doubled for each attempt after the
// first, up to retryMax, times the jitter.
func (l *loop[Obj]) backoff(attempts uint32) time.Duration {
	return l.jitter(l.r.o.backoff(attempts))
}

// jitter multiplies d by a random factor in [1-jitter, 1+jitter].
func (l *loop[Obj]) jitter(d time.Duration) time.Duration {
	if j := l.r.o.jitter; j > 0 {
		d = time.Duration(float64(d) * (1 + j*(2*l.r.rand.Float64()-1)))
	}
	return d
}
