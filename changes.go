package strata

import (
	"encoding/binary"
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/part"
)

// Change is one change delivered by a change feed: an object that was
// inserted or replaced (Deleted false) or deleted, and the revision of the
// change.
type Change[Obj any] struct {
	Object   Obj      `json:"obj"`
	Revision Revision `json:"rev"`
	Deleted  bool     `json:"deleted,omitempty"`
}

// ChangeIterator is a change feed of one table, created by Table.Changes.
//
// Each call of Next returns the changes committed since the previous call,
// up to the snapshot it is given, in revision order, each object once in its
// newest state (an object inserted and deleted in between comes once, as
// deleted). The first call returns every object in the table, then the
// deletes since the feed was created. Next also returns a channel that is
// closed when the table changes after that snapshot; once a feed is drained
// the channel is open, so a loop of Next and waiting on the channel never
// spins.
//
// Deleted objects are kept until every open feed of the table has passed
// them. Close a feed that is no longer read; a feed that is dropped without
// Close releases its hold when the garbage collector finds it. A
// ChangeIterator is not safe for concurrent use.
type ChangeIterator[Obj any] interface {
	// Next returns the changes up to the committed snapshot txn holds
	// (for a write transaction, the snapshot it started from: its own
	// writes are not delivered until committed). The sequence reads that
	// snapshot, so it may be consumed later, but it must be consumed:
	// the feed has moved past the changes it holds.
	Next(txn ReadTxn) (changes iter.Seq2[Change[Obj], Revision], watch <-chan struct{})
	// Close releases the feed's hold on deleted objects.
	Close()
}

// feedRegistry is a table's set of change feeds: how far each has read, so
// that the graveyard keeps exactly the deleted objects some feed still
// needs.
type feedRegistry struct {
	mu    sync.Mutex
	holds []*feedHold // guarded by mu; closed holds are dropped lazily
	count atomic.Int32
	// registered is closed (and replaced) when a transaction that
	// registered feeds ends; guarded by mu. Next hands it to callers whose
	// snapshot is older than their feed's registration.
	registered chan struct{}
	// collect: a feed was released while the table was locked, so the
	// graveyard should be collected once the lock holder is done.
	collect atomic.Bool
}

// feedHold is a feed's claim on the graveyard. It is separate from the
// iterator so that the iterator can be garbage collected while the registry
// still holds this.
type feedHold struct {
	// start is the table revision the feed starts after: it delivers the
	// deletes above it. It is the revision of the registering transaction
	// when the feed registered; pending is set until that transaction
	// ends (if it aborts, the feed is closed).
	start   Revision
	pending atomic.Bool
	seen    atomic.Uint64 // deletes up to this revision were delivered
	closed  atomic.Bool
}

// registeredChan returns, if h's registration is still pending, the
// channel closed when the next transaction that registered feeds ends, and
// nil otherwise. Checking and taking the channel under mu, which
// registrationDone holds to end registrations, means a registration cannot
// end in between and leave the caller with a channel nobody closes.
func (r *feedRegistry) registeredChan(h *feedHold) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !h.pending.Load() {
		return nil
	}
	if r.registered == nil {
		r.registered = make(chan struct{})
	}
	return r.registered
}

// registrationDone ends the registration of the feeds in holds (closing
// them if aborted) and wakes the callers waiting for it.
func (r *feedRegistry) registrationDone(holds []*feedHold, aborted bool) {
	for _, h := range holds {
		if aborted {
			h.release(r)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range holds {
		h.pending.Store(false)
	}
	if r.registered != nil {
		close(r.registered)
		r.registered = nil
	}
}

// live returns the number of open feeds.
func (r *feedRegistry) live() int { return int(r.count.Load()) }

func (r *feedRegistry) add(h *feedHold) {
	r.mu.Lock()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
	r.count.Add(1)
}

func (h *feedHold) release(r *feedRegistry) {
	if h.closed.CompareAndSwap(false, true) {
		r.count.Add(-1)
	}
}

// watermark returns the highest revision up to which every open feed has
// delivered the deletes: graveyard entries at or below it can go.
func (r *feedRegistry) watermark() Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	low := Revision(math.MaxUint64)
	live := r.holds[:0]
	for _, h := range r.holds {
		if h.closed.Load() {
			continue
		}
		live = append(live, h)
		low = min(low, h.seen.Load())
	}
	clear(r.holds[len(live):])
	r.holds = live
	return low
}

// stats returns the number of open feeds and how many revisions the
// slowest of them is behind rev.
func (r *feedRegistry) stats(rev Revision) (live int, lag uint64) {
	if r.live() == 0 {
		return 0, 0
	}
	if w := r.watermark(); w != math.MaxUint64 && w < rev {
		lag = rev - w
	}
	return r.live(), lag
}

// reportFeeds tells the table's metrics, if any, how many feeds are open,
// when a feed opens or closes.
func (t *table[Obj]) reportFeeds(rev Revision) {
	if m := t.meta.metrics; m != nil {
		m.ChangeFeeds(t.meta.feeds.stats(rev))
	}
}

func (t *table[Obj]) Changes(txn WriteTxn) (ChangeIterator[Obj], error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return nil, err
	}
	// The feed starts after this transaction's writes so far: the objects
	// they deleted were never the feed's to see. Deletes from now on must
	// reach the graveyard, and the table needs its revision index.
	tt.observed = true
	if !tt.revIndexed {
		tt.indexRevisions()
	}
	h := &feedHold{start: tt.revision}
	h.pending.Store(true)
	h.seen.Store(tt.revision)
	t.meta.feeds.add(h)
	tt.registered = append(tt.registered, h)
	it := &changeIterator[Obj]{t: t, hold: h}
	it.cleanup = runtime.AddCleanup(it, func(h *feedHold) {
		h.release(&t.meta.feeds)
		t.collectGraveyard()
	}, h)
	t.reportFeeds(tt.revision)
	return it, nil
}

