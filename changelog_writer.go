package strata

// The change log's writer: the transaction holding a table's lock appends
// the table's changes to its log, links segments, and reuses the segments
// no reader needs. See changelog.go for the log itself and
// docs/changelog.md for the design.
//
// Invariants (checked under the invariants build tag, changelog_check.go):
//
//  1. tableTxn.log is the end of the log the transaction writes, the zero
//     logPos without one. reuseBelow is the committed end of that log
//     when the transaction began to write it (0 for a log it started):
//     everything before reuseBelow is committed, everything after is the
//     transaction's own.
//  2. logHead is the oldest segment the writer may still reuse or trim.
//     It is in the same log as tableTxn.log, at or before the segment of
//     reuseBelow, and the segments from it follow one another to the end
//     of the log. Segments before it are unreachable for the writer.
//  3. A feed pins the position it reads from (feedEntry.pin): the start
//     of the batch it is delivering, or where it stopped. A feed reads
//     nothing before its pin, and a pin never moves back, but for a feed
//     registering in the open transaction, which pins that transaction's
//     end of the log: at or after reuseBelow.
//  4. A segment s is reused (newSegment) or dropped from the writer's
//     reach (trimLog) only if s.seq+changeLogSegment is below both
//     reuseBelow and every pin the transaction read (reusable). So no
//     reader reads a reused segment: a feed pins a position at or before
//     what it reads, and a position at the end of a full segment still
//     reads that segment's next. And an abort can cut the log back to
//     reuseBelow (discard): that segment was not reused. Reading the pins
//     once per transaction is safe: they only move forward but for feeds
//     registered in it, which pin positions at or after reuseBelow.

import "github.com/strata-db/strata/part"

// startLog starts a new, empty change log for the table.
func (tt *tableTxn[Obj]) startLog() {
	tt.log = logPos[Obj]{seg: &logSegment[Obj]{chain: new(logChain)}}
	tt.logHead, tt.dirty = tt.log.seg, true
	tt.reuseBelow = 0
}

// dropLog drops the table's change log: it has no feeds.
func (tt *tableTxn[Obj]) dropLog() {
	tt.log, tt.logHead, tt.dirty = logPos[Obj]{}, nil, true
	tt.reuseBelow = 0
}

// beginLog sets the log up for a transaction beginning from base: kept,
// started or dropped as the table has feeds. A base that is not published
// (a tip) counts as the transaction's own for reuse: reuseBelow is the
// published end of the log (commitqueue.go, invariant 6), or 0 if the
// published state has no log or another.
func (tt *tableTxn[Obj]) beginLog(base, published *tableState[Obj]) {
	tt.log, tt.segments, tt.lowestPinRead = base.log, 0, false
	tt.reuseBelow = base.log.seq
	if base != published {
		tt.reuseBelow = 0
		if published.log.seg != nil && sameLog(published.log, base.log) {
			tt.reuseBelow = published.log.seq
		}
	}
	switch {
	case tt.observed && tt.log.seg == nil:
		// A feed registered in a transaction that aborted.
		tt.startLog()
	case !tt.observed && tt.log.seg != nil:
		// The last feed closed.
		tt.dropLog()
	case tt.log.seg != nil && (tt.logHead == nil || tt.logHead.chain != tt.log.seg.chain):
		// The writer's head belongs to no log, or to another. A guard:
		// every transaction ends with the head in the committed log
		// (abort sets it to the committed end's segment when it threw
		// a log away; checkLog checks it), so this is not expected.
		tt.logHead = tt.log.seg
	}
}

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
	switch e.kind {
	case entryDelete:
		s.sum.deletes++
	case entryRestore:
		s.sum.restored = true
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
// one, if it is reusable, or else a new one. Reusing segments keeps a log
// that feeds follow closely to a few segments that stay in the processor's
// caches, instead of a stream of new ones for the garbage collector
// (BenchmarkDB_Changes); trimLog bounds how many wait.
func (tt *tableTxn[Obj]) newSegment() *logSegment[Obj] {
	tt.segments++
	h := tt.logHead
	if !tt.reusable(h) {
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

// reusable reports whether no reader may read the segment s of the
// transaction's log, nor an abort need it: it ends before the committed
// end of the log (reuseBelow) and before every feed's pin (invariant 4).
// A segment that ends before reuseBelow is not the log's last, so it has
// a next.
func (tt *tableTxn[Obj]) reusable(s *logSegment[Obj]) bool {
	end := s.seq + changeLogSegment
	return end < tt.reuseBelow && end < tt.lowestFeedPin()
}

// lowestFeedPin returns the lowest pin of the table's feeds, as the
// transaction first read it (tableTxn.lowestPin): a safe value for the
// whole transaction (invariant 4).
func (tt *tableTxn[Obj]) lowestFeedPin() uint64 {
	if !tt.lowestPinRead {
		tt.lowestPin, tt.lowestPinRead = tt.t.meta.feeds.lowestPin(), true
	}
	return tt.lowestPin
}

// trimLog leaves to the garbage collector the reusable segments but as
// many as the transaction took (and two), which the next one will likely
// reuse: a backlog that feeds read, or let go of, is not kept.
func (tt *tableTxn[Obj]) trimLog() {
	unread := 0
	for s := tt.logHead; tt.reusable(s); s = s.next {
		unread++
	}
	for range unread - max(tt.segments, 2) {
		tt.logHead = tt.logHead.next
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
