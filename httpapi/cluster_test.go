package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// threeMembers is a leader's status of a three-member cluster: a voter
// that follows, and a nonvoter cut off for 1.5s.
func threeMembers() ClusterStatus {
	return ClusterStatus{
		ID: "n1", Address: "10.0.0.1:7000", State: ClusterLeader, Term: 4, Leading: true,
		LeaderID: "n1", LeaderAddress: "10.0.0.1:7000",
		CommitIndex: 120, AppliedIndex: 118, PublishedIndex: 117, ConfigurationIndex: 3,
		Members: []ClusterMember{
			{ID: "n1", Address: "10.0.0.1:7000", Suffrage: ClusterVoter, State: ClusterLeader, Leader: true, Self: true,
				AppliedIndex: ptr[uint64](118), Lag: ptr[uint64](2)},
			{ID: "n2", Address: "10.0.0.2:7000", Suffrage: ClusterVoter, State: ClusterFollower},
			{ID: "n3", Address: "10.0.0.3:7000", Suffrage: ClusterNonvoter, State: ClusterUnreachable,
				Lag: ptr[uint64](40), HeartbeatFailures: 7, LastContactMillis: ptr[int64](1500)},
		},
	}
}

// TestCluster: GET /v1/cluster serves Options.Cluster's status, with the
// request's context, as the documented JSON: camel-case names, unknown
// indexes and contacts left out rather than zero. The summary says the
// endpoint answers.
func TestCluster(t *testing.T) {
	var sawRequestCtx bool
	f := newFixture(t, Options{Cluster: func(ctx context.Context) (ClusterStatus, error) {
		// The request's context carries its server.
		sawRequestCtx = ctx.Value(http.ServerContextKey) != nil
		return threeMembers(), nil
	}})
	r := f.get(t, "/v1/cluster")
	var got ClusterStatus
	r.decode(t, http.StatusOK, &got)
	if !reflect.DeepEqual(got, threeMembers()) {
		t.Fatalf("status\n%+v\nwant\n%+v", got, threeMembers())
	}
	if !sawRequestCtx {
		t.Error("Options.Cluster was not given the request's context")
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}

	// The wire names, as other clients read them.
	var raw struct {
		ID                 string           `json:"id"`
		State              string           `json:"state"`
		LeaderID           string           `json:"leaderId"`
		CommitIndex        uint64           `json:"commitIndex"`
		AppliedIndex       uint64           `json:"appliedIndex"`
		PublishedIndex     uint64           `json:"publishedIndex"`
		ConfigurationIndex uint64           `json:"configurationIndex"`
		Members            []map[string]any `json:"members"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.ID != "n1" || raw.State != "leader" || raw.LeaderID != "n1" || raw.CommitIndex != 120 ||
		raw.AppliedIndex != 118 || raw.PublishedIndex != 117 || raw.ConfigurationIndex != 3 || len(raw.Members) != 3 {
		t.Fatalf("wire status %s", r.body)
	}
	wantKeys := [][]string{
		{"address", "appliedIndex", "id", "lag", "leader", "self", "state", "suffrage"},
		{"address", "id", "state", "suffrage"},
		{"address", "heartbeatFailures", "id", "lag", "lastContactMillis", "state", "suffrage"},
	}
	for i, m := range raw.Members {
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		if !equalSets(keys, wantKeys[i]) {
			t.Errorf("member %d has the members %v, want %v", i, keys, wantKeys[i])
		}
	}
	if raw.Members[2]["suffrage"] != "nonvoter" || raw.Members[2]["lastContactMillis"] != 1500.0 {
		t.Errorf("member n3 on the wire: %v", raw.Members[2])
	}
	if strings.Contains(string(r.body), "leaderContactMillis") {
		t.Errorf("a leader's status carries a leader contact: %s", r.body)
	}

	var s Summary
	f.get(t, "/v1/").decode(t, http.StatusOK, &s)
	if !s.Cluster {
		t.Error("the summary of a cluster member says it is none")
	}
}

func equalSets(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestClusterNotMember: without Options.Cluster, GET /v1/cluster is a 404
// problem naming ErrNotClusterMember, and the summary leaves cluster out;
// a provider's own ErrNotClusterMember is served the same.
func TestClusterNotMember(t *testing.T) {
	f := newFixture(t, Options{})
	p := f.get(t, "/v1/cluster").problem(t, http.StatusNotFound, "httpapi.ErrNotClusterMember")
	if !errors.Is(ErrorByName(p.Error), ErrNotClusterMember) || p.Title != "not a cluster member" {
		t.Errorf("problem %+v", p)
	}
	r := f.get(t, "/v1/")
	var s Summary
	r.decode(t, http.StatusOK, &s)
	if s.Cluster || strings.Contains(string(r.body), `"cluster"`) {
		t.Errorf("the summary of a handler without Cluster: %s", r.body)
	}
	f.do(t, "POST", "/v1/cluster", nil).problem(t, http.StatusMethodNotAllowed, "httpapi.ErrMethodNotAllowed")

	removed := newFixture(t, Options{Cluster: func(context.Context) (ClusterStatus, error) {
		return ClusterStatus{}, errors.Join(errors.New("removed from the configuration"), ErrNotClusterMember)
	}})
	removed.get(t, "/v1/cluster").problem(t, http.StatusNotFound, "httpapi.ErrNotClusterMember")
}

// TestClusterUnavailable: a provider's error is a 503 problem with its
// text in the detail; an empty membership is served as [] (never null).
func TestClusterUnavailable(t *testing.T) {
	fail := true
	f := newFixture(t, Options{Cluster: func(context.Context) (ClusterStatus, error) {
		if fail {
			return ClusterStatus{}, errors.New("node closed")
		}
		return ClusterStatus{ID: "n1", State: ClusterShutdown}, nil
	}})
	r := f.get(t, "/v1/cluster")
	p := r.problem(t, http.StatusServiceUnavailable, "httpapi.ErrClusterUnavailable")
	if !strings.Contains(p.Detail, "node closed") || r.header.Get("Retry-After") == "" {
		t.Errorf("problem %+v, headers %v", p, r.header)
	}
	fail = false
	r = f.get(t, "/v1/cluster")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"members":[]`) {
		t.Errorf("empty membership: %d %s", r.status, r.body)
	}
}

