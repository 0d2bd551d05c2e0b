package persist_test

import (
	"bytes"
	"fmt"
	"log"
	"os"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// A Reader shows what a store holds without the tables' Go types: its
// catalog, each table's schema and its objects as stored. (The notes are
// JSON, so their values read as text.) It can also export a snapshot,
// which a SnapshotReader reads back record by record.
func ExampleOpenReader() {
	dir, err := os.MkdirTemp("", "strata-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := persist.Open(dir, persist.Options{})
	if err != nil {
		log.Fatal(err)
	}
	db := strata.New()
	notes := strata.MustNewTable(db, "notes", noteByID)
	if err := store.Register(persist.Table(notes, persist.JSON[*Note]())); err != nil {
		log.Fatal(err)
	}
	txn := db.WriteTxn(notes)
	if _, _, err := notes.Insert(txn, &Note{ID: 1, Text: "hello"}); err != nil {
		log.Fatal(err)
	}
	if _, _, err := notes.Insert(txn, &Note{ID: 2, Text: "again"}); err != nil {
		log.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		log.Fatal(err)
	}
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := persist.OpenReader(dir, persist.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for _, t := range r.Tables() {
		fmt.Printf("table %s: %v\n", t.Name, t.Schema)
		for obj, err := range r.Objects(t.Name, nil, nil) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("  key %x revision %d: %s\n", obj.Key, obj.Revision, obj.Value)
		}
	}

	var snap bytes.Buffer
	if err := r.WriteSnapshot(&snap); err != nil {
		log.Fatal(err)
	}
	sr, err := persist.NewSnapshotReader(&snap)
	if err != nil {
		log.Fatal(err)
	}
	n := 0
	for sr.Next() {
		n++
	}
	fmt.Printf("snapshot: %d records of table %s, verified: %v\n", n, sr.Tables()[0].Name, sr.Err() == nil)
	// Output:
	// table notes: codec json version 1, type *github.com/strata-db/strata/persist_test.Note
	//   key 0000000000000001 revision 1: {"ID":1,"Text":"hello"}
	//   key 0000000000000002 revision 2: {"ID":2,"Text":"again"}
	// snapshot: 2 records of table notes, verified: true
}
