package replicate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForwardLeaderClosesMidRequest: a follower's write, forwarded over
// the network, is held at a point of the leader's path (the replay, the
// leader's commit), the leader closes (its ForwardServer stays up, as a
// process whose node stopped may keep its listener), and the hold is let
// go: the follower's Write, with a context that never ends, returns, and
// its outcome is true of the nodes left: acknowledged, the write is on
// them; ambiguous, it may be; failed otherwise, it is not.
func TestForwardLeaderClosesMidRequest(t *testing.T) {
	t.Parallel()
	for _, p := range []holdPoint{holdReplay, holdTake, holdSubmit, holdSubmitted, holdFuture, holdApply, holdApplied} {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			var (
				armed   atomic.Bool
				once    sync.Once
				reached = make(chan struct{})
				release = make(chan struct{})
			)
			hook := func(q holdPoint, who int) {
				if q == p && armed.Load() {
					once.Do(func() { close(reached) })
					<-release
				}
			}
			c, _ := newForwardCluster(t, 3, fwdNet, hook, hook, hook)
			ld := c.leader()
			fl := c.followers(ld)[0]
			if _, err := put(context.Background(), fl, 1, "before"); err != nil {
				t.Fatal(err)
			}
			armed.Store(true)
			done := make(chan error, 1)
			go func() {
				_, err := put(context.Background(), fl, 2, "held")
				done <- err
			}()
			select {
			case <-reached:
			case err := <-done:
				t.Fatalf("the write returned before the hold: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("the hold was never reached")
			}
			stopped := make(chan struct{})
			go func() { c.stop(ld); close(stopped) }()
			time.Sleep(50 * time.Millisecond)
			armed.Store(false)
			close(release)
			<-stopped
			var err error
			select {
			case err = <-done:
				t.Logf("the follower's write: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatal("the follower's forwarded write never returned after its leader closed")
			}
			c.converge()
			present := has(fl, 0, 2)
			switch {
			case err == nil && !present:
				t.Error("the acknowledged write is lost")
			case err != nil && !errors.Is(err, ErrAmbiguous) && present:
				t.Errorf("the write failed (%v), and is applied", err)
			}
		})
	}
}

// TestCloseWithCommittedUnapplied: raft v1.7.2 never answers the future
// of an entry it committed and had not handed to the FSM when it shut
// down (hashicorp/raft#498). The leader's FSM is held in the apply of one
// write while a second commits behind it; the leader closes, and the hold
// is let go: raft's FSM loop then applies the second, or (as often) sees
// the shutdown first and drops it with its future. Close returns either
// way, and so do both writes, each acknowledged or ambiguous.
func TestCloseWithCommittedUnapplied(t *testing.T) {
	t.Parallel()
	for round := range 6 {
		var (
			leader  atomic.Int32
			once    sync.Once
			reached = make(chan struct{})
			release = make(chan struct{})
		)
		leader.Store(-1)
		hooks := make([]func(holdPoint, int), 3)
		for i := range hooks {
			hooks[i] = func(p holdPoint, who int) {
				if p == holdApply && who == holdFSM && leader.Load() == int32(i) {
					once.Do(func() { close(reached) })
					<-release
				}
			}
		}
		c, _ := newForwardCluster(t, 3, fwdLocal, hooks...)
		ld := c.leader()
		for i, nd := range c.nodes {
			if nd == ld {
				leader.Store(int32(i))
			}
		}
		done := make(chan error, 2)
		go func() { _, err := put(context.Background(), ld, 1, "held"); done <- err }()
		<-reached
		go func() { _, err := put(context.Background(), ld, 2, "behind"); done <- err }()
		// The second entry commits: the followers apply it.
		deadline := time.Now().Add(10 * time.Second)
		for !has(c.followers(ld)[0], 0, 2) {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("round %d: the second write never committed", round)
			}
			time.Sleep(time.Millisecond)
		}
		closed := make(chan struct{})
		go func() { c.stop(ld); close(closed) }()
		time.Sleep(20 * time.Millisecond) // raft's shutdown begins
		close(release)
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close of a leader with a committed, unapplied entry never returned", round)
		}
		t.Logf("round %d: the old leader applied the second write: %v", round, has(ld, 0, 2))
		for range 2 {
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, ErrAmbiguous) {
					t.Errorf("round %d: a write: %v, want success or ErrAmbiguous", round, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a write never returned after its leader closed", round)
			}
		}
	}
}
