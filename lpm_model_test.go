package strata

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// TestLPMModel drives tables with an LPM index, unique and not, through
// random transactions (inserts and replacements of objects with one or
// several IPv4, IPv6 and IPv4-mapped prefixes, some with host bits, and
// deletes), each committed or aborted, and compares every read an LPM
// index answers with a brute-force reference computed from a map of the
// objects: Get and List of Containing and ContainingPrefix (the longest
// match first), Get and List of Query, Prefix and ReversePrefix of Query
// (a prefix and its subnets), and LowerBound, inside the transaction
// (which reads its own writes) and after it. The prefixes come from a few
// base addresses, so that they nest at many lengths.
func TestLPMModel(t *testing.T) {
	txns := 400
	if testing.Short() {
		txns = 100
	}
	if raceDetector {
		txns /= 10 // one goroutine: see race_on_test.go
	}
	for _, unique := range []bool{true, false} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("unique=%v/seed=%d", unique, seed), func(t *testing.T) {
				m := newLPMModel(t, unique, seed)
				for range txns {
					m.runTxn()
				}
			})
		}
	}
}

type lpmModel struct {
	t      *testing.T
	r      *rand.Rand
	db     *DB
	tbl    RWTable[*route]
	ix     LPMIndex[*route]
	unique bool
	// committed and pending: the objects by ID, as committed and as the
	// open transaction has them.
	committed, pending map[uint64]*route
	bases4, bases6     []netip.Addr
}

func newLPMModel(t *testing.T, unique bool, seed uint64) *lpmModel {
	db := New()
	tbl, ix := newRouteTable(t, db, unique)
	m := &lpmModel{
		t: t, r: rand.New(rand.NewPCG(seed, 99)), db: db, tbl: tbl, ix: ix, unique: unique,
		committed: map[uint64]*route{},
	}
	for range 3 {
		m.bases4 = append(m.bases4, netip.AddrFrom4([4]byte{10, byte(m.r.IntN(4)), byte(m.r.IntN(256)), byte(m.r.IntN(256))}))
		var a [16]byte
		a[0], a[1], a[2] = 0x20, 0x01, byte(m.r.IntN(4))
		for i := 3; i < 16; i++ {
			a[i] = byte(m.r.IntN(256))
		}
		m.bases6 = append(m.bases6, netip.AddrFrom16(a))
	}
	return m
}

// addr returns a random address near one of the bases: its bits from a
// random point on are random.
func (m *lpmModel) addr() netip.Addr {
	switch m.r.IntN(10) {
	case 0: // anywhere
		if m.r.IntN(2) == 0 {
			return netip.AddrFrom4([4]byte{byte(m.r.IntN(256)), byte(m.r.IntN(256)), 1, 2})
		}
		return netip.AddrFrom16([16]byte{byte(m.r.IntN(256)), 7: 1})
	case 1, 2, 3, 4:
		return m.randomize(m.bases6[m.r.IntN(len(m.bases6))], 128-m.r.IntN(129))
	}
	a := m.randomize(m.bases4[m.r.IntN(len(m.bases4))], 32-m.r.IntN(33))
	if m.r.IntN(6) == 0 {
		return netip.AddrFrom16(a.As16()) // IPv4-mapped
	}
	return a
}

// randomize returns a with its bits from n on random.
func (m *lpmModel) randomize(a netip.Addr, n int) netip.Addr {
	b := a.AsSlice()
	for i := n; i < len(b)*8; i++ {
		bit := byte(0x80 >> (i % 8))
		if m.r.IntN(2) == 0 {
			b[i/8] ^= bit
		}
	}
	r, _ := netip.AddrFromSlice(b)
	return r
}

// prefix returns a random masked prefix of a random address: IPv4-mapped
// ones as IPv6 prefixes of at least /96 or, now and then, shorter.
func (m *lpmModel) prefix() netip.Prefix {
	a := m.addr()
	n := m.r.IntN(a.BitLen() + 1)
	if a.Is4In6() && m.r.IntN(8) != 0 {
		n = 96 + m.r.IntN(33)
	}
	p, _ := a.Prefix(n)
	return p
}

