package strata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strata-db/strata/index"
)

// TestDBCommits: Commits counts the commits that published changes, and
// neither empty commits nor aborts.
func TestDBCommits(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	if n := db.Commits(); n != 0 {
		t.Fatalf("Commits of a new database = %d", n)
	}
	for i := range 3 {
		txn := db.WriteTxn(tbl)
		mustInsert(t, tbl, txn, &testObject{ID: uint64(i)})
		_, err := txn.Commit()
		must(t, err)
	}
	mustCommit(t, db.WriteTxn(tbl)) // changes nothing
	txn := db.NewHandle("other").WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 9})
	txn.Abort()
	if n := db.Commits(); n != 3 {
		t.Fatalf("Commits = %d, want 3", n)
	}
}

// TestAnyTablePrimaryKey: the primary key of an object, and typed errors
// for an object of another type.
func TestAnyTablePrimaryKey(t *testing.T) {
	db := New()
	newTestTable(t, db, "t", nameIndex)
	at, err := db.AnyTable("t")
	must(t, err)
	key, err := at.PrimaryKey(&testObject{ID: 42, Name: "x"})
	must(t, err)
	if !bytes.Equal(key, index.Uint64(42)) {
		t.Fatalf("PrimaryKey = %x", key)
	}
	if s, _ := at.KeyString("", key); s != "42" {
		t.Fatalf("KeyString(PrimaryKey) = %q", s)
	}
	if _, err := at.PrimaryKey("not an object"); !errors.Is(err, ErrObjectType) {
		t.Fatalf("PrimaryKey of a string: %v", err)
	}
}
