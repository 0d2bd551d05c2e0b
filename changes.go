package strata

// Change feeds: what Table.Changes returns, and how a feed delivers the
// changes of the change log (changelog.go). See docs/changelog.md.
//
// Invariants:
//
//  1. A feed delivers the changes between two published states of the
//     table as a batch: from its position (pos, at revision rev) up to the
//     state of the latest Next. A batch delivers each object once, in its
//     newest state, in revision order (in log order if it holds restored
//     objects).
//  2. A change counts as delivered once yielded: before it yields one, a
//     batch records its place after it (batch.at and batch.sub, or
//     batch.i). A feed moves (pos, rev and its pin) only when a batch has
//     been delivered in full: every change of it yielded. A batch consumed
//     in part stays the feed's batch: the next range, of the same sequence
//     or of the next Next's, goes on with it from its place.
//  3. Only the latest sequence delivers, and of it only the latest range:
//     Next and Close renumber the feed's sequences (gen), and a sequence
//     of an older number yields nothing; Next, Close and each range
//     renumber its turn, and a range whose turn is not the latest (its
//     loop body called Next or Close, or ranged over the latest sequence)
//     yields nothing more and touches nothing of the feed, which the
//     later turn may have moved or released. So no change is delivered
//     twice or lost, whenever, however often and however nested
//     sequences are consumed.
//  4. Under the invariants build tag, a feed publishes the log positions
//     it may read from or up to (publishHeld) after each change of them,
//     and before it moves its pin, for checkLog.

import (
	"cmp"
	"iter"
	"runtime"
	"slices"

	"github.com/strata-db/strata/part"
)

// Change is one change delivered by a change feed: an object that was
// inserted or replaced (Deleted false) or deleted, and the revision of the
// change.
type Change[Obj any] struct {
	Object   Obj      `json:"obj"`
	Revision Revision `json:"rev"`
	Deleted  bool     `json:"deleted,omitempty"`
	// Created, for a feed opened WithCreated, says that the object did
	// not exist when the feed last delivered: an upsert made it (rather
	// than replaced it), and a delete is of an object the feed never
	// delivered (made and deleted since), which a consumer may skip. Every
	// change of a feed's first batch is Created. Other feeds leave it
	// false.
	Created bool `json:"created,omitempty"`
}

// FeedOption configures a change feed (Table.Changes).
type FeedOption func(*feedOptions)

type feedOptions struct {
	created bool
}

// WithCreated makes a feed set Change.Created. It costs the feed a pass
// with a map over each batch, which it then collects in a list: a feed
// reading batches of 1000 changes takes two to four times as long, with
// two allocations per change; one reading a change per transaction
// makes three more allocations per batch (BenchmarkDB_Changes_Created and
// BenchmarkDB_Changes_OnePerTxn_Created, against the same feed without
// it). Feeds without it pay nothing for it.
func WithCreated() FeedOption { return func(o *feedOptions) { o.created = true } }

// ChangeIterator is a change feed of one table, created by Table.Changes.
//
// Each call of Next returns the changes committed since the feed last
// delivered, up to the snapshot it is given, in revision order, each
// object once in its newest state (an object inserted and deleted in
// between comes once, as deleted). The first batch is every object in the
// table, then the deletes since the feed was created. Next also returns a
// channel that is closed when the table changes after that snapshot; once
// a feed is drained the channel is open, so a loop of Next and waiting on
// the channel never spins.
//
// A feed moves past a change when its sequence yields it, so a consumer
// may stop early (a round limit, a cancelled context, an error): the next
// Next returns the rest of that batch, with a channel that is closed
// already, and the Next after that goes on from there. A sequence delivers
// only until the feed's next Next or Close, also in the middle of a range
// whose loop body calls them: after that it yields nothing, and the newer
// sequence delivers what it did not. Ranging over a sequence again goes on
// where the previous range stopped. Only one range delivers at a time: a
// range of the latest sequence begun in the loop body of another range
// goes on after the change the other yielded last, and the other yields
// nothing more.
//
// While a table has feeds, every commit appends its changes to the table's
// change log, which is all a feed reads: keeping the log costs a change one
// log entry (a DeleteAll one in all), and a table without feeds keeps none.
// A feed holds the part of the log it has not delivered, deleted objects
// and replaced versions alike, so a feed that is neither read nor closed
// holds every change after it: read feeds, and Close those no longer
// read. A feed dropped without Close lets go when the garbage collector
// finds it. The log reuses the segments of 64 changes that every feed has
// delivered, so the log of a table whose feeds keep up stays a few
// segments long. The first Next sorts the table's objects by revision,
// which costs O(n log n) once per feed.
//
// Until the transaction that registered the feed commits, Next returns
// nothing, and a channel that closes when that transaction ends. A closed
// feed (by Close, or by the abort of the transaction that registered it,
// or a failed Commit of that transaction) delivers nothing,
// and its Next returns a nil channel, which tells the consumer to stop: a
// nil channel never becomes ready, so a loop that waits on it together
// with its context ends with the context, and never spins.
//
// A ChangeIterator is not safe for concurrent use.
type ChangeIterator[Obj any] interface {
	// Next returns the changes up to the committed snapshot txn holds
	// (for a write transaction, the snapshot it started from: its own
	// writes are not delivered until committed), and a watch channel.
	Next(txn ReadTxn) (changes iter.Seq2[Change[Obj], Revision], watch <-chan struct{})
	// Close releases the feed's hold on the change log, at once, also in
	// the loop body of a range over one of its sequences, which then
	// yields nothing more.
	Close()
}

