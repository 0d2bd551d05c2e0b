package strata

// The registry of a table's change feeds: which feeds are open, what each
// pins of the change log, and how far each has read (for the metrics). See
// docs/changelog.md.
//
// Invariants:
//
//  1. A feed is open from Table.Changes until it is released: by Close,
//     by the garbage collector's cleanup of a feed dropped without Close,
//     or by the abort of the transaction that registered it. Releasing
//     removes its entry from the registry, once.
//  2. An open feed's pin is the log position it reads from: its
//     registration's position, then the end of the last batch it
//     delivered in full. Only the feed's consumer moves it, forward, and
//     only after the registration committed; nothing reads before it.
//  3. The table keeps a change log exactly while it has open feeds, but
//     for the end of a transaction: the transaction that registers the
//     first feed starts the log, and the first transaction after the last
//     feed was released drops it (dropUnobservedLog runs one at once, or
//     the transaction holding the lock does at its end).

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// feedRegistry is a table's set of open change feeds.
type feedRegistry struct {
	mu sync.Mutex
	// entries are the open feeds' entries; guarded by mu.
	entries []*feedEntry
	// open is the number of open feeds (len(entries), readable without mu).
	open atomic.Int32
	// registrationEnd is closed (and replaced) when a transaction that
	// registered feeds ends; guarded by mu. Next hands it to callers whose
	// snapshot is older than their feed's registration.
	registrationEnd chan struct{}
	// dropLogAtUnlock: the last feed was released while the table was
	// locked, so the transaction holding the lock drops the change log
	// when it unlocks the table (txnCore.release).
	dropLogAtUnlock atomic.Bool
}

// feedEntry is a feed's entry in the registry. It is separate from the
// feed (changeIterator) so that the feed can be garbage collected while
// the registry still holds this.
type feedEntry struct {
	// registering is set until the registering transaction ends.
	registering atomic.Bool
	closed      atomic.Bool
	// pin is the oldest log position (seq) the feed may read (invariant 2).
	pin atomic.Uint64
	// seen and deletes are how far the feed has read: the revision of the
	// state it read up to, and the deletes logged before its pin. For the
	// metrics (lag, graveyard).
	seen    atomic.Uint64
	deletes atomic.Uint64
	// held, under the invariants build tag, is what the feed may still
	// read: the log positions it reads from or up to, as its consumer
	// last published them (changeIterator.publishHeld), for checkLog. A
	// []heldPos[Obj] of the table's type; unused otherwise.
	held atomic.Value
}

// register adds a feed at log position pos, whose state is at revision
// rev with deletes logged before it, in a transaction that is open.
func (r *feedRegistry) register(pos uint64, rev Revision, deletes uint64) *feedEntry {
	e := &feedEntry{}
	e.registering.Store(true)
	e.pin.Store(pos)
	e.seen.Store(rev)
	e.deletes.Store(deletes)
	r.mu.Lock()
	r.entries = append(r.entries, e)
	r.mu.Unlock()
	r.open.Add(1)
	return e
}

// advance moves the feed's pin to pos, at revision rev with deletes logged
// before it: it delivered everything before.
func (e *feedEntry) advance(pos uint64, rev Revision, deletes uint64) {
	e.pin.Store(pos)
	e.seen.Store(rev)
	e.deletes.Store(deletes)
}

// release closes the feed's entry, once, and reports whether this call
// did.
func (r *feedRegistry) release(e *feedEntry) bool {
	if !e.closed.CompareAndSwap(false, true) {
		return false
	}
	r.mu.Lock()
	if i := slices.Index(r.entries, e); i >= 0 {
		r.entries = slices.Delete(r.entries, i, i+1)
	}
	r.mu.Unlock()
	r.open.Add(-1)
	return true
}

// registrationEndChan returns, if e's registration is still pending, the
// channel closed when the next transaction that registered feeds ends, and
// nil otherwise. Checking and taking the channel under mu, which
// registrationDone holds to end registrations, means a registration cannot
// end in between and leave the caller with a channel nobody closes.
func (r *feedRegistry) registrationEndChan(e *feedEntry) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !e.registering.Load() {
		return nil
	}
	if r.registrationEnd == nil {
		r.registrationEnd = make(chan struct{})
	}
	return r.registrationEnd
}

