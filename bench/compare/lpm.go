package main

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
)

// The longest-prefix-match workloads (KindLPM): a table of routes, each an
// ID (the primary key) and a prefix in a unique longest-prefix-match
// index (Strata's LPMIndex, statedb's NetIPPrefixIndex), looked up by
// address: the most specific prefix that contains it.
//
// LPM_WriteTxn_100, LPM_WriteTxn_1 and LPM_Get are statedb's own
// benchmarks of its LPM index (BenchmarkDB_WriteTxn_100_LPMIndex,
// BenchmarkDB_WriteTxn_1_LPMIndex, BenchmarkDB_LPMIndex_Get in its
// lpm_index_test.go), whose prefixes are all /32. Their table also has a
// third index, a byte-string LPM index on a port that every object leaves
// at 0/0, which Strata has no equivalent of: both sides leave it out. The
// LPM_*_Routes workloads use a table with prefixes of many lengths, as a
// routing table has them (lpmRouteSet).

// Route is the row of the LPM workloads, shared by both databases.
type Route struct {
	ID     uint64
	Prefix netip.Prefix
}

// TableHeader and TableRow make *Route a statedb.TableWritable (not used
// by the workloads).
func (r *Route) TableHeader() []string { return []string{"ID", "Prefix"} }
func (r *Route) TableRow() []string {
	return []string{strconv.FormatUint(r.ID, 10), r.Prefix.String()}
}

// LPMDB is a database with one table of routes.
type LPMDB interface {
	// ReadTxn returns a read snapshot (a handle reused by the next call).
	ReadTxn() LPMRTxn
	// WriteTxn opens a write transaction on the routes table.
	WriteTxn() LPMWTxn
	// Prepare builds the lookup queries of addrs beforehand, for
	// LPMRTxn.LookupPrepared, as statedb's LPMIndex_Get does.
	Prepare(addrs []netip.Addr)
}

// LPMRTxn reads the routes table in one snapshot.
type LPMRTxn interface {
	// Lookup returns the route of the longest prefix that contains addr,
	// building the query as a user does.
	Lookup(addr netip.Addr) (*Route, bool)
	// LookupPrepared is Lookup of the i'th address given to Prepare.
	LookupPrepared(i int) (*Route, bool)
	// Count returns the number of routes.
	Count() int
}

// LPMWTxn is a write transaction on the routes table.
type LPMWTxn interface {
	Insert(r *Route) error
	Commit()
	Abort()
}

// LPMFactory creates an empty routes table of one database.
type LPMFactory struct {
	Name string
	New  func() (LPMDB, error)
}

// lpmDBs in table order; Strata is the baseline of the ratio columns.
var lpmDBs = []LPMFactory{
	{"strata", newStrataLPM},
	{"statedb", newStatedbLPM},
}

func mustNewLPM(b *testing.B, f LPMFactory) LPMDB {
	d, err := f.New()
	if err != nil {
		fatalf(b, "%s: new: %v", f.Name, err)
	}
	return d
}

func ip4(i uint32) netip.Addr {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], i)
	return netip.AddrFrom4(a)
}

func insertRoutes(b *testing.B, d LPMDB, rs []*Route) {
	w := d.WriteTxn()
	for _, r := range rs {
		if err := w.Insert(r); err != nil {
			w.Abort()
			fatalf(b, "insert %d %v: %v", r.ID, r.Prefix, err)
		}
	}
	w.Commit()
	if n := d.ReadTxn().Count(); n != len(rs) {
		fatalf(b, "table has %d routes, want %d", n, len(rs))
	}
}

