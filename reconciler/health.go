package reconciler

import (
	"errors"
	"fmt"
)

// health reports the reconciler's health when it changes.
type health[Obj any] struct {
	r *Reconciler[Obj]
	h Health
	// The figures the last report was made from.
	reported bool
	level    healthLevel
	count    int
	err      error
}

type healthLevel uint8

const (
	healthOK healthLevel = iota
	healthFailing
	healthPrune
	healthCommit
)

func newHealth[Obj any](r *Reconciler[Obj], h Health) health[Obj] {
	return health[Obj]{r: r, h: h}
}

// maxJoinedErrors bounds the errors a Degraded report joins.
const maxJoinedErrors = 10

// update reports the health of l, if it changed: Degraded while statuses
// cannot be written, after a failed prune, or while objects fail; OK
// otherwise.
func (h *health[Obj]) update(l *loop[Obj]) {
	r := l.r
	var (
		level healthLevel
		count int
		err   error
	)
	r.mu.Lock()
	commitErr := r.commitErr
	r.mu.Unlock()
	switch {
	case commitErr != nil:
		level, err = healthCommit, commitErr
	case l.prune.err != nil:
		level, err = healthPrune, l.prune.err
	case r.s.failing.len() > 0:
		level, count = healthFailing, r.s.failing.len()
	default:
		count = r.cfg.Table.NumObjects(r.db.ReadTxn())
	}
	if h.reported && level == h.level && count == h.count && err == h.err {
		return
	}
	h.reported, h.level, h.count, h.err = true, level, count, err
	switch level {
	case healthCommit:
		h.h.Degraded("writing statuses fails", err)
	case healthPrune:
		h.h.Degraded("prune failed", err)
	case healthFailing:
		r.mu.Lock()
		errs := make([]error, 0, min(count, maxJoinedErrors)+1)
		for i := range r.s.failing.len() {
			it := r.s.failing.at(i)
			if len(errs) == maxJoinedErrors {
				errs = append(errs, fmt.Errorf("%d further errors omitted", count-maxJoinedErrors))
				break
			}
			errs = append(errs, fmt.Errorf("%q: %w", it.key, it.lastErr))
		}
		r.mu.Unlock()
		h.h.Degraded(fmt.Sprintf("%d error(s)", count), errors.Join(errs...))
	default:
		h.h.OK(fmt.Sprintf("OK, %d object(s)", count))
	}
}

func (h *health[Obj]) stopped() { h.h.Stopped("reconciler stopped") }

// publish makes the round's progress visible: WaitUntilReconciled,
// metrics and health.
func (l *loop[Obj]) publish(now int64) {
	r := l.r
	r.at(holdPublish, holdLoop)
	r.mu.Lock()
	rev := r.s.progressRevision()
	wm := r.s.retryLowWatermark()
	var st Stats
	if r.metricsOn {
		st = r.statsLocked(now)
	}
	r.mu.Unlock()
	r.prog.set(rev, wm)
	if r.metricsOn {
		r.m.Progress(st)
	}
	l.health.update(l)
}