// registrationDone ends the registration of the feeds in entries
// (releasing them if the transaction aborted) and wakes the callers
// waiting for it.
func (r *feedRegistry) registrationDone(entries []*feedEntry, aborted bool) {
	if aborted {
		for _, e := range entries {
			r.release(e)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		e.registering.Store(false)
	}
	if r.registrationEnd != nil {
		close(r.registrationEnd)
		r.registrationEnd = nil
	}
}

// live returns the number of open feeds.
func (r *feedRegistry) live() int { return int(r.open.Load()) }

// lowestPin returns the lowest pin of the open feeds (math.MaxUint64
// without feeds).
func (r *feedRegistry) lowestPin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	pin := uint64(math.MaxUint64)
	for _, e := range r.entries {
		pin = min(pin, e.pin.Load())
	}
	return pin
}

// lowest returns the lowest revision and delete count the open feeds have
// read up to (math.MaxUint64 for both without feeds).
func (r *feedRegistry) lowest() (rev Revision, deletes uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rev, deletes = math.MaxUint64, math.MaxUint64
	for _, e := range r.entries {
		rev = min(rev, e.seen.Load())
		deletes = min(deletes, e.deletes.Load())
	}
	return rev, deletes
}

// stats returns the number of open feeds, how many revisions the slowest
// of them is behind rev, and how many of the deletes logged before
// deletes some feed has not read (the graveyard).
func (r *feedRegistry) stats(rev Revision, deletes uint64) (live int, lag uint64, graveyard int) {
	if r.live() == 0 {
		return 0, 0, 0
	}
	low, lowDeletes := r.lowest()
	if low != math.MaxUint64 && low < rev {
		lag = rev - low
	}
	if lowDeletes != math.MaxUint64 && lowDeletes < deletes {
		graveyard = int(deletes - lowDeletes)
	}
	return r.live(), lag, graveyard
}

// reportFeeds tells the table's metrics, if any, how many feeds are open
// and how far the slowest is behind rev, when a feed opens or closes.
func (t *table[Obj]) reportFeeds(rev Revision) {
	if m := t.meta.metrics; m != nil {
		live, lag, _ := t.meta.feeds.stats(rev, 0)
		m.ChangeFeeds(live, lag)
	}
}

// dropUnobservedLog drops the change log if the table has no feeds left:
// at once, in a transaction of its own, if the table is not locked, and
// otherwise when the transaction holding the lock ends (txnCore.release).
func (t *table[Obj]) dropUnobservedLog() {
	if t.meta.db == nil || t.meta.feeds.live() > 0 {
		return
	}
	// The flag is set before trying the lock: a holder that unlocks after
	// the failed try then sees it (txnCore.release).
	t.meta.feeds.dropLogAtUnlock.Store(true)
	if !t.meta.lock.tryLock() {
		return
	}
	t.meta.feeds.dropLogAtUnlock.Store(false)
	w := t.meta.db.lockedWriteTxn(&t.meta)
	if _, err := t.txnFor(w); err != nil {
		w.Abort()
		return
	}
	if _, err := w.Commit(); err != nil {
		w.Abort()
	}
}

// feedHold is what an open feed holds of the change log, for checks: its
// pin, and the positions it published (feedEntry.held).
type feedHold struct {
	pin  uint64
	held any
}

// holds returns what the open feeds hold of the change log, for checks.
// Each feed's pin is read before its positions, which its consumer
// publishes before it moves the pin: so every position read lies at or
// after the pin read, however the two race.
func (r *feedRegistry) holds() []feedHold {
	r.mu.Lock()
	defer r.mu.Unlock()
	holds := make([]feedHold, len(r.entries))
	for i, e := range r.entries {
		holds[i].pin = e.pin.Load()
		holds[i].held = e.held.Load()
	}
	return holds
}
