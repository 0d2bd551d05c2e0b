package reconciler

import (
	"context"
	"time"
)

// refreshReport is what the loop tells observers of its refresh
// (ReportRefresh). The loop writes it, under Reconciler.mu, only when the
// refresh changes phase or its marks start or stop failing, never per
// object; changed is closed then, and replaced.
type refreshReport struct {
	phase   refreshPhase
	nextAt  int64 // mono time of the next pass, in refreshWaiting
	markErr error // the last marking's error, nil once one works
	changed chan struct{}
}

type refreshPhase uint8

const (
	refreshNotStarted refreshPhase = iota // Run has not read the table yet
	refreshPassing                        // a pass marks objects
	refreshWaiting                        // between passes, until nextAt
	refreshOff                            // no more passes (WithoutRefresh, or Run returned)
)

// reportRefresh records a change of the refresh's phase, for
// ReportRefresh.
func (r *Reconciler[Obj]) reportRefresh(phase refreshPhase, nextAt int64) {
	r.changeRefreshReport(func(rep *refreshReport) { rep.phase, rep.nextAt = phase, nextAt })
}

// reportMarkErr records that marking objects for refresh failed (err), or
// works again (nil).
func (r *Reconciler[Obj]) reportMarkErr(err error) {
	r.changeRefreshReport(func(rep *refreshReport) { rep.markErr = err })
}

func (r *Reconciler[Obj]) changeRefreshReport(change func(*refreshReport)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &r.refreshRep
	change(rep)
	if rep.changed != nil {
		close(rep.changed)
		rep.changed = nil
	}
}

// RefreshInterval returns the interval of the periodic refresh (WithRefresh;
// 30 minutes by default), or 0 if the reconciler does not refresh
// periodically (WithoutRefresh).
func (r *Reconciler[Obj]) RefreshInterval() time.Duration { return r.o.refreshEvery }

// ReportRefresh reports the state of the reconciler's refresh to h when
// it changes, until ctx is done, and then returns nil. It reports the
// newest state: one that lasted less than it took to see it (a pass that
// found nothing to mark) may go unreported. It runs in
// its caller's goroutine, and may be called before Run, while it runs,
// and after: stratahive runs it as the job "refresh-<name>", where
// cilium/statedb's reconciler has its refresh job.
//
// The reports are OK("Waiting for the reconciler to start") until Run
// has read the table; OK("Refreshing") while a pass marks the objects due
// for refresh; OK("Next refresh in <duration>") between passes;
// Degraded("marking objects for refresh failed", err) while the write of
// the marks fails; and OK("Refresh off") once no pass will come, because
// the reconciler does not refresh or its Run returned.
func (r *Reconciler[Obj]) ReportRefresh(ctx context.Context, h Health) error {
	var last string
	reported := false
	for {
		r.mu.Lock()
		rep := r.refreshRep
		if r.refreshRep.changed == nil {
			r.refreshRep.changed = make(chan struct{})
		}
		changed := r.refreshRep.changed
		r.mu.Unlock()
		var msg string
		switch {
		case rep.markErr != nil:
			msg = "marking objects for refresh failed: " + rep.markErr.Error()
		case rep.phase == refreshNotStarted:
			msg = "Waiting for the reconciler to start"
		case rep.phase == refreshPassing:
			msg = "Refreshing"
		case rep.phase == refreshWaiting:
			msg = "Next refresh in " + time.Duration(max(rep.nextAt-r.mono(), 0)).Round(time.Second).String()
		default:
			msg = "Refresh off"
		}
		if !reported || msg != last {
			if rep.markErr != nil {
				h.Degraded("marking objects for refresh failed", rep.markErr)
			} else {
				h.OK(msg)
			}
			reported, last = true, msg
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
