package replicate

// The fault tests' log stores (faults_harness_test.go): each member's
// LogStore wrapped to record what raft stored and deleted, for the
// diagnosis of a divergence, and to stall its writes, as a disk that
// stopped answering (TestFaultProgress/leader-disk-stalled).

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// storeOps records what raft stored in and deleted from each member's
// log, for the diagnosis of a divergence.
type storeOps struct {
	mu      sync.Mutex
	ops     []storeOp
	stalled map[raft.ServerID]chan struct{} // closed when the stall ends
}

// stall makes every write to id's log (StoreLogs, DeleteRange) wait until
// unstallAll, as a disk that stopped answering: the writes in progress
// and those that come.
func (l *storeOps) stall(id raft.ServerID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stalled == nil {
		l.stalled = map[raft.ServerID]chan struct{}{}
	}
	if _, ok := l.stalled[id]; !ok {
		l.stalled[id] = make(chan struct{})
	}
}

// unstallAll ends every stall.
func (l *storeOps) unstallAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, ch := range l.stalled {
		close(ch)
		delete(l.stalled, id)
	}
}

// wait returns once id's log is not stalled.
func (l *storeOps) wait(id raft.ServerID) {
	l.mu.Lock()
	ch := l.stalled[id]
	l.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

type storeOp struct {
	at       time.Time
	id       raft.ServerID
	what     string // "store" or "delete"
	lo, hi   uint64
	terms    []uint64 // of the entries stored
	commands int      // LogCommand entries stored
}

func (l *storeOps) wrap(nd *rnode) raft.LogStore {
	return &recordingLog{LogStore: nd.store, ops: l, id: nd.id}
}

// since returns nd's operations at or after t.
func (l *storeOps) since(id raft.ServerID, t time.Time) []storeOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []storeOp
	for _, op := range l.ops {
		if op.id == id && !op.at.Before(t) {
			out = append(out, op)
		}
	}
	return out
}

// recordingLog is a member's LogStore recording StoreLogs and
// DeleteRange; monotonic as the LogStore is.
type recordingLog struct {
	*LogStore
	ops *storeOps
	id  raft.ServerID
}

func (r *recordingLog) StoreLog(l *raft.Log) error { return r.StoreLogs([]*raft.Log{l}) }

func (r *recordingLog) StoreLogs(ls []*raft.Log) error {
	r.ops.wait(r.id)
	err := r.LogStore.StoreLogs(ls)
	if len(ls) > 0 {
		op := storeOp{at: time.Now(), id: r.id, what: "store", lo: ls[0].Index, hi: ls[len(ls)-1].Index}
		for _, l := range ls {
			if len(op.terms) == 0 || op.terms[len(op.terms)-1] != l.Term {
				op.terms = append(op.terms, l.Term)
			}
			if l.Type == raft.LogCommand {
				op.commands++
			}
		}
		r.ops.mu.Lock()
		r.ops.ops = append(r.ops.ops, op)
		r.ops.mu.Unlock()
	}
	return err
}

func (r *recordingLog) DeleteRange(lo, hi uint64) error {
	r.ops.wait(r.id)
	err := r.LogStore.DeleteRange(lo, hi)
	r.ops.mu.Lock()
	r.ops.ops = append(r.ops.ops, storeOp{at: time.Now(), id: r.id, what: "delete", lo: lo, hi: hi})
	r.ops.mu.Unlock()
	return err
}
