package replicate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// The workload the crash and power-loss tests run: a sequence of log
// operations (appends, head and tail truncations, overwrites) drawn from a
// seeded generator, and a model of the log they must leave.

// entryFor returns the entry at index in term. Its content is a pure
// function of the two, so that a reader checks an entry read back is whole
// knowing only its index and term.
func entryFor(index, term uint64) *raft.Log {
	rng := rand.New(rand.NewPCG(index, term))
	data := make([]byte, 16+rng.IntN(240))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	l := &raft.Log{
		Index:      index,
		Term:       term,
		Type:       raft.LogType(index % 6),
		Data:       data,
		AppendedAt: time.Unix(int64(index), int64(term%1e9)).UTC(),
	}
	if index%3 == 0 {
		l.Extensions = fmt.Appendf(nil, "ext %d/%d", index, term)
	}
	return l
}

// sameEntry reports whether a and b are the same entry.
func sameEntry(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		(a.Data == nil) == (b.Data == nil) && (a.Extensions == nil) == (b.Extensions == nil) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

// logOp is one operation: store entries lo..hi in term (kind 's'), or
// DeleteRange(lo, hi) (kind 'd').
type logOp struct {
	kind   byte
	lo, hi uint64
	term   uint64
}

func (o logOp) String() string { return fmt.Sprintf("op %c %d %d %d", o.kind, o.lo, o.hi, o.term) }

func parseOp(line string) (logOp, bool) {
	var o logOp
	n, err := fmt.Sscanf(line, "op %c %d %d %d", &o.kind, &o.lo, &o.hi, &o.term)
	return o, err == nil && n == 4
}

// run applies o to s.
func (o logOp) run(s *LogStore) error {
	if o.kind == 'd' {
		return s.DeleteRange(o.lo, o.hi)
	}
	return s.StoreLogs(entries(o.lo, o.hi, o.term))
}

// logModel is the log a store must hold: terms[i] is the term of the entry
// at first+i.
type logModel struct {
	first uint64
	terms []uint64
}

func (m logModel) last() uint64 {
	if len(m.terms) == 0 {
		return 0
	}
	return m.first + uint64(len(m.terms)) - 1
}

func (m logModel) clone() logModel { return logModel{m.first, slices.Clone(m.terms)} }

func (m logModel) equal(o logModel) bool {
	return len(m.terms) == len(o.terms) && (len(m.terms) == 0 || m.first == o.first) && slices.Equal(m.terms, o.terms)
}

func (m logModel) String() string {
	if len(m.terms) == 0 {
		return "empty"
	}
	return fmt.Sprintf("%d..%d (terms %d..%d)", m.first, m.last(), m.terms[0], m.terms[len(m.terms)-1])
}

// apply changes m as o changes the store (StoreLogs' and DeleteRange's
// documented semantics).
func (m *logModel) apply(o logOp) {
	last := m.last()
	if o.kind == 'd' {
		lo, hi := max(o.lo, m.first), min(o.hi, last)
		switch {
		case len(m.terms) == 0 || lo > hi:
		case lo == m.first:
			m.terms = m.terms[hi+1-m.first:]
			m.first = hi + 1
		default: // a tail: the generator makes no other
			m.terms = m.terms[:lo-m.first]
		}
		if len(m.terms) == 0 {
			m.first = 0
		}
		return
	}
	if len(m.terms) == 0 || o.lo > last+1 || o.lo <= m.first {
		m.first, m.terms = o.lo, nil
	} else {
		m.terms = m.terms[:o.lo-m.first]
	}
	for range o.hi - o.lo + 1 {
		m.terms = append(m.terms, o.term)
	}
}

// nextOp draws the operation that follows m. With truncate false it only
// appends; otherwise it also deletes heads (compaction) and tails
// (conflicts), overwrites suffixes, and now and then starts the log anew
// after a gap or deletes all of it. Every operation that cuts the tail
// moves to a new term, as raft's conflicts do.
func nextOp(rng *rand.Rand, m logModel, term *uint64, truncate bool) logOp {
	n := uint64(len(m.terms))
	last := m.last()
	if *term == 0 {
		*term = 1
	}
	size := 1 + rng.Uint64N(16)
	p := rng.IntN(100)
	switch {
	case !truncate || n == 0 || p < 55:
		if n > 400 && truncate {
			return logOp{kind: 'd', lo: m.first, hi: m.first + n/2}
		}
		lo := last + 1
		if n == 0 && lo == 1 {
			lo = 1
		}
		return logOp{kind: 's', lo: lo, hi: lo + size - 1, term: *term}
	case p < 70:
		return logOp{kind: 'd', lo: m.first - rng.Uint64N(min(m.first, 3)), hi: m.first + rng.Uint64N(n)}
	case p < 82:
		*term++
		return logOp{kind: 'd', lo: last - rng.Uint64N(n), hi: last + rng.Uint64N(3)}
	case p < 94:
		*term++
		lo := m.first + 1 + rng.Uint64N(n)
		if lo > last {
			lo = last
		}
		return logOp{kind: 's', lo: lo, hi: lo + size - 1, term: *term}
	case p < 97:
		*term++
		lo := last + 2 + rng.Uint64N(100)
		return logOp{kind: 's', lo: lo, hi: lo + size - 1, term: *term}
	default:
		return logOp{kind: 'd', lo: 1, hi: last + 10}
	}
}

// readModel reads the whole log of s, checks every entry is whole (the
// entry entryFor makes for its index and term) and that the indexes have
// no hole, and returns it as a model.
func readModel(s *LogStore) (logModel, error) {
	first, err := s.FirstIndex()
	if err != nil {
		return logModel{}, err
	}
	last, err := s.LastIndex()
	if err != nil {
		return logModel{}, err
	}
	if (first == 0) != (last == 0) || first > last {
		return logModel{}, fmt.Errorf("first %d, last %d", first, last)
	}
	m := logModel{first: first}
	for i := first; last != 0 && i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			return m, fmt.Errorf("entry %d of %d..%d: %w", i, first, last, err)
		}
		if want := entryFor(i, l.Term); !sameEntry(&l, want) {
			return m, fmt.Errorf("entry %d of %d..%d is not whole: %+v", i, first, last, l)
		}
		if len(m.terms) > 0 && l.Term < m.terms[len(m.terms)-1] {
			return m, fmt.Errorf("entry %d's term %d below the one before, %d", i, l.Term, m.terms[len(m.terms)-1])
		}
		m.terms = append(m.terms, l.Term)
	}
	if first > 1 {
		var l raft.Log
		if err := s.GetLog(first-1, &l); err != raft.ErrLogNotFound {
			return m, fmt.Errorf("entry %d before the first: %v, want raft.ErrLogNotFound", first-1, err)
		}
	}
	var l raft.Log
	if err := s.GetLog(last+1, &l); err != raft.ErrLogNotFound {
		return m, fmt.Errorf("entry %d after the last: %v, want raft.ErrLogNotFound", last+1, err)
	}
	return m, nil
}