func (t *table[Obj]) Changes(txn WriteTxn, opts ...FeedOption) (ChangeIterator[Obj], error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return nil, err
	}
	var o feedOptions
	for _, opt := range opts {
		opt(&o)
	}
	// The feed starts after this transaction's writes so far: the objects
	// they deleted were never the feed's to see. Changes from now on go to
	// the log.
	tt.log.cur.observed = true
	if tt.log.cur.end.seg == nil {
		tt.startLog()
	}
	e := t.meta.feeds.register(tt.log.cur.end.seq, tt.cur.revision, tt.log.cur.end.deletes())
	tt.cur.newFeeds = append(tt.cur.newFeeds, e)
	it := &changeIterator[Obj]{t: t, entry: e, pos: tt.log.cur.end, rev: tt.cur.revision, created: o.created}
	if invariants {
		it.publishHeld()
	}
	it.cleanup = runtime.AddCleanup(it, func(e *feedEntry) {
		t.meta.feeds.release(e)
		t.dropUnobservedLog()
	}, e)
	t.reportFeeds(tt.cur.revision)
	return it, nil
}

// changeIterator implements ChangeIterator.
type changeIterator[Obj any] struct {
	t     *table[Obj]
	entry *feedEntry
	// pos is where the feed is in the table's change log: it delivered
	// every change before; rev is the revision of the state at pos.
	// Before the first batch, they are the registration's.
	pos logPos[Obj]
	rev Revision
	// started: the first batch was delivered in full.
	started bool
	// created: the feed sets Change.Created (WithCreated).
	created bool
	// gen numbers the calls of Next and Close; only the sequence of the
	// latest Next delivers (invariant 3).
	gen uint64
	// next is the state the latest Next's sequence delivers up to, until
	// it begins to: then its batch is in batch, and inBatch is set until
	// the batch has been delivered in full.
	next    *tableState[Obj]
	batch   batch[Obj]
	inBatch bool
	cleanup runtime.Cleanup
	closed  bool
}

func (it *changeIterator[Obj]) Next(txn ReadTxn) (iter.Seq2[Change[Obj], Revision], <-chan struct{}) {
	it.gen++
	it.batch.turn++
	it.next = nil
	if invariants {
		it.publishHeld()
	}
	if it.closed || it.entry.closed.Load() {
		return noChanges[Obj], nil
	}
	if it.inBatch && it.batch.exhausted() {
		// Every change of the batch was yielded, by a range whose loop
		// body calls this Next: the batch is delivered.
		it.finishBatch()
	}
	if it.entry.registering.Load() {
		// Nothing to deliver until the registering transaction commits:
		// wait for it to end.
		if ch := it.t.meta.feeds.registrationEndChan(it.entry); ch != nil {
			return noChanges[Obj], ch
		}
	}
	if it.inBatch {
		// The rest of a batch consumed in part; the channel is closed, so
		// the consumer comes back for what followed.
		return it.sequence(), closedChan
	}
	st := it.t.stateIn(txn.committed())
	var watch <-chan struct{} = closedChan // a state without the log is outdated
	if st.log.seg != nil {
		watch = st.primary.RootWatch()
	}
	sameLog := st.log.seg != nil && st.log.seg.chain == it.pos.seg.chain
	if st.log.seg == nil || st.revision < it.rev || (sameLog && st.log.seq < it.pos.seq) {
		// The snapshot is from before the feed's registration committed,
		// which changed the table since: watch is closed, and a newer
		// snapshot has the changes.
		return noChanges[Obj], watch
	}
	if (!sameLog || st.log.seq == it.pos.seq) && it.started {
		// Nothing new. (A snapshot of another log has the log the table
		// dropped before the feed's began; as it is not older than the
		// feed, it is at the registration's revision, without a change
		// since.)
		return noChanges[Obj], watch
	}
	it.next = st
	if invariants {
		it.publishHeld()
	}
	return it.sequence(), watch
}

