package strata

import (
	"cmp"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/part"
)

// Change is one change delivered by a change feed: an object that was
// inserted or replaced (Deleted false) or deleted, and the revision of the
// change.
type Change[Obj any] struct {
	Object   Obj      `json:"obj"`
	Revision Revision `json:"rev"`
	Deleted  bool     `json:"deleted,omitempty"`
}

// ChangeIterator is a change feed of one table, created by Table.Changes.
//
// Each call of Next returns the changes committed since the previous call,
// up to the snapshot it is given, in revision order, each object once in its
// newest state (an object inserted and deleted in between comes once, as
// deleted). The first call returns every object in the table, then the
// deletes since the feed was created. Next also returns a channel that is
// closed when the table changes after that snapshot; once a feed is drained
// the channel is open, so a loop of Next and waiting on the channel never
// spins.
//
// While a table has feeds, every commit appends its changes to the table's
// change log, which is all a feed reads: keeping the log costs a change one
// log entry (a DeleteAll one in all), and a table without feeds keeps none.
// A feed holds the part of the log it has not read, deleted objects and
// replaced versions alike, so a feed that is neither read nor closed holds
// every change after it: read feeds, and Close those no longer read. A
// feed dropped without Close lets go when the garbage collector finds it.
// The log reuses the segments of 64 changes that every feed has read, so
// the log of a table whose feeds keep up stays a few segments long, and
// keeps the objects of at most a few hundred changes after they were read.
// The first Next sorts the table's objects by revision, which costs
// O(n log n) once per feed. A ChangeIterator is not safe for concurrent
// use.
type ChangeIterator[Obj any] interface {
	// Next returns the changes up to the committed snapshot txn holds
	// (for a write transaction, the snapshot it started from: its own
	// writes are not delivered until committed). The sequence reads that
	// snapshot, so it may be consumed later, even after later calls of
	// Next, but it must be consumed, once: the feed has moved past the
	// changes it holds. Until then it keeps the part of the change log it
	// reads (a sequence dropped unconsumed lets go when the garbage
	// collector finds it, after the feed's next Next or Close). Consuming
	// a sequence a second time panics.
	Next(txn ReadTxn) (changes iter.Seq2[Change[Obj], Revision], watch <-chan struct{})
	// Close releases the feed's hold on the change log.
	Close()
}

// changeLogSegment is the number of changes in a segment of a change log.
const changeLogSegment = 64

// logEntry is one change in a table's change log.
type logEntry[Obj any] struct {
	obj Obj
	rev Revision
	// prev is the revision of the change this one supersedes: of the
	// object it replaced or deleted. For an insert under a new key, which
	// may supersede a delete of the same key, it is a bound: the table's
	// newest logged delete then. A batch of entries whose prevs all lie
	// before it is delivered as it is, each object once.
	prev Revision
	kind entryKind
}

// entryKind says what a log entry records.
type entryKind uint8

const (
	entryUpdate entryKind = iota // an object replaced
	entryInsert                  // an object inserted under a new key
	entryDelete                  // an object deleted
	// entryTruncate stands for the deletes of a DeleteAll: of the objects
	// of a tree kept beside the entry (logSegment.truncs), in key order,
	// at revisions rev, rev+1, ... Its prev is rev-1, above every revision
	// the tree holds.
	entryTruncate
)

func (e *logEntry[Obj]) change() Change[Obj] {
	return Change[Obj]{Object: e.obj, Revision: e.rev, Deleted: e.kind == entryDelete}
}

// logSegment is a run of log entries, linked to the next.
//
// A table's change log is a chain of segments that only grows at its tail:
// the writer (holding the table lock) fills entries past the committed
// end, which no reader looks at, and links a new segment when one is full.
// A snapshot records the end of the log it saw (tableState.log), a feed
// where it stopped; readers never read past the end of their snapshot, so
// they never race with the writer. The writer keeps the oldest segment
// (tableTxn.logHead) and reuses those every feed is past (newSegment);
// nothing else points back.
type logSegment[Obj any] struct {
	entries [changeLogSegment]logEntry[Obj]
	next    *logSegment[Obj]
	// truncs holds the trees of the segment's entryTruncate entries,
	// newest first. The writer pushes (and an abort pops) with atomic
	// stores, as readers of earlier entries may be walking the list.
	truncs atomic.Pointer[logTrunc[Obj]]
	// chain is the same for every segment of a log: a table that loses
	// its last feed drops its log, and starts a new one for the next.
	chain *logChain
	// seq is the number of entries logged before this segment's first,
	// since the log began; it orders positions.
	seq uint64
	// deletes is the number of deletes logged before this segment.
	deletes uint64
	// sum summarizes the entries appended so far. The writer keeps it up
	// as it appends; a reader uses it only for segments before the one
	// its snapshot ends in, which the writer no longer touches.
	sum segmentSummary
}

