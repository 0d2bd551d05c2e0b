package stratacli

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-db/strata/httpapi"
)

func ptr[T any](v T) *T { return &v }

// fixedCluster is a follower's view of a three-member cluster, which the
// server's Options.Cluster returns.
func fixedCluster(context.Context) (httpapi.ClusterStatus, error) {
	return httpapi.ClusterStatus{
		ID: "n2", Address: "10.0.0.2:7000", State: httpapi.ClusterFollower, Term: 7,
		LeaderID: "n1", LeaderAddress: "10.0.0.1:7000", LeaderContactMillis: ptr[int64](40),
		CommitIndex: 230, AppliedIndex: 228, PublishedIndex: 228, ConfigurationIndex: 5,
		Members: []httpapi.ClusterMember{
			{ID: "n1", Address: "10.0.0.1:7000", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterLeader, Leader: true},
			{ID: "n2", Address: "10.0.0.2:7000", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterFollower, Self: true,
				AppliedIndex: ptr[uint64](228), Lag: ptr[uint64](2)},
			{ID: "n3", Address: "10.0.0.3:7000", Suffrage: httpapi.ClusterNonvoter, State: httpapi.ClusterUnreachable,
				Lag: ptr[uint64](17), HeartbeatFailures: 3, LastContactMillis: ptr[int64](1500)},
		},
	}, nil
}

// TestCluster: strata cluster ADDR prints the node and one row per member
// (ID, address, suffrage, state, applied index, lag, last contact, "-"
// where unknown); --json and -o json write the status; --addr works as
// ADDR.
func TestCluster(t *testing.T) {
	s := newAPIServer(t, httpapi.Options{Cluster: fixedCluster})
	out, errOut, code := runCmd(t, nil, "cluster", s.srv.URL)
	if code != 0 || errOut != "" {
		t.Fatalf("cluster: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	want := []string{
		"node n2: follower, term 7; leader n1 at 10.0.0.1:7000, last contact 40ms ago",
		"commit index 230, applied 228, published 228",
		"",
		"ID         ADDRESS        SUFFRAGE  STATE                              APPLIED  LAG  LAST CONTACT",
		"n1         10.0.0.1:7000  voter     leader                             -        -    40ms ago",
		"n2 (self)  10.0.0.2:7000  voter     follower                           228      2    -",
		"n3         10.0.0.3:7000  nonvoter  unreachable (3 failed heartbeats)  -        17   1.5s ago",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("cluster printed\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}

	for _, args := range [][]string{{"cluster", s.srv.URL, "--json"}, {"cluster", "--addr", s.srv.URL, "-o", "json"}} {
		out, errOut, code := runCmd(t, nil, args...)
		var got RemoteCluster
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("%v: exit %d, %q, stderr %q", args, code, out, errOut)
		}
		if got.ID != "n2" || got.LeaderID != "n1" || got.CommitIndex != 230 || len(got.Members) != 3 ||
			got.LeaderContactMillis == nil || *got.LeaderContactMillis != 40 {
			t.Errorf("%v: %+v", args, got)
		}
		n3 := got.Members[2]
		if n3.State != "unreachable" || n3.Lag == nil || *n3.Lag != 17 || n3.HeartbeatFailures != 3 ||
			n3.LastContactMillis == nil || *n3.LastContactMillis != 1500 || n3.AppliedIndex != nil || n3.Suffrage != "nonvoter" {
			t.Errorf("%v: n3 %+v", args, n3)
		}
		if !strings.Contains(out, `"leader_contact_ms": 40`) || strings.Contains(out, `"applied_index": null`) {
			t.Errorf("%v: the JSON's names: %s", args, out)
		}
	}
}

// TestClusterErrors: a server that is no cluster member exits 4 and says
// so; one that cannot tell now (its provider fails) exits 5; a command
// line without an address, with a store, with two addresses, or with
// --json and another format is a usage error; a Dialer whose Remote
// cannot describe clusters says so.
func TestClusterErrors(t *testing.T) {
	none := newAPIServer(t, httpapi.Options{})
	_, errOut, code := runCmd(t, nil, "cluster", none.srv.URL)
	if code != ExitNotFound || !strings.Contains(errOut, "is not a member of a replication cluster") {
		t.Errorf("a server that is no member: exit %d, %q", code, errOut)
	}
	failing := newAPIServer(t, httpapi.Options{Cluster: func(context.Context) (httpapi.ClusterStatus, error) {
		return httpapi.ClusterStatus{}, errors.New("node closed")
	}})
	if _, errOut, code := runCmd(t, nil, "cluster", failing.srv.URL); code != ExitConnect || !strings.Contains(errOut, "node closed") {
		t.Errorf("a failing provider: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{
		{"cluster"},
		{"cluster", "--dir", t.TempDir()},
		{"cluster", none.srv.URL, "--addr", none.srv.URL},
		{"cluster", none.srv.URL, "--json", "-o", "yaml"},
		{"cluster", "ftp://db"},
		{"cluster", "a", "b"},
	} {
		if _, errOut, code := runCmd(t, nil, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	plain := WithRemote(func(ctx context.Context, addr string) (Remote, error) { return plainRemote{}, nil })
	if _, errOut, code := runCmd(t, []Option{plain}, "cluster", "http://db"); code != ExitUsage || !strings.Contains(errOut, "ClusterRemote") {
		t.Errorf("a Remote without Cluster: exit %d, %q", code, errOut)
	}
}

// plainRemote is a Remote with no Cluster method.
type plainRemote struct{ Remote }

func (plainRemote) Close() error { return nil }
