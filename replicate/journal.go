package replicate

import (
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// The node's journal: a strata.QueuedBatch per commit of bound tables.
//
// A batch goes through these states, all changed under Node.mu:
//
//	queued    Enqueue placed it in the proposer's queue (pending)
//	proposed  the proposer submitted its entry with raft.Apply (pending)
//	done      its outcome is known and Wait returns it: marked applied
//	          by the FSM (nil, at the entry's index), or failed
//
// A pending batch's writes are in the commit queue's tip, which the queue
// publishes when Wait returns nil. So the FSM must not apply a pending
// batch's change set again: it marks it applied instead. The FSM's marking
// and the failure paths (a failed future, an entry the node did not
// propose, Close) decide under Node.mu, so a change set is applied by
// exactly one of the two: the tip (marked) or the FSM's apply (failed,
// then applied like any other node's if it commits).
//
// The journal keeps QueuedBatch's rule that a failed record fails every
// record enqueued after it: a failure fails every pending batch enqueued
// after the failed one. And since the commit queue fails every commit
// queued after a failed one until it drains (strata's commit queue,
// invariant 4), also commits whose entries commit, the journal refuses
// new batches (ErrNotReady) from a failure until the database settled
// every batch it enqueued (strata.SettledBatch; journalState.failing and
// queued): no batch the FSM marks applied is then failed by the queue.
// Settled checks it: a batch marked applied that the database did not
// publish would leave this node without writes the others have, and
// stops the node.

type batchState uint8

const (
	stateOpen batchState = iota
	stateQueued
	stateProposed
	// stateApplying: the FSM marked the batch's entry applied and is
	// writing it to the durable store (fsm.Apply, outside n.mu); it
	// finishes the batch next. Nothing else settles it: its entry is
	// committed.
	stateApplying
	stateDone
)

// journal is the node's strata.Journal.
type journal struct{ n *Node }

// Begin starts the record of a commit.
func (j *journal) Begin() strata.JournalBatch { return &batch{n: j.n} }

// A batch is told how the database settled its commit.
var _ strata.SettledBatch = (*batch)(nil)

// batch is a commit's change set and its outcome.
type batch struct {
	n  *Node
	cs ChangeSet
	// body is the change set's encoding, as AppendEntry writes it in an
	// entry (after the entry's header and count).
	body []byte

	// Under Node.mu:
	state batchState
	seq   uint64
	index uint64 // the entry's index, once applied
	err   error
	done  chan struct{}

	// forward: a Node.Write that forwards waits for the batch
	// (forward.go), objects: with ObjectConflicts; proposed: it was
	// submitted to raft (under Node.mu).
	forward, objects, proposed bool
}

// table returns the batch's part for table name, opening it (with read as
// its ReadRevision) if the last part is another table's: a commit writes
// its tables one after the other.
func (b *batch) table(name string, read uint64) *TableChanges {
	if k := len(b.cs.Tables); k > 0 && b.cs.Tables[k-1].Table == name {
		return &b.cs.Tables[k-1]
	}
	b.cs.Tables = append(b.cs.Tables, TableChanges{Table: name, ReadRevision: read})
	return &b.cs.Tables[len(b.cs.Tables)-1]
}

// noteRevision tells a Node.Write waiting for the commit that reaches
// revision rev of table name that this is its batch.
func (b *batch) noteRevision(name string, rev uint64) {
	n := b.n
	n.mu.Lock()
	if s := n.st.wanted[slotKey{name, rev}]; s != nil && s.b == nil {
		s.b, b.forward, b.objects = b, s.forward, s.objects
	}
	n.mu.Unlock()
}

// Queues reports true: the commit queue releases the tables' locks once
// the batch is enqueued.
func (b *batch) Queues() bool { return true }

// Commit is Enqueue and Wait; the database calls them instead.
func (b *batch) Commit() error {
	if err := b.Enqueue(); err != nil {
		return err
	}
	return b.Wait()
}

// Discard drops a batch that was not enqueued.
func (b *batch) Discard() {}

// Enqueue checks that the node may propose, encodes the change set and
// hands it to the proposer.
func (b *batch) Enqueue() error {
	n := b.n
	if n.closed.Load() {
		return ErrShutdown
	}
	if e := n.stopErr.Load(); e != nil {
		return e
	}
	if n.raft.State() != raft.Leader {
		if b.forward {
			if b.objects {
				// The tables are still locked: their published state
				// is the one the transaction read.
				n.objectPreconditions(&b.cs)
			}
			return errForward
		}
		return n.notLeader(nil)
	}
	if n.diskStalled() {
		// Its followers elect another (diskstall.go): a write proposed
		// here would wait for the disk.
		return fmt.Errorf("%w: %w", ErrNotReady, errDiskStalled)
	}
	// The database calls Enqueue for one record at a time, in commit
	// order: the sequence, outside n.mu, follows the queue's order.
	seq := n.nextSeq.Add(1)
	b.cs.ID = NewChangeSetID(n.st.node, seq)
	enc, err := AppendEntry(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{b.cs}})
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.st.ready || n.st.failing || n.st.applyingForeign {
		return ErrNotReady
	}
	n.st.queued++
	b.body = enc[3:] // version, kind, a count of 1
	b.seq, b.state, b.done = seq, stateQueued, make(chan struct{})
	n.st.pending[b.cs.ID] = b
	n.st.queue = append(n.st.queue, b)
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return nil
}

