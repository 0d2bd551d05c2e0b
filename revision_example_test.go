package strata_test

import (
	"fmt"

	"github.com/strata-db/strata"
)

// A table registered with RevisionIndex keeps its objects in the order of
// the revisions they were written at: LowerBound with ByRevision reads
// those written at a revision or later, oldest first, which is what a
// poller that remembers the last revision it handled asks for. Tables
// without RevisionIndex do not keep that index, and pay nothing for it.
func ExampleByRevision() {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, strata.RevisionIndex[*Host]())

	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "b1", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		panic(err)
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	handled := hosts.Revision(rtxn)

	wtxn = db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "b1", Zone: "us"}); err != nil { // b1 again, at a new revision
		panic(err)
	}
	if rtxn, err = wtxn.Commit(); err != nil {
		panic(err)
	}
	for h, rev := range hosts.LowerBound(rtxn, strata.ByRevision[*Host](0)) {
		fmt.Println("all:", rev, h.Name, h.Zone)
	}
	for h, rev := range hosts.LowerBound(rtxn, strata.ByRevision[*Host](handled+1)) {
		fmt.Println("since", handled, "->", rev, h.Name, h.Zone)
	}
	// Output:
	// all: 2 a1 eu
	// all: 3 b1 us
	// since 2 -> 3 b1 us
}
