package reconciler

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
)

// loop is the state of Run's goroutine, the one that reads the change
// feed, dispatches work to the workers, writes statuses back, and runs
// refreshes and prunes. What it shares with others is in Reconciler (s,
// under mu; ctl; prog); everything here is its own.
type loop[Obj any] struct {
	r      *Reconciler[Obj]
	health health[Obj]

	feed      strata.ChangeIterator[Obj]
	feedWatch <-chan struct{}
	// firstBatch is set until the feed's first batch (every object of the
	// table) is read.
	firstBatch bool
	// partial: the last read stopped inside a batch (backlog), whose
	// snapshot's revision is batchRev.
	partial  bool
	batchRev strata.Revision
	chunk    []strata.Change[Obj]
	keyBuf   []byte

	initWatch   <-chan struct{}
	initialized bool

	work      chan *batch[Obj] // to the workers
	freed     chan struct{}    // from a worker that finished a batch
	done      chan *batch[Obj] // from the committer: batches with statuses written
	workers   []*worker[Obj]
	committer committer[Obj]
	wg        sync.WaitGroup
	idle      int // workers without a batch
	out       int // batches handed out and not yet back from the committer
	batches   []*batch[Obj]

	// values is the parent of the operations' contexts: Run's context
	// without its cancellation (operations are cancelled by the drain
	// timeout, not by Run's context).
	values context.Context
	// abandon is set when the drain timeout passed: workers start no
	// more operations, and the running ones are cancelled.
	abandon atomic.Bool

	perOpNs    float64 // moving average of an operation's cost
	costKnown  bool    // a round came back: perOpNs is known (0 if too small to measure)
	stopping   bool
	drainUntil int64
	timer      *time.Timer

	prune   pruneState[Obj]
	refresh refreshState
	rounds  roundLimit
}

// Run reconciles until ctx is done, then drains: it waits for the
// operations in flight up to the drain timeout (WithDrainTimeout), cancels
// those still running, waits for them to return, writes the statuses of
// those that finished, and returns nil. It reports to health (nil for
// none) when the reconciler's health changes. Run starts its workers and
// stops every goroutine it started before it returns. A Reconciler runs
// once: a second Run returns ErrAlreadyRunning.
func (r *Reconciler[Obj]) Run(ctx context.Context, health Health) error {
	if !r.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	if health == nil {
		health = nopHealth{}
	}
	wtxn := r.db.WriteTxn(r.cfg.Table)
	feed, err := r.cfg.Table.Changes(wtxn)
	if err != nil {
		wtxn.Abort()
		return fmt.Errorf("reconciler %s: change feed: %w", r.name, err)
	}
	txn, err := wtxn.Commit()
	if err != nil {
		feed.Close()
		return fmt.Errorf("reconciler %s: change feed: %w", r.name, err)
	}
	defer feed.Close()
	_, initWatch := r.cfg.Table.Initialized(txn)

	n := r.o.workers
	l := &loop[Obj]{
		r:          r,
		health:     newHealth(r, health),
		feed:       feed,
		feedWatch:  closedChan,
		firstBatch: true,
		initWatch:  initWatch,
		work:       make(chan *batch[Obj], n),
		freed:      make(chan struct{}, n),
		done:       make(chan *batch[Obj], n),
		idle:       n,
		values:     context.WithoutCancel(ctx),
		timer:      time.NewTimer(time.Hour),
	}
	l.timer.Stop()
	defer l.timer.Stop()
	l.prune.init(r)
	l.rounds.init(&r.o, r.epoch)
	l.refresh.init(&r.o, r.rand.Uint64(), time.Now())
	l.committer = committer[Obj]{l: l, in: make(chan *batch[Obj], n), quit: make(chan struct{})}
	var committerDone sync.WaitGroup
	committerDone.Add(1)
	go l.committer.run(&committerDone)
	running := make([]func() (int64, bool), n)
	for i := range n {
		w := &worker[Obj]{l: l, id: i}
		l.workers = append(l.workers, w)
		running[i] = w.running
		l.wg.Add(1)
		go w.run(&l.wg)
	}
	r.mu.Lock()
	r.running = running
	r.mu.Unlock()
	defer func() {
		close(l.work)
		l.wg.Wait()
		close(l.committer.in)
		committerDone.Wait()
		l.health.stopped()
		r.reportRefresh(refreshOff, 0)
	}()
	l.run(ctx)
	return nil
}

