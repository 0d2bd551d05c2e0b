package persist_test

import (
	"fmt"
	"log"
	"os"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Note is the object of the example's table.
type Note struct {
	ID   uint64
	Text string
}

var noteByID = strata.Index[*Note, uint64]{
	Name:       "id",
	FromObject: func(n *Note) index.KeySet { return index.KeySetOf(index.Uint64(n.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// A table registered with a store comes back with its objects after a
// restart: here two "runs" of a program, each opening the store, finding
// what the runs before it wrote, and adding a note.
func Example() {
	dir, err := os.MkdirTemp("", "strata-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	run := func(text string) {
		store, err := persist.Open(dir, persist.Options{})
		if err != nil {
			log.Fatal(err)
		}
		defer store.Close()

		db := strata.New()
		notes := strata.MustNewTable(db, "notes", noteByID)
		if err := store.Register(persist.Table(notes, persist.JSON[*Note]())); err != nil {
			log.Fatal(err)
		}
		for n := range notes.All(db.ReadTxn()) {
			fmt.Printf("found note %d: %s\n", n.ID, n.Text)
		}

		txn := db.WriteTxn(notes)
		id := uint64(notes.NumObjects(txn)) + 1
		if _, _, err := notes.Insert(txn, &Note{ID: id, Text: text}); err != nil {
			panic(err)
		}
		// Commit returns once the note is on disk (Sync mode).
		if _, err := txn.Commit(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("added note %d\n", id)
	}
	run("hello")
	run("again")
	// Output:
	// added note 1
	// found note 1: hello
	// added note 2
}
