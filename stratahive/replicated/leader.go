package replicated

import (
	"context"
	"errors"
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata/replicate"
)

// ErrNotStarted is the error of a leader-only job started before the
// node: a job.Group that is not started after the Cell (a group of a
// cell that does not depend on the Replica) can start one so.
var ErrNotStarted = errors.New("replicated: the node is not started")

// LeaderFunc is a leader-only job's function: it runs while this node
// leads, and must return soon after ctx is cancelled, which it is when the
// node stops leading (replicate.Node.RunWhileLeader). replicate.LeaderTerm
// gives ctx's term, a fencing token for effects outside the database.
type LeaderFunc func(ctx context.Context, health cell.Health) error

// LeaderJob returns a one-shot job, for a job.Group, that runs fn each
// time this node becomes the leader, with a context cancelled when it
// stops leading, the hive stops, or the node closes
// (replicate.Node.RunWhileLeader, which says how raft bounds the moment
// two nodes may both believe they lead). Added on every node of a
// cluster, it runs on one node at a time, and moves with the leadership.
// fn runs at most once per term.
//
// The job's health (scope "job-<name>") is OK "standby" while the node
// does not lead, OK "leading in term N" while fn runs, OK "done in term
// N" once fn returned nil while the node still leads, and Degraded
// "failed in term N", with fn's error, once it returned an error while
// the node still leads; fn may report its own. Either way fn runs again
// the next term the node leads. The job ends when the hive stops or the
// node closes.
func (r *Replica) LeaderJob(name string, fn LeaderFunc) job.Job {
	return job.OneShot(name, func(ctx context.Context, health cell.Health) error {
		n := r.Node()
		if n == nil {
			return fmt.Errorf("leader job %s: %w", name, ErrNotStarted)
		}
		health.OK("standby")
		for {
			var term uint64
			err := n.RunWhileLeader(ctx, func(ctx context.Context) error {
				term, _ = replicate.LeaderTerm(ctx)
				health.OK(fmt.Sprintf("leading in term %d", term))
				err := fn(ctx, health)
				switch {
				case ctx.Err() != nil:
					health.OK("standby")
				case err == nil:
					health.OK(fmt.Sprintf("done in term %d", term))
				}
				return err
			})
			if ctx.Err() != nil || errors.Is(err, replicate.ErrShutdown) {
				return nil
			}
			// fn failed while the node led in term: again once that
			// leadership is over.
			health.Degraded(fmt.Sprintf("failed in term %d", term), err)
			if !waitTermOver(ctx, n, term) {
				return nil
			}
		}
	})
}

// waitTermOver waits until raft's term is past term (so that the node's
// leadership of term is over), and reports whether it is; false if ctx
// ended or the node closed first.
func waitTermOver(ctx context.Context, n *replicate.Node, term uint64) bool {
	for {
		_, changed := n.Leading()
		if n.Health().Closed {
			return false
		}
		if n.Raft().CurrentTerm() != term {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// LeaderJob declares a leader-only job as a cell: it adds
// Replica.LeaderJob(name, fn) to the module's job.Group (which the module
// provides, job.Registry.NewGroup), so that it starts after the node and
// stops before it.
//
//	cell.Module("app", "The application",
//		cell.Provide(job.Registry.NewGroup),
//		replicated.LeaderJob("gc", collectGarbage),
//	)
func LeaderJob(name string, fn LeaderFunc) cell.Cell {
	return cell.Invoke(func(jobs job.Group, r *Replica) {
		jobs.Add(r.LeaderJob(name, fn))
	})
}
