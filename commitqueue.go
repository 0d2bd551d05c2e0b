package strata

// Early lock release: writers of one durable table share the journal's
// syncs, as writers of different tables do. A commit whose record the
// journal queues (QueuedBatch) unlocks its tables once the record is
// enqueued, and is published, in the journal's order, once the record is
// durable; the next writer of its tables builds on its state meanwhile.
// docs/early-lock-release.md explains the design; this file keeps the
// queue of commits that are not yet published. Every hand-off between
// its goroutines passes through a hold point (commitqueue_holds.go),
// which TestCommitQueueModel drives in many orders
// (docs/interleavings.md, "Commit queue").
//
// Invariants (checkPublish checks 2 and 3 at each publish under the
// invariants build tag; the change log's own checks run at every early
// release and every dropped tip):
//
//  1. db.root holds only durable states. A queued commit is published
//     only once its record is durable (Wait returned nil) and every
//     commit queued before it is published. Readers (ReadTxn, feeds'
//     Next, watch channels) read db.root only.
//  2. A table's tip (tableMeta.tip) is its newest state that is committed
//     but not yet published, or nil. Only a commit that holds the table
//     lock and releases it early sets it, under queue.mu; the queue
//     clears it when that state is published. A writer that locks a
//     table with a tip begins from it and reads it (its view is db.root
//     with the tips of its tables): the transaction is dependent and
//     goes through the queue, so it publishes after the tip and fails if
//     the tip fails.
//  3. Commits enter the queue in the journal's order (Enqueue runs under
//     queue.mu) and are published in queue order; Commit returns only
//     after its commit was published (or failed). So a table's states are
//     published in the order of its revisions.
//  4. Once a queued commit fails, every commit queued before the queue
//     next drains fails with ErrEarlierCommitFailed, none is published,
//     and a failed tip is marked (tipFailed): a dependent transaction that
//     began from it fails at its commit. The journal fails every record
//     enqueued after a failed one (QueuedBatch.Wait), so none of them
//     becomes durable either.
//  5. A commit releases its locks early only if its record queues, it
//     changed every table it locked, and it changed only objects (no
//     feed, initializer, journal binding, change log start or drop,
//     Restore): all it owes after its publish is to close the watch
//     channels of the nodes it replaced (txnCore.retired). The
//     others keep their locks until they are published. An in-memory
//     commit that is not dependent takes the path it took without a
//     journal, unchanged.
//  6. A writer that begins from a tip reuses no change log segment at or
//     after the published end of the log (reuseBelow is the published
//     state's), so the entries of a failed tip can be cut back to the
//     published end: the next writer that locks the table does so
//     (dropFailedTip), before it begins.

import (
	"fmt"
	"sync"

	"github.com/strata-db/strata/part"
)

// commitQueue holds the commits that are enqueued in the journal but not
// yet published, in the journal's order.
type commitQueue struct {
	mu sync.Mutex
	// fifo[head:] holds the commits in the order they were enqueued; the
	// first is the next to publish.
	fifo []*txnCore
	head int
	// err, once a queued commit failed, fails every commit after it in
	// the queue (invariant 4); cleared when the queue drains.
	err error
}

// takeTips sets the transaction's view, once its tables are locked: the
// published root, and the tip of each locked table that has one. A tip
// that failed is dropped first (dropFailedTip).
//
// The tips are read before the root: a publish stores its root before it
// clears the tips it published (publishQueued), so a tip read as nil
// means the root read after it holds that state.
func (w *txnCore) takeTips() {
	for i := range w.lockedTables {
		lt := &w.lockedTables[i]
		tip := lt.meta.tip.Load()
		if tip == nil {
			continue
		}
		if lt.meta.tipFailed.Load() != nil {
			w.db.at(cqDropTip, w)
			w.db.dropFailedTip(lt.meta, tip)
			continue
		}
		lt.tip, w.dependent = tip, true
	}
	w.db.at(cqBegin, w)
	w.root = w.db.root.Load()
}

// dropFailedTip drops the failed tip of table m, which the caller has
// locked: every commit of the table that was queued is settled, so its
// published state is final, and the change log is cut back to it
// (invariant 6).
func (db *DB) dropFailedTip(m *tableMeta, tip *tableStateHeader) {
	m.table.dropFailedTip(tip)
	db.queue.mu.Lock()
	m.tip.Store(nil)
	m.tipFailed.Store(nil)
	db.queue.mu.Unlock()
}