// run is the loop: each round does what is due, then waits for something
// to happen.
func (l *loop[Obj]) run(ctx context.Context) {
	for {
		now := l.r.mono()
		if !l.stopping && ctx.Err() != nil {
			l.stopping = true
			l.drainUntil = now + int64(l.r.o.drain)
		}
		if l.stopping && !l.abandon.Load() && now >= l.drainUntil && l.out > 0 {
			l.cancelAll()
		}
		l.collect(now)
		if !l.stopping {
			l.readFeed(now)
			l.checkInit()
			l.promote(now)
		}
		if !l.stopping {
			l.dispatch(now)
			l.refreshTick(now)
			l.prune.tick(l, now)
		}
		l.publish(now)
		if invariants {
			l.r.mu.Lock()
			l.r.s.check()
			l.r.mu.Unlock()
		}
		if l.stopping && l.out == 0 {
			return
		}
		l.wait(ctx, now)
	}
}

// wait blocks until there is something to do.
func (l *loop[Obj]) wait(ctx context.Context, now int64) {
	next := l.nextDeadline(now)
	var timerC <-chan time.Time
	if next != math.MaxInt64 {
		l.timer.Reset(time.Duration(max(next-now, 0)))
		timerC = l.timer.C
	}
	var done <-chan struct{}
	if !l.stopping {
		done = ctx.Done()
	}
	var feed, initW <-chan struct{}
	if !l.stopping {
		initW = l.initWatch
		if l.backlog() > 0 {
			// Over the backlog, the loop reads again once work is
			// done (freed, results), not when the table changes.
			feed = l.feedWatch
		}
	}
	var results chan *batch[Obj]
	var freed chan struct{}
	if l.out > 0 {
		results = l.done
	}
	if l.idle < len(l.workers) {
		// A worker may report itself free after its batch came back.
		freed = l.freed
	}
	select {
	case <-done:
	case <-feed:
	case <-initW:
	case <-freed:
		l.idle++
	case b := <-results:
		l.finished(b, l.r.mono())
	case <-timerC:
	case <-l.r.kick:
	}
	// Since Go 1.23 a stopped timer's channel holds no stale tick, so
	// the next Reset starts clean.
	l.timer.Stop()
}

// nextDeadline returns when the loop must wake even if nothing happens:
// the next retry, the operation timeout of the oldest running operation,
// a status commit retry, the drain timeout, a refresh or a prune.
func (l *loop[Obj]) nextDeadline(now int64) int64 {
	next := int64(math.MaxInt64)
	r := l.r
	if r.s.delayed.len() > 0 {
		next = min(next, r.s.delayed.top().dueAt)
	}
	if l.out > 0 {
		next = min(next, l.watchdog(now))
		if l.stopping && !l.abandon.Load() {
			next = min(next, l.drainUntil)
		}
	}
	if !l.stopping {
		next = min(next, l.refresh.next(), l.prune.next(l))
		if l.idle > 0 {
			next = min(next, l.rounds.next(now))
		}
	}
	return next
}

// watchdog cancels the operations that ran past the operation timeout, and
// returns when to look again.
func (l *loop[Obj]) watchdog(now int64) int64 {
	timeout := int64(l.r.o.opTimeout)
	next := now + timeout
	for _, w := range l.workers {
		c := w.cur.Load()
		if c == nil {
			continue
		}
		start := c.started()
		if now-start >= timeout {
			c.cancel(start, errOpTimeout)
			continue
		}
		next = min(next, start+timeout)
	}
	return next
}

// cancelAll gives up draining: no new operation starts, and the running
// ones are cancelled.
func (l *loop[Obj]) cancelAll() {
	l.abandon.Store(true)
	close(l.committer.quit)
	for _, w := range l.workers {
		if c := w.cur.Load(); c != nil {
			c.cancel(c.started(), errShutdown)
		}
	}
}

// collect takes the idle workers and the batches whose statuses were
// written, without waiting.
func (l *loop[Obj]) collect(now int64) {
	for l.out > 0 || l.idle < len(l.workers) {
		select {
		case <-l.freed:
			l.idle++
		case b := <-l.done:
			l.finished(b, now)
		default:
			return
		}
	}
}

