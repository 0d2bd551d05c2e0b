package reconciler

import (
	"slices"
	"sort"

	"github.com/strata-db/strata"
)

// work is the reconciler's work: the items, the lanes they wait in, the
// delayed and failing items, the ordering-key groups and the progress
// ring. The loop goroutine changes it, holding Reconciler.mu; Inspect and
// Stats read it under the same lock.
//
// An item is in exactly one phase, and the structures agree with it:
//
//	PhaseQueued    one live entry in lanes[it.lane]; counted in laneLen
//	PhaseParked    a member of it.group, not its head or the group busy;
//	               counted in parked
//	PhaseInFlight  in a batch a worker holds or whose outcome waits to be
//	               committed; counted in inflight
//	PhaseBackoff,
//	PhaseRequeued  in delayed
//	PhaseFailed    counted in terminal
//
// and, whatever its phase, in failing while its last attempt failed.
// Queue and ring entries are not removed when an item leaves a queue;
// they carry the item's gen (and qseq) and are skipped once stale.
type work[Obj any] struct {
	items keyMap[Obj]

	lanes   [numLanes]deque[laneEntry]
	laneLen [numLanes]int // live entries per lane
	// cw are the current weights of the smooth weighted round robin
	// that picks a lane.
	cw [numLanes]int

	delayed itemHeap[Obj] // by dueAt
	failing itemHeap[Obj] // by errRev: the retry low watermark

	groups      map[string]*group[Obj]
	readyGroups deque[*group[Obj]]

	// ring holds, in revision order, a changes' revision for each item
	// with a change not yet attempted (progress.go).
	ring     deque[ringEntry]
	ringLast strata.Revision

	inflight, parked, terminal int
	// feedRev is the revision of the snapshot the change feed was last
	// read up to.
	feedRev strata.Revision
}

type laneEntry struct {
	r         ref
	gen, qseq uint32
}

type ringEntry struct {
	r   ref
	gen uint32
	rev strata.Revision
	at  int64
}

// group is the set of items of one ordering key (Config.OrderingKey) that
// have work: its members, in the order of the revisions of the changes
// that gave them their work (orderRev), the order in which they are to be
// reconciled. Only the first member (the head) may start, and only while
// no operation of the group is in flight (busy): so at most one
// operation per key runs, and the operations of a key run in revision
// order. A member that failed keeps its place, and holds the others back,
// until it succeeds, is changed, or fails for good (Terminal); an object
// waiting for a requeue is not a member until its requeue is due.
//
// Members picked from a lane before their turn wait parked. When the
// group becomes free, or its head changes, a parked head makes the group
// ready (readyGroups), and the loop starts it before it picks from the
// lanes.
type group[Obj any] struct {
	key     string
	busy    bool  // an operation of a member runs (the item's flightGroup)
	queued  bool  // in readyGroups
	members []ref // sorted by orderRev; equal revisions in arrival order
}

// init readies s where it is to stay (the heaps point into it).
func (s *work[Obj]) init() {
	s.items = newKeyMap[Obj]()
	s.delayed = itemHeap[Obj]{
		items: &s.items.items,
		less:  func(a, b *item[Obj]) bool { return a.dueAt < b.dueAt },
		pos:   func(it *item[Obj]) *int32 { return &it.delayIdx },
	}
	s.failing = itemHeap[Obj]{
		items: &s.items.items,
		less:  func(a, b *item[Obj]) bool { return a.errRev < b.errRev },
		pos:   func(it *item[Obj]) *int32 { return &it.errIdx },
	}
	s.groups = make(map[string]*group[Obj])
}

// at returns the item r refers to.
func (s *work[Obj]) at(r ref) *item[Obj] { return s.items.items.at(r) }

// enqueue puts it at the end of lane. It must have left its previous
// phase (leave).
func (s *work[Obj]) enqueue(it *item[Obj], lane Lane, now int64) {
	it.phase, it.lane, it.queuedAt = PhaseQueued, lane, now
	it.qseq++
	s.lanes[lane].push(laneEntry{it.self, it.gen, it.qseq})
	s.laneLen[lane]++
}

// leave takes it out of the bookkeeping of its phase (not of failing),
// leaving it in PhaseIdle. Items in flight cannot leave.
func (s *work[Obj]) leave(it *item[Obj]) {
	switch it.phase {
	case PhaseQueued:
		s.laneLen[it.lane]--
	case PhaseParked:
		s.parked--
	case PhaseBackoff, PhaseRequeued:
		s.delayed.remove(it)
	case PhaseFailed:
		s.terminal--
	case PhaseInFlight:
		panic("reconciler: internal error: an item in flight left its phase")
	}
	it.phase = PhaseIdle
}

// delay makes it wait until dueAt in phase p (PhaseBackoff or
// PhaseRequeued).
func (s *work[Obj]) delay(it *item[Obj], p Phase, dueAt int64) {
	it.phase, it.dueAt = p, dueAt
	s.delayed.fix(it)
}

