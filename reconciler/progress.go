package reconciler

import (
	"context"
	"sort"
	"sync"

	"github.com/strata-db/strata"
)

// Progress for WaitUntilReconciled, with several workers: the revision R
// such that every change up to R was attempted at least once. A change is
// attempted once the outcome of an operation on its version (or a newer
// one) is written. R is the revision before the oldest change not yet
// attempted, or, with none, the revision the change feed was read up to.
//
// The oldest change not yet attempted is found with the ring: when an item
// gets a change while it has none outstanding, the change's revision goes
// to the back of the ring (pendingRev). The change feed delivers each
// object once per batch, in its newest version, so an object's first
// change not yet attempted may be any after the previous batch: the
// revision recorded is the first after it (feedRev+1), or the change's
// own if older. A change superseded within a batch (a delete at 11, then
// an insert at 14, read together) thus holds the progress below 11 until
// the insert is attempted, as it must: nothing of the object at 11 was.
// The revisions come in order, so the ring stays sorted. An entry is live while its
// revision is the item's pendingRev, or its flightRev once the attempt
// started; after that (or once the item was released and reused: gen) it
// is stale, and dropped when it reaches the front. Each operation on the
// ring is O(1) amortised.

// notePending records that it has a change at rev that is not yet
// attempted, made at changedAt (0 if unknown) and read at now.
func (s *work[Obj]) notePending(it *item[Obj], rev strata.Revision, changedAt, now int64) {
	if it.pendingRev != 0 {
		return // an older change of it holds the progress back already
	}
	it.pendingRev, it.changedAt = rev, changedAt
	e := ringEntry{it.self, it.gen, rev, now}
	if rev >= s.ringLast {
		s.ringLast = rev
		s.ring.push(e)
		return
	}
	// Not in revision order: a feed that does not deliver in order would
	// be a bug of the database, but keep the ring sorted regardless.
	i := sort.Search(s.ring.len(), func(i int) bool { return s.ring.at(i).rev > rev })
	s.ring.insert(i, e)
}

// oldestPending returns the live front of the ring, dropping stale
// entries, or nil.
func (s *work[Obj]) oldestPending() *ringEntry {
	for s.ring.len() > 0 {
		e := s.ring.front()
		if it := s.at(e.r); it.gen == e.gen && (e.rev == it.pendingRev || e.rev == it.flightRev) {
			return e
		}
		s.ring.pop()
	}
	return nil
}

// progressRevision returns R (see above).
func (s *work[Obj]) progressRevision() strata.Revision {
	if e := s.oldestPending(); e != nil && e.rev-1 < s.feedRev {
		return e.rev - 1
	}
	return s.feedRev
}

// retryLowWatermark returns the lowest revision of a failing object, or 0.
func (s *work[Obj]) retryLowWatermark() strata.Revision {
	if s.failing.len() == 0 {
		return 0
	}
	return s.failing.top().errRev
}

// progress is the published progress that WaitUntilReconciled waits on.
type progress struct {
	mu        sync.Mutex
	revision  strata.Revision
	watermark strata.Revision
	changed   chan struct{} // closed and replaced on every change
}

func (p *progress) set(rev, watermark strata.Revision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rev == p.revision && watermark == p.watermark {
		return
	}
	p.revision, p.watermark = rev, watermark
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

func (p *progress) wait(ctx context.Context, until strata.Revision) (strata.Revision, strata.Revision, error) {
	for {
		p.mu.Lock()
		rev, wm := p.revision, p.watermark
		if rev >= until {
			p.mu.Unlock()
			return rev, wm, nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return rev, wm, ctx.Err()
		}
	}
}
