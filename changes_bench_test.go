package strata

import "testing"

// The change feed benchmarks of cilium/statedb v0.9.4 (benchmarks_test.go),
// doing the same work. One op:
//
//	insert numObjectsToInsert new objects (IDs 0..999) in a transaction,
//	commit; Next on the latest snapshot and consume the 1000 upserts;
//	DeleteAll in a transaction, commit; wait for Next's channel; Next and
//	consume the 1000 deletes.
//
// BenchmarkDB_Changes_Baseline does the same writes with no feed, so that
// the cost of one observer over none is Changes / Changes_Baseline - 1:
//
//	go test -run '^$' -bench 'DB_Changes' -benchmem -count 10 .

// BenchmarkDB_Changes: the writes above with one change feed consuming them.
func BenchmarkDB_Changes(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	txn := db.WriteTxn(tbl)
	if n := tbl.NumObjects(txn); n != 0 {
		b.Fatalf("NumObjects = %d, want 0", n)
	}
	it, err := tbl.Changes(txn)
	if err != nil {
		b.Fatalf("Changes: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
	defer it.Close()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for i := range uint64(numObjectsToInsert) {
			if _, _, err := tbl.Insert(txn, &testObject{ID: i}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}

		changes, watch := it.Next(db.ReadTxn())
		n := 0
		for c := range changes {
			if c.Deleted {
				b.Fatalf("expected an upsert, got %+v", c)
			}
			n++
		}
		if n != numObjectsToInsert {
			b.Fatalf("observed %d upserts, want %d", n, numObjectsToInsert)
		}

		txn = db.WriteTxn(tbl)
		if err := tbl.DeleteAll(txn); err != nil {
			b.Fatalf("DeleteAll: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		<-watch

		changes, _ = it.Next(db.ReadTxn())
		n = 0
		for c := range changes {
			if !c.Deleted {
				b.Fatalf("expected a delete, got %+v", c)
			}
			n++
		}
		if n != numObjectsToInsert {
			b.Fatalf("observed %d deletes, want %d", n, numObjectsToInsert)
		}
		ops++
	}
	// Drained: nothing more, and a channel that is open.
	changes, watch := it.Next(db.ReadTxn())
	for c := range changes {
		b.Fatalf("drained feed returned %+v", c)
	}
	select {
	case <-watch:
		b.Fatal("drained feed returned a closed channel")
	default:
	}
	// Everything was delivered: the graveyard is empty.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
		b.Fatalf("Delete: %s", err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		b.Fatalf("Commit: %s", err)
	}
	if n := mdlGraveyard(tbl.(*table[*testObject]), tbl.(*table[*testObject]).stateIn(rtxn.committed())); n != 0 {
		b.Fatalf("graveyard holds %d deletes every feed has seen", n)
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}

// BenchmarkDB_Changes_Batched: the work of BenchmarkDB_Changes with one
// Next after both transactions, which delivers the 1000 deletes and skips
// the 1000 inserts they supersede: a feed read less often than the table
// changes.
func BenchmarkDB_Changes_Batched(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	if err != nil {
		b.Fatalf("Changes: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
	defer it.Close()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for i := range uint64(numObjectsToInsert) {
			if _, _, err := tbl.Insert(txn, &testObject{ID: i}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		txn = db.WriteTxn(tbl)
		if err := tbl.DeleteAll(txn); err != nil {
			b.Fatalf("DeleteAll: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		changes, _ := it.Next(db.ReadTxn())
		n := 0
		for c := range changes {
			if !c.Deleted {
				b.Fatalf("expected a delete, got %+v", c)
			}
			n++
		}
		if n != numObjectsToInsert {
			b.Fatalf("observed %d deletes, want %d", n, numObjectsToInsert)
		}
		ops++
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}

// BenchmarkDB_Changes_Baseline: the writes of BenchmarkDB_Changes with no
// feed.
func BenchmarkDB_Changes_Baseline(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for i := range uint64(numObjectsToInsert) {
			if _, _, err := tbl.Insert(txn, &testObject{ID: i}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		txn = db.WriteTxn(tbl)
		if err := tbl.DeleteAll(txn); err != nil {
			b.Fatalf("DeleteAll: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		ops++
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		b.Fatalf("NumObjects = %d, want 0", n)
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}
