package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

type Host struct {
	Name string
	Zone string
	Up   bool
}

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
)

func Example() {
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName, hostByZone)
	if err != nil {
		panic(err)
	}

	// Write three hosts in one transaction.
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{
		{Name: "a1", Zone: "eu", Up: true},
		{Name: "b1", Zone: "us", Up: true},
		{Name: "a2", Zone: "eu", Up: false},
	} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	// Query the snapshot by a secondary index.
	for h := range hosts.List(rtxn, hostByZone.Query("eu")) {
		fmt.Println("eu:", h.Name, h.Up)
	}

	// Watch one host, then change it in a new transaction.
	_, _, watch, _ := hosts.GetWatch(rtxn, hostByName.Query("a2"))
	wtxn = db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a2", Zone: "eu", Up: true}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	<-watch
	h, _, _ := hosts.Get(db.ReadTxn(), hostByName.Query("a2"))
	fmt.Println("a2 is up:", h.Up)

	// The old snapshot still reads as it did.
	h, _, _ = hosts.Get(rtxn, hostByName.Query("a2"))
	fmt.Println("a2 in the old snapshot is up:", h.Up)
	// Output:
	// eu: a1 true
	// eu: a2 false
	// a2 is up: true
	// a2 in the old snapshot is up: false
}