// lpmWriteTxn100 is statedb's WriteTxn_100_LPMIndex: b.N routes in
// transactions of 100, IDs 0..99 with the prefixes 0.0.0.i/32, so every
// transaction after the first replaces the 100 routes; one op is one
// route. The routes alternate between two generations of objects, as in
// writeBatch.
func lpmWriteTxn100(b *testing.B, f LPMFactory) {
	const batch = 100
	d := mustNewLPM(b, f)
	var gens [2][batch]*Route
	for g := range gens {
		for i := range batch {
			gens[g][i] = &Route{ID: uint64(i), Prefix: netip.PrefixFrom(ip4(uint32(i)), 32)}
		}
	}
	b.ResetTimer()
	for n, g := b.N, 0; n > 0; g++ {
		k := min(n, batch)
		w := d.WriteTxn()
		for _, r := range gens[g&1][:k] {
			if err := w.Insert(r); err != nil {
				fatalf(b, "Insert(%d): %v", r.ID, err)
			}
		}
		w.Commit()
		n -= k
	}
	b.StopTimer()
	// Route i was last written by the last transaction if it was among
	// its k routes, else by the one before.
	lastTxn := (b.N - 1) / batch
	k := b.N - lastTxn*batch
	var last []*Route
	for i := range min(b.N, batch) {
		g := lastTxn
		if i >= k {
			g--
		}
		last = append(last, gens[g&1][i])
	}
	checkLatestRoutes(b, d, last, min(b.N, batch))
}

// lpmWriteTxn1 is statedb's WriteTxn_1_LPMIndex: one insert per
// transaction, route i with ID uint16(i) and the prefix of the
// little-endian i as /32, so the table grows to 65,536 routes and later
// inserts replace.
func lpmWriteTxn1(b *testing.B, f LPMFactory) {
	d := mustNewLPM(b, f)
	routes := make([]*Route, b.N)
	for i := range routes {
		var a [4]byte
		binary.LittleEndian.PutUint32(a[:], uint32(i))
		routes[i] = &Route{ID: uint64(uint16(i)), Prefix: netip.PrefixFrom(netip.AddrFrom4(a), 32)}
	}
	b.ResetTimer()
	for _, r := range routes {
		w := d.WriteTxn()
		if err := w.Insert(r); err != nil {
			fatalf(b, "Insert(%d): %v", r.ID, err)
		}
		w.Commit()
	}
	b.StopTimer()
	last := routes[max(0, b.N-1<<16):]
	checkLatestRoutes(b, d, last, min(b.N, 1<<16))
}

// checkLatestRoutes checks that the table holds n routes and that each of
// last is the longest match of its own address.
func checkLatestRoutes(b *testing.B, d LPMDB, last []*Route, n int) {
	r := d.ReadTxn()
	if got := r.Count(); got != n {
		fatalf(b, "table has %d routes, want %d", got, n)
	}
	for _, want := range last {
		if got, ok := r.Lookup(want.Prefix.Addr()); !ok || got != want {
			fatalf(b, "Lookup(%v) = %v, %v; want route %d", want.Prefix.Addr(), got, ok, want.ID)
		}
	}
}

// lpmGetN is the size of statedb's LPMIndex_Get table.
const lpmGetN = 10_000

// lpmGet is statedb's LPMIndex_Get: 10,000 routes with the prefixes
// 0.0.0.0/32 up; one op is a lookup of each of their addresses through one
// snapshot, the queries built beforehand.
func lpmGet(b *testing.B, f LPMFactory) {
	d := mustNewLPM(b, f)
	routes := make([]*Route, lpmGetN)
	addrs := make([]netip.Addr, lpmGetN)
	for i := range routes {
		addrs[i] = ip4(uint32(i))
		routes[i] = &Route{ID: uint64(i), Prefix: netip.PrefixFrom(addrs[i], 32)}
	}
	insertRoutes(b, d, routes)
	d.Prepare(addrs)
	r := d.ReadTxn()
	for b.Loop() {
		for i := range addrs {
			if got, ok := r.LookupPrepared(i); !ok || got != routes[i] {
				fatalf(b, "Lookup(%v) = %v, %v", addrs[i], got, ok)
			}
		}
	}
}

// lpmRouteSet is a routing table: 10.0.0.0/8 and n-1 distinct prefixes
// inside it with random addresses and lengths spread as in routing tables
// (half /24, a third /32, the rest from /12 to /31); and lookups of random
// addresses, one in five outside 10.0.0.0/8, with the route of the
// longest match of each (nil for none), found by brute force.
type lpmRouteSet struct {
	routes  []*Route
	lookups []netip.Addr
	want    []*Route
}

