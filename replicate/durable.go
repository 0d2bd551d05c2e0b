package replicate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/persist"
)

// A node's tables in a persist store (Config.Store).
//
// The raft log is the write-ahead log of the tables: every entry the FSM
// applies is written to the store with its index as the store's position,
// in one batch without an fsync of its own (persist.AppliedBatch), since
// the log holds the entry durably before it is applied. A node that
// starts loads its tables from the store at that position and replays
// only the log after it.
//
// Invariants, kept by this file, fsm.go and snapshot.go:
//
//  1. The store's position is the index of an entry the node applied,
//     and the store holds exactly the tables' state after it: the FSM
//     writes an entry's changes (the change sets it applied or marked
//     applied, none it found in conflict) with its index in one batch,
//     before the entry's state is published; a restore writes the whole
//     snapshot's state with the snapshot's index, synced.
//  2. A node never restores a raft snapshot at or below its store's
//     position: raft's own restore at start is off
//     (raft.Config.NoSnapshotRestoreOnStart), and the node restores the
//     latest snapshot itself only if it is newer than the store. Entries
//     raft replays at or below the position are skipped (replayedTo).
//  3. A store ahead of the log (its position above both the last log
//     index and the latest snapshot's: the raft directory was lost or
//     replaced) is refused: the node would skip entries of another
//     history.

// ErrStoreAhead is what NewNode returns for a Config.Store whose position
// is above everything the raft log and the snapshots hold: the raft state
// was lost or belongs to another store. Remove the store (the node
// rebuilds it from the cluster) or give it its raft directory back.
var ErrStoreAhead = errors.New("replicate: the store is ahead of the raft log")

// loadStore loads the bound tables from cfg.Store, before they are
// attached to the node's journal.
func (n *Node) loadStore(cfg *Config) error {
	bindings := n.sortedBindings()
	pbs := make([]persist.TableBinding, len(bindings))
	for i, b := range bindings {
		pbs[i] = b.snapshotTable()
	}
	a, err := cfg.Store.LoadApplied(pbs...)
	if err != nil {
		return err
	}
	n.store = a
	return nil
}

// startFromStore decides where the node starts: at the store's position,
// or at the latest snapshot's if that is newer, restored here, before
// raft starts (invariant 2). It returns raft's configuration to start
// with.
func (n *Node) startFromStore(cfg *Config) (*raft.Config, error) {
	position := n.store.Position()
	snaps, err := cfg.Snapshots.List()
	if err != nil {
		return nil, fmt.Errorf("replicate: listing the snapshots: %w", err)
	}
	var latest *raft.SnapshotMeta
	if len(snaps) > 0 {
		latest = snaps[0] // newest first
	}
	last, err := cfg.LogStore.LastIndex()
	if err != nil {
		return nil, fmt.Errorf("replicate: the log's last index: %w", err)
	}
	if position > last && (latest == nil || position > latest.Index) {
		return nil, fmt.Errorf("%w: the store is at index %d, the log ends at %d and the latest snapshot is at %d", ErrStoreAhead, position, last, snapshotIndex(latest))
	}
	conf := *cfg.Raft
	conf.NoSnapshotRestoreOnStart = true
	if latest != nil && latest.Index > position {
		_, rc, err := cfg.Snapshots.Open(latest.ID)
		if err != nil {
			return nil, fmt.Errorf("replicate: opening snapshot %s: %w", latest.ID, err)
		}
		if err := n.fsm.Restore(rc); err != nil {
			return nil, fmt.Errorf("replicate: restoring snapshot %s, newer than the store: %w", latest.ID, err)
		}
		position = latest.Index
	}
	n.replayedTo = position
	n.applied.Store(position)
	n.published.Store(position)
	return &conf, nil
}

func snapshotIndex(m *raft.SnapshotMeta) uint64 {
	if m == nil {
		return 0
	}
	return m.Index
}

// persistEntry writes the changes of the entry at index to the store: those
// of its change sets but the ones in conflicts, with the index as the
// store's position (invariant 1).
func (n *Node) persistEntry(index uint64, e *Entry, conflicts []ChangeSetID) error {
	b := n.store.NewBatch()
	defer b.Close()
	for i := range e.Changes {
		cs := &e.Changes[i]
		if len(conflicts) > 0 && slices.Contains(conflicts, cs.ID) {
			continue
		}
		for j := range cs.Tables {
			tc := &cs.Tables[j]
			for k := range tc.Ops {
				if err := persistOp(b, tc.Table, &tc.Ops[k]); err != nil {
					return err
				}
			}
		}
	}
	// Timed as the log store's writes are: a commit that does not return
	// fences the node (diskstall.go).
	t := n.stall.begin()
	err := b.Commit(index)
	n.stall.end(t)
	if err != nil {
		return fmt.Errorf("replicate: writing the entry to the store: %w", err)
	}
	return nil
}

func persistOp(b *persist.AppliedBatch, table string, op *Op) error {
	switch op.Kind {
	case OpUpsert:
		return b.Upsert(table, op.Key, op.CodecVersion, op.Revision, op.Value)
	case OpDelete:
		return b.Delete(table, op.Key)
	case OpDeleteAll:
		return b.DeleteAll(table)
	case OpSetRevision:
		return b.SetRevision(table, op.Revision)
	}
	return fmt.Errorf("replicate: table %q: op of kind %d", table, op.Kind)
}