// segmentSummary summarizes the entries of a segment: enough for a feed to
// tell, without reading them, that none supersedes another change of its
// batch (logSegment.plain), and for the next segment to know the deletes
// logged before it.
type segmentSummary struct {
	maxPrev Revision // the highest prev of an entry
	deletes uint64   // the deletes logged
	// restored: Restore appended to the segment, at revisions that may
	// be out of order. It stays set until the segment is reused.
	restored bool
}

// plain reports whether none of the changes of s supersedes a change
// logged after position from, whose snapshot is at fromRev, for a segment
// that the log goes on after: its entries after from are at revisions
// above fromRev (the log is in revision order, but for what Restore
// logged), and none of them supersedes a change of the batch if every
// prev is at most fromRev. An entry's prev is below its revision (an
// entryTruncate's one below), so the entries before from, at revisions up
// to fromRev, do not change that.
func (s *logSegment[Obj]) plain(fromRev Revision) bool {
	return !s.sum.restored && s.sum.maxPrev <= fromRev
}

// summarize computes the summary of the first n entries of s anew (its
// restored flag stays).
func (s *logSegment[Obj]) summarize(n int) {
	sum := segmentSummary{restored: s.sum.restored, deletes: s.deletesIn(n)}
	for i := range n {
		sum.maxPrev = max(sum.maxPrev, s.entries[i].prev)
	}
	s.sum = sum
}

// deletesIn returns the number of deletes the first n entries of s log.
func (s *logSegment[Obj]) deletesIn(n int) uint64 {
	var d uint64
	for i, e := range s.entries[:n] {
		switch e.kind {
		case entryDelete:
			d++
		case entryTruncate:
			d += uint64(s.truncated(i).Len())
		}
	}
	return d
}

// logTrunc is the tree of objects an entryTruncate deleted.
type logTrunc[Obj any] struct {
	i    int // the entry's position in its segment
	tree part.Tree[object[Obj]]
	next *logTrunc[Obj]
}

// truncated returns the tree of the entryTruncate at position i.
func (s *logSegment[Obj]) truncated(i int) part.Tree[object[Obj]] {
	for tr := s.truncs.Load(); ; tr = tr.next {
		if tr.i == i {
			return tr.tree
		}
	}
}

// logChain identifies a change log (it is not empty: pointers to distinct
// zero-size values need not differ).
type logChain struct{ _ byte }

// logPos is a position in a change log: after the first seq entries of
// the log, which is after the first seq-seg.seq entries of seg. The zero
// logPos means there is no log.
//
// seq is kept in the position, not read through seg, because segments are
// reused (tableTxn.newSegment): a snapshot may keep a position in a segment
// that was reused since, and only positions that a feed pins (feedHold)
// may be read through.
type logPos[Obj any] struct {
	seg *logSegment[Obj]
	seq uint64
}

// n returns the number of entries of p's segment before p.
func (p logPos[Obj]) n() int { return int(p.seq - p.seg.seq) }

// deletes returns the number of deletes logged before p (0 without a log).
// It counts those of p's segment, so that a position stays two words (the
// segment's summary may count entries past p that a writer is appending):
// only metrics and opening or reading a feed ask.
func (p logPos[Obj]) deletes() uint64 {
	if p.seg == nil {
		return 0
	}
	return p.seg.deletes + p.seg.deletesIn(p.n())
}

// startLog starts a new, empty change log for the table.
func (tt *tableTxn[Obj]) startLog() {
	tt.log = logPos[Obj]{seg: &logSegment[Obj]{chain: new(logChain)}}
	tt.logHead, tt.dirty = tt.log.seg, true
}

// passed reports whether a feed whose pin is pin (feedHold.pin) is past
// every entry of s.
func (s *logSegment[Obj]) passed(pin uint64) bool { return s.seq+changeLogSegment < pin }