func newLPMRouteSet(n, lookups int) *lpmRouteSet {
	r := newRand(seedKeys)
	s := &lpmRouteSet{}
	byPrefix := map[netip.Prefix]*Route{}
	add := func(p netip.Prefix) {
		if _, dup := byPrefix[p]; !dup {
			rt := &Route{ID: uint64(len(s.routes)), Prefix: p}
			byPrefix[p] = rt
			s.routes = append(s.routes, rt)
		}
	}
	add(netip.MustParsePrefix("10.0.0.0/8"))
	for len(s.routes) < n {
		p, _ := ip4(10<<24 | r.Uint32N(1<<24)).Prefix(routeBits(r))
		add(p)
	}
	r.Shuffle(len(s.routes), func(i, j int) { s.routes[i], s.routes[j] = s.routes[j], s.routes[i] })
	for range lookups {
		a := ip4(10<<24 | r.Uint32N(1<<24))
		if r.IntN(5) == 0 {
			a = ip4(11<<24 | r.Uint32N(1<<24))
		}
		var want *Route
		for bits := 32; bits >= 0 && want == nil; bits-- {
			p, _ := a.Prefix(bits)
			want = byPrefix[p]
		}
		s.lookups = append(s.lookups, a)
		s.want = append(s.want, want)
	}
	return s
}

// routeBits draws a prefix length: /24 half the time, /32 a third, else
// one of /12 to /31.
func routeBits(r *rand.Rand) int {
	switch x := r.IntN(100); {
	case x < 50:
		return 24
	case x < 83:
		return 32
	}
	return 12 + r.IntN(20)
}

const (
	lpmRoutesN       = 10_000
	lpmRoutesLookups = 1000
)

// lpmGetRoutes: the routing table of lpmRouteSet (10,000 prefixes); one op
// is a new read txn and 1000 lookups of random addresses, each query
// built at the lookup.
func lpmGetRoutes(b *testing.B, f LPMFactory) {
	d := mustNewLPM(b, f)
	s := newLPMRouteSet(lpmRoutesN, lpmRoutesLookups)
	insertRoutes(b, d, s.routes)
	for b.Loop() {
		r := d.ReadTxn()
		for i, a := range s.lookups {
			if got, ok := r.Lookup(a); got != s.want[i] || ok != (s.want[i] != nil) {
				fatalf(b, "Lookup(%v) = %v, %v; want %v", a, got, ok, s.want[i])
			}
		}
	}
}

// lpmInsertRoutes: one op inserts the 10,000 routes of lpmRouteSet, in
// random order, into an empty table in one transaction and commits.
func lpmInsertRoutes(b *testing.B, f LPMFactory) {
	s := newLPMRouteSet(lpmRoutesN, 0)
	for b.Loop() {
		b.StopTimer()
		d := mustNewLPM(b, f)
		b.StartTimer()
		w := d.WriteTxn()
		for _, r := range s.routes {
			if err := w.Insert(r); err != nil {
				fatalf(b, "Insert(%d): %v", r.ID, err)
			}
		}
		w.Commit()
		b.StopTimer()
		if n := d.ReadTxn().Count(); n != len(s.routes) {
			fatalf(b, "table has %d routes, want %d", n, len(s.routes))
		}
		b.StartTimer()
	}
}

func lpmWorkloads() []Workload {
	return []Workload{
		{Name: "LPM_WriteTxn_100", Op: "1 route (/32); txns of 100; LPM index", Group: "lpm",
			Kind: KindLPM, LPM: lpmWriteTxn100},
		{Name: "LPM_WriteTxn_1", Op: "txn: 1 route (/32) + commit; up to 65,536 routes", Group: "lpm",
			Kind: KindLPM, LPM: lpmWriteTxn1},
		{Name: "LPM_Get", Op: "10k longest-prefix matches, prepared queries; 10k /32 routes", Group: "lpm",
			Kind: KindLPM, LPM: lpmGet},
		{Name: "LPM_Get_Routes", Op: "ReadTxn + 1000 longest-prefix matches; 10k routes /8-/32", Group: "lpm",
			Kind: KindLPM, LPM: lpmGetRoutes},
		{Name: "LPM_Insert_Routes", Op: "txn: insert 10k routes /8-/32 into an empty table", Group: "lpm",
			Kind: KindLPM, LPM: lpmInsertRoutes},
	}
}
