package strata

import (
	"errors"
	"testing"
)

func TestAnyTableChanges(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "a"}, &testObject{ID: 2, Name: "b"})

	// A feed needs the table locked, as the typed one does.
	other := newTestTable(t, db, "other")
	wtxn := db.WriteTxn(other)
	if _, err := at.Changes(wtxn); !errors.Is(err, ErrTableNotLockedForWriting) {
		t.Fatalf("Changes without the table locked: %v", err)
	}
	wtxn.Abort()

	wtxn = db.WriteTxn(tbl)
	feed, err := at.Changes(wtxn, WithCreated())
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}

	type seen struct {
		id               uint64
		deleted, created bool
	}
	next := func(want int) ([]seen, <-chan struct{}) {
		t.Helper()
		changes, watch := feed.Next(db.ReadTxn())
		var got []seen
		var last Revision
		for c, rev := range changes {
			if rev != c.Revision || rev <= last {
				t.Fatalf("revision %d (change's %d) after %d", rev, c.Revision, last)
			}
			last = rev
			got = append(got, seen{c.Object.(*testObject).ID, c.Deleted, c.Created})
		}
		if len(got) != want {
			t.Fatalf("got %v, want %d changes", got, want)
		}
		return got, watch
	}
	got, watch := next(2)
	if got[0] != (seen{1, false, true}) || got[1] != (seen{2, false, true}) {
		t.Fatalf("first batch %v", got)
	}

	wtxn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(wtxn, &testObject{ID: 1, Name: "a2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Delete(wtxn, &testObject{ID: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	<-watch // closed by the commit
	got, _ = next(2)
	if got[0] != (seen{1, false, false}) || got[1] != (seen{2, true, false}) {
		t.Fatalf("second batch %v", got)
	}

	feed.Close()
	if _, watch := feed.Next(db.ReadTxn()); watch != nil {
		t.Fatal("a closed feed's Next returned a channel")
	}
}
