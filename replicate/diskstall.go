package replicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// A leader whose disk stops answering stops the whole cluster with
// raft v1.7.2 as it is. The leader's loop writes the entries it proposes
// to its log store before it replicates them, so a write that never
// returns holds the loop; but raft sends heartbeats from goroutines of
// their own, which go on. The followers hear their leader, never start an
// election, and every write, forwarded to it, waits for the disk.
// TestFaultProgress/leader-disk-stalled measured it: no write acknowledged
// in 40 election timeouts.
//
// A durable node (Config.Store, durable.go) is stuck the same way when
// its persist store stops answering: raft's FSM goroutine writes every
// entry it applies to the store (persistEntry), and a commit that never
// returns holds it; the entries after it commit but are never applied,
// so no write through the node is acknowledged, while its heartbeats go
// on. Pebble buffers a commit without a sync in its memtable and its
// log's buffer, so the store stalls once the memtable is full: a few
// megabytes after the disk stopped, at most
// (TestFaultProgress/leader-store-stalled, TestStoreStallFences).
//
// The node fences such a leader. Every write to the log store raft is
// given (StoreLogs, DeleteRange) goes through a stallLog, and every
// commit of an entry to the durable store is timed too; a stallWatch
// knows since when the oldest of them in progress has waited. Once that
// is longer than Config.DiskStallTimeout, the node's transport refuses the node's
// outgoing AppendEntries RPCs: raft's heartbeats, and the requests of its
// pipelines too (its replication sends an empty one every CommitTimeout,
// which the followers count as contact). The followers stop hearing the
// leader and elect another as if it had died. A write that ends lifts the
// fence: heartbeats resume, and the old leader learns the new term from
// the answers and steps down. A stall shorter than DiskStallTimeout plus
// the followers' heartbeat timeout changes nothing at all, so the timeout
// can be short; it is one tenth of raft's HeartbeatTimeout by default, the
// interval of raft's heartbeats.
//
// Writes waiting on the stalled node end with their contexts (Node.Write:
// an *AmbiguousError, as their entries may yet commit; a write whose ctx
// ends on a node that is not stalled waits for its outcome, which comes
// within raft's bounds), and the node
// refuses new ones before it proposes them (ErrNotReady), so that they
// can be retried on another node. Reads do not touch the disk.
//
// The durable store's other writes are not timed: a restore's
// (Applied.Replace, whose time grows with the tables', on a node that
// refuses new writes meanwhile anyway) and the sync before a snapshot
// (on raft's snapshot goroutine, which holds up nothing else; the next
// entry's commit stalls if the disk does).
//
// Invariants, kept by this file:
//
//  1. stalledFor is 0 while no write (to the log store, or commit of an
//     entry to the durable store) is in progress, and otherwise at least
//     the time since the oldest write in progress began.
//  2. With the fence on (DiskStallTimeout > 0), no AppendEntries RPC
//     leaves the node while stalledFor exceeds DiskStallTimeout; every
//     other RPC, and every AppendEntries while it does not, goes to the
//     wrapped transport unchanged.

// errDiskStalled is the fence's error for an AppendEntries RPC it
// refuses, and for a commit it refuses (with ErrNotReady).
var errDiskStalled = errors.New("replicate: a write to this node's disk (its log store or its durable store) has not finished within DiskStallTimeout: the node does not send heartbeats until it does")

// stallWatch times a node's writes to its disk: its log store's
// (stallLog) and its durable store's commits (persistEntry).
type stallWatch struct {
	mu       sync.Mutex
	inflight map[uint64]time.Time // writes in progress, by ticket
	next     uint64
}

// stallLog is the log store raft is given: the node's, each write timed.
type stallLog struct {
	raft.LogStore
	*stallWatch
}

// monotonicStallLog is a stallLog over a raft.MonotonicLogStore: raft
// asks its log store whether it is one.
type monotonicStallLog struct {
	*stallLog
	m raft.MonotonicLogStore
}

// IsMonotonic passes the wrapped store's answer through.
func (s monotonicStallLog) IsMonotonic() bool { return s.m.IsMonotonic() }

// newStallLog wraps ls, keeping raft.MonotonicLogStore if ls is one.
func newStallLog(ls raft.LogStore) (raft.LogStore, *stallLog) {
	s := &stallLog{LogStore: ls, stallWatch: newStallWatch()}
	if m, ok := ls.(raft.MonotonicLogStore); ok {
		return monotonicStallLog{stallLog: s, m: m}, s
	}
	return s, s
}

