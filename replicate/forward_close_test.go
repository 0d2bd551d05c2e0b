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
