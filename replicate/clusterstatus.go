package replicate

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/httpapi"
)

// The node's view of its cluster in httpapi's terms: package httpapi
// serves GET /v1/cluster (and the inspector's Cluster panel) from a
// function it is given, since the root module never imports raft.

// ClusterStatus returns the cluster as the node sees it, from Members and
// raft's last contact, in the document GET /v1/cluster serves: a program
// that serves its replicated database with package httpapi passes it as
// the handler's Options.Cluster:
//
//	h := httpapi.New(db, httpapi.Options{Cluster: node.ClusterStatus})
//
// Where a member's lag comes from is httpapi.ClusterMember's to say: the
// node's own is its commit index less its applied index; a node with a
// Forwarder asks every other member for its applied index
// (Forwarder.AppliedIndex, all at once, each within ctx and
// MemberQueryTimeout), and a member's lag is the node's commit index less
// the index it answered; that of a follower whose heartbeats fail, seen
// from the leader, is what the leader committed since they began failing
// (Heartbeats.FailingCommitIndex); any other is unknown, since raft
// v1.7.2 does not tell a leader how far a follower's log is. It fails
// with ctx's error, or ErrShutdown once the node closed; it blocks only
// for the members' answers.
func (n *Node) ClusterStatus(ctx context.Context) (httpapi.ClusterStatus, error) {
	if err := ctx.Err(); err != nil {
		return httpapi.ClusterStatus{}, err
	}
	m, err := n.Members()
	if err != nil {
		return httpapi.ClusterStatus{}, err
	}
	now := time.Now()
	st := httpapi.ClusterStatus{
		ID:                 string(m.Self),
		Address:            string(n.lead.localAddr),
		State:              stateName(m.State),
		Term:               m.Term,
		Leading:            m.Leading,
		LeaderID:           string(m.LeaderID),
		LeaderAddress:      string(m.LeaderAddress),
		CommitIndex:        m.CommitIndex,
		AppliedIndex:       m.AppliedIndex,
		PublishedIndex:     m.PublishedIndex,
		ConfigurationIndex: m.ConfigurationIndex,
		Members:            make([]httpapi.ClusterMember, 0, len(m.Members)),
	}
	leads := m.State == raft.Leader
	if last := n.raft.LastContact(); !leads && !last.IsZero() {
		st.LeaderContactMillis = millisSince(now, last)
	}
	for _, mb := range m.Members {
		cm := httpapi.ClusterMember{
			ID:       string(mb.ID),
			Address:  string(mb.Address),
			Suffrage: suffrageName(mb.Suffrage),
			State:    httpapi.ClusterUnknown,
			Leader:   mb.Leader,
			Self:     mb.Self,
		}
		hb := mb.Heartbeats
		switch {
		case mb.Self:
			cm.State = st.State
			applied := m.AppliedIndex
			cm.AppliedIndex = &applied
			lag := behind(m.CommitIndex, m.AppliedIndex)
			cm.Lag = &lag
		case mb.Leader:
			cm.State = httpapi.ClusterLeader
		case leads && hb.Failures > 0:
			cm.State = httpapi.ClusterUnreachable
			cm.HeartbeatFailures = hb.Failures
			lag := behind(m.CommitIndex, hb.FailingCommitIndex)
			cm.Lag = &lag
			if !hb.LastContact.IsZero() {
				cm.LastContactMillis = millisSince(now, hb.LastContact)
			}
		case leads && hb.Replicating:
			cm.State = httpapi.ClusterFollower
		}
		st.Members = append(st.Members, cm)
	}
	n.askApplied(ctx, &st)
	return st, nil
}

// MemberQueryTimeout bounds how long ClusterStatus waits for a member's
// answer: one that has not answered by then is left unknown.
const MemberQueryTimeout = time.Second

// askApplied asks every member of st but the node itself, and those the
// leader knows unreachable, for its applied index through the Forwarder,
// all at once, and sets the AppliedIndex and Lag of those that answer.
func (n *Node) askApplied(ctx context.Context, st *httpapi.ClusterStatus) {
	if n.fwd == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, MemberQueryTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range st.Members {
		cm := &st.Members[i]
		if cm.Self || cm.State == httpapi.ClusterUnreachable {
			continue
		}
		wg.Go(func() {
			applied, err := n.fwd.AppliedIndex(ctx, raft.ServerAddress(cm.Address))
			if err != nil {
				return
			}
			lag := behind(st.CommitIndex, applied)
			cm.AppliedIndex, cm.Lag = &applied, &lag
		})
	}
	wg.Wait()
}

// behind returns a less b, 0 if b is ahead.
func behind(a, b uint64) uint64 {
	if b >= a {
		return 0
	}
	return a - b
}

func millisSince(now, t time.Time) *int64 {
	ms := max(now.Sub(t).Milliseconds(), 0)
	return &ms
}

// stateName is a raft state in httpapi's words.
func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return httpapi.ClusterLeader
	case raft.Follower:
		return httpapi.ClusterFollower
	case raft.Candidate:
		return httpapi.ClusterCandidate
	case raft.Shutdown:
		return httpapi.ClusterShutdown
	}
	return strings.ToLower(s.String())
}

// suffrageName is a raft suffrage in httpapi's words.
func suffrageName(s raft.ServerSuffrage) string {
	switch s {
	case raft.Voter:
		return httpapi.ClusterVoter
	case raft.Nonvoter:
		return httpapi.ClusterNonvoter
	}
	return strings.ToLower(s.String())
}