// setFailing records that the attempt of it at rev failed with err.
func (s *work[Obj]) setFailing(it *item[Obj], err error, rev strata.Revision) {
	it.lastErr, it.errRev = err, rev
	s.failing.fix(it)
}

// clearFailing forgets the failures of it: it succeeded, or changed.
func (s *work[Obj]) clearFailing(it *item[Obj]) {
	it.attempts, it.lastErr, it.errRev, it.retryKind = 0, nil, 0, StatusKindUnset
	s.failing.remove(it)
}

// release forgets it: it has nothing left to do.
func (s *work[Obj]) release(it *item[Obj]) {
	if it.phase != PhaseInFlight {
		s.leave(it)
	}
	s.failing.remove(it)
	s.quit(it)
	s.items.remove(it)
}

// join makes it a member of the group of key, placed by rev, the
// revision of the change that gave it its work (moving it if it was a
// member already).
func (s *work[Obj]) join(it *item[Obj], key string, rev strata.Revision) {
	if it.group != nil {
		s.quit(it)
	}
	g := s.groups[key]
	if g == nil {
		g = &group[Obj]{key: key}
		s.groups[key] = g
	}
	it.group, it.orderRev = g, rev
	// After the members of the same revision: arrival order.
	i := sort.Search(len(g.members), func(i int) bool { return s.at(g.members[i]).orderRev > rev })
	g.members = slices.Insert(g.members, i, it.self)
	s.wakeGroup(g)
}

// quit takes it out of its group, if it is in one, dropping the group
// once it has no members and nothing in flight.
func (s *work[Obj]) quit(it *item[Obj]) {
	g := it.group
	if g == nil {
		return
	}
	it.group = nil
	i := sort.Search(len(g.members), func(i int) bool { return s.at(g.members[i]).orderRev >= it.orderRev })
	for g.members[i] != it.self {
		i++
	}
	if i == 0 {
		g.members = g.members[1:]
	} else {
		g.members = slices.Delete(g.members, i, i+1)
	}
	if len(g.members) == 0 {
		if !g.busy {
			delete(s.groups, g.key)
		}
		return
	}
	if i == 0 {
		s.wakeGroup(g)
	}
}

// wakeGroup makes g ready if it is free and its head waits parked.
func (s *work[Obj]) wakeGroup(g *group[Obj]) {
	if g.busy || g.queued || len(g.members) == 0 || s.at(g.members[0]).phase != PhaseParked {
		return
	}
	g.queued = true
	s.readyGroups.push(g)
}

// mayStart reports whether it may start: it has no group, or it is its
// group's head and the group is free.
func (s *work[Obj]) mayStart(it *item[Obj]) bool {
	g := it.group
	return g == nil || (!g.busy && g.members[0] == it.self)
}

// park makes it wait for its turn in its group.
func (s *work[Obj]) park(it *item[Obj], now int64) {
	it.phase, it.queuedAt = PhaseParked, now
	s.parked++
}

// groupDone frees g after an operation of its ended.
func (s *work[Obj]) groupDone(g *group[Obj]) {
	g.busy = false
	if len(g.members) == 0 {
		delete(s.groups, g.key)
		return
	}
	s.wakeGroup(g)
}

// head returns the live entry at the front of lane, dropping stale ones.
func (s *work[Obj]) head(lane Lane) *item[Obj] {
	q := &s.lanes[lane]
	for q.len() > 0 {
		e := q.front()
		if it := s.at(e.r); it.gen == e.gen && it.qseq == e.qseq && it.phase == PhaseQueued && it.lane == lane {
			return it
		}
		q.pop()
	}
	return nil
}

// ready returns the number of items waiting to be dispatched.
func (s *work[Obj]) ready() int {
	n := s.readyGroups.len()
	for _, l := range s.laneLen {
		n += l
	}
	return n
}

// pick takes the next item out of the lanes, or returns nil. Lanes are
// picked by smooth weighted round robin over the lanes with work; a
// lane's weight grows by its own for every aging its oldest item has
// waited, so that a lane whose work waits gets a larger share until it
// catches up, and none starves however busy the others are.
func (s *work[Obj]) pick(now, aging int64, weights *[numLanes]int) *item[Obj] {
	best, total := -1, 0
	for l := range numLanes {
		if s.laneLen[l] == 0 {
			continue
		}
		w := weights[l] << 6 // finer steps for the growth
		if it := s.head(l); it != nil && now > it.queuedAt {
			w += int(int64(w) * (now - it.queuedAt) / aging)
		}
		s.cw[l] += w
		total += w
		if best < 0 || s.cw[l] > s.cw[best] {
			best = int(l)
		}
	}
	if best < 0 {
		return nil
	}
	s.cw[best] -= total
	return s.take(Lane(best))
}

func (s *work[Obj]) take(lane Lane) *item[Obj] {
	it := s.head(lane)
	s.lanes[lane].pop()
	s.laneLen[lane]--
	it.phase = PhaseIdle
	return it
}
