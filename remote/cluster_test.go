package remote

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/strata-db/strata/httpapi"
)

// TestCluster: Cluster decodes the server's GET /v1/cluster into the
// status its Options.Cluster returned; a server without one is
// ErrNotClusterMember, one whose provider fails ErrClusterUnavailable,
// both as *Error with the server's status.
func TestCluster(t *testing.T) {
	lag, applied, contact := uint64(9), uint64(40), int64(2500)
	want := httpapi.ClusterStatus{
		ID: "n2", Address: "a2", State: httpapi.ClusterLeader, Term: 3, Leading: true, LeaderID: "n2", LeaderAddress: "a2",
		CommitIndex: 41, AppliedIndex: 40, PublishedIndex: 40, ConfigurationIndex: 1,
		Members: []httpapi.ClusterMember{
			{ID: "n1", Address: "a1", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterUnreachable,
				Lag: &lag, HeartbeatFailures: 4, LastContactMillis: &contact},
			{ID: "n2", Address: "a2", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterLeader, Leader: true, Self: true, AppliedIndex: &applied},
			{ID: "n3", Address: "a3", Suffrage: httpapi.ClusterNonvoter, State: httpapi.ClusterFollower},
		},
	}
	s := newServer(t, httpapi.Options{Cluster: func(context.Context) (httpapi.ClusterStatus, error) { return want, nil }})
	got, err := s.client(t).Cluster(t.Context())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Cluster: %+v, %v\nwant %+v", got, err, want)
	}

	none := newServer(t, httpapi.Options{})
	_, err = none.client(t).Cluster(t.Context())
	var e *Error
	if !errors.Is(err, httpapi.ErrNotClusterMember) || !errors.As(err, &e) || e.Status != 404 {
		t.Fatalf("Cluster of a server that is no member: %v", err)
	}

	failing := newServer(t, httpapi.Options{Cluster: func(context.Context) (httpapi.ClusterStatus, error) {
		return httpapi.ClusterStatus{}, errors.New("node closed")
	}})
	_, err = failing.client(t).Cluster(t.Context())
	if !errors.Is(err, httpapi.ErrClusterUnavailable) || !errors.As(err, &e) || e.Status != 503 {
		t.Fatalf("Cluster of a failing provider: %v", err)
	}
}
