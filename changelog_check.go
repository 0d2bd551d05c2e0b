package strata

import (
	"errors"
	"fmt"
)

// check checks the invariants of the table's change log
// (changelog.go, changelog_append.go, feeds.go, changes.go) at the end of
// a transaction, with end the committed end of the log: the segments the
// writer can reach, and what every open feed may still read, by its pin
// and by the positions it published (changeIterator.publishHeld).
// tableTxn.checkLog panics on the error it returns. It runs only under the
// invariants build tag: it walks the whole log the writer can reach.
func (w *logAppender[Obj]) check(end logPos[Obj]) error {
	holds := w.feeds.holds()
	if end.seg == nil {
		if len(holds) > 0 {
			return fmt.Errorf("%d open feeds, and no log", len(holds))
		}
		return nil
	}
	if end.seq < end.seg.seq || end.seq > end.seg.seq+changeLogSegment {
		return fmt.Errorf("end %d outside its segment [%d, %d]", end.seq, end.seg.seq, end.seg.seq+changeLogSegment)
	}
	h := w.head
	if h == nil || h.chain != end.seg.chain {
		return fmt.Errorf("the writer's head is not in the log")
	}
	last := Revision(0)
	kept := map[*logSegment[Obj]]bool{} // the segments the writer keeps
	for s := h; ; s = s.next {
		kept[s] = true
		n := changeLogSegment
		if s == end.seg {
			n = end.n()
		}
		if sum := s.summaryOf(n); sum != s.sum {
			return fmt.Errorf("segment at %d: summary %+v, entries say %+v", s.seq, s.sum, sum)
		}
		for i := range n {
			e := &s.entries[i]
			if e.kind == entryRestore {
				continue
			}
			if e.rev <= last {
				return fmt.Errorf("entry %d at revision %d after one at %d", s.seq+uint64(i), e.rev, last)
			}
			last = s.lastRev(i)
		}
		if s == end.seg {
			break
		}
		next := s.next
		switch {
		case next == nil:
			return fmt.Errorf("the writer's head does not reach the end of the log")
		case next.chain != s.chain || next.seq != s.seq+changeLogSegment:
			return fmt.Errorf("segment at %d followed by one at %d", s.seq, next.seq)
		case next.deletes != s.deletes+s.sum.deletes:
			return fmt.Errorf("segment at %d counts %d deletes before it, want %d", next.seq, next.deletes, s.deletes+s.sum.deletes)
		}
	}
	for _, fh := range holds {
		var errs []error
		if fh.pin < h.seq || fh.pin > end.seq {
			errs = append(errs, fmt.Errorf("the pin outside the log the writer keeps [%d, %d]", h.seq, end.seq))
		}
		held, _ := fh.held.([]heldPos[Obj])
		for _, hp := range held {
			if hp.what == heldNextState && hp.pos.seg.chain != end.seg.chain {
				continue // a state of a log dropped before the feed's
			}
			if err := posError(hp.pos, fh.pin, end, kept); err != nil {
				errs = append(errs, fmt.Errorf("its %s: %w", hp.what, err))
			}
		}
		if errs != nil {
			return fmt.Errorf("a feed pinning %d: %w", fh.pin, errors.Join(errs...))
		}
	}
	return nil
}

// posError checks that a feed pinning pin may read from or up to p: p is
// in a segment the writer keeps (not reused nor dropped, so in the log,
// with the sequence number the position expects), within that segment,
// and between the pin and the end of the log.
func posError[Obj any](p logPos[Obj], pin uint64, end logPos[Obj], kept map[*logSegment[Obj]]bool) error {
	switch {
	case p.seg.chain != end.seg.chain:
		return fmt.Errorf("at %d, in another log", p.seq)
	case !kept[p.seg]:
		return fmt.Errorf("at %d, in a segment the writer no longer keeps", p.seq)
	case p.seq < p.seg.seq || p.seq > p.seg.seq+changeLogSegment:
		return fmt.Errorf("at %d, outside its segment [%d, %d]: the segment was reused", p.seq, p.seg.seq, p.seg.seq+changeLogSegment)
	case p.seq < pin:
		return fmt.Errorf("at %d, before the pin", p.seq)
	case p.seq > end.seq:
		return fmt.Errorf("at %d, after the end of the log at %d", p.seq, end.seq)
	}
	return nil
}