// TestClusterAccess: GET /v1/cluster asks Authorize for read access, and
// a refusal is served before the provider runs.
func TestClusterAccess(t *testing.T) {
	var asked []Access
	calls := 0
	f := newFixture(t, Options{
		Authorize: func(r *http.Request, a Access) error {
			asked = append(asked, a)
			if r.Header.Get("Authorization") != "Bearer ok" {
				return errors.New("no token")
			}
			return nil
		},
		Cluster: func(context.Context) (ClusterStatus, error) {
			calls++
			return threeMembers(), nil
		},
	})
	f.get(t, "/v1/cluster").problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
	if calls != 0 {
		t.Fatalf("the provider ran %d times for a refused request", calls)
	}
	if r := f.get(t, "/v1/cluster", "Authorization", "Bearer ok"); r.status != http.StatusOK || calls != 1 {
		t.Fatalf("authorized: %d %s, %d calls", r.status, r.body, calls)
	}
	if len(asked) != 2 || asked[0] != AccessRead || asked[1] != AccessRead {
		t.Fatalf("asked %v, want read twice", asked)
	}
	// Allow without read access refuses it too.
	g := newFixture(t, Options{Authorize: Allow(AccessWatch), Cluster: func(context.Context) (ClusterStatus, error) {
		t.Error("the provider ran for a refused request")
		return ClusterStatus{}, nil
	}})
	g.get(t, "/v1/cluster").problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
}

// TestClusterPanel: the inspector's overview carries the Cluster panel,
// hidden until its script hears from /v1/cluster, only when the handler
// has Options.Cluster.
func TestClusterPanel(t *testing.T) {
	with := newFixture(t, Options{UI: true, Cluster: func(context.Context) (ClusterStatus, error) { return threeMembers(), nil }})
	if r := with.get(t, "/ui/"); r.status != http.StatusOK || !strings.Contains(string(r.body), `<section class="cluster" id="cluster" hidden>`) {
		t.Errorf("the overview of a cluster member: %d\n%s", r.status, r.body)
	}
	without := newFixture(t, Options{UI: true})
	if r := without.get(t, "/ui/"); r.status != http.StatusOK || strings.Contains(string(r.body), `id="cluster"`) {
		t.Errorf("the overview of a database that is no cluster member: %d\n%s", r.status, r.body)
	}
}