func noChanges[Obj any](func(Change[Obj], Revision) bool) {}

// sequence returns the sequence of the latest Next.
func (it *changeIterator[Obj]) sequence() iter.Seq2[Change[Obj], Revision] {
	gen := it.gen
	return func(yield func(Change[Obj], Revision) bool) {
		// A feed is released while its consumer may run only by the abort
		// of its registration, before it can deliver; the check is cheap.
		if it.gen == gen && !it.entry.closed.Load() {
			it.deliver(yield)
		}
	}
}

// deliver yields the feed's changes up to the state of the latest Next:
// the rest of its batch, or a new batch. Once a batch is delivered in
// full, the feed moves to its end. It delivers while its turn is the
// latest: once the consumer's loop body calls Next or Close, or ranges
// over the feed's latest sequence, it yields nothing more, and touches
// nothing of the feed, which the later turn may have moved or released.
func (it *changeIterator[Obj]) deliver(yield func(Change[Obj], Revision) bool) {
	b := &it.batch
	b.turn++
	turn := b.turn
	if !it.inBatch {
		st := it.next
		if st == nil {
			return // delivered already
		}
		it.next = nil
		it.startBatch(st)
		it.inBatch = true
		if invariants {
			it.publishHeld()
		}
	}
	var done bool
	if b.isList {
		done = b.deliverList(yield)
	} else {
		done = b.deliverLog(yield)
	}
	if b.turn != turn {
		return // a later turn took over
	}
	if !done {
		if invariants {
			it.publishHeld()
		}
		return
	}
	it.finishBatch()
}

// finishBatch moves the feed to the end of its batch, which has been
// delivered in full, and lets go of the batch.
func (it *changeIterator[Obj]) finishBatch() {
	b := &it.batch
	it.inBatch = false
	it.pos, it.rev, it.started = b.to, b.toRev, true
	if invariants {
		it.publishHeld() // before the pin moves (feedRegistry.holds)
	}
	it.entry.advance(b.to.seq, b.toRev, b.to.deletes())
	b.release()
}

func (it *changeIterator[Obj]) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.gen++
	it.batch.turn++ // a range whose loop body closes the feed reads no more of it
	it.next = nil
	it.release()
}

// release lets go of the feed's batch and of its entry in the registry.
func (it *changeIterator[Obj]) release() {
	it.inBatch = false
	it.batch.release()
	it.pos = logPos[Obj]{}
	if invariants {
		it.publishHeld()
	}
	it.cleanup.Stop()
	it.t.meta.feeds.release(it.entry)
	it.t.reportFeeds(it.rev)
	it.t.dropUnobservedLog()
}

// heldPos is a log position a feed may read from or up to, and what it
// is to the feed, for checkLog.
type heldPos[Obj any] struct {
	what string
	pos  logPos[Obj]
}

// heldNextState names the end of the state of the latest Next's
// sequence, which may be in a log the table dropped before the feed's
// began (see Next): the feed then reads nothing of it.
const heldNextState = "end of the latest Next's state"

// publishHeld publishes, under the invariants build tag, the log
// positions the feed may read from or up to (feedEntry.held): its own,
// the end of the latest Next's state, and its batch's place and end while
// it delivers one. It runs after each change of them, and before the feed
// moves its pin (feedRegistry.holds).
func (it *changeIterator[Obj]) publishHeld() {
	var held []heldPos[Obj]
	if it.pos.seg != nil {
		held = append(held, heldPos[Obj]{"position", it.pos})
	}
	if it.next != nil && it.next.log.seg != nil {
		held = append(held, heldPos[Obj]{heldNextState, it.next.log})
	}
	if it.inBatch {
		held = append(held, heldPos[Obj]{"batch's place", it.batch.at}, heldPos[Obj]{"batch's end", it.batch.to})
	}
	it.entry.held.Store(held)
}