// appendLog adds e at the end of the transaction's change log.
//
// The compiler does not inline it, so upsert, the hot path, does the same
// by hand.
func (tt *tableTxn[Obj]) appendLog(e logEntry[Obj]) {
	s := tt.log.seg
	n := tt.log.seq - s.seq
	if n == changeLogSegment {
		s, n = tt.nextSegment(), 0
	}
	s.entries[n] = e
	tt.log.seq++
	s.sum.maxPrev = max(s.sum.maxPrev, e.prev)
	if e.kind == entryDelete {
		s.sum.deletes++
	}
}

// nextSegment links an empty segment after the log's last, which is full,
// and returns it.
func (tt *tableTxn[Obj]) nextSegment() *logSegment[Obj] {
	last := tt.log.seg
	s := tt.newSegment()
	s.seq, s.deletes = tt.log.seq, last.deletes+last.sum.deletes
	last.next = s
	tt.log.seg = s
	return s
}

// appendTruncate adds an entryTruncate for the objects of tree, deleted at
// revisions rev, rev+1, ...
func (tt *tableTxn[Obj]) appendTruncate(tree part.Tree[object[Obj]], rev Revision) {
	tt.appendLog(logEntry[Obj]{rev: rev, prev: rev - 1, kind: entryTruncate})
	s := tt.log.seg
	s.truncs.Store(&logTrunc[Obj]{i: tt.log.n() - 1, tree: tree, next: s.truncs.Load()})
	s.sum.deletes += uint64(tree.Len())
}

// newSegment returns an empty segment to append to the log: the oldest
// one, if no feed can read it any more, or else a new one. Reusing
// segments keeps a log that feeds follow closely to a few segments that
// stay in the processor's caches, instead of a stream of new ones for the
// garbage collector (BenchmarkDB_Changes); trimLog bounds how many wait.
//
// A feed pins the oldest position it may still read (feedHold.pin); a
// segment can go once every pin lies past its end. Snapshots may keep
// positions in it: those are never read through (logPos).
func (tt *tableTxn[Obj]) newSegment() *logSegment[Obj] {
	tt.segments++
	h := tt.logHead
	if h == tt.log.seg || !h.passed(tt.feedsPin()) {
		return &logSegment[Obj]{chain: tt.log.seg.chain}
	}
	// The old entries stay until overwritten: nothing reads past the end
	// of the log, and they keep at most a segment's objects a little
	// longer.
	tt.logHead = h.next
	h.next, h.sum = nil, segmentSummary{}
	h.truncs.Store(nil)
	return h
}

// feedsPin returns the oldest log position a feed may read, as the
// transaction first read it (tableTxn.pin).
func (tt *tableTxn[Obj]) feedsPin() uint64 {
	if !tt.pinRead {
		tt.pin, tt.pinRead = tt.t.meta.feeds.lowestPin(), true
	}
	return tt.pin
}

// trimLog leaves to the garbage collector the segments no feed reads but
// as many as the transaction took (and two), which the next one will
// likely reuse: a backlog that feeds read, or let go of, is not kept.
func (tt *tableTxn[Obj]) trimLog() {
	pin := tt.feedsPin()
	passed := 0
	for s := tt.logHead; s != tt.log.seg && s.passed(pin); s = s.next {
		passed++
	}
	for range passed - max(tt.segments, 2) {
		tt.logHead = tt.logHead.next
	}
}

// discard drops the entries from p to end, which were appended after p by
// a transaction that aborted, so that the log holds on to nothing they
// held, and summarizes p's segment anew. p is the end of the committed log,
// which no reader reads past.
func (p logPos[Obj]) discard(end logPos[Obj]) {
	for sp := range p.spans(end) {
		clear(sp.seg.entries[sp.lo:sp.hi])
	}
	p.seg.next = nil
	tr := p.seg.truncs.Load()
	for tr != nil && tr.i >= p.n() {
		tr = tr.next
	}
	p.seg.truncs.Store(tr)
	p.seg.summarize(p.n())
}

// logSpan is the part of one segment a range of the log covers:
// seg.entries[lo:hi].
type logSpan[Obj any] struct {
	seg    *logSegment[Obj]
	lo, hi int
}

