package replicate

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// The fault tests' traces (faults_harness_test.go), for the diagnosis of
// a divergence: every member's hold points with its journal's state
// (-replicate.faults.trace), and a member's log operations and the
// cluster's state transitions around the fault.

// holdTrace records the hold points (holds.go) every member passes, with
// what the journal and the tables hold then: the diagnosis of a
// divergence, at a cost of a lock and an append per point.
type holdTrace struct {
	mu     sync.Mutex
	events []holdEvent
	// watched is the member whose write transaction's view is looked at
	// when its FSM applies an entry it did not propose (holdForeign).
	watched atomic.Pointer[raft.ServerID]
}

type holdEvent struct {
	at      time.Time
	id      raft.ServerID
	p       holdPoint
	who     int
	queued  int    // the batches the database has not settled
	failing bool   // the journal refuses batches since a failure
	pubRev  uint64 // table a's published revision
	extra   []uint64
}

// hook returns the hold function of nd, whose Node self holds once
// NewNode returned.
func (h *holdTrace) hook(nd *rnode, self *atomic.Pointer[Node]) func(holdPoint, int) {
	return func(p holdPoint, who int) {
		n := self.Load()
		if n == nil {
			return
		}
		ev := holdEvent{at: time.Now(), id: nd.id, p: p, who: who}
		n.mu.Lock()
		ev.queued, ev.failing = n.st.queued, n.st.failing
		n.mu.Unlock()
		ev.pubRev = uint64(nd.tables[0].Revision(nd.db.ReadTxn()))
		if w := h.watched.Load(); p == holdForeign && w != nil && *w == nd.id {
			// What a write transaction of table a begins from now, as
			// the FSM's is about to: objects the published state lacks
			// are a tip's.
			txn := nd.db.WriteTxn(nd.metas[0])
			published := nd.db.ReadTxn()
			for o := range nd.tables[0].All(txn) {
				if _, _, found := nd.tables[0].Get(published, itemByID.Query(o.ID)); !found {
					ev.extra = append(ev.extra, o.ID)
				}
			}
			txn.Abort()
		}
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}
}

// log logs id's events from start.
func (h *holdTrace) log(t *testing.T, id raft.ServerID, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev.id != id || ev.at.Before(start) {
			continue
		}
		t.Logf("  +%v %s %v who %d: queued %d failing %v, a@%d, the write transaction's extra objects %v",
			ev.at.Sub(start).Round(100*time.Microsecond), ev.id, ev.p, ev.who, ev.queued, ev.failing, ev.pubRev, ev.extra)
	}
}

// logHistory logs, for the diagnosis of a divergence, nd's log
// operations from a second before start and every member's state
// transitions from start.
func (c *fcluster) logHistory(nd *rnode, start time.Time) {
	for _, op := range c.storeOps.since(nd.id, start.Add(-time.Second)) {
		c.t.Logf("  %s's log at +%v: %s %d..%d, terms %v, %d commands", nd.id, op.at.Sub(start).Round(time.Millisecond), op.what, op.lo, op.hi, op.terms, op.commands)
	}
	for _, tr := range c.elect.transitions(start) {
		c.t.Logf("  +%v %v", tr.at.Sub(start).Round(time.Millisecond), tr)
	}
	if c.trace != nil {
		c.trace.log(c.t, nd.id, start)
	}
}
