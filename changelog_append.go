package strata

// The change log's appender: the transaction holding a table's lock appends
// the table's changes to its log, links segments, and reuses the segments
// no reader needs. See changelog.go for the log itself and
// docs/changelog.md for the design.
//
// Invariants (checked under the invariants build tag, changelog_check.go):
//
//  1. logAppender.cur.end is the end of the log the transaction writes, the
//     zero logPos without one. cur.reuseBelow is the committed end of that
//     log when the transaction began to write it (0 for a log it started):
//     everything before reuseBelow is committed, everything after is the
//     transaction's own.
//  2. logAppender.head is the oldest segment the writer may still reuse or
//     trim. It is in the same log as cur.end, at or before the segment of
//     reuseBelow, and the segments from it follow one another to the end
//     of the log. Segments before it are unreachable for the writer.
//  3. A feed pins the position it reads from (feedEntry.pin): the start
//     of the batch it is delivering, or where it stopped. A feed reads
//     nothing before its pin, and a pin never moves back, but for a feed
//     registering in the open transaction, which pins that transaction's
//     end of the log: at or after reuseBelow.
//  4. A segment s is reused (newSegment) or dropped from the writer's
//     reach (trim) only if s.seq+changeLogSegment is below both
//     reuseBelow and every pin the transaction read (reusable). So no
//     reader reads a reused segment: a feed pins a position at or before
//     what it reads, and a position at the end of a full segment still
//     reads that segment's next. And an abort can cut the log back to
//     reuseBelow (discard): that segment was not reused. Reading the pins
//     once per transaction is safe: they only move forward but for feeds
//     registered in it, which pin positions at or after reuseBelow.

import "github.com/strata-db/strata/part"

// logAppender appends a table's changes to its change log; it is the
// log part of the table's tableTxn (tableTxn.log). cur is per transaction, and begin resets it in one
// assignment; head and lastDelete are kept across transactions.
type logAppender[Obj any] struct {
	// feeds is the table's feed registry, set when the table is made.
	feeds *feedRegistry

	// cur is the appender's state in one transaction.
	cur logTxn[Obj]

	// head is the oldest segment of the log that is not yet reused
	// (newSegment) or trimmed; set by start, so it is in the table's log
	// whenever there is one. Kept across transactions: the segments
	// from it are the ones the next transactions reuse.
	head *logSegment[Obj]
	// lastDelete is the revision of the newest delete the table logged
	// (or a higher one: an aborted transaction's). Kept across
	// transactions; see logEntry.prev.
	lastDelete Revision
}

// logTxn is the log appender's state in one transaction.
type logTxn[Obj any] struct {
	// observed: the table has change feeds, so its changes go to the
	// change log, whose end is end (the zero logPos without one). Decided
	// when the transaction begins (and set when a feed registers in it),
	// not per write.
	observed bool
	end      logPos[Obj]
	// segments is the number of segments the transaction added to the log.
	segments int
	// reuseBelow is the committed end of the log (its seq) when the
	// transaction began to write it: the writer reuses no segment at or
	// after it.
	reuseBelow uint64
	// lowestPin is the lowest of the feeds' pins (feedEntry.pin), as the
	// transaction first read it (lowestFeedPin; set once lowestPinRead).
	lowestPin     uint64
	lowestPinRead bool
}

// start starts a new, empty change log for the table.
func (w *logAppender[Obj]) start() {
	w.cur.end = logPos[Obj]{seg: &logSegment[Obj]{chain: new(logChain)}}
	w.head = w.cur.end.seg
	w.cur.reuseBelow = 0
}

// drop drops the table's change log: it has no feeds.
func (w *logAppender[Obj]) drop() {
	w.cur.end, w.head = logPos[Obj]{}, nil
	w.cur.reuseBelow = 0
}

// begin sets the log up for a transaction beginning from base: kept,
// started or dropped as the table has feeds (observed). A base that is
// not published (a tip) counts as the transaction's own for reuse:
// reuseBelow is the published end of the log (commitqueue.go, invariant
// 6), or 0 if the published state has no log or another. It reports
// whether it started or dropped the log, which changes the table's state.
//
// A table with no log and no feeds, the common case, has nothing to set
// up: its transaction only resets cur (idle), which tableTxn.begin calls
// instead, as the compiler does not inline begin.
func (w *logAppender[Obj]) begin(base, published *tableState[Obj], observed bool) (changed bool) {
	w.cur = logTxn[Obj]{observed: observed, end: base.log, reuseBelow: base.log.seq}
	if base != published {
		w.cur.reuseBelow = 0
		if published.log.seg != nil && sameLog(published.log, base.log) {
			w.cur.reuseBelow = published.log.seq
		}
	}
	switch {
	case observed && w.cur.end.seg == nil:
		// A feed registered in a transaction that aborted.
		w.start()
		return true
	case !observed && w.cur.end.seg != nil:
		// The last feed closed.
		w.drop()
		return true
	case w.cur.end.seg != nil && (w.head == nil || w.head.chain != w.cur.end.seg.chain):
		// The writer's head belongs to no log, or to another. A guard:
		// every transaction ends with the head in the committed log
		// (abort sets it to the committed end's segment when it threw
		// a log away; checkLog checks it), so this is not expected.
		w.head = w.cur.end.seg
	}
	return false
}