// commitQueued commits through the queue: a transaction whose record the
// journal queues, or a dependent one (b is its record, or nil). The
// table states are built; b holds the journaled tables' changes.
func (w *txnCore) commitQueued(b JournalBatch) (*dbRoot, error) {
	db := w.db
	qb, queues := b.(QueuedBatch)
	queues = queues && qb.Queues()
	early := queues && w.releasable()
	db.at(cqEnqueue, w)
	if err := db.queue.enqueue(w, b, queues, early); err != nil {
		db.at(cqSettled, w)
		w.root = db.root.Load()
		return w.root, err
	}
	settled := false
	defer func() {
		if !settled {
			// A panic between Enqueue and the publish (a bug, or the
			// journal's): the queue must not wait for this commit for
			// ever.
			db.queue.finish(w, fmt.Errorf("journal: commit panicked"))
		}
	}()
	if early {
		w.releaseEarly()
	}
	db.at(cqEnqueued, w)
	err := waitRecord(w.record)
	db.at(cqDurable, w)
	root, err := db.queue.finish(w, err)
	settled = true
	db.at(cqSettled, w)
	if early {
		w.committed = err == nil
		if err == nil {
			w.retired.Notify()
		}
		for i := range w.lockedTables {
			lt := &w.lockedTables[i]
			if lt.meta.feeds.dropLogAtUnlock.Load() && lt.meta.feeds.dropLogAtUnlock.CompareAndSwap(true, false) {
				// The last feed closed while the table was locked.
				lt.meta.table.dropUnobservedLog()
			}
		}
	}
	if err != nil {
		w.root = db.root.Load()
		return w.root, err
	}
	w.committed, w.root = true, root
	if !early {
		for i := range w.lockedTables {
			if lt := &w.lockedTables[i]; lt.txn != nil {
				lt.txn.notify()
			}
		}
	}
	return root, nil
}

// releasable reports whether the commit may unlock its tables before it
// is published (invariant 5).
func (w *txnCore) releasable() bool {
	for i := range w.lockedTables {
		lt := &w.lockedTables[i]
		if lt.state == nil || lt.txn.keepsLock() {
			return false
		}
	}
	return true
}

// releaseEarly hands over what the writers owe after the publish, sets
// each table's tip (done by enqueue) and unlocks the tables.
func (w *txnCore) releaseEarly() {
	w.released, w.mark = true, part.NoMark
	if w.db.opts.metricsOn {
		w.releasedAt = monotonic()
	}
	for i := len(w.lockedTables) - 1; i >= 0; i-- {
		lt := &w.lockedTables[i]
		lt.txn.handOff(w)
		lt.txn = nil
		if w.db.opts.metricsOn {
			// Read while locked: the change log's segments are reused
			// by later writers.
			lt.objects, lt.logDeletes = lt.meta.table.stateStats(lt.state)
		}
		lt.meta.lock.unlock()
	}
}

// enqueue checks that the commit may go on (no earlier failure, no
// failed tip), enqueues its record b in the journal (queues: by
// QueuedBatch.Enqueue, else by Commit), and appends it to the queue; with
// early, it sets the tips of its tables to its states. On an error the
// record is discarded and nothing is enqueued.
func (q *commitQueue) enqueue(w *txnCore, b JournalBatch, queues, early bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	err := q.err
	if err == nil {
		err = w.failedTip()
	}
	if err != nil {
		if b != nil {
			b.Discard()
		}
		return fmt.Errorf("journal: %w: %w", ErrEarlierCommitFailed, err)
	}
	switch {
	case queues:
		if err := enqueueRecord(b.(QueuedBatch)); err != nil {
			return err
		}
		w.record = b.(QueuedBatch)
	case b != nil:
		// A journal that does not queue: the record is written now, in
		// the queue's order.
		if err := commitRecord(b); err != nil {
			return err
		}
	}
	if q.head > 0 && len(q.fifo) == cap(q.fifo) {
		// Reuse the room of the settled commits rather than grow.
		n := copy(q.fifo, q.fifo[q.head:])
		clear(q.fifo[n:])
		q.fifo, q.head = q.fifo[:n], 0
	}
	q.fifo = append(q.fifo, w)
	if early {
		for i := range w.lockedTables {
			lt := &w.lockedTables[i]
			lt.meta.tip.Store(lt.state)
		}
	}
	return nil
}

// failedTip returns the error of a failed tip the transaction began from,
// or nil. queue.mu is held.
func (w *txnCore) failedTip() error {
	if !w.dependent {
		return nil
	}
	for i := range w.lockedTables {
		lt := &w.lockedTables[i]
		if lt.tip == nil {
			continue
		}
		if p := lt.meta.tipFailed.Load(); p != nil && lt.meta.tip.Load() == lt.tip {
			return fmt.Errorf("table %q: %w", lt.meta.name, *p)
		}
	}
	return nil
}

