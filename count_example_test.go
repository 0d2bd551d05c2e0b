package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
)

// Counting objects without visiting them: of an index key, of a prefix and
// of a range, each in O(key length), and waiting for a count to change.
func ExampleCount() {
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName, hostByZone)
	if err != nil {
		panic(err)
	}
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{
		{Name: "a1", Zone: "eu"}, {Name: "a2", Zone: "eu"}, {Name: "b1", Zone: "us"},
	} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	// The objects of a key of a non-unique index, not the distinct keys.
	inEU, watch, err := strata.CountWatch(rtxn, hosts, hostByZone.Query("eu"))
	if err != nil {
		panic(err)
	}
	named, _ := strata.CountPrefix(rtxn, hosts, hostByName.Query("a"))
	ranged, _ := strata.CountRange(rtxn, hosts, hostByName.Query("a2"), hostByName.Query("b2")) // a2 included, b2 not
	fmt.Println("in eu:", inEU, "named a*:", named, "from a2 to b2:", ranged, "all:", strata.CountAll(rtxn, hosts))

	// A new host in eu closes the channel of the count.
	wtxn = db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a3", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	<-watch
	inEU, _ = strata.Count(db.ReadTxn(), hosts, hostByZone.Query("eu"))
	fmt.Println("in eu now:", inEU)
	// Output:
	// in eu: 2 named a*: 2 from a2 to b2: 2 all: 3
	// in eu now: 3
}
