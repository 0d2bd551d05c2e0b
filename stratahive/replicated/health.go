package replicated

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-db/strata/replicate"
)

// healthInterval is how often the node's health is reported between
// changes of its leadership, which are reported at once.
const healthInterval = time.Second

// watchHealth starts the goroutine that reports the node's health to the
// Cell's health scope until run.stopWatch, which waits for it. r.mu is
// held; r.node is set.
func (r *Replica) watchHealth(run *running) {
	ctx, cancel := context.WithCancel(context.Background())
	run.stopWatch, run.watchDone = cancel, make(chan struct{})
	if r.health == nil {
		close(run.watchDone)
		return
	}
	n := r.node
	go func() {
		defer close(run.watchDone)
		tick := time.NewTicker(healthInterval)
		defer tick.Stop()
		for {
			_, changed := n.Leading()
			r.report(n.Health())
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-tick.C:
			}
		}
	}()
}

// report reports h: OK with the node's role, term and indexes while it
// serves (replicate.Health.Err with --strata-raft-health-contact),
// Degraded with the reason otherwise.
func (r *Replica) report(h replicate.Health) {
	msg := HealthMessage(h)
	if err := h.Err(r.cfg.StrataRaftHealthContact); err != nil {
		r.health.Degraded(msg, err)
		return
	}
	r.health.OK(msg)
}

// HealthMessage is the text the Cell reports for the node's health h, as
// in
//
//	leader, term 3, applied 17, published 17
//	follower of n1, term 3, applied 17, published 17
//	candidate, no leader, term 4, applied 17, published 17
func HealthMessage(h replicate.Health) string {
	var role string
	switch {
	case h.State == raft.Leader && h.Leading:
		role = "leader"
	case h.State == raft.Leader:
		role = "leader (not ready)"
	case h.LeaderID != "":
		role = fmt.Sprintf("%s of %s", stateName(h.State), h.LeaderID)
	default:
		role = stateName(h.State) + ", no leader"
	}
	return fmt.Sprintf("%s, term %d, applied %d, published %d", role, h.Term, h.AppliedIndex, h.PublishedIndex)
}

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	case raft.Leader:
		return "leader"
	}
	return "shut down"
}