// enqueueRecord enqueues b, recovering a panic of the journal as
// writeRecord does; b is discarded if it fails.
func enqueueRecord(b QueuedBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &journalPanic{value: r}
		}
	}()
	if err := b.Enqueue(); err != nil {
		b.Discard()
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// waitRecord waits for the enqueued record b (nil: none) to be durable.
// A panic of the journal is an error here: the commit is queued and must
// be settled.
func waitRecord(b QueuedBatch) (err error) {
	if b == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("journal: Wait panicked: %v", r)
		}
	}()
	if err := b.Wait(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// finish records that w's record is durable (err nil) or failed, settles
// the commits at the head of the queue that are ready, in order, and
// returns once w is settled: the root that published it, or its error.
func (q *commitQueue) finish(w *txnCore, err error) (*dbRoot, error) {
	self := false
	q.mu.Lock()
	w.waited, w.result = true, err
	for q.head < len(q.fifo) && q.fifo[q.head].waited {
		h := q.fifo[q.head]
		q.fifo[q.head] = nil
		q.head++
		q.settle(h)
		if h == w {
			self = true
		} else {
			h.done <- struct{}{}
		}
	}
	if q.head == len(q.fifo) {
		q.fifo, q.head, q.err = q.fifo[:0], 0, nil
	}
	if !self {
		// Another committer settles w, once the commits before it are
		// durable: it finds w waited, and done made, under q.mu. Made
		// per wait, not pooled: a channel made inside a
		// testing/synctest bubble must not reach a commit outside it
		// (receiving from it there is fatal), and a commit that
		// settles itself, the common case of a lone writer, makes none.
		w.done = make(chan struct{}, 1)
	}
	q.mu.Unlock()
	if !self {
		<-w.done
		w.done = nil
	}
	return w.published, w.result
}

// settle publishes the commit h, at the head of the queue and durable, or
// fails it. queue.mu is held.
func (q *commitQueue) settle(h *txnCore) {
	h.settled = true
	switch {
	case h.result != nil:
		if q.err == nil {
			q.err = h.result
		}
	case q.err != nil:
		h.result = fmt.Errorf("journal: %w: %w", ErrEarlierCommitFailed, q.err)
	}
	if h.result != nil {
		h.failQueued()
	} else {
		h.published = h.publishQueued()
	}
	if s, ok := h.record.(SettledBatch); ok {
		s.Settled(h.result)
	}
}

// publishQueued publishes the states of h, a commit settled by the queue,
// and clears the tips it set. queue.mu is held.
func (h *txnCore) publishQueued() *dbRoot {
	db := h.db
	db.mu.Lock()
	defer db.mu.Unlock()
	changed := false
	for i := range h.lockedTables {
		changed = changed || h.lockedTables[i].state != nil
	}
	if !changed {
		return db.root.Load()
	}
	if invariants {
		published := db.root.Load().tables()
		for i := range h.lockedTables {
			if lt := &h.lockedTables[i]; lt.state != nil {
				checkPublish(lt, published[lt.meta.pos], h.released)
			}
		}
	}
	root := db.publishLocked(h.lockedTables)
	// The tips are cleared after the root is stored (see takeTips).
	for i := range h.lockedTables {
		if lt := &h.lockedTables[i]; lt.state != nil {
			lt.meta.tip.CompareAndSwap(lt.state, nil)
		}
	}
	return root
}

// failQueued fails h, a commit settled by the queue: if it released its
// locks early, the watch channels of the nodes it created close (those
// of the published trees stay open), and a tip it set is marked failed
// for the next writer (invariant 4). One that kept its locks aborts as
// any failed commit. queue.mu is held.
func (h *txnCore) failQueued() {
	if !h.released {
		return
	}
	err := h.result
	h.retired.DiscardSince(h.mark)
	for i := range h.lockedTables {
		lt := &h.lockedTables[i]
		lt.meta.table.discardPending(lt.state, h.mark)
		if lt.meta.tip.Load() == lt.state {
			lt.meta.tipFailed.Store(&err)
		}
	}
}

// checkPublish checks, under the invariants build tag, that a queued
// commit publishes a table state after the one published (invariant 3):
// its revision is not lower, and the table has a tip if the commit
// released its lock early.
func checkPublish(lt *lockedTable, published *tableStateHeader, released bool) {
	if published != nil && lt.state.revision < published.revision {
		panic(fmt.Sprintf("strata: table %q: queued commit publishes revision %d over %d", lt.meta.name, lt.state.revision, published.revision))
	}
	if released && lt.meta.tip.Load() == nil {
		panic(fmt.Sprintf("strata: table %q: commit released early but the table has no tip", lt.meta.name))
	}
}

// discardPending implements TableMeta.
func (t *table[Obj]) discardPending(h *tableStateHeader, m part.Mark) {
	st := (*tableState[Obj])(unsafeStatePointer(h))
	part.DiscardSince(st.primary, m)
	for _, tree := range st.secondary {
		part.DiscardSince(tree, m)
	}
}

// dropFailedTip implements TableMeta: the entries the failed commits
// appended to the change log after its published end are cut, as an
// abort cuts its own (invariant 6).
func (t *table[Obj]) dropFailedTip(h *tableStateHeader) {
	tip := (*tableState[Obj])(unsafeStatePointer(h))
	published := t.stateIn(t.meta.db.root.Load())
	if published.log.seg != nil && sameLog(published.log, tip.log) {
		published.log.discard(tip.log)
	}
	if invariants {
		t.txn.checkLog(published.log)
	}
}
