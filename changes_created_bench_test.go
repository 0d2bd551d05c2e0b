package strata

import (
	"fmt"
	"testing"
)

// What WithCreated costs a feed, and that feeds without it pay nothing:
// the work of BenchmarkDB_Changes and of BenchmarkDB_Changes_OnePerTxn
// with a feed opened without (created=false) and with (created=true)
// WithCreated, so that benchstat compares them:
//
//	go test -run '^$' -bench 'DB_Changes(_OnePerTxn)?_Created' -benchmem -count 10 . | tee created.txt
//	benchstat -col /created created.txt
//
// A feed without WithCreated decides so once per batch (Next), never per
// change; created=false is the code path of every feed that does not ask.

// BenchmarkDB_Changes_Created: as BenchmarkDB_Changes (1000 inserts, Next,
// DeleteAll, Next), checking the flag: the upserts of new objects are
// Created for a feed WithCreated, the deletes of objects it delivered are
// not, and a feed without it sets none.
func BenchmarkDB_Changes_Created(b *testing.B) {
	for _, created := range []bool{false, true} {
		b.Run(fmt.Sprintf("created=%v", created), func(b *testing.B) {
			db, tbl, it := createdFeed(b, created)
			defer it.Close()
			b.ReportAllocs()
			ops := 0
			for b.Loop() {
				insertIDs(b, db, tbl)
				watch := consumeCreated(b, db, it, false, created)
				changesDeleteAll(b, db, tbl)
				<-watch
				consumeCreated(b, db, it, true, false)
				ops++
			}
			reportObjectsPerSec(b, ops*numObjectsToInsert)
		})
	}
}

// BenchmarkDB_Changes_OnePerTxn_Created: as BenchmarkDB_Changes_OnePerTxn
// (one object replaced per transaction, then Next), where the feed's cost
// per Next rather than per change shows. The replaced object is not
// Created.
func BenchmarkDB_Changes_OnePerTxn_Created(b *testing.B) {
	for _, created := range []bool{false, true} {
		b.Run(fmt.Sprintf("created=%v", created), func(b *testing.B) {
			db, tbl, it := createdFeed(b, created)
			defer it.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				txn := db.WriteTxn(tbl)
				if _, _, err := tbl.Insert(txn, &testObject{ID: 1, Value: i}); err != nil {
					b.Fatalf("Insert: %s", err)
				}
				rtxn, err := txn.Commit()
				if err != nil {
					b.Fatalf("Commit: %s", err)
				}
				changes, _ := it.Next(rtxn)
				n := 0
				for c := range changes {
					// The first op's insert is the feed's first sight of
					// the object: Created, if the feed says so.
					if c.Object.Value != i || c.Created != (created && i == 0) {
						b.Fatalf("got %+v, want value %d, created %v", c, i, created && i == 0)
					}
					n++
				}
				if n != 1 {
					b.Fatalf("observed %d changes, want 1", n)
				}
				i++
			}
		})
	}
}

// createdFeed is changesFeed with the feed opened WithCreated if created.
func createdFeed(b *testing.B, created bool) (*DB, RWTable[*testObject], ChangeIterator[*testObject]) {
	db := New()
	tbl := newTestTable(b, db, "test")
	var opts []FeedOption
	if created {
		opts = append(opts, WithCreated())
	}
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn, opts...)
	if err != nil {
		b.Fatalf("Changes: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
	return db, tbl, it
}

// consumeCreated is changesConsume that also checks each change's Created
// flag against created.
func consumeCreated(b *testing.B, db *DB, it ChangeIterator[*testObject], deletes, created bool) <-chan struct{} {
	changes, watch := it.Next(db.ReadTxn())
	n := 0
	for c := range changes {
		if c.Deleted != deletes || c.Created != created {
			b.Fatalf("got %+v, want deleted %v, created %v", c, deletes, created)
		}
		n++
	}
	if n != numObjectsToInsert {
		b.Fatalf("observed %d changes, want %d", n, numObjectsToInsert)
	}
	return watch
}
