package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
)

// GET /v1/cluster: the replication cluster the served database belongs
// to, as its node sees it.
//
// This package knows nothing of replication (the root module never imports
// raft nor replicate, docs/architecture.md): the application hands the
// handler a function, Options.Cluster, that describes the cluster in the
// plain documents below. Package replicate's Node has one: its method
// ClusterStatus.

// The raft states a ClusterStatus and a ClusterMember name.
const (
	ClusterLeader    = "leader"
	ClusterFollower  = "follower"
	ClusterCandidate = "candidate"
	ClusterShutdown  = "shutdown"
	// ClusterUnreachable: the leader's heartbeats to the member fail (a
	// member's state, seen from the leader only).
	ClusterUnreachable = "unreachable"
	// ClusterUnknown: the node cannot tell the member's state (a member
	// other than itself and the leader, seen from a node that does not
	// lead).
	ClusterUnknown = "unknown"
)

// The suffrages of a ClusterMember.
const (
	// ClusterVoter: the member votes in elections and counts towards the
	// quorum that commits an entry.
	ClusterVoter = "voter"
	// ClusterNonvoter: the member receives the log but neither votes nor
	// counts towards a quorum.
	ClusterNonvoter = "nonvoter"
)

// ClusterStatus is the document GET /v1/cluster serves: the cluster as
// the node serving the request sees it, and the node's own state. A
// follower knows less than the leader: only the leader hears from the
// other members (ClusterMember says what each field holds where).
type ClusterStatus struct {
	// ID and Address are the node's raft server ID and address.
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
	// State is the node's raft state: ClusterLeader, ClusterFollower,
	// ClusterCandidate or ClusterShutdown.
	State string `json:"state"`
	// Term is the node's raft term.
	Term uint64 `json:"term"`
	// Leading: the node leads and is ready to take writes in Term (it
	// applied every entry of earlier terms).
	Leading bool `json:"leading,omitempty"`
	// LeaderID and LeaderAddress are the leader's as the node knows it;
	// empty when it knows none.
	LeaderID      string `json:"leaderId,omitempty"`
	LeaderAddress string `json:"leaderAddress,omitempty"`
	// LeaderContactMillis is, on a node that does not lead, how long ago
	// its leader last contacted it, in milliseconds; absent on the leader
	// and on a node no leader ever contacted.
	LeaderContactMillis *int64 `json:"leaderContactMillis,omitempty"`
	// CommitIndex is the highest log index the node knows committed;
	// AppliedIndex the last it applied to its database; PublishedIndex
	// the index up to which what it applied is visible to reads.
	CommitIndex    uint64 `json:"commitIndex"`
	AppliedIndex   uint64 `json:"appliedIndex"`
	PublishedIndex uint64 `json:"publishedIndex"`
	// ConfigurationIndex is the log index of the configuration Members
	// come from (the latest, which may not be committed yet).
	ConfigurationIndex uint64 `json:"configurationIndex"`
	// Members are the servers of the configuration, in its order.
	Members []ClusterMember `json:"members"`
}

// ClusterMember is one server of the cluster's configuration, in a
// ClusterStatus.
//
// What the node knows of another member depends on its role. A leader
// knows, of each follower, whether it answers its heartbeats; raft (as of
// hashicorp/raft v1.7.2) keeps each follower's replication progress (the
// index it matched, its last contact while it answers) to itself, so a
// member's applied index is known where the member tells it: a node that
// can reach the others (package replicate's Forwarder) asks each for it
// when it builds the status. Lag is therefore derived, where it can be,
// from what the node knows:
//
//   - for the node itself: its CommitIndex less its AppliedIndex, the
//     committed entries it has yet to apply;
//   - for a member that answered: the node's CommitIndex less the
//     member's AppliedIndex, as the member told it (0 if the member is
//     ahead): exact to the time of the question;
//   - for a follower whose heartbeats fail, seen from the leader: the
//     entries the leader committed since they began failing, which the
//     follower cannot have if it heard nothing since (a partition), so a
//     lower bound of its lag;
//   - for any other member: unknown (absent).
type ClusterMember struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Suffrage is ClusterVoter or ClusterNonvoter.
	Suffrage string `json:"suffrage"`
	// State is the member's state as the node knows it: the node's own
	// for itself, ClusterLeader for the leader; seen from the leader,
	// ClusterFollower for a follower that answers its heartbeats and
	// ClusterUnreachable for one that does not; ClusterUnknown otherwise.
	State string `json:"state"`
	// Leader: the node takes the member for the leader. Self: the member
	// is the node.
	Leader bool `json:"leader,omitempty"`
	Self   bool `json:"self,omitempty"`
	// AppliedIndex is the last log index the member applied, where the
	// node knows it: for itself, and for a member it asked that answered.
	AppliedIndex *uint64 `json:"appliedIndex,omitempty"`
	// Lag is how many committed entries the member has yet to apply,
	// where the node can tell (see ClusterMember); absent otherwise.
	Lag *uint64 `json:"lag,omitempty"`
	// HeartbeatFailures counts the leader's heartbeats to the member that
	// failed in a row (seen from the leader; 0 once one succeeds).
	HeartbeatFailures uint64 `json:"heartbeatFailures,omitempty"`
	// LastContactMillis is how long ago the member last answered the
	// leader, in milliseconds, for a member whose heartbeats fail (seen
	// from the leader); absent otherwise: raft tells the time of a
	// follower's last answer only when a heartbeat fails.
	LastContactMillis *int64 `json:"lastContactMillis,omitempty"`
}

// getCluster serves Options.Cluster's status. A handler without one
// serves ErrNotClusterMember; the function's own error is served wrapped
// in ErrClusterUnavailable, unless it wraps ErrNotClusterMember.
func (h *Handler) getCluster(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	if h.opts.Cluster == nil {
		return fmt.Errorf("%w: the handler has no Options.Cluster", ErrNotClusterMember)
	}
	st, err := h.opts.Cluster(r.Context())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrClusterUnavailable, err)
	}
	if st.Members == nil {
		st.Members = []ClusterMember{}
	}
	return writeJSON(w, st)
}