// spans yields the entries from p up to end, a segment at a time, so that
// loops over them run without an iterator call per entry.
func (p logPos[Obj]) spans(end logPos[Obj]) iter.Seq[logSpan[Obj]] {
	return func(yield func(logSpan[Obj]) bool) {
		if p.seq == end.seq {
			return
		}
		for s, lo := p.seg, p.n(); s != nil; s, lo = s.next, 0 {
			hi := changeLogSegment
			if s == end.seg {
				hi = end.n()
			}
			if !yield(logSpan[Obj]{s, lo, hi}) || s == end.seg {
				return
			}
		}
	}
}

// entries yields the entries from p up to end, each with the segment that
// holds it and its position there.
func (p logPos[Obj]) entries(end logPos[Obj]) iter.Seq2[*logEntry[Obj], entryAt[Obj]] {
	return func(yield func(*logEntry[Obj], entryAt[Obj]) bool) {
		for sp := range p.spans(end) {
			for j := sp.lo; j < sp.hi; j++ {
				if !yield(&sp.seg.entries[j], entryAt[Obj]{sp.seg, j}) {
					return
				}
			}
		}
	}
}

// entryAt is where a log entry is.
type entryAt[Obj any] struct {
	seg *logSegment[Obj]
	i   int
}

// logChange is a change read from the log: an entry other than
// entryTruncate, or one of the deletes an entryTruncate stands for, whose
// primary key is then known (key).
type logChange[Obj any] struct {
	logEntry[Obj]
	key []byte
}

// changes yields the changes from p up to end: the entries, with the
// deletes of each entryTruncate in its place. The pointer it yields is
// only valid until the next.
func (p logPos[Obj]) changes(end logPos[Obj]) iter.Seq[*logChange[Obj]] {
	return func(yield func(*logChange[Obj]) bool) {
		var c logChange[Obj]
		for e, at := range p.entries(end) {
			if e.kind != entryTruncate {
				c = logChange[Obj]{logEntry: *e}
				if !yield(&c) {
					return
				}
				continue
			}
			rev := e.rev
			for k, o := range at.seg.truncated(at.i).All() {
				c = logChange[Obj]{logEntry: logEntry[Obj]{obj: o.obj, rev: rev, prev: o.rev, kind: entryDelete}, key: k}
				if !yield(&c) {
					return
				}
				rev++
			}
		}
	}
}

// lastRev returns the revision of the entry's last change.
func (e *logEntry[Obj]) lastRev(at entryAt[Obj]) Revision {
	if e.kind == entryTruncate {
		return e.rev + Revision(at.seg.truncated(at.i).Len()) - 1
	}
	return e.rev
}

// changeKey returns c's primary key.
func (t *table[Obj]) changeKey(c *logChange[Obj]) ([]byte, bool) {
	if c.key != nil {
		return c.key, true
	}
	pk, err := t.primaryKey(nil, c.obj)
	return pk, err == nil
}

// feedRegistry is a table's set of change feeds: how far each has read,
// for the metrics, and whether the table needs its change log at all.
type feedRegistry struct {
	mu    sync.Mutex
	holds []*feedHold // guarded by mu; closed holds are dropped lazily
	count atomic.Int32
	// registered is closed (and replaced) when a transaction that
	// registered feeds ends; guarded by mu. Next hands it to callers whose
	// snapshot is older than their feed's registration.
	registered chan struct{}
	// collect: the last feed was released while the table was locked, so
	// the change log should be dropped once the lock holder is done.
	collect atomic.Bool
}

// feedHold is a feed's entry in the registry. It is separate from the
// iterator so that the iterator can be garbage collected while the registry
// still holds this.
type feedHold struct {
	// pending is set until the registering transaction ends (if it
	// aborts, the feed is closed).
	pending atomic.Bool
	seen    atomic.Uint64 // the revision the feed has read up to
	deletes atomic.Uint64 // the deletes logged before its position
	closed  atomic.Bool

	// pin is the oldest log position (seq) the feed may read: its own
	// position while open, and the start of every sequence Next returned
	// that is not consumed yet, open or closed. math.MaxUint64 for none.
	// It is computed from at and seqs, under mu.
	pin  atomic.Uint64
	mu   sync.Mutex
	at   uint64   // the feed's position; math.MaxUint64 once closed
	seqs []uint64 // the starts of the unconsumed sequences
	// last is the pin of the sequence Next returned last, while it is
	// unconsumed and untracked (seqPin).
	last *seqPin
}

