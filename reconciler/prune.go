package reconciler

import (
	"context"
	"errors"
	"math"
	"time"
)

// pruneJob is a prune handed to a worker.
type pruneJob[Obj any] struct {
	forced  bool
	err     error
	outcome Outcome
}

// pruneState schedules prunes. A prune is wanted once the table is
// initialized (if periodic pruning is on), every interval after that, on
// Prune, and after a failure (with backoff). A wanted prune waits for the
// guard, then raises the barrier: no operation starts, and once none is in
// flight the prune is handed to a worker, so that it never overlaps an
// Update or Delete.
type pruneState[Obj any] struct {
	every   int64 // 0: no periodic prunes
	wanted  bool
	forced  bool
	barrier bool
	running bool
	// nextAt is when the next prune is wanted (periodic, or a retry).
	nextAt int64
	tries  uint32
	err    error // of the last prune, nil if it succeeded
}

func (p *pruneState[Obj]) init(r *Reconciler[Obj]) {
	p.every = int64(r.o.pruneEvery)
	p.nextAt = math.MaxInt64
}

// tableInitialized is called once, when the table's initializers are
// done.
func (p *pruneState[Obj]) tableInitialized(l *loop[Obj]) {
	if p.every > 0 {
		p.wanted = true
	}
}

func (p *pruneState[Obj]) next(l *loop[Obj]) int64 {
	if !l.initialized || p.running || p.barrier {
		return math.MaxInt64
	}
	return p.nextAt
}

func (p *pruneState[Obj]) tick(l *loop[Obj], now int64) {
	r := l.r
	if !l.initialized || p.running {
		// A Prune called now stays requested: the prune that runs may
		// have read its snapshot before the call.
		return
	}
	if r.pruneReq.Swap(false) {
		p.wanted, p.forced = true, true
	}
	if !p.wanted && now >= p.nextAt {
		p.wanted = true
	}
	if !p.wanted {
		return
	}
	if !p.barrier && r.o.pruneGuard != nil {
		if err := r.o.pruneGuard(r.db.ReadTxn()); err != nil {
			p.wanted = false
			p.tries++
			p.nextAt = now + int64(l.backoff(p.tries))
			r.log.Debug("Prune held back by its guard", "error", err)
			return
		}
	}
	p.barrier = true
	if l.out > 0 || !r.ctl.reserve() {
		return // wait for the operations in flight, or for Resume
	}
	b := l.getBatch()
	b.txn = r.db.ReadTxn()
	b.prune = &pruneJob[Obj]{forced: p.forced}
	p.running = true
	l.idle--
	l.out++
	r.at(holdPruneDispatch, holdLoop)
	l.work <- b
}

// finished takes the outcome of a prune.
func (p *pruneState[Obj]) finished(l *loop[Obj], b *batch[Obj], now int64) {
	r := l.r
	job := b.prune
	p.running, p.barrier, p.wanted, p.forced = false, false, false, false
	if r.metricsOn {
		r.m.Prune(job.outcome, time.Duration(b.took))
	}
	p.err = job.err
	switch {
	case job.err == nil:
		p.tries = 0
		p.nextAt = math.MaxInt64
		if p.every > 0 {
			p.nextAt = now + p.every
		}
	case job.outcome == OutcomeRefused:
		// Retrying would be refused again: wait for the next period, or
		// for a forced prune.
		r.log.Warn("Prune refused: over its budget", "error", job.err)
		p.tries = 0
		p.nextAt = math.MaxInt64
		if p.every > 0 {
			p.nextAt = now + p.every
		}
	case job.outcome == OutcomeOK:
		// Abandoned at shutdown.
	default:
		p.tries++
		p.nextAt = now + int64(l.backoff(p.tries))
		r.log.Warn("Prune failed", "error", job.err, "retryIn", time.Duration(p.nextAt-now))
	}
}

// runPrune runs a prune on a worker.
func (w *worker[Obj]) runPrune(b *batch[Obj]) {
	r := w.l.r
	job := b.prune
	ctx := w.begin()
	if ctx == nil {
		return
	}
	var budget *pruneBudget
	if r.o.pruneBudget > 0 {
		// A context of its own, with the budget.
		budget = &pruneBudget{fraction: r.o.pruneBudget, forced: job.forced}
		ctx = &opCtx{
			parent:  context.WithValue(w.l.values, pruneBudgetKey{}, budget),
			start:   ctx.started(),
			timeout: ctx.timeout,
			epoch:   ctx.epoch,
		}
		w.cur.Store(ctx)
	}
	err := func() (err error) {
		defer w.recoverPanic(&err)
		return r.cfg.Operations.Prune(ctx, b.txn, r.cfg.Table.All(b.txn))
	}()
	w.end()
	if budget != nil && err == nil && !budget.asked.Load() && !r.unaskedBudget.Swap(true) {
		r.log.Warn("The reconciler has a prune budget, but its Prune did not call CheckPruneBudget (or PruneStrangers): the budget is not enforced")
	}
	var e entry[Obj]
	w.settle(&e, err, ctx)
	job.err, job.outcome = e.err, e.outcome
	switch {
	case e.abandoned:
		job.err, job.outcome = nil, OutcomeOK
	case errors.Is(err, ErrPruneBudget):
		job.outcome = OutcomeRefused
	case e.outcome == OutcomeRequeue, e.outcome == OutcomeTerminal:
		// Neither means anything for a prune: it failed or it did not.
		if e.err == nil {
			job.outcome = OutcomeOK
		} else {
			job.outcome = OutcomeError
		}
	}
}