// idle is begin for a table with no log and no feeds.
func (w *logAppender[Obj]) idle() {
	w.cur = logTxn[Obj]{}
}

// abort ends an aborted transaction that began from a state whose log
// ends at base: it cuts what the transaction appended to that log, or,
// if the transaction started or dropped a log, moves the head into the
// committed one.
func (w *logAppender[Obj]) abort(base logPos[Obj]) {
	end := w.cur.end
	if base.seg != nil && end.seg != nil && base.seg.chain == end.seg.chain {
		base.discard(end)
	} else {
		// The transaction started or dropped a log: the writer's head
		// is not in the committed one, if any. Its end's segment is the
		// oldest the writer knows it may reach.
		w.head = base.seg
	}
	w.cur.end = logPos[Obj]{}
}

// append adds e at the end of the transaction's change log.
//
// The compiler does not inline it, so upsert, the hot path, does the same
// by hand.
func (w *logAppender[Obj]) append(e logEntry[Obj]) {
	s := w.cur.end.seg
	n := w.cur.end.seq - s.seq
	if n == changeLogSegment {
		s, n = w.nextSegment(), 0
	}
	s.entries[n] = e
	w.cur.end.seq++
	s.sum.maxPrev = max(s.sum.maxPrev, e.prev)
	switch e.kind {
	case entryDelete:
		s.sum.deletes++
	case entryRestore:
		s.sum.restored = true
	}
}

// nextSegment links an empty segment after the log's last, which is full,
// and returns it.
func (w *logAppender[Obj]) nextSegment() *logSegment[Obj] {
	last := w.cur.end.seg
	s := w.newSegment()
	s.seq, s.deletes = w.cur.end.seq, last.deletes+last.sum.deletes
	last.next = s
	w.cur.end.seg = s
	return s
}

// appendTruncate adds an entryTruncate for the objects of tree, deleted at
// revisions rev, rev+1, ...
func (w *logAppender[Obj]) appendTruncate(tree part.Tree[object[Obj]], rev Revision) {
	w.append(logEntry[Obj]{rev: rev, prev: rev - 1, kind: entryTruncate})
	s := w.cur.end.seg
	s.truncs.Store(&logTrunc[Obj]{i: w.cur.end.n() - 1, tree: tree, next: s.truncs.Load()})
	s.sum.deletes += uint64(tree.Len())
}

// newSegment returns an empty segment to append to the log: the oldest
// one, if it is reusable, or else a new one. Reusing segments keeps a log
// that feeds follow closely to a few segments that stay in the processor's
// caches, instead of a stream of new ones for the garbage collector
// (BenchmarkDB_Changes); trim bounds how many wait.
func (w *logAppender[Obj]) newSegment() *logSegment[Obj] {
	w.cur.segments++
	h := w.head
	if !w.reusable(h) {
		return &logSegment[Obj]{chain: w.cur.end.seg.chain}
	}
	// The old entries stay until overwritten: nothing reads past the end
	// of the log, and they keep at most a segment's objects a little
	// longer.
	w.head = h.next
	h.next, h.sum = nil, segmentSummary{}
	h.truncs.Store(nil)
	return h
}

// reusable reports whether no reader may read the segment s of the
// transaction's log, nor an abort need it: it ends before the committed
// end of the log (reuseBelow) and before every feed's pin (invariant 4).
// A segment that ends before reuseBelow is not the log's last, so it has
// a next.
func (w *logAppender[Obj]) reusable(s *logSegment[Obj]) bool {
	end := s.seq + changeLogSegment
	return end < w.cur.reuseBelow && end < w.lowestFeedPin()
}

// lowestFeedPin returns the lowest pin of the table's feeds, as the
// transaction first read it (logTxn.lowestPin): a safe value for the
// whole transaction (invariant 4).
func (w *logAppender[Obj]) lowestFeedPin() uint64 {
	if !w.cur.lowestPinRead {
		w.cur.lowestPin, w.cur.lowestPinRead = w.feeds.lowestPin(), true
	}
	return w.cur.lowestPin
}

// trim leaves to the garbage collector the reusable segments but as
// many as the transaction took (and two), which the next one will likely
// reuse: a backlog that feeds read, or let go of, is not kept.
func (w *logAppender[Obj]) trim() {
	unread := 0
	for s := w.head; w.reusable(s); s = s.next {
		unread++
	}
	for range unread - max(w.cur.segments, 2) {
		w.head = w.head.next
	}
}

// discard drops the entries from p to end, which an aborted transaction
// appended after p, so that the log holds on to nothing they held, and
// summarizes p's segment anew. p is the committed end of the log (the
// transaction's reuseBelow), which no reader reads past and whose segment
// was not reused (invariant 4).
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