type changeIterator[Obj any] struct {
	t    *table[Obj]
	hold *feedHold
	// Once started, upserts up to upsertedTo and deletes up to deletedFrom
	// have been delivered.
	upsertedTo, deletedFrom Revision
	started                 bool
	cleanup                 runtime.Cleanup
	closed                  bool
}

func (it *changeIterator[Obj]) Next(txn ReadTxn) (iter.Seq2[Change[Obj], Revision], <-chan struct{}) {
	st := it.t.stateIn(txn.committed())
	var watch <-chan struct{} = closedChan // a snapshot without the index is outdated
	if st.revs != nil {
		watch = st.revs.RootWatch()
	}
	if it.closed || it.hold.closed.Load() {
		return noChanges[Obj], watch
	}
	if !it.started {
		it.deletedFrom = it.hold.start
	}
	rev := st.revision
	if !st.revIndexed() || rev < it.deletedFrom {
		// The snapshot is from before the feed's registration committed.
		if ch := it.t.meta.feeds.registeredChan(it.hold); ch != nil {
			// Wait for the registering transaction to end.
			return noChanges[Obj], ch
		}
		// It committed since, replacing the revision index's root: watch
		// is closed, and a newer snapshot has the changes.
		return noChanges[Obj], watch
	}
	upFrom, delFrom := it.upsertedTo, it.deletedFrom
	if it.started && rev <= upFrom {
		return noChanges[Obj], watch
	}
	it.started = true
	it.upsertedTo, it.deletedFrom = rev, max(delFrom, rev)
	it.hold.seen.Store(it.deletedFrom)
	return func(yield func(Change[Obj], Revision) bool) {
		deleted := it.t.emptyGrave.byRev
		if st.grave != nil {
			deleted = st.grave.byRev
		}
		mergeChanges(*st.revs, deleted, upFrom, delFrom, yield)
	}, watch
}

func noChanges[Obj any](func(Change[Obj], Revision) bool) {}

// mergeChanges yields the upserts above upFrom (from the revision index) and
// the deletes above delFrom (from the graveyard's revision index) in
// revision order.
func mergeChanges[Obj any](revisions, graveyard part.Tree[object[Obj]], upFrom, delFrom Revision, yield func(Change[Obj], Revision) bool) {
	var from [8]byte
	binary.BigEndian.PutUint64(from[:], upFrom+1)
	ups := revisions.Iterator()
	ups.SeekLowerBound(from[:])
	binary.BigEndian.PutUint64(from[:], delFrom+1)
	dels := graveyard.Iterator()
	dels.SeekLowerBound(from[:])

	_, up, upOK := ups.Next()
	_, del, delOK := dels.Next()
	for upOK || delOK {
		var c Change[Obj]
		if upOK && (!delOK || up.rev < del.rev) {
			c = Change[Obj]{Object: up.obj, Revision: up.rev}
			_, up, upOK = ups.Next()
		} else {
			c = Change[Obj]{Object: del.obj, Revision: del.rev, Deleted: true}
			_, del, delOK = dels.Next()
		}
		if !yield(c, c.Revision) {
			return
		}
	}
}

func (it *changeIterator[Obj]) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.cleanup.Stop()
	it.hold.release(&it.t.meta.feeds)
	it.t.reportFeeds(it.deletedFrom)
	it.t.collectGraveyard()
}

// collectGraveyard empties the graveyard of what no feed needs any more, if
// the table is not locked; otherwise the transaction holding the lock does
// it when it ends.
func (t *table[Obj]) collectGraveyard() {
	if t.meta.db == nil {
		return
	}
	// The flag is set before trying the lock: a holder that unlocks after
	// the failed try then sees it (writeTxn.release).
	t.meta.feeds.collect.Store(true)
	if !t.meta.lock.tryLock() {
		return
	}
	t.meta.feeds.collect.Store(false)
	w := t.meta.db.lockedWriteTxn(&t.meta)
	tt, err := t.writeState(w)
	if err == nil {
		tt.collect()
	}
	if _, err := w.Commit(); err != nil {
		w.Abort()
	}
}
