package replicate

import (
	"github.com/hashicorp/raft"
)

// A follower of raft v1.7.2 may commit, and apply, an entry of its own
// that the cluster never committed. Its AppendEntries handler sets the
// commit index to min(LeaderCommitIndex, its last log index), where the
// Raft paper says min(LeaderCommitIndex, the index of the last new
// entry): the entries past the request's are not checked against the
// leader's log. A deposed leader keeps the entries it appended in its
// term and could not replicate; if the new leader sends it a request
// whose entries stop short of them (its prev entry matches, and the
// entries were read before the leader's log grew) with a commit index
// beyond, the old leader applies its own stale entries. The same bug was
// found and fixed in other Raft libraries (atomix/copycat#265,
// scylladb#9965, etcd-io/etcd#1203).
//
// Strata found it as an old leader whose tables held writes whose
// commits had failed, without the new leader's at the same revisions:
// TestLinDirtyReadOfAbortedWrite under load failed 4 times in 40
// (porcupine: a read after the heal returned the aborted write on the
// old leader, the others returned what was committed), and
// TestFault* in the fault tests saw it as divergence.
//
// clampTransport keeps raft as it is and applies the paper's rule where
// the requests arrive: a request whose LeaderCommitIndex is past its last
// entry (PrevLogEntry when it carries none) reaches raft with its commit
// index lowered to that entry. The follower learns the rest from the
// leader's next request, which carries the entries up to it (or, caught
// up, its last index as PrevLogEntry); heartbeats, which carry no commit
// index, go raft's fast path, untouched.
//
// Invariants, kept by this file:
//
//  1. No AppendEntriesRequest reaches raft with a LeaderCommitIndex above
//     the index of its last entry, or of PrevLogEntry without entries.
//  2. Every other RPC, and every request within that bound, reaches raft
//     unchanged, in the order the transport delivered them.
//  3. The goroutine that carries them ends with Close, which the Node
//     calls after raft has shut down.
type clampTransport struct {
	raft.Transport
	fenced func() bool // diskstall.go; nil: never
	// hold, if not nil, passes the hold point holdFence, reached by who
	// (holdSender, holdPipeline) when the fence refuses an RPC; nil
	// unless a test set Config.hold (holds.go).
	hold func(who int)
	out  chan raft.RPC
	quit chan struct{}
	done chan struct{}
}

// preVoteClampTransport is a clampTransport over a transport that offers
// pre-vote: raft uses pre-vote only if its transport offers it.
type preVoteClampTransport struct {
	*clampTransport
	pv raft.WithPreVote
}

// RequestPreVote sends a pre-vote request through the wrapped transport.
func (t preVoteClampTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.pv.RequestPreVote(id, target, args, resp)
}

// newClampTransport wraps t and starts the goroutine that carries its
// RPCs to raft.
func newClampTransport(t raft.Transport) (raft.Transport, *clampTransport) {
	c := &clampTransport{Transport: t, out: make(chan raft.RPC), quit: make(chan struct{}), done: make(chan struct{})}
	go c.run(t.Consumer())
	if pv, ok := t.(raft.WithPreVote); ok {
		return preVoteClampTransport{clampTransport: c, pv: pv}, c
	}
	return c, c
}

// Consumer returns the channel raft reads its RPCs from.
func (c *clampTransport) Consumer() <-chan raft.RPC { return c.out }

func (c *clampTransport) run(in <-chan raft.RPC) {
	defer close(c.done)
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-c.quit:
			return
		}
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
			rpc.Command = clampCommit(req)
		}
		select {
		case c.out <- rpc:
		case <-c.quit:
			return
		}
	}
}

// clampCommit returns req, or a copy of it whose LeaderCommitIndex is
// lowered to its last entry's index (invariant 1). The request is not
// changed: the in-memory transport hands the leader's own to the
// follower.
func clampCommit(req *raft.AppendEntriesRequest) *raft.AppendEntriesRequest {
	last := req.PrevLogEntry
	if n := len(req.Entries); n > 0 {
		last = req.Entries[n-1].Index
	}
	if req.LeaderCommitIndex <= last {
		return req
	}
	cp := *req
	cp.LeaderCommitIndex = last
	return &cp
}

// Close stops the goroutine that carries the RPCs; the wrapped transport
// is the caller's to close.
func (c *clampTransport) Close() {
	close(c.quit)
	<-c.done
}
