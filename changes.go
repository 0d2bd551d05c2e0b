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
}

// feedHold is a feed's claim on the graveyard. It is separate from the
// iterator so that the iterator can be garbage collected while the registry
// still holds this.
type feedHold struct {
	seen   atomic.Uint64 // deletes up to this revision were delivered
	closed atomic.Bool
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
	// Deletes after the committed revision must reach the graveyard, also
	// those this transaction makes; and the table needs its revision
	// index from now on.
	start := tt.base.revision
	tt.observed = true
	if !tt.revIndexed {
		tt.indexRevisions()
	}
	h := &feedHold{}
	h.seen.Store(start)
	t.meta.feeds.add(h)
	it := &changeIterator[Obj]{t: t, hold: h, deletedFrom: start}
	it.cleanup = runtime.AddCleanup(it, func(h *feedHold) { h.release(&t.meta.feeds) }, h)
	t.reportFeeds(tt.revision)
	return it, nil
}

type changeIterator[Obj any] struct {
	t    *table[Obj]
	hold *feedHold
	// Upserts up to upsertedTo and deletes up to deletedFrom have been
	// delivered.
	upsertedTo, deletedFrom Revision
	cleanup                 runtime.Cleanup
	closed                  bool
}

func (it *changeIterator[Obj]) Next(txn ReadTxn) (iter.Seq2[Change[Obj], Revision], <-chan struct{}) {
	st := it.t.stateIn(txn.committed())
	watch := st.revisions.RootWatch()
	if it.closed || !st.revIndexed {
		// A snapshot from before the feed's registration committed has
		// no revision index; building it replaces the index's root,
		// which closes watch.
		return noChanges[Obj], watch
	}
	upFrom, delFrom := it.upsertedTo, it.deletedFrom
	rev := st.revision
	if rev <= upFrom && rev <= delFrom {
		return noChanges[Obj], watch
	}
	it.upsertedTo, it.deletedFrom = max(upFrom, rev), max(delFrom, rev)
	it.hold.seen.Store(it.deletedFrom)
	return func(yield func(Change[Obj], Revision) bool) {
		deleted := it.t.emptyGrave.byRev
		if st.grave != nil {
			deleted = st.grave.byRev
		}
		mergeChanges(st.revisions, deleted, upFrom, delFrom, yield)
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
// the table is not locked; otherwise the commit of the transaction holding
// the lock does it.
func (t *table[Obj]) collectGraveyard() {
	if t.meta.db == nil || !t.meta.lock.tryLock() {
		return
	}
	w := t.meta.db.lockedWriteTxn(&t.meta)
	tt, err := t.writeState(w)
	if err == nil {
		tt.collect()
	}
	if _, err := w.Commit(); err != nil {
		w.Abort()
	}
}