// Wait returns the batch's outcome: nil once the FSM applied its entry.
func (b *batch) Wait() error {
	n := b.n
	n.atBatch(holdWait, b)
	<-b.done
	n.mu.Lock()
	err := b.err
	n.mu.Unlock()
	n.atBatch(holdWaited, b)
	return err
}

// Settled is told, by the database, how the batch's commit ended
// (strata.SettledBatch). It is called under the database's commit queue
// lock, which Enqueue runs under too: n.mu is taken after it, as there.
func (b *batch) Settled(err error) {
	n := b.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.st.queued--; n.st.queued == 0 {
		n.st.failing = false
		if n.st.drained != nil {
			close(n.st.drained)
			n.st.drained = nil
		}
	}
	if b.state != stateDone || b.err != nil {
		return
	}
	if err != nil {
		// The FSM marked the change set applied, but the database did
		// not publish it: this node lacks writes the others have. The
		// node keeps the error: every later Apply and commit returns it.
		_ = n.stop(b.index, fmt.Errorf("the commit of change set %#x, applied at index %d, was not published: %w", uint64(b.cs.ID), b.index, err))
		return
	}
	// Published: its entry may be too (Node.advancePublished).
	n.st.publishedOne(b.index)
	n.advancePublished()
}

// journalState is the journal's state, under Node.mu.
type journalState struct {
	node uint16
	// pending holds the queued and proposed batches by id.
	pending map[ChangeSetID]*batch
	// queue holds the batches Enqueue queued and the proposer has not
	// taken yet, in order.
	queue []*batch
	// queued counts the batches Enqueue accepted that the database has
	// not settled yet (Settled); failing is set by a failed batch and
	// cleared when queued is 0: the database's commit queue then holds
	// none of the commits it fails after a failure.
	queued  int
	failing bool
	// drained, if not nil, is closed when queued next drops to 0
	// (Node.waitDrained).
	drained chan struct{}
	// applyingForeign is set while the FSM applies an entry the node did
	// not propose (or no longer waits for).
	applyingForeign bool
	// proposed holds the batches take proposed, in order, until they are
	// settled (oldestProposed drops them from the front then): the FSM
	// marks a batch applied only if no batch proposed before it is still
	// pending.
	proposed []*batch
	// ready is set once the node leads and applied every entry of the
	// earlier terms (a barrier): until then its commits would follow
	// entries it did not propose, and fail (watchLeadership).
	ready bool
	// readyTerm is the term ready was set in: linearizable reads check
	// it against raft's current term, so that a node that lost and
	// regained the lead before this goroutine saw it is not taken as
	// ready in the new term (read.go).
	readyTerm uint64
	closing   bool
	wanted    map[slotKey]*slot
	// unpublished holds the applied entries not yet published, in log
	// order (Node.advancePublished).
	unpublished []pendingPublish
}

// pendingPublish is an applied entry and how many of its parts (the
// node's own batches marked applied; the FSM's transaction) are not
// published yet.
type pendingPublish struct {
	index uint64
	left  int
}

// publishedOne records that one part of the entry at index is
// published.
func (s *journalState) publishedOne(index uint64) {
	for i := range s.unpublished {
		if s.unpublished[i].index == index {
			s.unpublished[i].left--
			return
		}
	}
	panic(fmt.Sprintf("replicate: entry %d published, but not applied", index))
}

func (s *journalState) init(node uint16) {
	s.node = node
	s.pending = make(map[ChangeSetID]*batch)
	s.wanted = make(map[slotKey]*slot)
}

// finish settles b with err (nil: applied at index).
func (s *journalState) finish(b *batch, index uint64, err error) {
	if b.state == stateDone {
		return
	}
	delete(s.pending, b.cs.ID)
	b.state, b.index, b.err = stateDone, index, err
	if err != nil {
		s.failing = true
	}
	close(b.done)
}

