package replicated_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata/stratahive/replicated"
)

// TestLeaderJobEnds: on a node that leads alone, a leader-only job that
// returns nil is done for the term (health "done in term N"); one that
// fails is Degraded with its error, and not run again in the term.
func TestLeaderJobEnds(t *testing.T) {
	_, trans := raft.NewInmemTransport("solo")
	var health *cell.SimpleHealth
	boom := errors.New("boom")
	var fails atomic.Int32
	h := soloHive(map[string]any{
		"strata-raft-id": "n1", "strata-raft-node-number": 1, "strata-raft-dir": t.TempDir(),
		"strata-raft-bootstrap": true,
	}, &replicated.Options{Transport: trans, Raft: testRaft},
		job.Cell,
		cell.Provide(func() (cell.Health, *cell.SimpleHealth) {
			h, sh := cell.NewSimpleHealth()
			health = sh
			return h, sh
		}),
		cell.Module("jobs", "Leader-only jobs of the test",
			cell.Provide(job.Registry.NewGroup),
			replicated.LeaderJob("once", func(context.Context, cell.Health) error { return nil }),
			replicated.LeaderJob("fails", func(context.Context, cell.Health) error {
				fails.Add(1)
				return boom
			}),
		),
	)
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	defer func() { must(t, h.Stop(log, context.Background())) }()
	scope := func(name string) string {
		s := health.GetChild(name)
		if s == nil {
			return ""
		}
		s.Lock()
		defer s.Unlock()
		out := string(s.Level) + " " + s.Status
		if s.Error != nil {
			out += " error=" + s.Error.Error()
		}
		return out
	}
	waitFor(t, "the job once done", func() bool { return strings.HasPrefix(scope("job-once"), "OK done in term ") })
	waitFor(t, "the job fails degraded", func() bool {
		s := scope("job-fails")
		return strings.HasPrefix(s, "Degraded failed in term ") && strings.HasSuffix(s, "error=boom")
	})
	// The node leads on in its term: neither job runs again.
	time.Sleep(200 * time.Millisecond)
	if n := fails.Load(); n != 1 {
		t.Errorf("the failing job ran %d times in one term", n)
	}
	if s := scope("job-once"); !strings.HasPrefix(s, "OK done in term ") {
		t.Errorf("the job once: %q", s)
	}
}
