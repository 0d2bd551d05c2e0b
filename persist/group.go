package persist

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// groupCommit gathers the Sync commits that arrive together into one
// Pebble batch and one log sync.
//
// Pebble shares a sync among the commits waiting when it starts, but
// writers that commit in a loop split into two cohorts that never merge:
// while one cohort's sync runs, the other queues, and the sync after it
// starts at once with those, before the first cohort, just woken, is back.
// Each sync then carries half the writers. Here the commit that leads the
// next group first waits, briefly, for as many commits as the previous
// group had: those writers are on their way back. Postgres's commit_delay
// with commit_siblings is the same idea; this one sizes itself from the
// last group and bounds its wait by half the last sync's latency, so a
// lone writer never waits, and a group that does not fill goes without
// the missing members, and the next one expects that many.
type groupCommit struct {
	mu sync.Mutex
	// leading is set while a commit leads a group: it is waiting for
	// members, committing, or handing over to the next leader.
	leading bool
	// queue holds the commits waiting for the leader; queued is its
	// length, for the leader's wait, which takes no lock.
	queue  []*journalBatch
	spare  []*journalBatch
	queued atomic.Int32
	// Used only by the leader; mu orders one leader's writes before the
	// next one's reads.
	expect  int           // commits the last group had
	latency time.Duration // of the last group's Pebble commit
	merged  *pebble.Batch // reused for the merged batches
	// For tests: grouped counts the commits that went in a merged batch;
	// onApply, if set, runs before each Pebble commit of a group.
	grouped atomic.Uint64
	onApply func()
	// For the interleaving test (holds.go), nil in production: hold is
	// called at each hold point; who, if set, gives Begin the who of the
	// commit that calls it; failApply, if set, is called before each
	// Pebble commit of a group, with the who of the batch's commit and
	// the number of commits in the batch, and an error it returns fails
	// the commit as Pebble's would.
	hold      func(p holdPoint, who int, err error)
	who       func() int
	failApply func(who, n int) error
}

// commitGrouped commits jb with the other commits that arrive with it,
// and returns once the group's batch is synced.
func (s *Store) commitGrouped(jb *journalBatch) error {
	s.enqueueGrouped(jb)
	return s.waitGrouped(jb)
}

// enqueueGrouped places jb in the log's order: it leads the next group if
// none is leading, else it queues for a later group. Groups are committed
// one after another, each in its order (the leader first, then the queue
// in order), so a batch enqueued after another is never durable without
// it (strata.QueuedBatch). waitGrouped must follow.
func (s *Store) enqueueGrouped(jb *journalBatch) {
	g := &s.group
	g.mu.Lock()
	if g.leading {
		g.queue = append(g.queue, jb)
		g.queued.Add(1)
		jb.leads = false
	} else {
		g.leading = true
		jb.leads = true
	}
	g.mu.Unlock()
}

// waitGrouped returns once the group of jb, enqueued by enqueueGrouped,
// is synced, or failed.
func (s *Store) waitGrouped(jb *journalBatch) error {
	s.group.at(holdEnqueued, jb.who)
	if !jb.leads {
		err := <-jb.done
		s.group.atResult(holdWoken, jb.who, err)
		if err != errLead {
			return err
		}
	}
	return s.lead(jb)
}

// maxGroupBytes bounds a merged batch; the leader of a larger group
// commits its batches one by one, in order. A variable for tests.
var maxGroupBytes = 64 << 20

// errLead tells a queued commit that it leads the next group.
var errLead = errors.New("persist: lead the next group")

// lead waits for the group's members, commits their batches as one, wakes
// them, and hands the lead to the first commit that queued meanwhile.
//
// A group that fails fails the store (Store.fail), whatever the error: the
// commits queued behind it may build on its commits (early lock release in
// the database), so none of them may be written; the next group finds the
// store failed and fails all its commits without writing them.
func (s *Store) lead(jb *journalBatch) error {
	g := &s.group
	g.at(holdLead, jb.who)
	if want := int32(g.expect - 1); want > 0 && g.queued.Load() < want {
		deadline := time.Now().Add(g.latency / 2)
		for g.queued.Load() < want && time.Now().Before(deadline) {
			g.at(holdMemberWait, jb.who)
			runtime.Gosched()
		}
	}
	g.at(holdGathered, jb.who)
	g.mu.Lock()
	members := g.queue
	g.queue, g.spare = g.spare[:0], nil
	g.queued.Store(0)
	g.mu.Unlock()

	if g.onApply != nil {
		g.onApply()
	}
	start := time.Now()
	var err error
	switch {
	case s.failed.Load() != nil:
		err = fmt.Errorf("%w: %w", ErrStoreFailed, *s.failed.Load())
		for _, m := range members {
			m.done <- err
		}
	case len(members) == 0:
		err = s.applyLed(jb.b, jb.who, 1)
	default:
		err = s.applyGroup(jb, members)
	}
	if err != nil {
		s.fail(err)
	}
	g.latency = time.Since(start)
	g.expect = len(members) + 1

	clear(members)
	g.atResult(holdHandOver, jb.who, err)
	g.mu.Lock()
	g.spare = members[:0]
	if len(g.queue) == 0 {
		g.leading = false
		g.mu.Unlock()
		return err
	}
	next := g.queue[0]
	g.queue = g.queue[1:]
	g.queued.Add(-1)
	g.mu.Unlock()
	next.done <- errLead
	return err
}

// applyGroup commits b, the leader's batch, and the batches of members as
// one batch, and gives each member the result. If they do not merge (too
// large, or a batch Pebble refuses), each is committed by itself, in
// order; once one fails, the later ones fail with its error, unwritten,
// and the store fails.
func (s *Store) applyGroup(jb *journalBatch, members []*journalBatch) error {
	g := &s.group
	b := jb.b
	size := b.Len()
	for _, m := range members {
		size += m.b.Len()
	}
	if size <= maxGroupBytes {
		if g.merged == nil {
			g.merged = s.db.NewBatch()
		}
		merged := g.merged
		ok := merged.Apply(b, nil) == nil
		for _, m := range members {
			ok = ok && merged.Apply(m.b, nil) == nil
		}
		if ok {
			g.grouped.Add(uint64(len(members) + 1))
			err := s.applyLed(merged, jb.who, len(members)+1)
			if err != nil {
				// Pebble forbids reusing a batch whose commit failed.
				g.merged = nil
			} else {
				merged.Reset()
			}
			for _, m := range members {
				m.done <- err
			}
			return err
		}
		g.merged = nil
	}
	err := s.applyLed(b, jb.who, 1)
	first := err
	for _, m := range members {
		if first == nil {
			first = s.applyLed(m.b, m.who, 1)
		}
		m.done <- first
	}
	if first != nil {
		s.fail(first)
	}
	return err
}

// applyLed commits b, a batch of n commits of the group led by the
// caller (who: the batch's first commit), to Pebble, between the hold
// points of the apply and its sync.
func (s *Store) applyLed(b *pebble.Batch, who, n int) error {
	g := &s.group
	g.at(holdApply, who)
	if f := g.failApply; f != nil {
		if err := f(who, n); err != nil {
			g.atResult(holdSynced, who, err)
			return err
		}
	}
	err := s.apply(b)
	g.atResult(holdSynced, who, err)
	return err
}
