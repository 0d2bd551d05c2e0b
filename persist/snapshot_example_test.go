package persist_test

import (
	"bytes"
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

func ExampleWriteSnapshot() {
	type Host struct {
		Name string
		Zone string
	}
	byName := strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}

	// An in-memory database with two hosts.
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", byName)
	txn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(txn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(txn, &Host{Name: "b1", Zone: "us"}); err != nil {
		panic(err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		panic(err)
	}

	// Write a snapshot of the table as rtxn sees it. (WriteSnapshotFile
	// writes one to a file safely.)
	var buf bytes.Buffer
	if err := persist.WriteSnapshot(&buf, rtxn, persist.Table(hosts, persist.JSON[*Host]())); err != nil {
		panic(err)
	}

	// Read it into the same, empty table of a fresh database.
	fresh := strata.New()
	restored := strata.MustNewTable(fresh, "hosts", byName)
	info, err := persist.ReadSnapshot(&buf, persist.Table(restored, persist.JSON[*Host]()))
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Tables[0].Name, info.Objects, "objects, revision", info.Tables[0].Revision)
	for h, rev := range restored.All(fresh.ReadTxn()) {
		fmt.Println(h.Name, h.Zone, "at revision", rev)
	}
	// Output:
	// hosts 2 objects, revision 2
	// a1 eu at revision 1
	// b1 us at revision 2
}
