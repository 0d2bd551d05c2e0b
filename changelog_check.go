package strata

import (
	"fmt"
	"math"
)

// checkLog checks the invariants of the table's change log
// (changelog.go, changelog_writer.go, feeds.go) at the end of a
// transaction, when tt.log is the committed end of the log. It panics on a
// violation. It runs only under the invariants build tag: it walks the
// whole log the writer can reach.
func (tt *tableTxn[Obj]) checkLog() {
	if err := tt.logError(); err != nil {
		panic(fmt.Sprintf("strata: table %q: change log: %v", tt.t.meta.name, err))
	}
}

func (tt *tableTxn[Obj]) logError() error {
	end := tt.log
	pins := tt.t.meta.feeds.pins()
	if end.seg == nil {
		if len(pins) > 0 {
			return fmt.Errorf("%d open feeds, and no log", len(pins))
		}
		return nil
	}
	if end.seq < end.seg.seq || end.seq > end.seg.seq+changeLogSegment {
		return fmt.Errorf("end %d outside its segment [%d, %d]", end.seq, end.seg.seq, end.seg.seq+changeLogSegment)
	}
	h := tt.logHead
	if h == nil || h.chain != end.seg.chain {
		return fmt.Errorf("the writer's head is not in the log")
	}
	last := Revision(0)
	for s := h; ; s = s.next {
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
	for _, pin := range pins {
		if pin == math.MaxUint64 {
			continue
		}
		if pin < h.seq || pin > end.seq {
			return fmt.Errorf("a feed pins %d, outside the log the writer keeps [%d, %d]", pin, h.seq, end.seq)
		}
	}
	return nil
}
