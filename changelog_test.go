package strata

import (
	"slices"
	"testing"
)

// insertRange commits one transaction inserting the objects from to to-1,
// with value v.
func insertRange(t *testing.T, db *DB, tbl RWTable[*testObject], from, to uint64, v int) ReadTxn {
	t.Helper()
	txn := db.WriteTxn(tbl)
	for id := from; id < to; id++ {
		mustInsert(t, tbl, txn, &testObject{ID: id, Value: v})
	}
	rtxn, err := txn.Commit()
	must(t, err)
	return rtxn
}

// feedAtSegmentEnd returns a table whose one feed has delivered the change
// log up to the exact end of its first, full, segment, which it pins, and
// ten changes committed after that, in the next segment. The feed reads on
// from that segment's next: the writer must not reuse it.
func feedAtSegmentEnd(t *testing.T) (*DB, RWTable[*testObject], ChangeIterator[*testObject]) {
	t.Helper()
	db := New()
	tbl := newTestTable(t, db, "t")
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	must(t, err)
	for id := range uint64(changeLogSegment) {
		mustInsert(t, tbl, txn, &testObject{ID: id})
	}
	rtxn, err := txn.Commit()
	must(t, err)
	if got := feedAll(it, rtxn); len(got) != changeLogSegment {
		t.Fatalf("first Next: %d changes, want %d", len(got), changeLogSegment)
	}
	f := it.(*changeIterator[*testObject])
	if f.pos.seq != changeLogSegment || f.pos.n() != changeLogSegment {
		t.Fatalf("the feed is at %d, %d entries into its segment; want the segment's end, %d", f.pos.seq, f.pos.n(), changeLogSegment)
	}
	insertRange(t, db, tbl, 1000, 1010, 0)
	return db, tbl, it
}

// TestChangeLogFeedPinnedAtSegmentEnd: a feed that delivered up to the
// exact end of a segment pins that segment, whose next it reads from. A
// long transaction after the log moved on (every segment it adds wants an
// old one to reuse) must not reuse it: the feed's next Next delivers what
// followed, and later ones too, once the segment may be reused.
// Regression test: a reuse condition that counted a segment ending at a
// pin as passed went unnoticed by the change log's checks, and the Next
// after it panicked with a negative index (changelog_check_test.go shows
// that the checks now catch it at the commit).
func TestChangeLogFeedPinnedAtSegmentEnd(t *testing.T) {
	db, tbl, it := feedAtSegmentEnd(t)
	rtxn := insertRange(t, db, tbl, 2000, 2000+3*changeLogSegment, 0)
	var got []changeRec
	if p := catch(func() { got = feedAll(it, rtxn) }); p != nil {
		t.Fatalf("Next after a long transaction panicked: %v", p)
	}
	if want := 10 + 3*changeLogSegment; len(got) != want {
		t.Fatalf("Next delivered %d changes, want %d", len(got), want)
	}
	if got[0].id != 1000 || got[len(got)-1].id != 2000+3*changeLogSegment-1 {
		t.Fatalf("Next delivered objects %d to %d, want 1000 to %d", got[0].id, got[len(got)-1].id, 2000+3*changeLogSegment-1)
	}
	// Now the old segments are delivered, and reused.
	for round := range 4 {
		v := round + 1
		rtxn = insertRange(t, db, tbl, 0, 2*changeLogSegment, v)
		got = feedAll(it, rtxn)
		if len(got) != 2*changeLogSegment || !slices.ContainsFunc(got, func(c changeRec) bool { return c.id == 0 && c.value == v }) {
			t.Fatalf("round %d: Next delivered %d changes, want %d with object 0 at value %d", round, len(got), 2*changeLogSegment, v)
		}
	}
	it.Close()
}