// newStallWatch returns a stallWatch with no write in progress.
func newStallWatch() *stallWatch { return &stallWatch{inflight: map[uint64]time.Time{}} }

// begin records a write in progress and returns its ticket for end.
func (s *stallWatch) begin() uint64 {
	s.mu.Lock()
	s.next++
	t := s.next
	s.inflight[t] = time.Now()
	s.mu.Unlock()
	return t
}

// end records that the write of ticket t returned.
func (s *stallWatch) end(t uint64) {
	s.mu.Lock()
	delete(s.inflight, t)
	s.mu.Unlock()
}

// stalledFor returns how long the oldest write in progress has waited,
// or 0 (invariant 1).
func (s *stallWatch) stalledFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest time.Time
	for _, at := range s.inflight {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return time.Since(oldest)
}

// StoreLog stores one entry, timed.
func (s *stallLog) StoreLog(l *raft.Log) error {
	t := s.begin()
	defer s.end(t)
	return s.LogStore.StoreLog(l)
}

// StoreLogs stores entries, timed.
func (s *stallLog) StoreLogs(ls []*raft.Log) error {
	t := s.begin()
	defer s.end(t)
	return s.LogStore.StoreLogs(ls)
}

// DeleteRange deletes entries, timed.
func (s *stallLog) DeleteRange(lo, hi uint64) error {
	t := s.begin()
	defer s.end(t)
	return s.LogStore.DeleteRange(lo, hi)
}

// diskStallTimeout returns the fence's timeout for cfg: DiskStallTimeout,
// one tenth of the heartbeat timeout when 0, and 0 (no fence) when
// negative.
func diskStallTimeout(cfg *Config) time.Duration {
	switch d := cfg.DiskStallTimeout; {
	case d < 0:
		return 0
	case d > 0:
		return d
	}
	if cfg.Raft != nil && cfg.Raft.HeartbeatTimeout > 0 {
		return cfg.Raft.HeartbeatTimeout / 10
	}
	return raft.DefaultConfig().HeartbeatTimeout / 10
}

// diskStalled reports whether the node has a write to its disk (its log
// store, or its durable store's commit of an entry) in progress for
// longer than the fence's timeout (false without a fence).
func (n *Node) diskStalled() bool {
	return n.stallAfter > 0 && n.stall.stalledFor() > n.stallAfter
}

// AppendEntries sends an AppendEntries RPC through the wrapped transport,
// unless the node's disk is stalled (invariant 2).
func (c *clampTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if c.fenced != nil && c.fenced() {
		if c.hold != nil {
			c.hold(holdSender)
		}
		return errDiskStalled
	}
	return c.Transport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline opens a pipeline through the wrapped transport,
// fenced as AppendEntries is: raft sends its entries, and an empty request
// every CommitTimeout, through it (invariant 2).
func (c *clampTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := c.Transport.AppendEntriesPipeline(id, target)
	if err != nil || c.fenced == nil {
		return p, err
	}
	return fencedPipeline{AppendPipeline: p, fenced: c.fenced, hold: c.hold}, nil
}

// fencedPipeline is a pipeline that refuses requests while fenced says
// so; raft then closes it and goes back to AppendEntries.
type fencedPipeline struct {
	raft.AppendPipeline
	fenced func() bool
	hold   func(who int) // clampTransport.hold
}

// AppendEntries sends a request down the pipeline, unless fenced.
func (p fencedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if p.fenced() {
		if p.hold != nil {
			p.hold(holdPipeline)
		}
		return nil, errDiskStalled
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}

// commitContext commits txn and returns its error. A commit settles
// within raft's own bounds (it commits, or the leader loses its lease
// and the entry fails), so when ctx ends first it goes on waiting for the
// outcome, which is then definite, rather than report it ambiguous; but
// not on a node whose disk stalled, where it would wait for it: then it returns an *AmbiguousError wrapping ctx's error, and the
// commit goes on in a goroutine that ends with it (the disk answers, or
// Node.Close fails it). A ctx that cannot end, or a node without the
// fence, costs nothing: the commit is waited for where it runs.
func (n *Node) commitContext(ctx context.Context, txn strata.WriteTxn) error {
	if ctx.Done() == nil || n.stallAfter <= 0 {
		_, err := txn.Commit()
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := txn.Commit()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	tick := time.NewTicker(n.stallAfter)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if n.diskStalled() {
				return &AmbiguousError{Err: fmt.Errorf("the commit waits on a stalled disk, and the write's context ended: %w", ctx.Err())}
			}
		}
	}
}
