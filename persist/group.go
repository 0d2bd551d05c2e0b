package persist

import (
	"errors"
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
}

// commitGrouped commits jb with the other commits that arrive with it,
// and returns once the group's batch is synced.
func (s *Store) commitGrouped(jb *journalBatch) error {
	g := &s.group
	g.mu.Lock()
	if g.leading {
		g.queue = append(g.queue, jb)
		g.queued.Add(1)
		g.mu.Unlock()
		switch err := <-jb.done; err {
		case errLead:
		case errAlone:
			return s.apply(jb.b)
		default:
			return err
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	return s.lead(jb)
}

// maxGroupBytes bounds a merged batch; larger groups commit their batches
// one by one (Pebble still shares their syncs). A variable for tests.
var maxGroupBytes = 64 << 20

// errLead tells a queued commit that it leads the next group, and
// errAlone that it commits its batch by itself.
var (
	errLead  = errors.New("persist: lead the next group")
	errAlone = errors.New("persist: commit alone")
)

// lead waits for the group's members, commits their batches as one, wakes
// them, and hands the lead to the first commit that queued meanwhile.
func (s *Store) lead(jb *journalBatch) error {
	g := &s.group
	if want := int32(g.expect - 1); want > 0 && g.queued.Load() < want {
		deadline := time.Now().Add(g.latency / 2)
		for g.queued.Load() < want && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
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
	if len(members) == 0 {
		err = s.apply(jb.b)
	} else {
		err = s.applyGroup(jb.b, members)
	}
	g.latency = time.Since(start)
	g.expect = len(members) + 1

	clear(members)
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
// large, or a batch Pebble refuses), each commits its own.
func (s *Store) applyGroup(b *pebble.Batch, members []*journalBatch) error {
	g := &s.group
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
			err := s.apply(merged)
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
	for _, m := range members {
		m.done <- errAlone
	}
	return s.apply(b)
}
