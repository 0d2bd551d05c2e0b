package replicate_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"time"

	"github.com/strata-db/strata/replicate"
)

// reconcile stands for a leader-only job's work: term is a fencing token
// for what it acts on outside the database.
func reconcile(ctx context.Context, term uint64) {}

// A leader-only job: every node of the cluster runs RunWhileLeader with
// the same function, and one node at a time runs it, until ctx ends.
func ExampleNode_RunWhileLeader() {
	var node *replicate.Node // replicate.NewNode's, on every node
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := node.RunWhileLeader(ctx, func(ctx context.Context) error {
		term, _ := replicate.LeaderTerm(ctx)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done(): // no longer the leader: return at once
				return ctx.Err()
			case <-tick.C:
				reconcile(ctx, term)
			}
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, replicate.ErrShutdown) {
		log.Print(err)
	}
}

// A readiness probe, and a graceful shutdown that hands the leadership
// over first.
func ExampleNode_Health() {
	var node *replicate.Node // replicate.NewNode's
	http.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if err := node.Health().Err(5 * time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	// On SIGTERM:
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}
