package strata

import (
	"strings"
	"testing"
)

// TestHandles: handles share the database: tables registered through one
// are read and written through any; a table knows its database by the
// first handle; the last writer of a table is the handle whose
// transaction changed its objects (not one that only locked it, or
// dropped its change log).
func TestHandles(t *testing.T) {
	db := New()
	if db.HandleName() != DefaultHandle {
		t.Fatalf("first handle named %q", db.HandleName())
	}
	mod := db.NewHandle("mod")
	if !mod.SameDatabase(db) || !db.SameDatabase(mod) || db.SameDatabase(New()) || db.SameDatabase(nil) {
		t.Fatal("SameDatabase is wrong")
	}
	tbl := newTestTable(t, mod, "t")
	if tbl.DB() != db {
		t.Fatal("a table registered through a handle does not name the first as its database")
	}
	txn := mod.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	if w := tbl.LastWriter(txn); w != "mod" {
		t.Fatalf("LastWriter through the writing transaction = %q", w)
	}
	_, err := txn.Commit()
	must(t, err)
	if n := tbl.NumObjects(db.ReadTxn()); n != 1 {
		t.Fatalf("the first handle reads %d objects written through another", n)
	}
	// Locked, not written: the last writer stays.
	txn = db.WriteTxn(tbl)
	feed, err := tbl.Changes(txn) // starts the change log: a new state
	must(t, err)
	rtxn, err := txn.Commit()
	must(t, err)
	if w := tbl.LastWriter(rtxn); w != "mod" {
		t.Fatalf("LastWriter after a transaction that wrote no object = %q", w)
	}
	feed.Close()
	txn = db.NewHandle("other").WriteTxn(tbl)
	_, _, err = tbl.Delete(txn, &testObject{ID: 1})
	must(t, err)
	rtxn, err = txn.Commit()
	must(t, err)
	if w := tbl.LastWriter(rtxn); w != "other" {
		t.Fatalf("LastWriter = %q, want other", w)
	}
	// Another database's handle is another database.
	msg := catch(func() { New().NewHandle("x").WriteTxn(tbl) })
	if !strings.Contains(fmtAny(msg), "another DB") {
		t.Fatalf("WriteTxn of a table of another database: %v", msg)
	}
}

func fmtAny(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
