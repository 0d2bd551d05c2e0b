package replicate

import (
	"time"

	"github.com/hashicorp/raft"
)

// Health is a node's state for a probe (Node.Health).
type Health struct {
	// State is the node's raft state, Term its term; Leading reports
	// that it leads and is ready (Leading).
	State   raft.RaftState
	Term    uint64
	Leading bool
	// LeaderID and LeaderAddress are the leader's as the node knows it,
	// "" if it knows none.
	LeaderID      raft.ServerID
	LeaderAddress raft.ServerAddress
	// LastContact is how long ago the leader last contacted the node
	// (raft's LastContact): 0 on the leader; NeverContacted reports that
	// no leader ever did.
	LastContact    time.Duration
	NeverContacted bool
	// CommitIndex is raft's commit index as the node knows it;
	// AppliedIndex and PublishedIndex the node's: CommitIndex less
	// AppliedIndex is how far its state machine trails its log.
	CommitIndex, AppliedIndex, PublishedIndex uint64
	// Stopped is the error that stopped the node applying the log
	// (Node.Stopped), Closed that it was closed.
	Stopped error
	Closed  bool
}

// Health returns the node's health. It does not block: every field is
// read from memory.
func (n *Node) Health() Health {
	leading, _ := n.Leading()
	addr, id := n.raft.LeaderWithID()
	h := Health{
		State:          n.raft.State(),
		Term:           n.raft.CurrentTerm(),
		Leading:        leading,
		LeaderID:       id,
		LeaderAddress:  addr,
		CommitIndex:    n.raft.CommitIndex(),
		AppliedIndex:   n.AppliedIndex(),
		PublishedIndex: n.PublishedIndex(),
		Stopped:        n.Stopped(),
		Closed:         n.closed.Load(),
	}
	if h.State != raft.Leader {
		if last := n.raft.LastContact(); last.IsZero() {
			h.NeverContacted = true
		} else {
			h.LastContact = time.Since(last)
		}
	}
	return h
}

// Err is a probe's verdict on h: nil for a node that serves, else
// ErrShutdown (closed), the *StoppedError of a stopped node, or a
// *StaleError (ErrTooStale) for a node that knows no leader or whose
// leader's last contact is older than maxContact (0: not checked).
func (h Health) Err(maxContact time.Duration) error {
	switch {
	case h.Closed:
		return ErrShutdown
	case h.Stopped != nil:
		return h.Stopped
	case h.State == raft.Leader:
		return nil
	case h.LeaderAddress == "" || h.NeverContacted:
		return &StaleError{Max: maxContact, NoLeader: true}
	case maxContact > 0 && h.LastContact > maxContact:
		return &StaleError{Staleness: h.LastContact, Max: maxContact}
	}
	return nil
}