// batch is the changes a feed delivers from its position up to a state:
// read from the log (a log batch), or, for a feed's first batch and for a
// batch that holds restored objects, collected in a list.
type batch[Obj any] struct {
	// turn numbers the ranges over the feed's sequences and the feed's
	// calls of Next and Close; only the range of the latest turn delivers
	// (invariant 3). It is kept here, beside the place a range records
	// before each change, for the range to check after each.
	turn uint64

	// to and toRev are the end of the batch: where the feed moves once it
	// delivered the batch in full.
	to    logPos[Obj]
	toRev Revision

	// A log batch delivers the log's changes from at up to to, but those
	// in superseded; sub is the number of the deletes of the entryTruncate
	// at at that it passed already.
	at         logPos[Obj]
	sub        int
	superseded revSet

	// A list batch delivers list[i:].
	isList bool
	list   []Change[Obj]
	i      int
}

// release drops what the batch refers to, keeping its buffers if small: a
// feed's first batch is as long as its table.
func (b *batch[Obj]) release() {
	if cap(b.list) > maxKeptList {
		b.list = nil
	}
	clear(b.list)
	b.list = b.list[:0]
	b.to, b.at = logPos[Obj]{}, logPos[Obj]{}
}

// maxKeptList is the longest list a batch keeps for the next one.
const maxKeptList = 1024

// startBatch begins the batch from the feed's position up to st.
func (it *changeIterator[Obj]) startBatch(st *tableState[Obj]) {
	b := &it.batch
	b.to, b.toRev = st.log, st.revision
	b.at, b.sub, b.i = it.pos, 0, 0
	b.isList = false
	switch {
	case st.log.seg.chain != it.pos.seg.chain:
		// A first batch from a state of the log the table dropped before
		// the feed's began: the registration's state (see Next). The feed
		// stays where it is.
		b.to, b.toRev = it.pos, it.rev
		b.isList, b.list = true, it.t.firstChanges(st, st.log, b.list, it.created)
	case !it.started:
		b.isList, b.list = true, it.t.firstChanges(st, it.pos, b.list, it.created)
	case it.created || !it.t.findSuperseded(b, it.pos, it.rev):
		// Created flags, or restored objects (the batch is not in
		// revision order): collected by key.
		b.isList, b.list = true, it.t.newestChanges(it.pos, st.log, b.list, it.created)
	}
}

// exhausted reports whether every change of the batch was yielded.
func (b *batch[Obj]) exhausted() bool {
	if b.isList {
		return b.i == len(b.list)
	}
	if b.at.seq == b.to.seq {
		return true
	}
	// The place may be in the last entry, a truncate, after its last
	// delete (deliverLog).
	return b.sub > 0 && b.at.seq+1 == b.to.seq && b.sub == b.at.seg.truncated(b.at.n()).Len()
}

// deliverList yields the rest of a list batch, while b.turn is what it
// was when it began, and reports whether it delivered all of it. It counts
// each change as delivered before it yields it (b.i).
func (b *batch[Obj]) deliverList(yield func(Change[Obj], Revision) bool) bool {
	mine := b.turn
	for b.i < len(b.list) {
		c := b.list[b.i]
		b.i++
		if !yield(c, c.Revision) || b.turn != mine {
			return b.turn == mine && b.i == len(b.list)
		}
	}
	return true
}