// finished takes a batch back from the committer, and decides what comes
// next for its objects.
func (l *loop[Obj]) finished(b *batch[Obj], now int64) {
	l.r.at(holdOutcome, holdLoop)
	l.out--
	if b.prune != nil {
		l.prune.finished(l, b, now)
		l.putBatch(b)
		return
	}
	if n := len(b.entries); n > 0 {
		l.costKnown = true
		per := float64(b.took) / float64(n)
		if l.perOpNs == 0 {
			l.perOpNs = per
		} else {
			l.perOpNs = 0.75*l.perOpNs + 0.25*per
		}
	}
	r := l.r
	r.mu.Lock()
	for i := range b.entries {
		l.decide(&b.entries[i], now)
	}
	r.mu.Unlock()
	l.putBatch(b)
}

// readFeed reads the changes committed since the last read, if any, as
// many as the backlog allows (backlog): a batch of the feed (the changes
// up to the snapshot Next was given) may take several reads. The progress
// moves to a batch's snapshot once the whole batch is read: a change
// read later may supersede one of the batch's revisions.
func (l *loop[Obj]) readFeed(now int64) {
	budget := l.backlog()
	if budget <= 0 {
		return
	}
	select {
	case <-l.feedWatch:
	default:
		return
	}
	r := l.r
	r.at(holdFeedRead, holdLoop)
	txn := r.db.ReadTxn()
	changes, watch := l.feed.Next(txn)
	l.feedWatch = watch
	if !l.partial {
		// A new batch, up to txn's snapshot.
		l.batchRev = r.cfg.Table.Revision(txn)
	}
	first := l.firstBatch
	buf := l.chunk[:0]
	read, complete := 0, true
	for c := range changes {
		buf = append(buf, c)
		read++
		if len(buf) == feedChunk {
			l.observe(buf, now, first)
			clear(buf)
			buf = buf[:0]
		}
		if read == budget {
			complete = false
			break
		}
	}
	l.observe(buf, now, first)
	clear(buf)
	l.chunk = buf[:0]
	// Stopping exactly at the batch's end looks partial: the next read
	// finds nothing left and completes it.
	l.partial = !complete
	if !complete {
		// The rest of the batch is there to read, whatever the channel
		// says about newer changes.
		l.feedWatch = closedChan
		return
	}
	r.mu.Lock()
	r.s.feedRev = l.batchRev
	r.mu.Unlock()
	if first {
		l.firstBatch = false
		l.refresh.begin(now, true)
		if l.refresh.active {
			r.reportRefresh(refreshPassing, 0)
		} else {
			r.reportRefresh(refreshOff, 0)
		}
	}
}

// backlog returns how many more changes the loop may read now: it keeps
// the objects queued and in flight to a few rounds' worth for every
// worker, and leaves the rest in the change feed, where they take a log
// entry each (and newer changes to an object replace older ones) rather
// than an item. This bounds the memory of a burst, or of a large table's
// first read, and keeps the item index small enough to stay in cache.
func (l *loop[Obj]) backlog() int {
	s := &l.r.s
	limit := min(4*l.r.o.roundSize*len(l.workers), maxBacklog)
	return max(limit, minBacklog) - (s.ready() + s.parked + s.inflight)
}

const (
	minBacklog = 4096
	maxBacklog = 1 << 16
)

// feedChunk is how many changes the loop reads before it takes the lock
// to record them.
const feedChunk = 256

func (l *loop[Obj]) checkInit() {
	if l.initialized {
		return
	}
	select {
	case <-l.initWatch:
	default:
		return
	}
	l.initialized = true
	l.initWatch = nil
	l.prune.tableInitialized(l)
}

// promote moves the delayed items that are due to the retries lane.
func (l *loop[Obj]) promote(now int64) {
	s := &l.r.s
	if s.delayed.len() == 0 || s.delayed.top().dueAt > now {
		return
	}
	l.r.at(holdPromote, holdLoop)
	l.r.mu.Lock()
	for s.delayed.len() > 0 && s.delayed.top().dueAt <= now {
		it := s.delayed.top()
		if key := l.r.cfg.OrderingKey; key != nil && it.group == nil {
			// A requeue that is due takes its place after the changes
			// read so far.
			s.join(it, key(it.obj), s.feedRev)
		}
		s.leave(it)
		s.enqueue(it, LaneRetries, now)
	}
	l.r.mu.Unlock()
}

