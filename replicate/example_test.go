package replicate_test

import (
	"fmt"
	"log"
	"os"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/replicate"
)

// A LogStore is raft's log store and stable store at once: give it to
// raft.NewRaft twice, and close it after the node shuts down.
func Example() {
	dir, err := os.MkdirTemp("", "raftlog")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := replicate.Open(dir, replicate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// raft.NewRaft(conf, fsm, store, store, snapshots, transport), or with
	// raft.NewLogCache(512, store) as its log store.

	if err := store.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("b")},
		{Index: 3, Term: 1, Type: raft.LogCommand, Data: []byte("c")},
	}); err != nil {
		log.Fatal(err)
	}
	// Compaction after a snapshot deletes the head of the log.
	if err := store.DeleteRange(1, 1); err != nil {
		log.Fatal(err)
	}
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		log.Fatal(err)
	}
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}

	// Everything was synced: a reopened store holds it.
	store, err = replicate.Open(dir, replicate.Options{VerifyOnOpen: true})
	if err != nil {
		log.Fatal(err)
	}
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	var entry raft.Log
	if err := store.GetLog(last, &entry); err != nil {
		log.Fatal(err)
	}
	term, _ := store.GetUint64([]byte("CurrentTerm"))
	_, err = store.Get([]byte("LastVoteCand"))
	fmt.Printf("log %d..%d, last %q, term %d, vote: %v\n", first, last, entry.Data, term, err)
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}
	// Output: log 2..3, last "c", term 1, vote: not found
}