func newFeedHold(at uint64) *feedHold {
	h := &feedHold{at: at}
	h.pin.Store(at)
	return h
}

// move sets the feed's position to at, after pinning the start of the
// sequence that reads from there, whose pin p becomes the last.
func (h *feedHold) move(p *seqPin, at uint64) {
	h.mu.Lock()
	h.track()
	h.last = p
	h.seqs = append(h.seqs, p.at.from)
	h.at = at
	h.repin()
	h.mu.Unlock()
}

// track hands the last sequence's pin, if it is still unconsumed, to the
// garbage collector: the pin goes when the sequence is consumed, or when
// the collector finds it dropped. h.mu is held.
func (h *feedHold) track() {
	if p := h.last; p != nil {
		h.last = nil
		p.tracked = true
		p.cleanup = runtime.AddCleanup(p, heldPos.unpin, p.at)
	}
}

// unpin drops the pin of a sequence that starts at from.
func (h *feedHold) unpin(from uint64) {
	h.mu.Lock()
	h.unpinLocked(from)
	h.mu.Unlock()
}

func (h *feedHold) unpinLocked(from uint64) {
	if i := slices.Index(h.seqs, from); i >= 0 {
		h.seqs = slices.Delete(h.seqs, i, i+1)
	}
	h.repin()
}

func (h *feedHold) repin() {
	pin := h.at
	for _, s := range h.seqs {
		pin = min(pin, s)
	}
	h.pin.Store(pin)
}

// registeredChan returns, if h's registration is still pending, the
// channel closed when the next transaction that registered feeds ends, and
// nil otherwise. Checking and taking the channel under mu, which
// registrationDone holds to end registrations, means a registration cannot
// end in between and leave the caller with a channel nobody closes.
func (r *feedRegistry) registeredChan(h *feedHold) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !h.pending.Load() {
		return nil
	}
	if r.registered == nil {
		r.registered = make(chan struct{})
	}
	return r.registered
}

