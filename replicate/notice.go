package replicate

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Commit notices: how a follower that waits for an entry learns at once
// that the leader committed it.
//
// A raft v1.7.2 follower learns the leader's commit index only from an
// AppendEntries that the leader's replication sends for new entries, or
// from the empty one it sends CommitTimeout to twice that after its last
// (heartbeats carry no commit index). On an idle leader, a follower that
// waits for an entry the leader committed waits CommitTimeout or more:
// 50 to 100 ms at raft's default. Three waits meet it: a Write forwarded
// by a follower (it returns once its follower published the entry), a
// follower's linearizable read (it waits for the leader's read index),
// and ReadAtLeast on a follower of a write made elsewhere.
//
// So the leader appends a barrier (raft.Barrier: a log entry that no FSM
// sees) once such an entry committed. raft sends it to every follower at
// once, with the leader's commit index, and a follower then applies
// everything up to that index. The leader announces a commit on its own
// for the first two waits (ApplyForwarded, ReadIndex); for the third the
// follower asks it (AnnounceCommit, through the Forwarder's NoticeCommit).
//
// Invariants (the notice tests and TestNodeInterleavings check the
// outcome: every wait above ends without CommitTimeout's help):
//
//  1. Every index announced was committed when it was announced, and the
//     announcer submits its barrier after reading a commit index at least
//     as high: the barrier's AppendEntries carries a commit index that
//     covers every index announced before it was submitted.
//  2. The announcer submits a barrier only for an index above the commit
//     index its last barrier of the same term covered: at most one
//     barrier per advance of the commit index that a waiter asked about,
//     never one per waiter.
//  3. A follower has at most one request to the leader in flight, for the
//     highest index asked; the notices cost nothing when no follower
//     waits.
//
// A notice is a hint: a barrier lost with the leader's term, or a request
// that fails, delays the follower until the next entry (the new leader's
// first entry carries its commit index), never wrongs it.

// announce asks the announcer to make the followers learn that index
// committed. index must be committed (invariant 1). It never blocks.
func (n *Node) announce(index uint64) { raiseAndWake(&n.noticeWant, index, n.noticeWake) }

// raiseAndWake raises v to x, if x is higher, and wakes the goroutine
// that waits on wake, without blocking.
func raiseAndWake(v *atomic.Uint64, x uint64, wake chan<- struct{}) {
	for {
		cur := v.Load()
		if cur >= x || v.CompareAndSwap(cur, x) {
			break
		}
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

// announcer submits the barriers that announce commits, until the node
// closes. A Barrier waiting for raft's leader loop returns when Close
// shuts raft down.
func (n *Node) announcer() {
	defer n.wg.Done()
	var covered, term uint64 // what the last barrier announced, in which term
	for {
		select {
		case <-n.noticeWake:
		case <-n.quit:
			return
		}
		want := n.noticeWant.Load()
		if t := n.raft.CurrentTerm(); t != term {
			covered, term = 0, t
		}
		if want <= covered || n.raft.State() != raft.Leader {
			continue
		}
		commit := n.raft.CommitIndex() // at least want (invariant 1)
		n.at(holdAnnounce, holdAnnouncer)
		// Its future is not awaited: the barrier matters once sent, and
		// raft may never answer a future at shutdown (hashicorp/raft#498).
		_ = n.raft.Barrier(0)
		covered = max(commit, want)
	}
}

// AnnounceCommit is the leader's side of a follower's commit notice (what
// a Forwarder's NoticeCommit calls): once the entry at index committed, it
// makes sure the followers learn so at once, rather than with raft's next
// empty AppendEntries, CommitTimeout later. It returns once the notice is
// queued, or at once if index is not in the node's log (it cannot commit
// in this term). It fails with a *NotLeaderError on a node that does not
// lead, or with ctx's error, ErrShutdown or the *StoppedError of a
// stopped node while it waits for the commit.
func (n *Node) AnnounceCommit(ctx context.Context, index uint64) error {
	if n.raft.State() != raft.Leader {
		return n.notLeader(nil)
	}
	if index > n.raft.LastIndex() {
		return nil
	}
	for n.raft.CommitIndex() < index {
		// The leader applies each command entry as it commits: wait for
		// the applied index to move, or (an entry without a command, a
		// lost lead) a moment, and look again.
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if n.raft.CommitIndex() >= index {
			break
		}
		if n.raft.State() != raft.Leader {
			return n.notLeader(nil)
		}
		if e := n.stopErr.Load(); e != nil {
			return e
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-n.quit:
			return ErrShutdown
		}
	}
	n.announce(index)
	return nil
}

// askNotice asks the leader, through the node's noticer, to announce the
// commit of index: a follower's ReadAtLeast that waits for it. It never
// blocks; without a Forwarder it does nothing.
func (n *Node) askNotice(index uint64) {
	if n.fwd != nil {
		raiseAndWake(&n.noticeAsk, index, n.askWake)
	}
}

// noticer sends a follower's requests for commit notices to the leader,
// one at a time, for the highest index asked (invariant 3), until the node
// closes. A request that fails is sent again, after a pause, while the
// node has not published the index.
func (n *Node) noticer(ctx context.Context) {
	defer n.wg.Done()
	var asked uint64 // the highest index the leader took a request for
	for {
		select {
		case <-n.askWake:
		case <-n.quit:
			return
		}
		for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
			want := n.noticeAsk.Load()
			if want <= asked || n.published.Load() >= want || n.raft.State() == raft.Leader {
				break
			}
			leader, _ := n.raft.LeaderWithID()
			if leader != "" {
				n.at(holdNotice, holdNoticer)
				if n.fwd.NoticeCommit(ctx, leader, want) == nil {
					asked = want
					continue
				}
			}
			select {
			case <-time.After(delay):
			case <-n.quit:
				return
			}
		}
	}
}
