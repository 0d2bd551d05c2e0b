package strata

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/strata-db/strata/index"
)

// route is the object of the LPM index tests: an ID and one prefix, or
// several (Extra).
type route struct {
	ID     uint64
	Prefix netip.Prefix
	Extra  []netip.Prefix
}

func (r *route) String() string { return fmt.Sprintf("%d:%v", r.ID, r.Prefix) }

var (
	routeID = Index[*route, uint64]{
		Name:       "id",
		FromObject: func(r *route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	routeCIDR = LPMIndex[*route]{
		Name:       "cidr",
		FromObject: routePrefixes,
		Unique:     true,
	}
	routeCIDRs = LPMIndex[*route]{
		Name:       "cidrs",
		FromObject: routePrefixes,
	}
)

func routePrefixes(r *route) PrefixSet {
	switch {
	case r.Extra != nil:
		return NewPrefixSet(append([]netip.Prefix{r.Prefix}, r.Extra...)...)
	case r.Prefix.IsValid() || r.Prefix != (netip.Prefix{}):
		return PrefixSetOf(r.Prefix)
	}
	return PrefixSet{}
}

func newRouteTable(t testing.TB, db *DB, unique bool) (RWTable[*route], LPMIndex[*route]) {
	t.Helper()
	ix := routeCIDRs
	if unique {
		ix = routeCIDR
	}
	tbl, err := NewTable(db, "routes", routeID, ix)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, ix
}

func mustInsertRoutes(t testing.TB, tbl RWTable[*route], txn WriteTxn, rs ...*route) {
	t.Helper()
	for _, r := range rs {
		if _, _, err := tbl.Insert(txn, r); err != nil {
			t.Fatalf("Insert(%v): %v", r, err)
		}
	}
}

func routeIDs(seq func(func(*route, Revision) bool)) []uint64 {
	var ids []uint64
	for r := range seq {
		ids = append(ids, r.ID)
	}
	return ids
}

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

func TestLPMIndexLookups(t *testing.T) {
	for _, unique := range []bool{true, false} {
		t.Run(fmt.Sprintf("unique=%v", unique), func(t *testing.T) {
			db := New()
			tbl, ix := newRouteTable(t, db, unique)
			w := db.WriteTxn(tbl)
			mustInsertRoutes(t, tbl, w,
				&route{ID: 1, Prefix: pfx("0.0.0.0/0")},
				&route{ID: 2, Prefix: pfx("10.0.0.0/8")},
				&route{ID: 3, Prefix: pfx("10.0.0.0/24")},
				&route{ID: 4, Prefix: pfx("10.0.0.1/32")},
				&route{ID: 5, Prefix: pfx("192.168.0.0/24")},
				&route{ID: 6, Prefix: pfx("10.128.0.0/9")},
				&route{ID: 7, Prefix: pfx("2001:db8::/32")},
				&route{ID: 8, Prefix: pfx("::/0")},
			)
			txn, err := w.Commit()
			must(t, err)

			get := func(a string) uint64 {
				r, _, found := tbl.Get(txn, ix.Containing(addr(a)))
				if !found {
					return 0
				}
				return r.ID
			}
			for _, c := range []struct {
				addr string
				want uint64
				all  []uint64
			}{
				{"10.0.0.1", 4, []uint64{4, 3, 2, 1}},
				{"10.0.0.2", 3, []uint64{3, 2, 1}},
				{"10.0.1.2", 2, []uint64{2, 1}},
				{"10.200.1.2", 6, []uint64{6, 2, 1}},
				{"11.0.0.0", 1, []uint64{1}},
				{"192.168.0.255", 5, []uint64{5, 1}},
				{"192.168.1.0", 1, []uint64{1}},
				{"2001:db8::1", 7, []uint64{7, 8}},
				{"2001:db9::1", 8, []uint64{8}},
				{"::ffff:10.0.0.1", 4, []uint64{4, 3, 2, 1}},
			} {
				if got := get(c.addr); got != c.want {
					t.Errorf("Get(Containing(%s)) = %d, want %d", c.addr, got, c.want)
				}
				if got := routeIDs(tbl.List(txn, ix.Containing(addr(c.addr)))); !slices.Equal(got, c.all) {
					t.Errorf("List(Containing(%s)) = %v, want %v", c.addr, got, c.all)
				}
			}
			if got := routeIDs(tbl.List(txn, ix.ContainingPrefix(pfx("10.0.0.0/16")))); !slices.Equal(got, []uint64{2, 1}) {
				t.Errorf("List(ContainingPrefix(10.0.0.0/16)) = %v", got)
			}
			if got := routeIDs(tbl.List(txn, ix.ContainingPrefix(pfx("10.0.0.0/24")))); !slices.Equal(got, []uint64{3, 2, 1}) {
				t.Errorf("List(ContainingPrefix(10.0.0.0/24)) = %v", got)
			}
			if r, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.0/24"))); !found || r.ID != 3 {
				t.Errorf("Get(Query(10.0.0.0/24)) = %v, %v", r, found)
			}
			if _, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.0/16"))); found {
				t.Errorf("Get(Query(10.0.0.0/16)) found a prefix that is not there")
			}
			if r, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.77/24"))); !found || r.ID != 3 {
				t.Errorf("Get(Query(10.0.0.77/24)) = %v, %v: a query is masked", r, found)
			}
			// Within: a prefix and its subnets, in index order.
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("10.0.0.0/8")))); !slices.Equal(got, []uint64{2, 3, 4, 6}) {
				t.Errorf("Prefix(Query(10.0.0.0/8)) = %v", got)
			}
			if got := routeIDs(tbl.ReversePrefix(txn, ix.Query(pfx("10.0.0.0/8")))); !slices.Equal(got, []uint64{6, 4, 3, 2}) {
				t.Errorf("ReversePrefix(Query(10.0.0.0/8)) = %v", got)
			}
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("0.0.0.0/0")))); !slices.Equal(got, []uint64{1, 2, 3, 4, 6, 5}) {
				t.Errorf("Prefix(Query(0.0.0.0/0)) = %v", got)
			}
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("::/0")))); !slices.Equal(got, []uint64{8, 7}) {
				t.Errorf("Prefix(Query(::/0)) = %v", got)
			}
			if got := routeIDs(tbl.LowerBound(txn, ix.Query(pfx("10.0.0.1/32")))); !slices.Equal(got, []uint64{4, 6, 5, 8, 7}) {
				t.Errorf("LowerBound(Query(10.0.0.1/32)) = %v", got)
			}
		})
	}
}