// targetRound is how long a round of a worker should take, so that the
// others get work and statuses are written often, when operations are
// slow.
const targetRound = 5 * time.Millisecond

// firstRound bounds the rounds handed out before an operation's cost is
// known: small, so that the estimate comes soon and the rounds after it
// balance the workers. With 16 workers, 1000 objects of 1 ms operations
// went at 9-10k objects/s with first rounds of 64 (each worker's round
// ended with its slowest sleeps), 13-14k with 8 (BenchmarkReconciler/B2
// in bench/compare); fast operations do not see it (B1).
const firstRound = 8

// dispatch hands work to idle workers.
func (l *loop[Obj]) dispatch(now int64) {
	r := l.r
	s := &r.s
	if l.stopping || l.prune.barrier {
		return
	}
	for l.idle > 0 {
		ready := s.ready()
		if ready == 0 {
			return
		}
		if !r.ctl.reserve() {
			return
		}
		if !l.rounds.take(now) {
			r.ctl.release()
			return
		}
		// A fair share of all the workers, not only of the idle ones:
		// the first worker back must not take what the others, busy
		// for now, would share (TestRoundsKeepWorkersBusy). Until an
		// operation's cost is known, rounds are small, so that it soon
		// is, and a round of slow operations cannot hold its objects
		// while other workers idle.
		n := len(l.workers)
		size := (ready + n - 1) / n
		switch {
		case l.perOpNs > 0:
			size = min(size, max(1, int(float64(targetRound)/l.perOpNs)))
		case !l.costKnown:
			size = min(size, firstRound)
		}
		size = min(size, r.o.roundSize)
		b := l.getBatch()
		b.txn = r.db.ReadTxn()
		r.mu.Lock()
		for len(b.entries) < size {
			it := l.next(now)
			if it == nil {
				break
			}
			l.start(it, b)
		}
		r.mu.Unlock()
		if len(b.entries) == 0 {
			r.ctl.release()
			l.rounds.giveBack(now)
			l.putBatch(b)
			return
		}
		l.idle--
		l.out++
		r.at(holdDispatch, holdLoop)
		l.work <- b
	}
}

// next returns the next item to start, or nil: the parked head of a group
// that became free, otherwise the pick of the lanes (parking those that
// are not their group's head, or whose group is busy).
func (l *loop[Obj]) next(now int64) *item[Obj] {
	s := &l.r.s
	for s.readyGroups.len() > 0 {
		g := *s.readyGroups.front()
		s.readyGroups.pop()
		g.queued = false
		if g.busy || len(g.members) == 0 {
			continue
		}
		it := s.at(g.members[0])
		if it.phase != PhaseParked {
			continue
		}
		s.leave(it)
		return it
	}
	for {
		it := s.pick(now, int64(l.r.o.aging), &l.r.o.weights)
		if it == nil || s.mayStart(it) {
			return it
		}
		s.park(it, now)
	}
}

// start puts it in flight, in b.
func (l *loop[Obj]) start(it *item[Obj], b *batch[Obj]) {
	s := &l.r.s
	b.entries = append(b.entries, entry[Obj]{
		it: it, key: it.key, gen: it.gen,
		obj: it.obj, rev: it.rev, deleted: it.deleted,
		attempts: it.attempts, flightID: it.statusID,
		retryKind: it.retryKind,
		lane:      it.lane, queuedAt: it.queuedAt,
	})
	if !it.deleted {
		b.updates++
	}
	it.phase = PhaseInFlight
	it.dirty = false
	it.flightID = it.statusID
	it.flightRev, it.flightChangedAt = it.pendingRev, it.changedAt
	it.pendingRev = 0
	s.inflight++
	if g := it.group; g != nil {
		g.busy = true
		it.flightGroup = g
	}
}

func (l *loop[Obj]) getBatch() *batch[Obj] {
	if n := len(l.batches); n > 0 {
		b := l.batches[n-1]
		l.batches = l.batches[:n-1]
		return b
	}
	return &batch[Obj]{}
}

func (l *loop[Obj]) putBatch(b *batch[Obj]) {
	clear(b.entries)
	*b = batch[Obj]{entries: b.entries[:0]}
	l.batches = append(l.batches, b)
}
