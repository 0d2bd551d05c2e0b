package strata_test

import (
	"fmt"
	"strings"

	"github.com/strata-db/strata"
)

// The iterator helpers compose with queries: the names of the hosts that
// are up, in name order.
func ExampleFilter() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{Name: "a1", Up: true}, {Name: "a2"}, {Name: "b1", Up: true}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	up := strata.Filter(hosts.All(rtxn), func(h *Host) bool { return h.Up })
	names := strata.Map(up, func(h *Host) string { return h.Name })
	fmt.Println(strings.Join(strata.Collect(names), ", "))
	for rev := range strata.Values(hosts.Prefix(rtxn, hostByName.Query("a"))) {
		fmt.Println("revision", rev)
	}
	// Output:
	// a1, b1
	// revision 1
	// revision 2
}
