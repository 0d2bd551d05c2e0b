package strata_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/strata-db/strata"
)

// A tool reads a table it does not know the type of: by name, with keys
// typed as text, a page at a time.
func ExampleAnyTable() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{Name: "a1", Zone: "eu"}, {Name: "a2", Zone: "eu"}, {Name: "b1", Zone: "us"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}

	tbl, err := db.AnyTable("hosts")
	if err != nil {
		panic(err)
	}
	for _, ix := range tbl.Indexes() {
		fmt.Printf("index %s: key %v, unique %v\n", ix.Name, ix.KeyType, ix.Unique)
	}

	obj, _, found, err := tbl.Get(txn, "name", "a2")
	data, _ := json.Marshal(obj)
	fmt.Println(found, err, string(data))

	// The hosts of zone eu, one per page.
	key, err := tbl.ParseKey("zone", "eu")
	if err != nil {
		panic(err)
	}
	q := strata.AnyQuery{Index: "zone", Op: strata.QueryList, Key: key}
	for page := 1; ; page++ {
		seq, err := tbl.Read(txn, q)
		if err != nil {
			panic(err)
		}
		var last *strata.AnyObject
		for o := range seq {
			fmt.Println("page", page, o.Object.(*Host).Name)
			last = &o
			break
		}
		if last == nil {
			break
		}
		q.After = last.Cursor
	}
	// Output:
	// index name: key string, unique true
	// index zone: key string, unique false
	// true <nil> {"Name":"a2","Zone":"eu","Up":false}
	// page 1 a1
	// page 2 a2
}

// A debugging dump of some tables of a snapshot, streamed as JSON.
func ExampleWriteJSON() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu", Up: true}); err != nil {
		panic(err)
	}
	txn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	if err := strata.WriteJSON(os.Stdout, txn, "hosts"); err != nil {
		panic(err)
	}
	// Output:
	// {
	//   "hosts": [
	//     {"Name":"a1","Zone":"eu","Up":true}
	//   ]
	// }
}
