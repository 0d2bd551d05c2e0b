package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
)

// DeleteMatches removes every object with a key of a non-unique index, as
// go-memdb's DeleteAll(table, index, args...) does; DeleteRange removes
// those of a key range.
func ExampleRWTable_DeleteMatches() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{Name: "a1", Zone: "eu"}, {Name: "a2", Zone: "us"}, {Name: "b1", Zone: "eu"}, {Name: "c1", Zone: "ap"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	n, err := hosts.DeleteMatches(wtxn, hostByZone.Query("eu"))
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted in eu:", n)
	n, err = hosts.DeleteRange(wtxn, hostByName.Query("a"), hostByName.Query("b"))
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted from a to b:", n)
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	for h := range hosts.All(rtxn) {
		fmt.Println("left:", h.Name)
	}
	// Output:
	// deleted in eu: 2
	// deleted from a to b: 1
	// left: c1
}
