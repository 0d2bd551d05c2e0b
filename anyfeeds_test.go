package strata

import "testing"

func TestAnyTableFeedStats(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	if got := at.FeedStats(db.ReadTxn()); got != (FeedStats{}) {
		t.Fatalf("without feeds: %+v", got)
	}
	mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "a"}, &testObject{ID: 2, Name: "b"})

	wtxn := db.WriteTxn(tbl)
	feed, err := at.Changes(wtxn)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	st := at.FeedStats(db.ReadTxn())
	if st.Feeds != 1 || st.Graveyard != 0 {
		t.Fatalf("open unread feed: %+v", st)
	}
	changes, _ := feed.Next(db.ReadTxn())
	for range changes {
	}

	// A delete the feed has not read is in the graveyard.
	wtxn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(wtxn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	st = at.FeedStats(db.ReadTxn())
	if st.Feeds != 1 || st.Lag != 1 || st.Graveyard != 1 {
		t.Fatalf("after an unread delete: %+v", st)
	}
	changes, _ = feed.Next(db.ReadTxn())
	for range changes {
	}
	// Read: the graveyard is empty as of the next commit's snapshot.
	mustInsertAll(t, db, tbl, &testObject{ID: 3, Name: "c"})
	if st = at.FeedStats(db.ReadTxn()); st.Graveyard != 0 {
		t.Fatalf("after reading the delete: %+v", st)
	}
	feed.Close()
	if st = at.FeedStats(db.ReadTxn()); st.Feeds != 0 {
		t.Fatalf("after Close: %+v", st)
	}
}
