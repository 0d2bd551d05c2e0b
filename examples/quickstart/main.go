package main

import (
	"fmt"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

type Host struct {
	Name string
	Zone string
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

func main() {
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName, hostByZone)
	if err != nil {
		log.Fatal(err)
	}

	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		log.Fatal(err)
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		log.Fatal(err)
	}

	for h := range hosts.List(rtxn, hostByZone.Query("eu")) {
		fmt.Println(h.Name, "is in", h.Zone)
	}
	h, rev, watch, found := hosts.GetWatch(rtxn, hostByName.Query("a1"))
	fmt.Println(h.Name, rev, found)

	wtxn = db.WriteTxn(hosts)
	// a changed copy
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "us"}); err != nil {
		log.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		log.Fatal(err)
	}
	<-watch // closed: a1 changed
	fmt.Println("a1 changed")
}
