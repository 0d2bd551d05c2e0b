package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

func ptr[T any](v T) *T { return &v }

// threeMembers is a leader's view of a three-member cluster: itself, a
// follower, and a nonvoter cut off for 1.5s.
func threeMembers(context.Context) (httpapi.ClusterStatus, error) {
	return httpapi.ClusterStatus{
		ID: "n1", Address: "10.0.0.1:7000", State: httpapi.ClusterLeader, Term: 4, Leading: true,
		LeaderID: "n1", LeaderAddress: "10.0.0.1:7000",
		CommitIndex: 120, AppliedIndex: 118, PublishedIndex: 117, ConfigurationIndex: 3,
		Members: []httpapi.ClusterMember{
			{ID: "n1", Address: "10.0.0.1:7000", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterLeader, Leader: true, Self: true,
				AppliedIndex: ptr[uint64](118), Lag: ptr[uint64](2)},
			{ID: "n2", Address: "10.0.0.2:7000", Suffrage: httpapi.ClusterVoter, State: httpapi.ClusterFollower},
			{ID: "n3", Address: "10.0.0.3:7000", Suffrage: httpapi.ClusterNonvoter, State: httpapi.ClusterUnreachable,
				Lag: ptr[uint64](40), HeartbeatFailures: 7, LastContactMillis: ptr[int64](1500)},
		},
	}, nil
}

// serveInspector serves an empty database with the inspector and opts,
// and returns its URL.
func serveInspector(t *testing.T, opts httpapi.Options) string {
	opts.UI = true
	opts.SampleInterval = 200 * time.Millisecond
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h := httpapi.New(strata.New(), opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	return srv.URL
}

// TestInspectorCluster: the overview of a cluster member shows the
// Cluster panel once /v1/cluster answers: the node's line, and a row per
// member with the leader and this node marked, "-" where unknown; the
// overview of a database that is no member has no panel, and its script
// does not ask for one. The console stays clean.
func TestInspectorCluster(t *testing.T) {
	member := serveInspector(t, httpapi.Options{Cluster: threeMembers})
	alone := serveInspector(t, httpapi.Options{})
	ctx, console := browser(t)

	do(t, ctx, "overview of a member", chromedp.Navigate(member+"/ui/"))
	waitJS(t, ctx, "the cluster panel", `!document.getElementById("cluster").hidden && document.querySelectorAll("#cluster-members tbody tr").length === 3`)
	node := run(t, ctx, "the node's line", chromedp.Evaluate[string](`document.getElementById("cluster-node").textContent`))
	if node != "Node n1: leader, term 4; the leader. Commit index 120, applied 118, published 117." {
		t.Errorf("the node's line reads %q", node)
	}
	rows := run(t, ctx, "the rows", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#cluster-members tbody tr")].map((tr) => [...tr.cells].map((td) => td.textContent).join("|"))`))
	want := []string{
		"n1leaderthis node|10.0.0.1:7000|voter|leader|118|2|-",
		"n2|10.0.0.2:7000|voter|follower|-|-|-",
		"n3|10.0.0.3:7000|nonvoter|unreachable (7 failed heartbeats)|-|40|1.5s ago",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the members read\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	leaders := run(t, ctx, "the leader's row", chromedp.Evaluate[string](
		`[...document.querySelectorAll("#cluster-members tr.leader")].map((tr) => tr.dataset.member).join(",")`))
	if leaders != "n1" {
		t.Errorf("the rows marked leader: %q", leaders)
	}
	if vis := run(t, ctx, "the panel's display", chromedp.Evaluate[string](`getComputedStyle(document.getElementById("cluster")).display`)); vis == "none" {
		t.Error("the shown panel is not displayed")
	}
	screenshot(t, ctx, "overview-cluster")

	do(t, ctx, "overview of a database that is no member", chromedp.Navigate(alone+"/ui/"))
	// The first round of the overview's loop is done once the status line
	// is set.
	waitJS(t, ctx, "the overview to refresh", `document.getElementById("status").textContent.startsWith("updated")`)
	if n := run(t, ctx, "cluster panels", chromedp.Evaluate[int](`document.querySelectorAll("#cluster, #cluster-members").length`)); n != 0 {
		t.Errorf("the overview of a database that is no member has %d cluster elements", n)
	}
	asked := run(t, ctx, "requests for /v1/cluster", chromedp.Evaluate[int](
		`performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/v1/cluster")).length`))
	if asked != 0 {
		t.Errorf("the overview of a database that is no member asked for /v1/cluster %d times", asked)
	}
	screenshot(t, ctx, "overview-no-cluster")

	var problems []string
	for _, m := range console() {
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning {
			problems = append(problems, m.String())
		}
	}
	if len(problems) > 0 {
		t.Fatalf("the console logged:\n%s", strings.Join(problems, "\n"))
	}
}
