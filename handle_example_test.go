package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
)

// Each module of a program writes through a handle of its own, so that
// metrics, and a table's last writer, say which module wrote.
func ExampleDB_NewHandle() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)

	inventory := db.NewHandle("inventory")
	wtxn := inventory.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		panic(err)
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	fmt.Println(hosts.LastWriter(rtxn), hosts.NumObjects(db.ReadTxn()))
	// Output: inventory 1
}