// oldestProposed returns the first batch proposed that is still pending,
// or nil.
func (s *journalState) oldestProposed() *batch {
	k := 0
	for k < len(s.proposed) && s.proposed[k].state == stateDone {
		k++
	}
	if k > 0 {
		n := copy(s.proposed, s.proposed[k:])
		clear(s.proposed[n:])
		s.proposed = s.proposed[:n]
	}
	if len(s.proposed) == 0 {
		return nil
	}
	return s.proposed[0]
}

// failFrom fails every pending batch enqueued at or after seq: those
// proposed with err (ambiguous: they may still commit, and then apply as
// any node's change sets do), those still queued with notProposed.
// Those applying are committed: the FSM finishes them.
func (s *journalState) failFrom(seq uint64, err, notProposed error) {
	for _, b := range s.pending {
		if b.seq < seq {
			continue
		}
		switch b.state {
		case stateProposed:
			s.finish(b, 0, err)
		case stateQueued:
			s.finish(b, 0, notProposed)
		}
	}
	s.dropQueued()
}

// failAll fails every pending batch (Close).
func (s *journalState) failAll(err error) {
	s.closing = true
	s.failFrom(0, &AmbiguousError{Err: err}, err)
}

// dropQueued removes the settled batches from the proposer's queue.
func (s *journalState) dropQueued() {
	q := s.queue[:0]
	for _, b := range s.queue {
		if b.state == stateQueued {
			q = append(q, b)
		}
	}
	clear(s.queue[len(q):])
	s.queue = q
}

// A slot is where Node.Write finds the batch of its commit: the one that
// records revision rev of table name.
type slotKey struct {
	name string
	rev  uint64
}

type slot struct {
	key     slotKey
	b       *batch
	forward bool // the Write forwards a change set it cannot propose
	objects bool // with ObjectConflicts
}

func (n *Node) want(name string, rev uint64, forward, objects bool) *slot {
	s := &slot{key: slotKey{name, rev}, forward: forward, objects: objects}
	n.mu.Lock()
	n.st.wanted[s.key] = s
	n.mu.Unlock()
	return s
}

func (n *Node) unwant(s *slot) {
	n.mu.Lock()
	if n.st.wanted[s.key] == s {
		delete(n.st.wanted, s.key)
	}
	n.mu.Unlock()
}

// waitDrained returns once the database settled every batch of this node
// it enqueued: its commit queue then holds none of the commits it fails
// after a failed one. The FSM waits for it before it applies a change set
// again after its commit failed behind a failed tip (applyChanges): the
// failed commits settle only once their committers return from Wait, which
// may take as long as the scheduler makes them wait, and a retry before
// that fails again. It never waits on raft: the batches still queued are
// failed (Apply failed them before the change set), and their committers
// return without it.
func (n *Node) waitDrained() {
	n.mu.Lock()
	for n.st.queued > 0 {
		if n.st.drained == nil {
			n.st.drained = make(chan struct{})
		}
		ch := n.st.drained
		n.mu.Unlock()
		<-ch
		n.mu.Lock()
	}
	n.mu.Unlock()
}

// watchLeadership is the goroutine that sets journalState.ready: once
// the node leads and a barrier of its term applied, until it loses the
// lead.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case leader := <-n.raft.LeaderCh():
			n.at(holdLeadership, holdWatcher)
			term := n.raft.CurrentTerm()
			// Whatever the news, the node is not ready in a new term
			// before its barrier applied (Leading's subscribers learn it
			// at once: a lost and regained lead arrives as one true).
			n.mu.Lock()
			n.st.ready = false
			n.mu.Unlock()
			n.lead.set(false, term)
			if leader {
				leader = n.raft.Barrier(0).Error() == nil && n.raft.State() == raft.Leader &&
					n.raft.CurrentTerm() == term
			}
			n.at(holdReady, holdWatcher)
			n.mu.Lock()
			n.st.ready, n.st.readyTerm = leader, term
			n.mu.Unlock()
			n.lead.set(leader, term)
		case <-n.quit:
			n.lead.close()
			return
		}
	}
}

// proposal is an entry submitted to raft and the batches it carries.
type proposal struct {
	f       raft.ApplyFuture
	batches []*batch
}