// canonical is the prefix the index keys p by: masked IPv4-mapped
// prefixes of at least /96 as IPv4.
func canonical(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// comparePrefixes orders canonical prefixes as the index does: IPv4
// first, then by address, then by length.
func comparePrefixes(a, b netip.Prefix) int {
	if c := cmp.Compare(a.Addr().BitLen(), b.Addr().BitLen()); c != 0 {
		return c
	}
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return cmp.Compare(a.Bits(), b.Bits())
}

func (m *lpmModel) newRoute() *route {
	r := &route{ID: uint64(m.r.IntN(40)), Prefix: m.prefix()}
	switch m.r.IntN(10) {
	case 0:
		// A prefix with host bits (the write must fail), if there are any.
		if a := r.Prefix.Addr(); r.Prefix.Bits() < a.BitLen() {
			r.Prefix = netip.PrefixFrom(m.randomize(a, r.Prefix.Bits()), r.Prefix.Bits())
		}
	case 1, 2:
		for range 1 + m.r.IntN(2) {
			r.Extra = append(r.Extra, m.prefix())
		}
	}
	return r
}

// prefixesOf returns the distinct canonical prefixes of r.
func prefixesOf(r *route) []netip.Prefix {
	var ps []netip.Prefix
	for _, p := range append([]netip.Prefix{r.Prefix}, r.Extra...) {
		if p = canonical(p); !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// watched is a read taken before a transaction: its answer and channel.
type watched struct {
	what   string
	read   func(ReadTxn) ([]uint64, <-chan struct{})
	answer []uint64
	ch     <-chan struct{}
}

// watchedReads returns reads of random queries, with their Watch forms.
func (m *lpmModel) watchedReads() []watched {
	var ws []watched
	for range 6 {
		a, p := m.addr(), m.prefix()
		ws = append(ws,
			watched{what: "GetWatch(Containing(" + a.String() + "))", read: func(txn ReadTxn) ([]uint64, <-chan struct{}) {
				r, _, ch, found := m.tbl.GetWatch(txn, m.ix.Containing(a))
				if !found {
					return nil, ch
				}
				return []uint64{r.ID}, ch
			}},
			watched{what: "ListWatch(ContainingPrefix(" + p.String() + "))", read: func(txn ReadTxn) ([]uint64, <-chan struct{}) {
				seq, ch := m.tbl.ListWatch(txn, m.ix.ContainingPrefix(p))
				return routeIDs(seq), ch
			}},
			watched{what: "GetWatch(Query(" + p.String() + "))", read: func(txn ReadTxn) ([]uint64, <-chan struct{}) {
				r, _, ch, found := m.tbl.GetWatch(txn, m.ix.Query(p))
				if !found {
					return nil, ch
				}
				return []uint64{r.ID}, ch
			}},
			watched{what: "PrefixWatch(Query(" + p.String() + "))", read: func(txn ReadTxn) ([]uint64, <-chan struct{}) {
				seq, ch := m.tbl.PrefixWatch(txn, m.ix.Query(p))
				return routeIDs(seq), ch
			}},
		)
	}
	return ws
}

func (m *lpmModel) runTxn() {
	// The channels of reads before the transaction must close if it
	// changes their answer (an answer changes with the objects it holds,
	// which every replacement is).
	txn := m.db.ReadTxn()
	ws := m.watchedReads()
	for i := range ws {
		ws[i].answer, ws[i].ch = ws[i].read(txn)
	}
	revs := map[uint64]Revision{}
	for r, rev := range m.tbl.All(txn) {
		revs[r.ID] = rev
	}
	defer func() {
		after := m.db.ReadTxn()
		newRevs := map[uint64]Revision{}
		for r, rev := range m.tbl.All(after) {
			newRevs[r.ID] = rev
		}
		for _, w := range ws {
			answer, _ := w.read(after)
			changed := !slices.Equal(answer, w.answer)
			for _, id := range w.answer {
				changed = changed || newRevs[id] != revs[id]
			}
			if changed && !closed(w.ch) {
				m.t.Fatalf("%s changed from %v to %v, and its channel is open", w.what, w.answer, answer)
			}
		}
	}()

	m.pending = maps.Clone(m.committed)
	w := m.db.WriteTxn(m.tbl)
	for range 1 + m.r.IntN(6) {
		if m.r.IntN(4) == 0 {
			id := uint64(m.r.IntN(40))
			_, had, err := m.tbl.Delete(w, &route{ID: id})
			if err != nil || had != (m.pending[id] != nil) {
				m.t.Fatalf("Delete(%d) = %v, %v; model has %v", id, had, err, m.pending[id])
			}
			delete(m.pending, id)
			continue
		}
		r := m.newRoute()
		_, _, err := m.tbl.Insert(w, r)
		if want := m.insertError(r); !errors.Is(err, want) || (want == nil) != (err == nil) {
			m.t.Fatalf("Insert(%v %v): %v; want %v", r, r.Extra, err, want)
		}
		if err == nil {
			m.pending[r.ID] = r
		}
	}
	m.check(w, m.pending)
	if m.r.IntN(4) == 0 {
		w.Abort()
	} else {
		if _, err := w.Commit(); err != nil {
			m.t.Fatal(err)
		}
		m.committed = m.pending
	}
	m.check(m.db.ReadTxn(), m.committed)
}

// insertError is the error the model expects from inserting r.
func (m *lpmModel) insertError(r *route) error {
	for _, p := range append([]netip.Prefix{r.Prefix}, r.Extra...) {
		if p.Masked() != p {
			return ErrPrefixHostBits
		}
	}
	if m.unique {
		for _, p := range prefixesOf(r) {
			for id, o := range m.pending {
				if id != r.ID && slices.Contains(prefixesOf(o), p) {
					return ErrUniqueConstraint
				}
			}
		}
	}
	return nil
}

// lpmEntry is one entry of the index: an object under one of its
// prefixes.
type lpmEntry struct {
	p netip.Prefix
	r *route
}

// entries returns the index's entries in objs, in index order.
func entries(objs map[uint64]*route) []lpmEntry {
	var es []lpmEntry
	for _, r := range objs {
		for _, p := range prefixesOf(r) {
			es = append(es, lpmEntry{p, r})
		}
	}
	slices.SortFunc(es, func(a, b lpmEntry) int {
		if c := comparePrefixes(a.p, b.p); c != 0 {
			return c
		}
		return cmp.Compare(a.r.ID, b.r.ID)
	})
	return es
}

// distinctIDs returns the IDs of es's objects, each once, at its first
// entry: what the table's reads return.
func distinctIDs(es []lpmEntry) []uint64 {
	var ids []uint64
	for _, e := range es {
		if !slices.Contains(ids, e.r.ID) {
			ids = append(ids, e.r.ID)
		}
	}
	return ids
}

// contains reports whether the canonical prefix p contains all of the
// canonical prefix q.
func contains(p, q netip.Prefix) bool {
	return p.Addr().BitLen() == q.Addr().BitLen() && p.Bits() <= q.Bits() && p.Contains(q.Addr())
}

func (m *lpmModel) check(txn ReadTxn, objs map[uint64]*route) {
	m.t.Helper()
	es := entries(objs)
	got := func(what string, seq func(func(*route, Revision) bool)) []uint64 {
		ids := routeIDs(seq)
		for _, id := range ids {
			if objs[id] == nil {
				m.t.Fatalf("%s returned object %d, which the model does not have", what, id)
			}
		}
		return ids
	}
	expect := func(what string, ids, want []uint64) {
		m.t.Helper()
		if !slices.Equal(ids, want) {
			m.t.Fatalf("%s = %v, want %v", what, ids, want)
		}
	}
	first := func(what string, q Query[*route], want []uint64) {
		m.t.Helper()
		r, _, found := m.tbl.Get(txn, q)
		if found != (len(want) > 0) || found && r.ID != want[0] {
			m.t.Fatalf("Get(%s) = %v, %v; want %v", what, r, found, want)
		}
	}
	for range 12 {
		// Containing: the longest prefix first, then by ID.
		target := netip.Prefix{}
		var q Query[*route]
		var what string
		if m.r.IntN(3) == 0 {
			p := m.prefix()
			target, q, what = canonical(p), m.ix.ContainingPrefix(p), "ContainingPrefix("+p.String()+")"
		} else {
			a := m.addr()
			target, q, what = canonical(netip.PrefixFrom(a, a.BitLen())), m.ix.Containing(a), "Containing("+a.String()+")"
		}
		var match []lpmEntry
		for _, e := range es {
			if contains(e.p, target) {
				match = append(match, e)
			}
		}
		slices.SortStableFunc(match, func(a, b lpmEntry) int { return cmp.Compare(b.p.Bits(), a.p.Bits()) })
		want := distinctIDs(match)
		first(what, q, want)
		expect("List("+what+")", got("List", m.tbl.List(txn, q)), want)

		// Query: exactly p; Prefix of it: p and its subnets.
		p := canonical(m.prefix())
		if m.r.IntN(2) == 0 && len(es) > 0 {
			p = es[m.r.IntN(len(es))].p
		}
		var exact, within, from []lpmEntry
		for _, e := range es {
			if e.p == p {
				exact = append(exact, e)
			}
			if contains(p, e.p) {
				within = append(within, e)
			}
			if comparePrefixes(e.p, p) >= 0 {
				from = append(from, e)
			}
		}
		first("Query("+p.String()+")", m.ix.Query(p), distinctIDs(exact))
		expect("List(Query("+p.String()+"))", got("List", m.tbl.List(txn, m.ix.Query(p))), distinctIDs(exact))
		expect("Prefix(Query("+p.String()+"))", got("Prefix", m.tbl.Prefix(txn, m.ix.Query(p))), distinctIDs(within))
		slices.Reverse(within)
		expect("ReversePrefix(Query("+p.String()+"))", got("ReversePrefix", m.tbl.ReversePrefix(txn, m.ix.Query(p))), distinctIDs(within))
		expect("LowerBound(Query("+p.String()+"))", got("LowerBound", m.tbl.LowerBound(txn, m.ix.Query(p))), distinctIDs(from))
	}
	// Every entry, in index order.
	all := append(Collect(m.tbl.Prefix(txn, m.ix.Query(netip.MustParsePrefix("0.0.0.0/0")))),
		Collect(m.tbl.Prefix(txn, m.ix.Query(netip.MustParsePrefix("::/0"))))...)
	var v4, v6 []lpmEntry
	for _, e := range es {
		if e.p.Addr().Is4() {
			v4 = append(v4, e)
		} else {
			v6 = append(v6, e)
		}
	}
	var ids []uint64
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	expect("Prefix(0.0.0.0/0) and Prefix(::/0)", ids, append(distinctIDs(v4), distinctIDs(v6)...))
}
