package strata

// The change log: what a table's change feeds read. docs/changelog.md
// explains the design with a diagram; this file keeps the log's data
// structures and how they are read. The writer's side is in
// changelog_append.go, the feeds' side in feeds.go and changes.go.
//
// Invariants (checked under the invariants build tag, changelog_check.go):
//
//  1. A log is a chain of segments of changeLogSegment entries. A segment
//     begins at entry number seq of its log: the next segment of s begins
//     at s.seq+changeLogSegment. A position p lies in its segment:
//     p.seg.seq <= p.seq <= p.seg.seq+changeLogSegment.
//  2. Only the writer (the transaction holding the table lock) writes the
//     log, and only past the committed end: the position of the log in the
//     table's latest published state. Readers read between two positions
//     of published states, never past the end of the state they were
//     given, so they never race with the writer.
//  3. Committed entries never change until their segment is reused, and a
//     segment is reused only when no reader may read it (invariant 4 of
//     changelog_append.go).
//  4. Entries are in revision order, each change above the revision of
//     the state before it, but for entryRestore: Restore logs objects at
//     the revisions they had, which may be lower. A segment that holds an
//     entryRestore says so in its summary.
//  5. A segment's summary describes the entries before the end of the
//     log: the writer keeps it as it appends, an abort recomputes it.

import (
	"iter"
	"sync/atomic"

	"github.com/strata-db/strata/part"
)

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
	// entryRestore is an object Restore added, at the revision it had,
	// which may be below the revisions of the entries before it.
	entryRestore
)

func (e *logEntry[Obj]) change() Change[Obj] {
	return Change[Obj]{Object: e.obj, Revision: e.rev, Deleted: e.kind == entryDelete}
}

// logSegment is a run of log entries, linked to the next.
//
// The writer (holding the table lock) fills entries past the committed
// end, which no reader looks at, and links a new segment when one is full.
// A published state records the end of the log it saw (tableState.log), a
// feed where it stopped. The writer keeps the oldest segment it may reuse
// (logAppender.head); nothing else points back.
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
	// its state ends in, which the writer no longer touches.
	sum segmentSummary
}

// segmentSummary summarizes the entries of a segment: enough for a feed to
// tell, without reading them, that none supersedes another change of its
// batch (supersedesNoneAfter), and for the next segment to know the
// deletes logged before it.
type segmentSummary struct {
	maxPrev Revision // the highest prev of an entry
	deletes uint64   // the deletes logged
	// restored: the segment holds an entryRestore.
	restored bool
}

// supersedesNoneAfter reports whether no change of s supersedes a change
// logged after a position in or before s whose state is at fromRev. The
// log goes on after s, so s's entries after that position are at
// revisions above fromRev (invariant 4); none of them supersedes a change
// after the position if every prev is at most fromRev. An entry's prev is
// below its revision (an entryTruncate's one below its first), so the
// entries before the position, at revisions up to fromRev, do not change
// that.
func (s *logSegment[Obj]) supersedesNoneAfter(fromRev Revision) bool {
	return !s.sum.restored && s.sum.maxPrev <= fromRev
}

// summarize computes the summary of the first n entries of s anew.
func (s *logSegment[Obj]) summarize(n int) { s.sum = s.summaryOf(n) }

// summaryOf returns the summary of the first n entries of s.
func (s *logSegment[Obj]) summaryOf(n int) segmentSummary {
	sum := segmentSummary{deletes: s.deletesIn(n)}
	for i := range n {
		e := &s.entries[i]
		sum.maxPrev = max(sum.maxPrev, e.prev)
		sum.restored = sum.restored || e.kind == entryRestore
	}
	return sum
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
// reused: a published state may keep a position in a segment that was
// reused since, and only the positions feeds pin may be read through
// (changelog_append.go).
type logPos[Obj any] struct {
	seg *logSegment[Obj]
	seq uint64
}

// n returns the number of entries of p's segment before p.
func (p logPos[Obj]) n() int { return int(p.seq - p.seg.seq) }

// at returns the position before entry i of s.
func (s *logSegment[Obj]) at(i int) logPos[Obj] {
	return logPos[Obj]{seg: s, seq: s.seq + uint64(i)}
}

// deletes returns the number of deletes logged before p (0 without a log).
// It counts those of p's segment, so that a position stays two words (the
// segment's summary may count entries past p that a writer is appending):
// only metrics and the feeds' figures ask.
func (p logPos[Obj]) deletes() uint64 {
	if p.seg == nil {
		return 0
	}
	return p.seg.deletes + p.seg.deletesIn(p.n())
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
		for sp := range p.spans(end) {
			for j := sp.lo; j < sp.hi; j++ {
				e := &sp.seg.entries[j]
				if e.kind != entryTruncate {
					c = logChange[Obj]{logEntry: *e}
					if !yield(&c) {
						return
					}
					continue
				}
				rev := e.rev
				for k, o := range sp.seg.truncated(j).All() {
					c = logChange[Obj]{logEntry: logEntry[Obj]{obj: o.obj, rev: rev, prev: o.rev, kind: entryDelete}, key: k}
					if !yield(&c) {
						return
					}
					rev++
				}
			}
		}
	}
}

// lastRev returns the revision of the last change of entry i of s.
func (s *logSegment[Obj]) lastRev(i int) Revision {
	if e := &s.entries[i]; e.kind == entryTruncate {
		return e.rev + Revision(s.truncated(i).Len()) - 1
	}
	return s.entries[i].rev
}

// changeKey returns c's primary key.
func (t *table[Obj]) changeKey(c *logChange[Obj]) ([]byte, bool) {
	if c.key != nil {
		return c.key, true
	}
	pk, err := t.primaryKey(nil, c.obj)
	return pk, err == nil
}
