//go:build invariants

package strata

import (
	"fmt"
	"strings"
	"testing"
)

// TestCheckLogCatchesReuseOfReadSegment: the change log's checks catch,
// at the commit that does it, a writer reusing a segment a feed still
// reads, whether the feed pins the segment's exact end or reads a batch in
// it. The writer is given a pin above the feeds' lowest, as a wrong reuse
// condition would: end <= pin instead of end < pin, or a pin that moved
// with a batch consumed in part.
func TestCheckLogCatchesReuseOfReadSegment(t *testing.T) {
	t.Run("feed pinned at a segment's end", func(t *testing.T) {
		db, tbl, it := feedAtSegmentEnd(t)
		expectCheckPanic(t, db, tbl, 1, 3*changeLogSegment, "its position")
		it.Close()
	})
	t.Run("batch consumed in part", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		txn := db.WriteTxn(tbl)
		it, err := tbl.Changes(txn)
		must(t, err)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		rtxn, err := txn.Commit()
		must(t, err)
		feedAll(it, rtxn) // at 1, in the first segment
		rtxn = insertRange(t, db, tbl, 100, 100+3*changeLogSegment, 0)
		seq, _ := it.Next(rtxn)
		n := 0
		for range seq {
			if n++; n == changeLogSegment+10 {
				break // the batch's place is in the second segment
			}
		}
		// A pin past the second segment, as if it moved with the batch:
		// the writer reuses the first two.
		expectCheckPanic(t, db, tbl, 2*changeLogSegment+10, 2*changeLogSegment, "its position", "its batch's place")
		it.Close()
	})
}

// expectCheckPanic commits a transaction of n inserts into tbl whose
// writer reads the feeds' lowest pin as raise more than it is, and
// expects the change log's checks to panic at the commit about a feed's
// positions named in what, each in a reused segment.
func expectCheckPanic(t *testing.T, db *DB, tbl RWTable[*testObject], raise uint64, n int, what ...string) {
	t.Helper()
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 5000}) // begins the table's write state
	tt := &tbl.(*table[*testObject]).txn
	tt.log.cur.lowestPin, tt.log.cur.lowestPinRead = tt.log.feeds.lowestPin()+raise, true
	for id := range uint64(n) {
		mustInsert(t, tbl, txn, &testObject{ID: 5001 + id})
	}
	p := catch(func() { _, err := txn.Commit(); must(t, err) }) // a panic, not an error
	msg := fmt.Sprint(p)
	t.Logf("the check's panic: %s", msg)
	for _, w := range what {
		if p == nil || !strings.Contains(msg, w+": at ") {
			t.Errorf("Commit reusing a segment a feed reads: panic %q, want one on %s", msg, w)
		}
	}
	if want := len(what); strings.Count(msg, "the segment was reused") != want {
		t.Errorf("Commit reusing a segment a feed reads: panic %q, want %d positions in reused segments", msg, want)
	}
	if !lockFree(db, tbl) {
		t.Fatal("the table stayed locked after the check's panic")
	}
}

// TestCheckLogOnAbortThatStartedOrDroppedALog: the change log's checks run
// at the abort of a transaction that started the table's log (it
// registered the first feed) or dropped it (the table had none left), as
// at every other commit and abort. Each case plants a fault the check
// must report: an open feed nobody registered in the transaction, with no
// log left; a summary that does not match the committed log's entries.
func TestCheckLogOnAbortThatStartedOrDroppedALog(t *testing.T) {
	t.Run("started", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		impl := tbl.(*table[*testObject])
		txn := db.WriteTxn(tbl)
		_, err := tbl.Changes(txn)
		must(t, err)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		stray := impl.meta.feeds.register(0, 0, 0) // not the transaction's: stays open
		p := catch(txn.Abort)
		impl.meta.feeds.release(stray)
		if msg := fmt.Sprint(p); !strings.Contains(msg, "1 open feeds, and no log") {
			t.Fatalf("Abort of a transaction that started the log, with a feed left open: panic %q", msg)
		}
	})
	t.Run("dropped", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		impl := tbl.(*table[*testObject])
		txn := db.WriteTxn(tbl)
		it, err := tbl.Changes(txn)
		must(t, err)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		rtxn, err := txn.Commit()
		must(t, err)
		// Released without dropping the log: the next writer drops it.
		impl.meta.feeds.release(it.(*changeIterator[*testObject]).entry)
		seg := impl.stateIn(rtxn.committed()).log.seg
		txn = db.WriteTxn(tbl)
		mustInsert(t, tbl, txn, &testObject{ID: 2})
		if impl.txn.log.cur.end.seg != nil {
			t.Fatal("the transaction kept the change log of a table without feeds")
		}
		seg.sum.maxPrev += 100
		p := catch(txn.Abort)
		seg.sum.maxPrev -= 100
		if msg := fmt.Sprint(p); !strings.Contains(msg, "summary") {
			t.Fatalf("Abort of a transaction that dropped the log, with a wrong summary: panic %q", msg)
		}
		if !lockFree(db, tbl) {
			t.Fatal("the table stayed locked after the check's panic")
		}
	})
}