// deliverLog yields the rest of a log batch, a segment at a time, while
// b.turn is what it was when it began, and reports whether it delivered all
// of it. A change counts as delivered once yielded: before it yields one,
// it records its place after it (b.at, and b.sub in a truncate), where a
// range begun in the consumer's loop body goes on; the position's segment
// it records once per segment, so that a change costs a store of its
// number only.
func (b *batch[Obj]) deliverLog(yield func(Change[Obj], Revision) bool) bool {
	mine := b.turn
	none := b.superseded.empty()
	for sp := range b.at.spans(b.to) {
		s := sp.seg
		// Every change before the span was yielded or superseded; in the
		// first span, b.at (and b.sub) is where the batch stopped.
		b.at = s.at(sp.lo)
		after := s.seq + 1 // b.at.seq after entry j is after+j
		for j := sp.lo; j < sp.hi; j++ {
			e := &s.entries[j]
			if e.kind == entryTruncate {
				b.at.seq = after + uint64(j) - 1
				tree := s.truncated(j)
				n, ok := truncateChanges(tree, e.rev, &b.sub, &b.superseded, yield, &b.turn, mine)
				if b.turn != mine {
					return false
				}
				if !ok && n < tree.Len() {
					return false // at entry j, n of its deletes passed
				}
				b.at.seq, b.sub = after+uint64(j), 0
				if !ok {
					return b.at.seq == b.to.seq
				}
				continue
			}
			if !none && b.superseded.has(e.rev) {
				continue
			}
			b.at.seq = after + uint64(j)
			if !yield(e.change(), e.rev) || b.turn != mine {
				return b.turn == mine && b.at.seq == b.to.seq
			}
		}
	}
	return true
}

// truncateChanges yields the deletes of an entryTruncate at rev, of the
// objects of tree from the *sub-th on, but those in superseded, while
// turn is mine. Before it yields a delete, it sets *sub to the number of
// deletes passed with it. It returns how many of the deletes it passed
// (skipped, or yielded) and whether to go on.
//
// It reads the tree with a pull iterator, so that each delete costs one
// call through a function value, to yield: a range over the tree would add
// one to the loop body (about a fifth of a delete's delivery).
func truncateChanges[Obj any](tree part.Tree[object[Obj]], rev Revision, sub *int, superseded *revSet, yield func(Change[Obj], Revision) bool, turn *uint64, mine uint64) (int, bool) {
	var it part.Iterator[object[Obj]]
	it.Reset(tree)
	none := superseded.empty()
	skip := *sub
	n := 0
	for _, o, ok := it.Next(); ok; _, o, ok = it.Next() {
		r := rev + Revision(n)
		n++
		if n <= skip || (!none && superseded.has(r)) {
			continue
		}
		*sub = n
		if !yield(Change[Obj]{Object: o.obj, Revision: r, Deleted: true}, r) || *turn != mine {
			return n, false
		}
	}
	return n, true
}

// findSuperseded fills the set of superseded revisions of b: of the
// changes logged from from (whose state is at fromRev) up to b.to, those a
// later change of the batch supersedes. It returns false if the batch
// holds restored objects, whose revisions do not tell what supersedes what.
func (t *table[Obj]) findSuperseded(b *batch[Obj], from logPos[Obj], fromRev Revision) bool {
	// An update or a delete names the change it supersedes; an insert
	// under a new key may supersede a delete of the same key, which only
	// the key tells.
	b.superseded.reset(fromRev+1, b.toRev-fromRev)
	// inserts: the batch has an insert that may supersede a delete;
	// upserts: it has an insert or update, so a truncate after it may
	// delete objects of the batch (and else only older ones).
	inserts, upserts := false, false
	for sp := range from.spans(b.to) {
		s := sp.seg
		if s != b.to.seg && s.supersedesNoneAfter(fromRev) {
			// Nothing to look at; as for upserts, it may have some.
			upserts = true
			continue
		}
		for j := sp.lo; j < sp.hi; j++ {
			e := &s.entries[j]
			switch e.kind {
			case entryRestore:
				return false
			case entryInsert, entryUpdate:
				upserts = true
			}
			switch {
			case e.kind == entryTruncate:
				if !upserts {
					break
				}
				for _, o := range s.truncated(j).All() {
					if o.rev > fromRev {
						b.superseded.add(o.rev)
					}
				}
			case e.prev <= fromRev:
			case e.kind == entryInsert:
				inserts = true
			default:
				b.superseded.add(e.prev)
			}
		}
	}
	if inserts {
		for _, r := range t.reinserted(from.changes(b.to), fromRev) {
			b.superseded.add(r)
		}
	}
	return true
}

// reinserted returns the revisions of the deletes that an insert of the
// same key after them supersedes.
func (t *table[Obj]) reinserted(changes iter.Seq[*logChange[Obj]], fromRev Revision) []Revision {
	inserted := map[string]Revision{} // the newest insert of each key
	for c := range changes {
		if c.kind == entryInsert && c.prev > fromRev {
			if pk, ok := t.changeKey(c); ok {
				inserted[string(pk)] = c.rev
			}
		}
	}
	var revs []Revision
	for c := range changes {
		if c.kind == entryDelete {
			if pk, ok := t.changeKey(c); ok && inserted[string(pk)] > c.rev {
				revs = append(revs, c.rev)
			}
		}
	}
	return revs
}

