package strata

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// The LPM index benchmarks. The first three are statedb's own
// (BenchmarkDB_WriteTxn_100_LPMIndex, BenchmarkDB_WriteTxn_1_LPMIndex and
// BenchmarkDB_LPMIndex_Get of its lpm_index_test.go), on a table with the
// primary index and one unique LPM index, all prefixes /32; the others
// look up a table that holds prefixes of many lengths, as a routing table
// does. bench/compare runs the same workloads beside statedb.

// lpmAddr4 returns the IPv4 address of the number i.
func lpmAddr4(i uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], i)
	return netip.AddrFrom4(b)
}

func newLPMBenchTable(b *testing.B, db *DB) RWTable[*route] {
	tbl, err := NewTable(db, "routes", routeID, routeCIDR)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}

// BenchmarkDB_WriteTxn_100_LPMIndex: b.N objects in transactions of 100,
// IDs 0..99 with the prefixes 0.0.0.i/32, so every transaction after the
// first replaces the 100 objects; ns/op is per object.
func BenchmarkDB_WriteTxn_100_LPMIndex(b *testing.B) {
	const batch = 100
	db := New()
	tbl := newLPMBenchTable(b, db)
	var gens [2][batch]*route
	for g := range gens {
		for i := range batch {
			gens[g][i] = &route{ID: uint64(i), Prefix: netip.PrefixFrom(lpmAddr4(uint32(i)), 32)}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n, g := b.N, 0; n > 0; g++ {
		txn := db.WriteTxn(tbl)
		k := min(n, batch)
		for _, r := range gens[g&1][:k] {
			if _, _, err := tbl.Insert(txn, r); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n -= k
	}
	b.StopTimer()
	if got, want := tbl.NumObjects(db.ReadTxn()), min(b.N, batch); got != want {
		b.Fatalf("NumObjects = %d, want %d", got, want)
	}
	reportObjectsPerSec(b, b.N)
}

// BenchmarkDB_WriteTxn_1_LPMIndex: one insert per transaction, object i
// with ID uint16(i) and the prefix of the little-endian i as /32 (as in
// statedb's benchmark: after 65536 objects, inserts replace).
func BenchmarkDB_WriteTxn_1_LPMIndex(b *testing.B) {
	db := New()
	tbl := newLPMBenchTable(b, db)
	prefixes := make([]netip.Prefix, b.N)
	for i := range prefixes {
		var a [4]byte
		binary.LittleEndian.PutUint32(a[:], uint32(i))
		prefixes[i] = netip.PrefixFrom(netip.AddrFrom4(a), 32)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i, p := range prefixes {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &route{ID: uint64(uint16(i)), Prefix: p}); err != nil {
			b.Fatalf("Insert: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
	}
	b.StopTimer()
	if got, want := tbl.NumObjects(db.ReadTxn()), min(b.N, 1<<16); got != want {
		b.Fatalf("NumObjects = %d, want %d", got, want)
	}
	reportObjectsPerSec(b, b.N)
}

// BenchmarkDB_LPMIndex_Get: 10,000 objects with the prefixes 0.0.0.0/32
// up; per op, a Get of the longest match of each address, the queries
// built beforehand (ns/object is one lookup).
func BenchmarkDB_LPMIndex_Get(b *testing.B) {
	const n = 10_000
	db := New()
	tbl := newLPMBenchTable(b, db)
	w := db.WriteTxn(tbl)
	queries := make([]Query[*route], n)
	for i := range n {
		a := lpmAddr4(uint32(i))
		queries[i] = routeCIDR.Containing(a)
		if _, _, err := tbl.Insert(w, &route{ID: uint64(i), Prefix: netip.PrefixFrom(a, 32)}); err != nil {
			b.Fatal(err)
		}
	}
	txn, err := w.Commit()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		for i, q := range queries {
			if r, _, found := tbl.Get(txn, q); !found || r.ID != uint64(i) {
				b.Fatalf("Get(Containing(%v)) = %v, %v", lpmAddr4(uint32(i)), r, found)
			}
		}
		k++
	}
	reportObjectsPerSec(b, k*n)
	reportNsPerObject(b, k*n)
}

// lpmRoutes is a routing table for the benchmarks: 10.0.0.0/8 and n
// prefixes inside it, of lengths spread as in routing tables (half /24,
// a third /32, the rest from /12 to /31), with random addresses; and
// lookups of random addresses, one in five outside 10.0.0.0/8, with the
// expected longest match of each (0 for none).
type lpmRoutes struct {
	routes  []*route
	lookups []netip.Addr
	want    []uint64
}

func newLPMRoutes(n, lookups int) *lpmRoutes {
	r := rand.New(rand.NewPCG(7, 8))
	rt := &lpmRoutes{}
	ids := map[netip.Prefix]uint64{}
	add := func(p netip.Prefix) {
		if _, dup := ids[p]; !dup {
			ids[p] = uint64(len(rt.routes) + 1)
			rt.routes = append(rt.routes, &route{ID: uint64(len(rt.routes) + 1), Prefix: p})
		}
	}
	add(netip.MustParsePrefix("10.0.0.0/8"))
	for len(rt.routes) < n+1 {
		var bits int
		switch x := r.IntN(100); {
		case x < 50:
			bits = 24
		case x < 83:
			bits = 32
		default:
			bits = 12 + r.IntN(20)
		}
		p, _ := lpmAddr4(10<<24 | r.Uint32N(1<<24)).Prefix(bits)
		add(p)
	}
	for range lookups {
		a := lpmAddr4(10<<24 | r.Uint32N(1<<24))
		if r.IntN(5) == 0 {
			a = lpmAddr4(11<<24 | r.Uint32N(1<<24))
		}
		var want uint64
		for bits := 32; bits >= 0 && want == 0; bits-- {
			p, _ := a.Prefix(bits)
			want = ids[p]
		}
		rt.lookups = append(rt.lookups, a)
		rt.want = append(rt.want, want)
	}
	return rt
}

// BenchmarkDB_LPMIndex_Get_Routes: a routing table of 10,000 prefixes of
// many lengths (newLPMRoutes); per op, 1000 longest-prefix matches of
// random addresses, each query built at the lookup as users do.
func BenchmarkDB_LPMIndex_Get_Routes(b *testing.B) {
	db := New()
	tbl := newLPMBenchTable(b, db)
	rt := newLPMRoutes(10_000, 1000)
	w := db.WriteTxn(tbl)
	for _, r := range rt.routes {
		if _, _, err := tbl.Insert(w, r); err != nil {
			b.Fatal(err)
		}
	}
	txn, err := w.Commit()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		for i, a := range rt.lookups {
			r, _, found := tbl.Get(txn, routeCIDR.Containing(a))
			if found != (rt.want[i] != 0) || found && r.ID != rt.want[i] {
				b.Fatalf("Get(Containing(%v)) = %v, %v; want %d", a, r, found, rt.want[i])
			}
		}
		k++
	}
	reportObjectsPerSec(b, k*len(rt.lookups))
	reportNsPerObject(b, k*len(rt.lookups))
}

// BenchmarkDB_LPMIndex_List_Routes: as _Get_Routes, each lookup listing
// every prefix that contains the address.
func BenchmarkDB_LPMIndex_List_Routes(b *testing.B) {
	db := New()
	tbl := newLPMBenchTable(b, db)
	rt := newLPMRoutes(10_000, 1000)
	w := db.WriteTxn(tbl)
	for _, r := range rt.routes {
		if _, _, err := tbl.Insert(w, r); err != nil {
			b.Fatal(err)
		}
	}
	txn, err := w.Commit()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		for i, a := range rt.lookups {
			first := true
			for r := range tbl.List(txn, routeCIDR.Containing(a)) {
				if first && r.ID != rt.want[i] {
					b.Fatalf("List(Containing(%v)) starts with %v; want %d", a, r, rt.want[i])
				}
				first = false
			}
			if first != (rt.want[i] == 0) {
				b.Fatalf("List(Containing(%v)) is empty: %v; want %d", a, first, rt.want[i])
			}
		}
		k++
	}
	reportObjectsPerSec(b, k*len(rt.lookups))
	reportNsPerObject(b, k*len(rt.lookups))
}
