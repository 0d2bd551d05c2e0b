package replicate

// The fault tests' log stores (faults_harness_test.go): each member's
// LogStore wrapped to record what raft stored and deleted, for the
// diagnosis of a divergence, and to stall its writes, as a disk that
// stopped answering (TestFaultProgress/leader-disk-stalled); and a
// durable member's persist store on a file system whose writes stall the
// same way (TestFaultProgress/leader-store-stalled).

import (
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/persist"
)

// storeOps records what raft stored in and deleted from each member's
// log, for the diagnosis of a divergence.
type storeOps struct {
	mu      sync.Mutex
	ops     []storeOp
	stalled map[raft.ServerID]chan struct{} // closed when the stall ends
	// stateStalled is stalled's for the members' persist stores.
	stateStalled map[raft.ServerID]chan struct{}
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

// stallState makes every write to id's persist store's files wait until
// unstallAll, as stall does the log's. Pebble commits an applied batch
// without a sync, into its memtable and its log's buffer, so the store's
// commits go on until the memtable is full; then the next commit waits
// for a new log file, and so does the node's FSM (stateOptions keeps the
// memtable small: a few dozen entries).
func (l *storeOps) stallState(id raft.ServerID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stateStalled == nil {
		l.stateStalled = map[raft.ServerID]chan struct{}{}
	}
	if _, ok := l.stateStalled[id]; !ok {
		l.stateStalled[id] = make(chan struct{})
	}
}

// unstallAll ends every stall.
func (l *storeOps) unstallAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range []map[raft.ServerID]chan struct{}{l.stalled, l.stateStalled} {
		for id, ch := range m {
			close(ch)
			delete(m, id)
		}
	}
}

// wait returns once id's log is not stalled.
func (l *storeOps) wait(id raft.ServerID) { l.waitIn(&l.stalled, id) }

// waitIn returns once id is not stalled in *m.
func (l *storeOps) waitIn(m *map[raft.ServerID]chan struct{}, id raft.ServerID) {
	l.mu.Lock()
	ch := (*m)[id]
	l.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// stateOptions are the options of id's persist store: on the operating
// system's file system, through one whose writes (creating, writing,
// syncing, renaming and removing files) wait while stallState(id) holds,
// with a memtable of 4 KiB.
func (l *storeOps) stateOptions(id raft.ServerID) persist.Options {
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			l.waitIn(&l.stateStalled, id)
		}
		return nil
	}))
	return persist.Options{Logger: slog.New(slog.DiscardHandler), FS: fs, MemTableSize: 4 << 10}
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

// waitApplyStuck returns once nd's FSM is stuck: its applied index has
// not moved for 50 ms while its log holds entries past it (its store's
// commit waits); it fails the test if that does not happen within
// progressBound.
func (c *fcluster) waitApplyStuck(nd *rnode) {
	const still = 50 * time.Millisecond
	deadline := time.Now().Add(progressBound)
	last, since := nd.node.AppliedIndex(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		applied := nd.node.AppliedIndex()
		if applied != last || nd.node.Raft().LastIndex() <= applied {
			last, since = applied, time.Now()
			continue
		}
		if time.Since(since) >= still {
			return
		}
	}
	c.t.Fatalf("%s's apply did not stop within %v of its store's stall (applied %d)", nd.id, progressBound, nd.node.AppliedIndex())
}
