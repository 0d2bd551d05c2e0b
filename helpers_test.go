package strata

// The helpers the root package's tests share: writes that fail the test
// on an error (so that no test passes because a write silently failed),
// and catching a panic. The test object and its tables are in
// testobj_test.go.

import "testing"

// must fails the test if err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustCommit commits txn and returns the new snapshot, failing the test if
// the commit fails.
func mustCommit(t testing.TB, txn WriteTxn) ReadTxn {
	t.Helper()
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rtxn
}

// mustInsert inserts objects, failing the test on an error.
func mustInsert(t testing.TB, tbl RWTable[*testObject], txn WriteTxn, objs ...*testObject) {
	t.Helper()
	for _, o := range objs {
		if _, _, err := tbl.Insert(txn, o); err != nil {
			t.Fatalf("Insert(%d): %v", o.ID, err)
		}
	}
}

// catch runs f and returns what it panicked with, or nil.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// mustInsertAll inserts objs in a write transaction of their own and
// commits it, failing the test on an error.
func mustInsertAll(t testing.TB, db *DB, tbl RWTable[*testObject], objs ...*testObject) ReadTxn {
	t.Helper()
	wtxn := db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, objs...)
	return mustCommit(t, wtxn)
}
