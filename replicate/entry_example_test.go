package replicate_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/strata-db/strata/replicate"
)

// A proposer encodes its transaction's change set into an entry, which it
// hands to raft.Apply; every node decodes the entry's Data in FSM.Apply.
func ExampleAppendEntry() {
	e := &replicate.Entry{Kind: replicate.KindChanges, Changes: []replicate.ChangeSet{{
		ID: replicate.NewChangeSetID(1, 42),
		Tables: []replicate.TableChanges{{
			Table: "users",
			// Nothing wrote users since revision 17, and bob does not
			// exist.
			ReadRevision: 17,
			Reads:        []replicate.ObjectRead{{Key: []byte("bob")}},
			Ops: []replicate.Op{
				// bob at revision 18, encoded by codec version 1;
				// alice deleted at 19.
				replicate.Upsert([]byte("bob"), 18, 1, []byte(`{"name":"Bob"}`)),
				replicate.Delete([]byte("alice"), 19),
			},
		}},
	}}}
	data, err := replicate.AppendEntry(nil, e)
	if err != nil {
		log.Fatal(err) // ErrEntryTooLarge: split the transaction
	}
	fmt.Println(len(data), "bytes")

	got, err := replicate.DecodeEntry(data)
	if err != nil {
		// A committed entry that does not decode must stop the node.
		log.Fatal(err)
	}
	cs := got.Changes[0]
	fmt.Println("node", cs.ID.Node(), "seq", cs.ID.Seq())
	for _, op := range cs.Tables[0].Ops {
		fmt.Printf("%s: op %d %s\n", cs.Tables[0].Table, op.Kind, op.Key)
	}

	_, err = replicate.DecodeEntry([]byte{replicate.EntryVersion, 0x05})
	fmt.Println(errors.Is(err, replicate.ErrUnknownKind))
	// Output:
	// 56 bytes
	// node 1 seq 42
	// users: op 1 bob
	// users: op 2 alice
	// true
}
