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

// DeleteEach removes what any read returns, here an And of two indexes,
// read through the same write transaction.
func ExampleDeleteEach() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{Name: "a1", Zone: "eu"}, {Name: "a2", Zone: "us"}, {Name: "b1", Zone: "eu"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	seq, err := strata.And(wtxn, hosts, hostByZone.Query("eu"), hostByName.Query("b1"))
	if err != nil {
		panic(err)
	}
	n, err := strata.DeleteEach(wtxn, hosts, seq)
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted:", n)
	for h := range hosts.All(wtxn) {
		fmt.Println("left:", h.Name, h.Zone)
	}
	wtxn.Abort()
	// Output:
	// deleted: 1
	// left: a1 eu
	// left: a2 us
}

// ModifyEach replaces what a read returns with new objects, here every
// host of a zone moved to another, which a loop that inserted as it read
// the zone's index would see change under it.
func ExampleModifyEach() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{Name: "a1", Zone: "eu"}, {Name: "a2", Zone: "us"}, {Name: "b1", Zone: "eu"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	n, err := strata.ModifyEach(wtxn, hosts, hosts.List(wtxn, hostByZone.Query("eu")), func(h *Host) (*Host, bool) {
		moved := *h
		moved.Zone = "eu-west"
		return &moved, true
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("moved:", n)
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	for h := range hosts.All(rtxn) {
		fmt.Println(h.Name, h.Zone)
	}
	// Output:
	// moved: 2
	// a1 eu-west
	// a2 us
	// b1 eu-west
}
