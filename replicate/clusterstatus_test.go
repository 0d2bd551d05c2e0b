package replicate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/httpapi"
)

// serveCluster serves each node of c with httpapi, Options.Cluster its
// ClusterStatus, and returns a function that reads a node's GET
// /v1/cluster.
func serveCluster(t *testing.T, c *rcluster) func(nd *rnode) (int, httpapi.ClusterStatus) {
	t.Helper()
	srvs := map[*rnode]*httptest.Server{}
	for _, nd := range c.nodes {
		h := httpapi.New(nd.db, httpapi.Options{
			Cluster: nd.node.ClusterStatus,
			Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		srv := httptest.NewServer(h)
		srvs[nd] = srv
		t.Cleanup(func() {
			srv.CloseClientConnections()
			h.Close()
			srv.Close()
		})
	}
	return func(nd *rnode) (int, httpapi.ClusterStatus) {
		t.Helper()
		resp, err := srvs[nd].Client().Get(srvs[nd].URL + "/v1/cluster")
		must(t, err)
		defer resp.Body.Close()
		var st httpapi.ClusterStatus
		if resp.StatusCode == http.StatusOK {
			must(t, json.NewDecoder(resp.Body).Decode(&st))
		}
		return resp.StatusCode, st
	}
}

// member returns the member id of st.
func member(t *testing.T, st httpapi.ClusterStatus, nd *rnode) httpapi.ClusterMember {
	t.Helper()
	for _, m := range st.Members {
		if m.ID == string(nd.id) {
			return m
		}
	}
	t.Fatalf("%s is not a member of %+v", nd.id, st)
	return httpapi.ClusterMember{}
}

func fmtLag(lag *uint64) string {
	if lag == nil {
		return "unknown"
	}
	return fmt.Sprint(*lag)
}

// TestClusterStatus: a real three-node cluster served through httpapi.
// The leader's /v1/cluster names it leader with its applied index and its
// followers following, lag unknown; a follower's names the leader, its
// last contact, and leaves the other follower unknown. A partitioned
// follower shows, from the leader, as unreachable with its failures, its
// last contact, and a lag of at least the entries committed since; its
// own status trails the leader's applied index by as much. Healed, it
// follows again; closed, its status is a 503.
func TestClusterStatus(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	get := serveCluster(t, c)
	ld := c.waitLeading(nil)
	f, g := c.other(ld), c.other(ld, c.other(ld))
	ctx := context.Background()
	_, err := put(ctx, ld, 1, "x")
	must(t, err)
	target := c.converge()

	code, st := get(ld)
	if code != http.StatusOK || st.ID != string(ld.id) || st.Address != string(ld.addr) || st.State != httpapi.ClusterLeader ||
		!st.Leading || st.LeaderID != string(ld.id) || st.LeaderContactMillis != nil || st.Term == 0 ||
		st.AppliedIndex < target || st.CommitIndex < st.AppliedIndex || st.PublishedIndex == 0 || len(st.Members) != 3 {
		t.Fatalf("the leader's status (%d): %+v", code, st)
	}
	self := member(t, st, ld)
	if !self.Self || !self.Leader || self.State != httpapi.ClusterLeader || self.Suffrage != httpapi.ClusterVoter ||
		self.AppliedIndex == nil || *self.AppliedIndex != st.AppliedIndex || self.Lag == nil || *self.Lag != st.CommitIndex-st.AppliedIndex {
		t.Errorf("the leader's own row: %+v", self)
	}
	for _, nd := range []*rnode{f, g} {
		m := member(t, st, nd)
		if m.State != httpapi.ClusterFollower || m.Leader || m.Self || m.Address != string(nd.addr) ||
			m.Lag != nil || m.AppliedIndex != nil || m.HeartbeatFailures != 0 || m.LastContactMillis != nil {
			t.Errorf("the leader's row of %s: %+v (lag %s)", nd.id, m, fmtLag(m.Lag))
		}
	}

	code, st = get(f)
	if code != http.StatusOK || st.ID != string(f.id) || st.State != httpapi.ClusterFollower || st.Leading ||
		st.LeaderID != string(ld.id) || st.LeaderAddress != string(ld.addr) || st.LeaderContactMillis == nil ||
		st.AppliedIndex < target {
		t.Fatalf("a follower's status (%d): %+v", code, st)
	}
	if m := member(t, st, ld); !m.Leader || m.State != httpapi.ClusterLeader || m.AppliedIndex != nil {
		t.Errorf("the follower's row of the leader: %+v", m)
	}
	if m := member(t, st, g); m.State != httpapi.ClusterUnknown || m.Lag != nil {
		t.Errorf("the follower's row of the other follower: %+v", m)
	}
	if m := member(t, st, f); !m.Self || m.State != httpapi.ClusterFollower || m.AppliedIndex == nil || *m.AppliedIndex != st.AppliedIndex {
		t.Errorf("the follower's own row: %+v", m)
	}

	// f is cut off: once the leader sees its heartbeats fail, what it
	// commits is f's lag.
	c.partition(f)
	waitFor(t, "the leader to see the follower unreachable", func() bool {
		_, st := get(ld)
		return member(t, st, f).State == httpapi.ClusterUnreachable
	})
	// Nothing was committed since the cut: no lag yet.
	_, st = get(ld)
	cut := st.CommitIndex
	if m := member(t, st, f); m.Lag == nil || *m.Lag != 0 {
		t.Errorf("the cut-off follower's lag before any write: %s, commit index %d", fmtLag(m.Lag), cut)
	}
	const writes = 5
	for i := range writes {
		_, err := put(ctx, ld, uint64(10+i), "y")
		must(t, err)
	}
	_, st = get(ld)
	m := member(t, st, f)
	if m.HeartbeatFailures == 0 || m.LastContactMillis == nil || m.Lag == nil || *m.Lag < writes || *m.Lag != st.CommitIndex-cut {
		t.Errorf("the leader's row of the cut-off follower: %+v (lag %s), commit index %d, %d at the cut", m, fmtLag(m.Lag), st.CommitIndex, cut)
	}
	if m := member(t, st, g); m.State != httpapi.ClusterFollower || m.Lag != nil {
		t.Errorf("the leader's row of the connected follower: %+v", m)
	}
	leaderApplied := st.AppliedIndex
	_, fst := get(f)
	if fst.AppliedIndex+writes > leaderApplied {
		t.Errorf("the cut-off follower applied %d, the leader %d after %d writes", fst.AppliedIndex, leaderApplied, writes)
	}

	c.heal(f)
	waitFor(t, "the follower to follow again", func() bool {
		_, st := get(ld)
		m := member(t, st, f)
		return m.State == httpapi.ClusterFollower && m.Lag == nil && m.LastContactMillis == nil
	})
	waitFor(t, "the follower to catch up", func() bool {
		_, st := get(f)
		return st.AppliedIndex >= leaderApplied
	})

	c.stop(g)
	if code, _ := get(g); code != http.StatusServiceUnavailable {
		t.Errorf("a closed node's status: %d, want 503", code)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ld.node.ClusterStatus(cctx); err != context.Canceled {
		t.Errorf("ClusterStatus with a cancelled context: %v", err)
	}
}

// TestClusterStatusAsksMembers: a node with a Forwarder asks every other
// member for its applied index, so that its status shows each member's
// applied index and lag, exact to the question: equal after the cluster
// converged, and, for a follower whose FSM is held while the leader
// commits, that follower's stuck applied index and a lag of at least the
// entries committed since. A member that is closed is left unknown.
func TestClusterStatusAsksMembers(t *testing.T) {
	t.Parallel()
	forEachForwarder(t, func(t *testing.T, mode string) {
		t.Parallel()
		// held is 1 + the index of the node whose FSM waits at apply
		// until release is closed, 0 for none.
		var held atomic.Int32
		release := make(chan struct{})
		holds := make([]func(holdPoint, int), 3)
		for i := range holds {
			holds[i] = func(p holdPoint, _ int) {
				if p == holdApply && held.Load() == int32(i+1) {
					<-release
				}
			}
		}
		c, _ := newForwardCluster(t, 3, mode, holds...)
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		ctx := context.Background()
		ld := c.leader()
		fs := c.followers(ld)
		f, g := fs[0], fs[1]
		_, err := put(ctx, ld, 1, "x")
		must(t, err)
		c.converge()

		check := func(view *rnode, nd *rnode, st httpapi.ClusterStatus) httpapi.ClusterMember {
			t.Helper()
			m := member(t, st, nd)
			if m.AppliedIndex == nil || m.Lag == nil {
				t.Fatalf("%s's status of %s: applied %v, lag %s; want both", view.id, nd.id, m.AppliedIndex, fmtLag(m.Lag))
			}
			if *m.Lag != behind(st.CommitIndex, *m.AppliedIndex) {
				t.Errorf("%s's status of %s: lag %d, applied %d, commit index %d", view.id, nd.id, *m.Lag, *m.AppliedIndex, st.CommitIndex)
			}
			return m
		}
		for _, view := range c.nodes {
			st, err := view.node.ClusterStatus(ctx)
			must(t, err)
			for _, nd := range c.nodes {
				if m := check(view, nd, st); *m.AppliedIndex != nd.node.AppliedIndex() {
					t.Errorf("%s's status of %s: applied %d, the node applied %d", view.id, nd.id, *m.AppliedIndex, nd.node.AppliedIndex())
				}
			}
		}

		// f's FSM stops at its next entry; the leader commits on with g.
		for i, nd := range c.nodes {
			if nd == f {
				held.Store(int32(i + 1))
			}
		}
		stuck := f.node.AppliedIndex()
		const writes = 5
		for i := range writes {
			_, err := put(ctx, ld, uint64(10+i), "y")
			must(t, err)
		}
		st, err := ld.node.ClusterStatus(ctx)
		must(t, err)
		if m := check(ld, f, st); *m.AppliedIndex != stuck || *m.Lag < writes {
			t.Errorf("the leader's status of the held follower: applied %d (held at %d), lag %d after %d writes", *m.AppliedIndex, stuck, *m.Lag, writes)
		}
		check(ld, g, st)

		held.Store(0)
		close(release)
		released = true
		c.converge()

		c.stop(g)
		st, err = ld.node.ClusterStatus(ctx)
		must(t, err)
		// Unknown; or, once the leader saw its heartbeats fail, the
		// lower bound of an unreachable member's lag.
		if m := member(t, st, g); m.AppliedIndex != nil || m.Lag != nil && m.State != httpapi.ClusterUnreachable {
			t.Errorf("the leader's status of a closed member: %s, applied %v, lag %s; want unknown", m.State, m.AppliedIndex, fmtLag(m.Lag))
		}
		check(ld, f, st)
	})
}
