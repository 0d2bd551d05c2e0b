package replicate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestFenceHoldStallEnds holds the disk stall fence at its decision: the
// leader's log stalls under a write, and the fence refuses an
// AppendEntries (holdFence); while the refusal is held, the disk answers
// again and the write returns. Let go, the refusal returns (a heartbeat
// lost), and the node recovers: the fence is off, the write that waited
// on the disk settles (acknowledged: on every member; failed, not
// ambiguous: on none), a new write through the node commits, and every
// member ends equal with every acknowledged write.
func TestFenceHoldStallEnds(t *testing.T) {
	t.Parallel()
	var (
		armed   atomic.Bool
		heldBy  atomic.Int64
		reached = make(chan *rnode, 1)
		release = make(chan struct{})
	)
	c := newFaultClusterOf(t, 3, nil, faultOpts{hold: func(nd *rnode) func(holdPoint, int) {
		return func(p holdPoint, who int) {
			if p != holdFence || !armed.Load() {
				return
			}
			select {
			case reached <- nd:
				heldBy.Store(int64(who))
			default:
			}
			<-release
		}
	}})
	defer c.storeOps.unstallAll() // first: a stalled member would not close
	ld := c.committingLeader()
	if _, err := put(context.Background(), ld, 1, "before"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	c.storeOps.stall(ld.id)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := put(ctx, ld, 2, "stalled")
		done <- err
	}()
	select {
	case nd := <-reached:
		if nd != ld {
			t.Fatalf("%s's fence refused, not the stalled leader %s's", nd.id, ld.id)
		}
	case err := <-done:
		t.Fatalf("the write on the stalled leader returned before its fence refused anything: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled leader's fence never refused an AppendEntries")
	}
	if who := heldBy.Load(); who != holdSender && who != holdPipeline {
		t.Errorf("holdFence reached by who %d, want holdSender or holdPipeline", who)
	}
	// The disk answers while the refusal is held.
	c.storeOps.unstallAll()
	deadline := time.Now().Add(10 * time.Second)
	for ld.node.diskStalled() {
		if time.Now().After(deadline) {
			t.Fatal("the fence is still on 10 s after the disk answered")
		}
		time.Sleep(time.Millisecond)
	}
	armed.Store(false)
	close(release)

	var err error
	select {
	case err = <-done:
		t.Logf("the write that waited on the disk: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the write that waited on the disk never returned after it answered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := put(ctx, ld, 3, "after"); err != nil {
		t.Fatalf("a write through %s after the stall: %v", ld.id, err)
	}
	c.settleAll()
	for _, nd := range c.nodes {
		if !has(nd, 0, 1) || !has(nd, 0, 3) {
			t.Errorf("%s lacks an acknowledged write (1: %v, 3: %v)", nd.id, has(nd, 0, 1), has(nd, 0, 3))
		}
		switch present := has(nd, 0, 2); {
		case err == nil && !present:
			t.Errorf("%s lacks the write acknowledged once the disk answered", nd.id)
		case err != nil && !errors.Is(err, ErrAmbiguous) && present:
			t.Errorf("the write failed (%v), and is applied on %s", err, nd.id)
		}
	}
	c.checkEqual(true)
}
