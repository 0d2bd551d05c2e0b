package persist

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// route is the object of the LPM index tests: routes to one or several
// prefixes.
type route struct {
	ID       uint64
	Prefixes []netip.Prefix
}

var (
	routeByID = strata.Index[*route, uint64]{
		Name:       "id",
		FromObject: func(r *route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	routeByPrefix = strata.LPMIndex[*route]{
		Name:       "prefix",
		FromObject: func(r *route) strata.PrefixSet { return strata.NewPrefixSet(r.Prefixes...) },
	}
)

func routeTable(t testing.TB, db *strata.DB) strata.RWTable[*route] {
	t.Helper()
	tbl, err := strata.NewTable(db, "routes", routeByID, routeByPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func routeIDs(seq func(func(*route, strata.Revision) bool)) []uint64 {
	var ids []uint64
	for r := range seq {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestLPMIndexRebuilt: a table with an LPM index, stored and loaded again
// (from the store, and from a snapshot), answers its longest-prefix
// queries as before: the index is rebuilt from the loaded objects.
func TestLPMIndexRebuilt(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	tbl := routeTable(t, db)
	if err := Register(s, db, tbl, JSON[*route]()); err != nil {
		t.Fatal(err)
	}
	p := netip.MustParsePrefix
	w := db.WriteTxn(tbl)
	for _, r := range []*route{
		{1, []netip.Prefix{p("10.0.0.0/8")}},
		{2, []netip.Prefix{p("10.1.0.0/16"), p("2001:db8::/32")}},
		{3, []netip.Prefix{p("10.1.2.0/24")}},
		{4, []netip.Prefix{p("10.1.2.0/24")}},
		{5, []netip.Prefix{p("192.168.0.0/16")}},
	} {
		if _, _, err := tbl.Insert(w, r); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, w)
	w = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(w, &route{ID: 5}); err != nil {
		t.Fatal(err)
	}
	txn := mustCommit(t, w)
	var snap bytes.Buffer
	if err := WriteSnapshot(&snap, txn, Table(tbl, JSON[*route]())); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)

	check := func(how string, txn strata.ReadTxn, tbl strata.Table[*route]) {
		t.Helper()
		for _, c := range []struct {
			addr string
			want []uint64
		}{
			{"10.1.2.3", []uint64{3, 4, 2, 1}},
			{"10.9.9.9", []uint64{1}},
			{"192.168.1.1", nil},
			{"2001:db8::1", []uint64{2}},
		} {
			q := routeByPrefix.Containing(netip.MustParseAddr(c.addr))
			if got := routeIDs(tbl.List(txn, q)); !slices.Equal(got, c.want) {
				t.Errorf("%s: List(Containing(%s)) = %v, want %v", how, c.addr, got, c.want)
			}
		}
		if got := routeIDs(tbl.Prefix(txn, routeByPrefix.Query(p("10.1.0.0/16")))); !slices.Equal(got, []uint64{2, 3, 4}) {
			t.Errorf("%s: Prefix(Query(10.1.0.0/16)) = %v", how, got)
		}
	}

	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	tbl = routeTable(t, db)
	if err := Register(s, db, tbl, JSON[*route]()); err != nil {
		t.Fatal(err)
	}
	check("reopened", db.ReadTxn(), tbl)

	db2 := strata.New()
	tbl2 := routeTable(t, db2)
	if _, err := ReadSnapshot(&snap, Table(tbl2, JSON[*route]())); err != nil {
		t.Fatal(err)
	}
	check("from the snapshot", db2.ReadTxn(), tbl2)
}
