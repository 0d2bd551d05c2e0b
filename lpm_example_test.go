package strata_test

import (
	"fmt"
	"net/netip"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Route is a route of the LPM example: a destination prefix and the hop
// that reaches it.
type Route struct {
	ID   uint64
	Dst  netip.Prefix
	Next string
}

var (
	routeByID = strata.Index[*Route, uint64]{
		Name:       "id",
		FromObject: func(r *Route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	routeByDst = strata.LPMIndex[*Route]{
		Name:       "dst",
		FromObject: func(r *Route) strata.PrefixSet { return strata.PrefixSetOf(r.Dst) },
	}
)

// A routing table: the most specific route to an address, every route
// that covers it, and the routes within a prefix.
func ExampleLPMIndex() {
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", routeByID, routeByDst)
	wtxn := db.WriteTxn(routes)
	for _, r := range []*Route{
		{1, netip.MustParsePrefix("0.0.0.0/0"), "isp"},
		{2, netip.MustParsePrefix("10.0.0.0/8"), "core"},
		{3, netip.MustParsePrefix("10.1.0.0/16"), "lab"},
		{4, netip.MustParsePrefix("10.1.7.0/24"), "rack7"},
	} {
		if _, _, err := routes.Insert(wtxn, r); err != nil {
			panic(err)
		}
	}
	// A prefix with host bits is refused: mask it to index its network.
	_, _, err := routes.Insert(wtxn, &Route{5, netip.MustParsePrefix("10.2.0.1/16"), "x"})
	fmt.Println(err)
	txn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	for _, a := range []string{"10.1.7.9", "10.1.8.1", "192.0.2.1"} {
		r, _, _ := routes.Get(txn, routeByDst.Containing(netip.MustParseAddr(a)))
		fmt.Printf("%s via %s (%v)\n", a, r.Next, r.Dst)
	}
	fmt.Print("all routes to 10.1.7.9:")
	for r := range routes.List(txn, routeByDst.Containing(netip.MustParseAddr("10.1.7.9"))) {
		fmt.Print(" ", r.Dst)
	}
	fmt.Print("\nwithin 10.0.0.0/8:")
	for r := range routes.Prefix(txn, routeByDst.Query(netip.MustParsePrefix("10.0.0.0/8"))) {
		fmt.Print(" ", r.Dst)
	}
	fmt.Println()
	// Output:
	// table "routes": index "dst": prefix 10.2.0.1/16: prefix has host bits set
	// 10.1.7.9 via rack7 (10.1.7.0/24)
	// 10.1.8.1 via lab (10.1.0.0/16)
	// 192.0.2.1 via isp (0.0.0.0/0)
	// all routes to 10.1.7.9: 10.1.7.0/24 10.1.0.0/16 10.0.0.0/8 0.0.0.0/0
	// within 10.0.0.0/8: 10.0.0.0/8 10.1.0.0/16 10.1.7.0/24
}