// registrationDone ends the registration of the feeds in holds (closing
// them if aborted) and wakes the callers waiting for it.
func (r *feedRegistry) registrationDone(holds []*feedHold, aborted bool) {
	for _, h := range holds {
		if aborted {
			h.release(r)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range holds {
		h.pending.Store(false)
	}
	if r.registered != nil {
		close(r.registered)
		r.registered = nil
	}
}

// live returns the number of open feeds.
func (r *feedRegistry) live() int { return int(r.count.Load()) }

func (r *feedRegistry) add(h *feedHold) {
	r.mu.Lock()
	r.prune()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
	r.count.Add(1)
}

// prune drops the holds of closed feeds that pin nothing; r.mu is held.
func (r *feedRegistry) prune() {
	kept := r.holds[:0]
	for _, h := range r.holds {
		if !h.closed.Load() || h.pin.Load() != math.MaxUint64 {
			kept = append(kept, h)
		}
	}
	clear(r.holds[len(kept):])
	r.holds = kept
}

func (h *feedHold) release(r *feedRegistry) {
	if h.closed.CompareAndSwap(false, true) {
		r.count.Add(-1)
		h.mu.Lock()
		h.track()
		h.at = math.MaxUint64
		h.repin()
		h.mu.Unlock()
	}
}

// lowestPin returns the oldest log position a feed may read
// (math.MaxUint64 if none may).
func (r *feedRegistry) lowestPin() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune()
	pin := uint64(math.MaxUint64)
	for _, h := range r.holds {
		pin = min(pin, h.pin.Load())
	}
	return pin
}

// lowest returns the lowest revision and delete count the open feeds have
// read up to (math.MaxUint64 for both without feeds).
func (r *feedRegistry) lowest() (rev Revision, deletes uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rev, deletes = math.MaxUint64, math.MaxUint64
	r.prune()
	for _, h := range r.holds {
		if !h.closed.Load() {
			rev = min(rev, h.seen.Load())
			deletes = min(deletes, h.deletes.Load())
		}
	}
	return rev, deletes
}

// stats returns the number of open feeds, how many revisions the slowest
// of them is behind rev, and how many of the deletes logged before
// deletes some feed has not read (the graveyard).
func (r *feedRegistry) stats(rev Revision, deletes uint64) (live int, lag uint64, graveyard int) {
	if r.live() == 0 {
		return 0, 0, 0
	}
	low, lowDeletes := r.lowest()
	if low != math.MaxUint64 && low < rev {
		lag = rev - low
	}
	if lowDeletes != math.MaxUint64 && lowDeletes < deletes {
		graveyard = int(deletes - lowDeletes)
	}
	return r.live(), lag, graveyard
}

// reportFeeds tells the table's metrics, if any, how many feeds are open
// and how far the slowest is behind rev, when a feed opens or closes.
func (t *table[Obj]) reportFeeds(rev Revision) {
	if m := t.meta.metrics; m != nil {
		live, lag, _ := t.meta.feeds.stats(rev, 0)
		m.ChangeFeeds(live, lag)
	}
}

func (t *table[Obj]) Changes(txn WriteTxn) (ChangeIterator[Obj], error) {
	tt, err := t.writeState(txn)
	if err != nil {
		return nil, err
	}
	// The feed starts after this transaction's writes so far: the objects
	// they deleted were never the feed's to see. Changes from now on go to
	// the log.
	tt.observed = true
	if tt.log.seg == nil {
		tt.startLog()
	}
	h := newFeedHold(tt.log.seq)
	h.pending.Store(true)
	h.seen.Store(tt.revision)
	h.deletes.Store(tt.log.deletes())
	t.meta.feeds.add(h)
	tt.registered = append(tt.registered, h)
	it := &changeIterator[Obj]{t: t, hold: h, pos: tt.log, rev: tt.revision}
	it.cleanup = runtime.AddCleanup(it, func(h *feedHold) {
		h.release(&t.meta.feeds)
		t.collectGraveyard()
	}, h)
	t.reportFeeds(tt.revision)
	return it, nil
}

type changeIterator[Obj any] struct {
	t    *table[Obj]
	hold *feedHold
	// pos is where the feed is in the table's change log, and rev the
	// revision of the snapshot it moved to last (before the first Next:
	// the registration's position and revision).
	pos     logPos[Obj]
	rev     Revision
	started bool
	cleanup runtime.Cleanup
	closed  bool
}

func (it *changeIterator[Obj]) Next(txn ReadTxn) (iter.Seq2[Change[Obj], Revision], <-chan struct{}) {
	st := it.t.stateIn(txn.committed())
	var watch <-chan struct{} = closedChan // a snapshot without the log is outdated
	if st.log.seg != nil {
		watch = st.primary.RootWatch()
	}
	if it.closed || it.hold.closed.Load() {
		return noChanges[Obj], watch
	}
	sameLog := st.log.seg != nil && st.log.seg.chain == it.pos.seg.chain
	if st.log.seg == nil || st.revision < it.rev || (sameLog && st.log.seq < it.pos.seq) {
		// The snapshot is from before the feed's registration committed,
		// or older than the one the feed moved to.
		if ch := it.t.meta.feeds.registeredChan(it.hold); ch != nil {
			// Wait for the registering transaction to end.
			return noChanges[Obj], ch
		}
		// It committed since, changing the table: watch is closed, and a
		// newer snapshot has the changes.
		return noChanges[Obj], watch
	}
	if !sameLog {
		// The snapshot has the log the table dropped before the feed's
		// began; as it is not older than the feed, it is at the
		// registration's revision, without a change since.
		if it.started {
			return noChanges[Obj], watch
		}
		it.started = true
		return func(yield func(Change[Obj], Revision) bool) {
			it.t.firstChanges(st, st.log, yield)
		}, watch
	}
	if it.started && st.log.seq == it.pos.seq {
		return noChanges[Obj], watch
	}
	from, fromRev, first := it.pos, it.rev, !it.started
	it.started, it.pos, it.rev = true, st.log, st.revision
	// The sequence pins the log from where it starts until consumed.
	pin := &seqPin{at: heldPos{it.hold, from.seq}}
	it.hold.move(pin, st.log.seq)
	it.hold.seen.Store(st.revision)
	it.hold.deletes.Store(st.log.deletes())
	t := it.t
	if first {
		return func(yield func(Change[Obj], Revision) bool) {
			defer pin.consume()()
			t.firstChanges(st, from, yield)
		}, watch
	}
	return func(yield func(Change[Obj], Revision) bool) {
		defer pin.consume()()
		t.logChanges(from, st.log, fromRev, st.revision, yield)
	}, watch
}

func noChanges[Obj any](func(Change[Obj], Revision) bool) {}

// seqPin is a sequence's pin on the change log (feedHold.seqs), released
// when the sequence is consumed. A sequence may also be dropped
// unconsumed: its pin then goes when the garbage collector finds it. The
// cleanup that does this costs more than the rest of Next, and sequences
// are nearly always consumed before the feed's next Next, so the pin gets
// one only then, or when the feed closes (feedHold.track); until then it
// is the hold's last, which keeps it reachable.
type seqPin struct {
	at       heldPos
	consumed atomic.Bool
	// tracked: the pin has a cleanup (guarded by at.hold.mu, as is
	// cleanup).
	tracked bool
	cleanup runtime.Cleanup
}

// heldPos is a position a feed pins: what a seqPin's cleanup needs, apart
// from the seqPin itself.
type heldPos struct {
	hold *feedHold
	from uint64
}

func (a heldPos) unpin() { a.hold.unpin(a.from) }

// consume marks the sequence consumed, panicking if it was before (its
// part of the log may be reused since), and returns the function that
// releases the pin once the sequence is done.
func (p *seqPin) consume() func() {
	if !p.consumed.CompareAndSwap(false, true) {
		panic("strata: ChangeIterator: a sequence returned by Next was consumed twice")
	}
	return p.release
}

func (p *seqPin) release() {
	h := p.at.hold
	h.mu.Lock()
	if p.tracked {
		p.cleanup.Stop()
	} else {
		h.last = nil // untracked, so it is the last
	}
	h.unpinLocked(p.at.from)
	h.mu.Unlock()
}

// logChanges yields the changes logged from from to to, each object once
// in its newest state; fromRev and toRev are the revisions of the
// snapshots at from and to.
func (t *table[Obj]) logChanges(from, to logPos[Obj], fromRev, toRev Revision, yield func(Change[Obj], Revision) bool) {
	// Which changes does a later one of the batch supersede? An update or
	// a delete names the change it supersedes; an insert under a new key
	// may supersede a delete of the same key, which only the key tells.
	superseded := revSet{base: fromRev + 1, span: toRev - fromRev}
	// inserts: the batch has an insert that may supersede a delete;
	// upserts: it has an insert or update, so a truncate after it may
	// delete objects of the batch (and else only older ones).
	inserts, upserts := false, false
	for sp := range from.spans(to) {
		s := sp.seg
		if s != to.seg && s.plain(fromRev) {
			// Nothing to look at; as for upserts, it may have some.
			upserts = true
			continue
		}
		for j := sp.lo; j < sp.hi; j++ {
			e := &s.entries[j]
			if e.kind == entryInsert || e.kind == entryUpdate {
				upserts = true
			}
			switch {
			case e.rev <= fromRev || e.lastRev(entryAt[Obj]{s, j}) > toRev:
				// Restored objects, at the revisions they had: the
				// batch is not in revision order.
				t.newestChanges(from.changes(to), yield)
				return
			case e.kind == entryTruncate:
				if !upserts {
					break
				}
				// A pull iterator: a range function's body would take
				// superseded's address, and Next would allocate it.
				tr := s.truncated(j).Iterator()
				for _, o, ok := tr.Next(); ok; _, o, ok = tr.Next() {
					if o.rev > fromRev {
						superseded.add(o.rev)
					}
				}
			case e.prev <= fromRev:
			case e.kind == entryInsert:
				inserts = true
			default:
				superseded.add(e.prev)
			}
		}
	}
	if inserts {
		for _, r := range t.reinserted(from.changes(to), fromRev) {
			superseded.add(r)
		}
	}
	// from.changes, a segment at a time.
	none := superseded.empty()
	for sp := range from.spans(to) {
		s := sp.seg
		for j := sp.lo; j < sp.hi; j++ {
			e := &s.entries[j]
			if e.kind == entryTruncate {
				if !truncateChanges(s.truncated(j), e.rev, superseded, yield) {
					return
				}
				continue
			}
			if !none && superseded.has(e.rev) {
				continue
			}
			if !yield(e.change(), e.rev) {
				return
			}
		}
	}
}

// truncateChanges yields the deletes of an entryTruncate at rev, of the
// objects of tree, but those in superseded. It reports whether to go on.
//
// It reads the tree with a pull iterator, so that each delete costs one
// call through a function value, to yield: a range over the tree would add
// one to the loop body (about a fifth of a delete's delivery).
func truncateChanges[Obj any](tree part.Tree[object[Obj]], rev Revision, superseded revSet, yield func(Change[Obj], Revision) bool) bool {
	var it part.Iterator[object[Obj]]
	it.Reset(tree)
	none := superseded.empty()
	for _, o, ok := it.Next(); ok; _, o, ok = it.Next() {
		if (none || !superseded.has(rev)) && !yield(Change[Obj]{Object: o.obj, Revision: rev, Deleted: true}, rev) {
			return false
		}
		rev++
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

// newestChanges yields, of the changes, each object's newest.
func (t *table[Obj]) newestChanges(changes iter.Seq[*logChange[Obj]], yield func(Change[Obj], Revision) bool) {
	newest := map[string]Revision{}
	for c := range changes {
		if pk, ok := t.changeKey(c); ok {
			newest[string(pk)] = c.rev
		}
	}
	for c := range changes {
		if pk, ok := t.changeKey(c); ok && newest[string(pk)] != c.rev {
			continue
		}
		if !yield(c.change(), c.rev) {
			return
		}
	}
}

// revSet is a set of the revisions of a batch of changes, most of which
// lie in [base, base+span): a bitmap for those, a map for the rest.
type revSet struct {
	base, span Revision
	bits       []uint64
	more       map[Revision]struct{}
}

// maxRevSetSpan bounds the bitmap of a revSet (in revisions): 64 KiB.
const maxRevSetSpan = 1 << 19

func (s *revSet) add(r Revision) {
	if i := r - s.base; r >= s.base && i < s.span && s.span <= maxRevSetSpan {
		if s.bits == nil {
			s.bits = make([]uint64, (s.span+63)/64)
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
func (s *revSet) empty() bool { return s.bits == nil && s.more == nil }

func (s *revSet) has(r Revision) bool {
	if i := r - s.base; s.bits != nil && r >= s.base && i < s.span {
		return s.bits[i/64]&(1<<(i%64)) != 0
	}
	if s.more == nil {
		return false
	}
	_, ok := s.more[r]
	return ok
}

// firstChanges yields the changes of a feed's first Next: every object of
// st, and the objects deleted since the feed's registration at from that
// st does not have, in revision order.
func (t *table[Obj]) firstChanges(st *tableState[Obj], from logPos[Obj], yield func(Change[Obj], Revision) bool) {
	changes := make([]Change[Obj], 0, st.primary.Len())
	for _, o := range st.primary.All() {
		changes = append(changes, Change[Obj]{Object: o.obj, Revision: o.rev})
	}
	newest := map[string]Revision{}
	for c := range from.changes(st.log) {
		if c.kind != entryDelete {
			continue
		}
		if pk, ok := t.changeKey(c); ok {
			if _, found := st.primary.Get(pk); !found {
				newest[string(pk)] = c.rev
			}
		}
	}
	for c := range from.changes(st.log) {
		if c.kind != entryDelete {
			continue
		}
		if pk, ok := t.changeKey(c); ok && newest[string(pk)] == c.rev {
			changes = append(changes, c.change())
		}
	}
	slices.SortFunc(changes, func(a, b Change[Obj]) int { return cmp.Compare(a.Revision, b.Revision) })
	for _, c := range changes {
		if !yield(c, c.Revision) {
			return
		}
	}
}

func (it *changeIterator[Obj]) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.pos = logPos[Obj]{}
	it.cleanup.Stop()
	it.hold.release(&it.t.meta.feeds)
	it.t.reportFeeds(it.rev)
	it.t.collectGraveyard()
}

// collectGraveyard drops the change log if the table has no feeds left and
// is not locked; otherwise the transaction holding the lock does it when it
// ends.
func (t *table[Obj]) collectGraveyard() {
	if t.meta.db == nil || t.meta.feeds.live() > 0 {
		return
	}
	// The flag is set before trying the lock: a holder that unlocks after
	// the failed try then sees it (writeTxn.release).
	t.meta.feeds.collect.Store(true)
	if !t.meta.lock.tryLock() {
		return
	}
	t.meta.feeds.collect.Store(false)
	w := t.meta.db.lockedWriteTxn(&t.meta)
	if _, err := t.writeState(w); err != nil {
		w.Abort()
		return
	}
	if _, err := w.Commit(); err != nil {
		w.Abort()
	}
}
