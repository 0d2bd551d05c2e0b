package replicate

import (
	"errors"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// ApplyResult is what the node's FSM returns for an entry it applied
// (raft.ApplyFuture.Response); an entry it could not apply returns a
// *StoppedError instead.
type ApplyResult struct {
	// Index is the entry's index.
	Index uint64
	// Conflicts are the ids of the change sets skipped because a
	// precondition failed (ErrConflict), in order.
	Conflicts []ChangeSetID
}

// fsm is the node's raft.FSM.
type fsm struct{ n *Node }

var _ raft.FSM = (*fsm)(nil)

// Apply applies one entry: the change sets this node proposed and still
// waits for are marked applied (their writes are in the commit queue's
// tips, published when their Wait returns); the others are applied in one
// write transaction of the tables they name, each after its preconditions
// are checked.
func (f *fsm) Apply(l *raft.Log) any {
	n := f.n
	if e := n.stopErr.Load(); e != nil {
		return e
	}
	if l.Type != raft.LogCommand {
		return nil
	}
	if l.Index <= n.replayedTo {
		// In the store already (durable.go, invariant 2).
		return &ApplyResult{Index: l.Index}
	}
	n.at(holdApply, holdFSM)
	defer n.at(holdApplied, holdFSM)
	var e Entry
	if err := DecodeEntryInto(&e, l.Data); err != nil {
		return n.stop(l.Index, err)
	}
	res := &ApplyResult{Index: l.Index}
	if e.Skip() {
		n.mu.Lock()
		n.setApplied(l.Index, 0)
		n.mu.Unlock()
		return res
	}
	n.mu.Lock()
	k := 0
	// The entry's first batch must be the oldest this node proposed and
	// still waits for. An older one still pending is not in the log before
	// this entry, so it never commits (raft appends a leader's entries in
	// the order it submits them: it failed, or was cut from the log), but
	// its committer may not know yet; and the commit queue fails every
	// commit queued after a failed one, this entry's batches too. Marked
	// applied, they would be published nowhere: the entry is applied as
	// foreign instead, and its batches learn an ambiguous error.
	// (TestNodeInterleavings/re-elected found it: an entry submitted while
	// the node had stepped down failed with ErrNotLeader after the node
	// led again and its next entry committed.)
	mark := len(e.Changes) > 0
	if mark {
		b := n.st.pending[e.Changes[0].ID]
		mark = b != nil && n.st.oldestProposed() == b
	}
	for ; mark && k < len(e.Changes); k++ {
		if b := n.st.pending[e.Changes[k].ID]; b == nil || b.state != stateProposed {
			break
		}
	}
	if k == len(e.Changes) && n.store != nil {
		// Every change set is the node's own: in the store before any is
		// published (durable.go, invariant 1). Written outside n.mu, so
		// that a store that stalls holds only this goroutine
		// (diskstall.go): the batches are applying meanwhile, which
		// nothing but this goroutine settles (journalState.failFrom).
		for i := range k {
			n.st.pending[e.Changes[i].ID].state = stateApplying
		}
		n.mu.Unlock()
		n.at(holdStore, holdFSM)
		err := n.persistEntry(l.Index, &e, nil)
		n.mu.Lock()
		if err != nil {
			for i := range k {
				n.st.pending[e.Changes[i].ID].state = stateProposed
			}
			n.mu.Unlock()
			return n.stop(l.Index, err)
		}
	}
	for i := range k {
		n.st.finish(n.st.pending[e.Changes[i].ID], l.Index, nil)
	}
	if k == len(e.Changes) {
		// Published once the database settled the k batches marked.
		n.setApplied(l.Index, k)
		n.mu.Unlock()
		return res
	}
	// The k batches marked are settled by the database, maybe before the
	// transaction below commits: count them now, with one more for the
	// transaction.
	n.st.unpublished = append(n.st.unpublished, pendingPublish{index: l.Index, left: k + 1})
	// A change set this node does not wait for: every batch still
	// pending comes after it in the log, or never, and was built on tips
	// that do not hold it. Fail them all before taking the tables' locks,
	// so that their tips fail (and their commits unlock) rather than wait
	// for entries after this one, and refuse new ones until this entry
	// is applied.
	n.st.applyingForeign = true
	n.st.failFrom(0, &AmbiguousError{Err: errOvertaken}, errOvertakenNotProposed)
	n.mu.Unlock()
	n.at(holdForeign, holdFSM)
	defer func() {
		n.mu.Lock()
		n.st.applyingForeign = false
		n.mu.Unlock()
	}()
	conflicts, err := n.applyChanges(e.Changes[k:])
	if err != nil {
		return n.stop(l.Index, err)
	}
	res.Conflicts = conflicts
	if n.store != nil {
		if err := n.persistEntry(l.Index, &e, conflicts); err != nil {
			return n.stop(l.Index, err)
		}
	}
	// The transaction's Commit returned: its state is published.
	n.mu.Lock()
	n.st.publishedOne(l.Index)
	n.applied.Store(l.Index)
	n.advancePublished()
	n.mu.Unlock()
	return res
}

// maxApplyRetries bounds the FSM's attempts at an entry's transaction
// (applyChanges). After waitDrained one retry succeeds, unless a commit of
// another table of the transaction failed meanwhile: a handful is plenty;
// more is a bug, which stops the node rather than spin.
const maxApplyRetries = 16

var (
	errOvertaken            = errors.New("an entry this node did not propose was applied before the commit's")
	errOvertakenNotProposed = errors.Join(ErrNotReady, errOvertaken)
)

// applyChanges applies change sets in one write transaction of the tables
// they name, and returns the ids of those that conflict.
//
// The transaction begins from the tips of its tables, if they have any:
// those of commits whose change sets the FSM marked applied (they are
// before this entry in the log, and publish once their Wait returns), and
// those of commits that Apply just failed (their tips fail). A commit
// built on a failing tip fails with strata.ErrEarlierCommitFailed; it is
// retried from the start, so that the changes are checked and applied
// again on the published state. That is sound because the published state
// is then exactly the log's up to this entry: the commit queue settles in
// order, so every marked commit queued before the failed one is published
// by the time this commit fails, and nothing of a failed commit is. Before
// it retries, it waits until the database settled every batch the node
// enqueued (waitDrained): until then the commit queue fails every commit
// behind the failed ones, the retry's too. (It once retried at once, up to
// 1000 times: a committer slow to return from Wait made every attempt fail,
// and the node stopped; TestNodeInterleavings found it.)
func (n *Node) applyChanges(changes []ChangeSet) ([]ChangeSetID, error) {
	var binds []Binding
	for i := range changes {
		for j := range changes[i].Tables {
			b, ok := n.tables[changes[i].Tables[j].Table]
			if !ok {
				return nil, &unboundTableError{name: changes[i].Tables[j].Table}
			}
			if !slices.Contains(binds, b) {
				binds = append(binds, b)
			}
		}
	}
	if len(binds) == 0 {
		return nil, nil
	}
	metas := make([]strata.TableMeta, len(binds))
	for i, b := range binds {
		metas[i] = b.Table()
	}
	skip := make([]bool, len(changes))
	var conflicts []ChangeSetID
	for attempt := 0; ; attempt++ {
		txn := n.db.WriteTxn(metas[0], metas[1:]...)
		for _, b := range binds {
			if err := b.detach(txn); err != nil {
				txn.Abort()
				return nil, err
			}
		}
		conflicts = conflicts[:0]
		failed := -1
		for i := range changes {
			if skip[i] {
				conflicts = append(conflicts, changes[i].ID)
				continue
			}
			cs := &changes[i]
			if !n.checkChangeSet(txn, cs) {
				skip[i] = true
				conflicts = append(conflicts, cs.ID)
				continue
			}
			if err := n.applyChangeSet(txn, cs); err != nil {
				failed = i
				break
			}
		}
		if failed >= 0 {
			// The applier refuses what the checks let through as a
			// conflict (entry.go): the same on every node, whose states
			// are the same. Again without it.
			txn.Abort()
			skip[failed] = true
			continue
		}
		_, err := txn.Commit()
		if err == nil {
			return conflicts, nil
		}
		if errors.Is(err, strata.ErrEarlierCommitFailed) && attempt < maxApplyRetries {
			clear(skip) // decided on a state that was not published
			n.waitDrained()
			continue
		}
		return nil, err
	}
}

func (n *Node) checkChangeSet(txn strata.WriteTxn, cs *ChangeSet) bool {
	for j := range cs.Tables {
		tc := &cs.Tables[j]
		if err := n.tables[tc.Table].check(txn, tc); err != nil {
			return false
		}
	}
	return true
}

func (n *Node) applyChangeSet(txn strata.WriteTxn, cs *ChangeSet) error {
	for j := range cs.Tables {
		tc := &cs.Tables[j]
		if err := n.tables[tc.Table].apply(txn, tc); err != nil {
			return err
		}
	}
	return nil
}

type unboundTableError struct{ name string }

func (e *unboundTableError) Error() string {
	return "replicate: an entry writes table " + e.name + ", which this node has not bound"
}

// stop records that the node stops applying at index because of err, and
// returns the *StoppedError.
func (n *Node) stop(index uint64, err error) error {
	e := &StoppedError{Index: index, Err: err}
	if !n.stopErr.CompareAndSwap(nil, e) {
		e = n.stopErr.Load()
	}
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
	return e
}
