package holdtest

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// TestReleaseOrder: the goroutine a seed releases depends on who is held
// where, not on the order in which they arrived; ReleaseWhere picks among
// those it is asked to; FreeAll lets all go and holds none after.
func TestReleaseOrder(t *testing.T) {
	run := func(arrival []int) []string {
		var order []string
		synctest.Test(t, func(t *testing.T) {
			s := &Scheduler[string]{Coverage: &Coverage{}}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, who := range arrival {
				wg.Go(func() {
					s.Hold("p", who)
					mu.Lock()
					order = append(order, string(rune('a'+who)))
					mu.Unlock()
				})
				synctest.Wait() // arrive in the order given
			}
			rng := rand.New(rand.NewPCG(7, 7))
			if !s.ReleaseWhere(rng, func(_ string, who int) bool { return who == 2 }) {
				t.Fatal("ReleaseWhere found no goroutine 2")
			}
			synctest.Wait()
			for s.Release(rng) {
				synctest.Wait()
			}
			if s.Len() != 0 || s.IsHeld("p") {
				t.Errorf("%d still held", s.Len())
			}
			if n := s.Coverage.Count("p"); n != len(arrival) {
				t.Errorf("coverage counted %d releases, want %d", n, len(arrival))
			}
			if m := s.Coverage.Missing([]string{"p", "q"}, 1); !slices.Equal(m, []string{"q"}) {
				t.Errorf("Missing = %v, want [q]", m)
			}
			wg.Wait()
			if !strings.Contains(s.History(), "go p/2") {
				t.Errorf("history lacks the release of 2:\n%s", s.History())
			}
		})
		return order
	}
	a := run([]int{0, 1, 2, 3, 4})
	b := run([]int{4, 2, 0, 3, 1})
	if !slices.Equal(a, b) || a[0] != "c" {
		t.Errorf("release orders %v and %v, want equal, starting with c", a, b)
	}

	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler[int]{}
		done := make(chan struct{})
		go func() { s.Hold(1, 0); close(done) }()
		synctest.Wait()
		s.FreeAll()
		<-done
		s.Hold(2, 0) // returns at once
		if s.Len() != 0 {
			t.Errorf("%d held after FreeAll", s.Len())
		}
	})
}

func TestSeeds(t *testing.T) {
	if got := Seeds(3, -1); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("Seeds(3, -1) = %v", got)
	}
	if got := Seeds(3, 17); !slices.Equal(got, []int64{17}) {
		t.Errorf("Seeds(3, 17) = %v", got)
	}
}
