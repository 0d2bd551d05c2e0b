package reconciler

import "fmt"

// check verifies the invariants of work.go (the phases and the
// structures that agree with them) and of the ordering groups, and panics
// on the first that does not hold. It walks every item: under the
// invariants build tag only (loop.run calls it each round).
func (s *work[Obj]) check() {
	var queued [numLanes]int
	parked, inflight, terminal, busy := 0, 0, 0, map[*group[Obj]]int{}
	for _, page := range s.items.items.pages {
		for i := range page {
			it := &page[i]
			if s.items.get(it.key) != it {
				continue // free
			}
			switch it.phase {
			case PhaseQueued:
				queued[it.lane]++
			case PhaseParked:
				parked++
				if it.group == nil {
					panic(fmt.Sprintf("reconciler: invariant: item %x parked without a group", it.key))
				}
			case PhaseInFlight:
				inflight++
				if it.flightGroup != nil {
					busy[it.flightGroup]++
				}
			case PhaseBackoff, PhaseRequeued:
				if it.delayIdx < 0 {
					panic(fmt.Sprintf("reconciler: invariant: item %x delayed but not in the heap", it.key))
				}
			case PhaseFailed:
				terminal++
			}
			if it.phase != PhaseInFlight && it.flightGroup != nil {
				panic(fmt.Sprintf("reconciler: invariant: item %x keeps a group busy out of flight", it.key))
			}
			if g := it.group; g != nil && s.groups[g.key] != g {
				panic(fmt.Sprintf("reconciler: invariant: item %x in group %q, which is not the key's", it.key, g.key))
			}
		}
	}
	if queued != s.laneLen || parked != s.parked || inflight != s.inflight || terminal != s.terminal {
		panic(fmt.Sprintf("reconciler: invariant: counted queued %v parked %d in flight %d failed %d, recorded %v %d %d %d",
			queued, parked, inflight, terminal, s.laneLen, s.parked, s.inflight, s.terminal))
	}
	for key, g := range s.groups {
		if busy[g] > 1 || g.busy != (busy[g] == 1) {
			panic(fmt.Sprintf("reconciler: invariant: group %q busy=%v with %d operations in flight", key, g.busy, busy[g]))
		}
		if len(g.members) == 0 && !g.busy {
			panic(fmt.Sprintf("reconciler: invariant: group %q kept without members", key))
		}
		for i, r := range g.members {
			it := s.at(r)
			if it.group != g {
				panic(fmt.Sprintf("reconciler: invariant: group %q lists an item of another group", key))
			}
			if i > 0 && s.at(g.members[i-1]).orderRev > it.orderRev {
				panic(fmt.Sprintf("reconciler: invariant: group %q out of revision order", key))
			}
		}
		// Liveness: a free group whose head waits parked is ready.
		if !g.busy && len(g.members) > 0 && s.at(g.members[0]).phase == PhaseParked && !g.queued {
			panic(fmt.Sprintf("reconciler: invariant: group %q is free, its head parked, and not ready", key))
		}
	}
}
