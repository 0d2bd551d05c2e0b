package main

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

type Node struct {
	ID   uint64
	Name string
}

var nodeByID = strata.Index[*Node, uint64]{
	Name:       "id",
	FromObject: func(n *Node) index.KeySet { return index.NewKeySet(index.Uint64(n.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// run is one run of a program: it opens the store in dir, loads the nodes
// table and adds a node.
func run(dir string, add *Node) (err error) {
	store, err := persist.Open(dir, persist.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	db := strata.New()
	nodes := strata.MustNewTable(db, "nodes", nodeByID)
	if err := store.Register(persist.Table(nodes, persist.JSON[*Node]())); err != nil {
		return err
	}
	var names []string
	for n := range nodes.All(db.ReadTxn()) {
		names = append(names, n.Name)
	}
	fmt.Println("found", names) // what the runs before committed

	txn := db.WriteTxn(nodes)
	if _, _, err := nodes.Insert(txn, add); err != nil {
		log.Fatal(err)
	}
	_, err = txn.Commit() // returns once the node is on disk
	return err
}

func main() {
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for i, name := range []string{"a", "b", "c"} {
		if err := run(dir, &Node{ID: uint64(i), Name: name}); err != nil {
			log.Fatal(err)
		}
	}
}