// propose is the proposer goroutine: it takes the queued batches in order,
// as many as fit in an entry, and submits the entry, with at most
// maxInFlight entries in flight; the batches queued meanwhile share the
// next entry.
func (n *Node) propose() {
	defer n.wg.Done()
	defer close(n.inflight)
	for {
		select {
		case n.sem <- struct{}{}:
		case <-n.quit:
			return
		}
		n.at(holdTake, holdProposer)
		var batches []*batch
		for batches == nil {
			n.mu.Lock()
			batches = n.st.take()
			n.mu.Unlock()
			if batches != nil {
				break
			}
			select {
			case <-n.wake:
			case <-n.quit:
				return
			}
		}
		data := []byte{EntryVersion, byte(KindChanges)}
		data = appendUvarint(data, uint64(len(batches)))
		for _, b := range batches {
			data = append(data, b.body...)
		}
		n.entries.Add(1)
		if len(batches) > 1 {
			n.combined.Add(1)
		}
		n.at(holdSubmit, holdProposer)
		f := n.raft.Apply(data, 0)
		n.at(holdSubmitted, holdProposer)
		select {
		case n.inflight <- &proposal{f: f, batches: batches}:
		case <-n.quit:
			return
		}
	}
}

// take returns the queued batches that fit in one entry, in order, now
// proposed; nil if none is queued.
func (s *journalState) take() []*batch {
	size, k := 2+uvarintLen(uint64(len(s.queue))), 0
	for k < len(s.queue) && (k == 0 || size+len(s.queue[k].body) <= MaxEntrySize) {
		size += len(s.queue[k].body)
		k++
	}
	if k == 0 {
		return nil
	}
	batches := append([]*batch(nil), s.queue[:k]...)
	s.oldestProposed()
	for _, b := range batches {
		b.state, b.proposed = stateProposed, true
		s.proposed = append(s.proposed, b)
	}
	n := copy(s.queue, s.queue[k:])
	clear(s.queue[n:])
	s.queue = s.queue[:n]
	return batches
}

// await is the goroutine that waits for the entries in flight, in order,
// and settles the batches the FSM did not.
//
// It learns each future's outcome from waitFutures, until the node
// closes: raft v1.7.2 never answers the future of an entry it committed
// and had not handed to the FSM when it shut down (hashicorp/raft#498),
// and Close, which closes n.quit once raft shut down, settles every batch
// left (journalState.failAll).
func (n *Node) await() {
	defer n.wg.Done()
	answers := make(chan answer)
	go n.waitFutures(answers)
	for {
		var a answer
		select {
		case a = <-answers:
		case <-n.quit:
			return
		}
		if a.p == nil {
			return // n.inflight closed
		}
		p, err := a.p, a.err
		n.at(holdFuture, holdAwaiter)
		<-n.sem
		if err == nil {
			// The FSM marked every pending batch of the entry, or
			// failed it first.
			continue
		}
		n.mu.Lock()
		var first *batch
		for _, b := range p.batches {
			if b.state == stateProposed {
				first = b
				break
			}
		}
		if first != nil {
			// The entry's own batches learn raft's error; the later ones
			// were submitted after it (or not at all), and may still
			// commit if this node led again meanwhile.
			own := classify(n, err)
			for _, b := range p.batches {
				if b.state == stateProposed {
					n.st.finish(b, 0, own)
				}
			}
			n.st.failFrom(first.seq, &AmbiguousError{Err: err}, fmt.Errorf("%w: an earlier proposal failed: %w", ErrNotReady, err))
		}
		n.mu.Unlock()
	}
}

// answer is a proposal's outcome, as its future says; a nil p: no more.
type answer struct {
	p   *proposal
	err error
}

// waitFutures waits for the futures of the proposals in flight, in order,
// and hands their outcomes to await, until n.inflight is closed or the
// node closes. It is the node's one goroutine that Close does not wait
// for: once raft shut down, a future it never answers holds it for good
// (hashicorp/raft#498); every other future returns, and then the
// goroutine ends with the node.
func (n *Node) waitFutures(answers chan<- answer) {
	for p := range n.inflight {
		err := p.f.Error()
		if err == nil {
			if e, ok := p.f.Response().(error); ok {
				err = e
			}
		}
		select {
		case answers <- answer{p, err}:
		case <-n.quit:
			return
		}
	}
	select {
	case answers <- answer{}:
	case <-n.quit:
	}
}

// classify returns the error of a batch whose entry's future failed with
// err.
func classify(n *Node, err error) error {
	switch err {
	case raft.ErrNotLeader, raft.ErrLeadershipTransferInProgress:
		return n.notLeader(err)
	}
	if _, stopped := err.(*StoppedError); stopped {
		return err
	}
	return &AmbiguousError{Err: err}
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}
