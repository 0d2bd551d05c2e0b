package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
)

// A controller's loop over a change feed: read what changed, act on it,
// wait for more. WithCreated tells new objects from replaced ones, and
// flags the deletes of objects the feed never delivered.
func ExampleChangeIterator() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)

	wtxn := db.WriteTxn(hosts)
	feed, err := hosts.Changes(wtxn, strata.WithCreated())
	if err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	defer feed.Close()

	show := func() {
		changes, _ := feed.Next(db.ReadTxn())
		for c := range changes {
			switch {
			case c.Deleted && c.Created:
				fmt.Println("never seen, already gone:", c.Object.Name)
			case c.Deleted:
				fmt.Println("deleted:", c.Object.Name)
			case c.Created:
				fmt.Println("created:", c.Object.Name)
			default:
				fmt.Println("updated:", c.Object.Name)
			}
		}
	}
	show()

	wtxn = db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "us"}); err != nil { // replaces a1
		panic(err)
	}
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "b2", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "c3", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Delete(wtxn, &Host{Name: "c3"}); err != nil { // made and deleted in between
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	show()
	// Output:
	// created: a1
	// updated: a1
	// created: b2
	// never seen, already gone: c3
}

// DeletePrefix removes every object a prefix query returns, in one call.
func ExampleRWTable_DeletePrefix() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, name := range []string{"eu-1", "eu-2", "us-1"} {
		if _, _, err := hosts.Insert(wtxn, &Host{Name: name}); err != nil {
			panic(err)
		}
	}
	n, err := hosts.DeletePrefix(wtxn, hostByName.Query("eu-"))
	if err != nil {
		panic(err)
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted", n)
	for h := range hosts.All(rtxn) {
		fmt.Println("left:", h.Name)
	}
	// Output:
	// deleted 2
	// left: us-1
}
