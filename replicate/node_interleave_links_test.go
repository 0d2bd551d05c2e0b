package replicate

import (
	"context"
	"fmt"
	"time"
)

// The links of TestNodeInterleavings' cluster (node_interleave_test.go):
// cutting a node off, isolating all, healing, and what the scheduler may
// release while a node is cut off.

// cutOff disconnects node i from the others, both ways.
func (r *nodeRig) cutOff(i int) {
	if r.cut >= 0 || r.deposed >= 0 {
		return
	}
	nodeCoverage.Add("cut")
	{
		nd := r.nodes[i].node
		nd.mu.Lock()
		np := len(nd.st.pending)
		nd.mu.Unlock()
		r.sched.Note("cut n%d off (state %v, pending %d)", i, nd.raft.State(), np)
	}
	r.cut = i
	r.cuts++
	r.mu.Lock()
	r.writers++
	r.mu.Unlock()
	w := 100 + r.cuts
	r.wg.Go(func() { r.outsider(w, i) })
	// Cut off for a while: long enough, mostly, for the others to elect
	// a leader and commit entries this node has not seen.
	r.healAt = time.Now().Add(time.Duration(100+r.rng.IntN(1500)) * time.Millisecond)
	r.awaiter, r.awaiterIndex = -1, 0
	if r.rng.IntN(2) == 0 {
		r.awaiter, r.awaiterUntil = i, time.Now().Add(5*time.Second)
	}
	for _, o := range r.nodes {
		if o.i != i {
			r.disconnect(o, r.nodes[i])
		}
	}
}

// isolateAll disconnects every node from every other: the leader's lease
// lapses and it steps down with whatever it has in flight, no node can win
// an election meanwhile, and at the heal the node with the longest log,
// mostly the old leader, wins again. So a leader is deposed and re-elected
// within a few steps, with the batches of its old term still failing or
// its FSM applying entries it did not propose (the journal's refusals of
// Enqueue then, and the awaiter's failFrom).
func (r *nodeRig) isolateAll() {
	if r.cut >= 0 || r.deposed >= 0 {
		return
	}
	nodeCoverage.Add("isolated")
	r.deposed, r.deposedUntil, r.transfer = -1, time.Time{}, nil
	if ld := r.readyLeader(); ld != nil {
		r.deposed, r.deposedTerm = ld.i, ld.node.Raft().CurrentTerm()
	}
	r.sched.Note("cut every node off (leader n%d)", r.deposed)
	r.cut = allCut
	r.awaiter, r.awaiterIndex = -1, 0
	// Longer than the lease, short enough that writers still wait.
	r.healAt = time.Now().Add(time.Duration(300+r.rng.IntN(600)) * time.Millisecond)
	for _, a := range r.nodes {
		for _, b := range r.nodes {
			if a.i < b.i {
				r.disconnect(a, b)
			}
		}
	}
}

// noteReelected counts, for the coverage check, a leader cut off with
// every other node that leads again in a later term. When another node
// won the election at the heal, it hands the leadership back to the
// deposed one, so that the old leader leads again a few steps after it
// stepped down whichever node won.
func (r *nodeRig) noteReelected() {
	if r.deposed < 0 || r.cut >= 0 {
		return
	}
	if r.deposedUntil.IsZero() {
		r.deposedUntil = time.Now().Add(3 * time.Second)
	}
	ld := r.readyLeader()
	switch {
	case ld != nil && ld.i == r.deposed && ld.node.Raft().CurrentTerm() > r.deposedTerm:
		nodeCoverage.Add("re-elected")
		r.sched.Note("n%d re-elected", ld.i)
	case time.Now().After(r.deposedUntil):
	case ld != nil && ld.i != r.deposed && r.transfer == nil:
		done := make(chan struct{})
		r.transfer = done
		to := r.nodes[r.deposed].id
		r.sched.Note("n%d hands the leadership back to %s", ld.i, to)
		r.wg.Go(func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = ld.node.TransferLeadership(ctx, to)
		})
		return
	default:
		return
	}
	r.deposed, r.deposedUntil, r.transfer = -1, time.Time{}, nil
}

// mayRelease tells which held goroutines the test may release: not the
// awaiter of a node cut off with commits pending, until the node applied
// what the others had at the heal. Raft fails the futures of a leader that
// steps down at once; held so, the node's FSM meets the new leader's
// entries while its batches are still pending, the order in which the FSM
// must fail them itself (errOvertaken).
func (r *nodeRig) mayRelease(p string, _ int) bool {
	if r.awaiter < 0 || p != fmt.Sprint("future@", r.awaiter) {
		return true
	}
	if r.cut == r.awaiter || r.awaiterIndex == 0 {
		return false
	}
	if r.nodes[r.awaiter].node.AppliedIndex() >= r.awaiterIndex || time.Now().After(r.awaiterUntil) {
		r.awaiter = -1
		return true
	}
	return false
}

// heal reconnects every node.
func (r *nodeRig) heal() {
	if r.cut < 0 {
		return
	}
	if r.awaiter == r.cut {
		for _, nd := range r.nodes {
			r.awaiterIndex = max(r.awaiterIndex, nd.node.AppliedIndex())
		}
	}
	if r.cut == allCut {
		r.sched.Note("heal every node")
	} else {
		nd := r.nodes[r.cut].node
		nd.mu.Lock()
		np := len(nd.st.pending)
		nd.mu.Unlock()
		r.sched.Note("heal (n%d state %v, pending %d, applied %d; others applied %d %d)", r.cut, nd.raft.State(), np, nd.AppliedIndex(), r.nodes[(r.cut+1)%3].node.AppliedIndex(), r.nodes[(r.cut+2)%3].node.AppliedIndex())
	}
	r.cut = -1
	r.connectAll()
}

// connectAll connects every node to every other: raft's transports, and
// the forwarders of variant forward.
func (r *nodeRig) connectAll() {
	r.mu.Lock()
	q := r.quarantined
	r.mu.Unlock()
	for _, a := range r.nodes {
		for _, b := range r.nodes {
			if a != b && !q[a.i] && !q[b.i] {
				a.trans.Connect(b.addr, b.trans)
				if a.fwd != nil {
					a.fwd.Register(b.addr, b.node)
				}
			}
		}
	}
}

// disconnect cuts the links between a and b, both ways.
func (r *nodeRig) disconnect(a, b *mnode) {
	a.trans.Disconnect(b.addr)
	b.trans.Disconnect(a.addr)
	if a.fwd != nil {
		a.fwd.Unregister(b.addr)
		b.fwd.Unregister(a.addr)
	}
}
