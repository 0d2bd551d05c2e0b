// Package holdtest is the scheduler of Strata's interleaving tests
// (docs/interleavings.md). A package under test calls a hook at each of
// its hold points, the hand-offs between its goroutines; in a test the
// hook is Scheduler.Hold, which parks the calling goroutine until the test
// lets it go. The test, alone running once testing/synctest's Wait returns
// (every other goroutine of the bubble held or durably blocked), picks with
// a seeded source which held goroutine goes on, so that a seed is one
// order of the hand-offs and many seeds explore many orders.
//
// Held goroutines are ordered by who they are (the who of Hold, then the
// point), not by when they arrived, which the Go scheduler decides: a seed
// picks the same goroutine each run, and a failing seed replays.
//
// Tests only: nothing in production imports it.
package holdtest

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// traceLen is how many of the latest events History keeps.
const traceLen = 400

// Scheduler holds the goroutines that reach a hold point (of type P) and
// lets them go one at a time. The zero Scheduler holds nothing yet and is
// ready to use; it must not be copied.
type Scheduler[P cmp.Ordered] struct {
	mu   sync.Mutex
	held []*waiter[P]
	// free: hold no more (the end of a run, or a failed one winding down).
	free  bool
	trace []string
	steps int
	// Coverage, if set, counts the releases at each point.
	Coverage *Coverage
}

type waiter[P cmp.Ordered] struct {
	point   P
	who     int
	release chan struct{}
}

// Hold parks the calling goroutine at point until the test lets it go
// (Release, ReleaseWhere, FreeAll). who tells goroutines at the same point
// apart (a worker's number, a stream's); it orders the held goroutines. It
// returns at once after FreeAll. Never call it holding a lock: a goroutine
// blocked on a mutex is not durably blocked, and synctest.Wait would wait
// for it forever.
func (s *Scheduler[P]) Hold(point P, who int) {
	w := &waiter[P]{point: point, who: who, release: make(chan struct{})}
	s.mu.Lock()
	if s.free {
		s.mu.Unlock()
		return
	}
	s.held = append(s.held, w)
	s.mu.Unlock()
	<-w.release
}

// Len returns how many goroutines are held.
func (s *Scheduler[P]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// IsHeld reports whether a goroutine is held at point.
func (s *Scheduler[P]) IsHeld(point P) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.held {
		if w.point == point {
			return true
		}
	}
	return false
}

// Release lets one held goroutine go, which rng picks, and reports whether
// one was held.
func (s *Scheduler[P]) Release(rng *rand.Rand) bool {
	return s.ReleaseWhere(rng, nil)
}

// ReleaseWhere lets one of the held goroutines for which ok returns true
// go (any, if ok is nil), which rng picks, and reports whether there was
// one.
func (s *Scheduler[P]) ReleaseWhere(rng *rand.Rand, ok func(point P, who int) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortStableFunc(s.held, func(a, b *waiter[P]) int {
		return cmp.Or(cmp.Compare(a.who, b.who), cmp.Compare(a.point, b.point))
	})
	var pick []int
	for i, w := range s.held {
		if ok == nil || ok(w.point, w.who) {
			pick = append(pick, i)
		}
	}
	if len(pick) == 0 {
		return false
	}
	i := pick[rng.IntN(len(pick))]
	w := s.held[i]
	s.held = slices.Delete(s.held, i, i+1)
	s.noteLocked(fmt.Sprintf("go %v/%d", w.point, w.who))
	if s.Coverage != nil {
		s.Coverage.Add(fmt.Sprint(w.point))
	}
	close(w.release)
	return true
}

// FreeAll lets every held goroutine go, and holds none from then on.
func (s *Scheduler[P]) FreeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = true
	for _, w := range s.held {
		close(w.release)
	}
	s.held = nil
}

// Note adds an event to the history.
func (s *Scheduler[P]) Note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteLocked(fmt.Sprintf(format, args...))
}

func (s *Scheduler[P]) noteLocked(ev string) {
	s.steps++
	s.trace = append(s.trace, fmt.Sprintf("%4d %s", s.steps, ev))
	if len(s.trace) > traceLen {
		s.trace = slices.Delete(s.trace, 0, len(s.trace)-traceLen)
	}
}

// History returns the latest events, one a line: the releases (go
// POINT/WHO) and the notes, numbered.
func (s *Scheduler[P]) History() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.trace, "\n")
}

// Seeds returns the seeds a test runs: 0 to n-1, or only one if it is 0
// or more (a seed replayed from a failure's report).
func Seeds(n int, one int64) []int64 {
	if one >= 0 {
		return []int64{one}
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	return seeds
}

// Coverage counts, over the seeds of a test, how often each hold point was
// released (and whatever else the test adds: the outcomes it saw), so
// that the test can fail if its seeds never explored one.
type Coverage struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one of what.
func (c *Coverage) Add(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[what]++
}

// Count returns how many of what were counted.
func (c *Coverage) Count(what string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[what]
}

// Missing returns those of want counted fewer than min times, in the
// order of want.
func (c *Coverage) Missing(want []string, min int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, w := range want {
		if c.n[w] < min {
			missing = append(missing, w)
		}
	}
	return missing
}

// Reset forgets every count.
func (c *Coverage) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.n)
}

// String lists the counts, sorted by name.
func (c *Coverage) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c.n)) {
		fmt.Fprintf(&b, "%s=%d ", k, c.n[k])
	}
	return strings.TrimSpace(b.String())
}