// newestChanges appends to list, in log order, the newest change of each
// object among those logged from from up to to. It tells changes apart by
// their place in the log, not by revision: restored objects keep the
// revisions they had, which other changes of the batch may have too. It
// sets Change.Created where the object's first change of the batch made
// it (an insert under a new key, or a restore), if created is set: the
// object did not exist at from.
func (t *table[Obj]) newestChanges(from, to logPos[Obj], list []Change[Obj], created bool) []Change[Obj] {
	type keyChanges struct {
		newest  int  // the place of the object's newest change
		created bool // its first change made it
	}
	keys := map[string]keyChanges{}
	n := 0
	for c := range from.changes(to) {
		if pk, ok := t.changeKey(c); ok {
			k, seen := keys[string(pk)]
			if !seen {
				k.created = c.kind == entryInsert || c.kind == entryRestore
			}
			k.newest = n
			keys[string(pk)] = k
		}
		n++
	}
	n = 0
	for c := range from.changes(to) {
		if pk, ok := t.changeKey(c); ok {
			if k := keys[string(pk)]; k.newest == n {
				ch := c.change()
				ch.Created = created && k.created
				list = append(list, ch)
			}
		}
		n++
	}
	return list
}

// firstChanges appends to list the changes of a feed's first batch: every
// object of st, and the objects deleted since the feed's registration at
// from that st does not have, in revision order; all Created if created is
// set.
func (t *table[Obj]) firstChanges(st *tableState[Obj], from logPos[Obj], list []Change[Obj], created bool) []Change[Obj] {
	list = slices.Grow(list, st.primary.Len())
	for _, o := range st.primary.All() {
		list = append(list, Change[Obj]{Object: o.obj, Revision: o.rev, Created: created})
	}
	newest := map[string]int{} // primary key -> place of its last delete
	n := 0
	for c := range from.changes(st.log) {
		if c.kind == entryDelete {
			if pk, ok := t.changeKey(c); ok {
				if _, found := st.primary.Get(pk); !found {
					newest[string(pk)] = n
				}
			}
		}
		n++
	}
	n = 0
	for c := range from.changes(st.log) {
		if c.kind == entryDelete {
			if pk, ok := t.changeKey(c); ok {
				if i, found := newest[string(pk)]; found && i == n {
					ch := c.change()
					ch.Created = created // never delivered to the feed
					list = append(list, ch)
				}
			}
		}
		n++
	}
	slices.SortStableFunc(list, func(a, b Change[Obj]) int { return cmp.Compare(a.Revision, b.Revision) })
	return list
}

// revSet is a set of the revisions of a batch of changes, most of which
// lie in [base, base+span): a bitmap for those, a map for the rest. It
// keeps its bitmap's memory from one batch to the next.
type revSet struct {
	base, span Revision
	bits       []uint64 // empty until a revision of the span is added
	more       map[Revision]struct{}
}

// maxRevSetSpan bounds the bitmap of a revSet (in revisions): 64 KiB.
const maxRevSetSpan = 1 << 19

// reset empties the set, for revisions mostly in [base, base+span).
func (s *revSet) reset(base, span Revision) {
	s.base, s.span, s.bits, s.more = base, span, s.bits[:0], nil
}

func (s *revSet) add(r Revision) {
	if i := r - s.base; r >= s.base && i < s.span && s.span <= maxRevSetSpan {
		if len(s.bits) == 0 {
			n := int((s.span + 63) / 64)
			s.bits = slices.Grow(s.bits[:0], n)[:n]
			clear(s.bits)
		}
		s.bits[i/64] |= 1 << (i % 64)
		return
	}
	if s.more == nil {
		s.more = map[Revision]struct{}{}
	}
	s.more[r] = struct{}{}
}

// empty reports whether nothing was added to s.
func (s *revSet) empty() bool { return len(s.bits) == 0 && s.more == nil }

func (s *revSet) has(r Revision) bool {
	if i := r - s.base; len(s.bits) != 0 && r >= s.base && i < s.span {
		return s.bits[i/64]&(1<<(i%64)) != 0
	}
	if s.more == nil {
		return false
	}
	_, ok := s.more[r]
	return ok
}
