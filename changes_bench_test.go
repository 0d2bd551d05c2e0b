package strata

import (
	"slices"
	"testing"
	"time"
)

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
	db, tbl, it := changesFeed(b)
	defer it.Close()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		insertIDs(b, db, tbl)
		watch := changesConsume(b, db, it, false)
		changesDeleteAll(b, db, tbl)
		<-watch
		changesConsume(b, db, it, true)
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
	t := tbl.(*table[*testObject])
	if n := mdlGraveyard(t, t.stateIn(db.ReadTxn().committed())); n != 0 {
		b.Fatalf("graveyard holds %d deletes every feed has seen", n)
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}

// BenchmarkDB_Changes_Batched: the work of BenchmarkDB_Changes with one
// Next after both transactions, which delivers the 1000 deletes and skips
// the 1000 inserts they supersede: a feed read less often than the table
// changes.
func BenchmarkDB_Changes_Batched(b *testing.B) {
	db, tbl, it := changesFeed(b)
	defer it.Close()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		insertIDs(b, db, tbl)
		changesDeleteAll(b, db, tbl)
		changesConsume(b, db, it, true)
		ops++
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}

// BenchmarkDB_Changes_OnePerTxn: a controller's loop over small
// transactions: one object replaced per transaction, then Next and the one
// change consumed. Next's cost per call, rather than per change, shows
// here; BenchmarkDB_WriteTxn_1 is the write alone.
func BenchmarkDB_Changes_OnePerTxn(b *testing.B) {
	db, tbl, it := changesFeed(b)
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
			if c.Object.Value != i {
				b.Fatalf("got %+v, want value %d", c, i)
			}
			n++
		}
		if n != 1 {
			b.Fatalf("observed %d changes, want 1", n)
		}
		i++
	}
}

// BenchmarkDB_Changes_Baseline: the writes of BenchmarkDB_Changes with no
// feed.
func BenchmarkDB_Changes_Baseline(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		insertIDs(b, db, tbl)
		changesDeleteAll(b, db, tbl)
		ops++
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		b.Fatalf("NumObjects = %d, want 0", n)
	}
	reportObjectsPerSec(b, ops*numObjectsToInsert)
}

// BenchmarkDB_Changes_Paired measures the cost of one feed as
// BenchmarkDB_Changes against _Baseline does, but in one process and op by
// op: each op runs the work of both, on two databases, in alternating
// order, and times each half. The machine's drift then hits both halves
// alike, which makes it the steadier figure for comparing two builds:
//
//	go test -run '^$' -bench 'DB_Changes_Paired' -count 6 .
//
// It reports overhead-%, the ratio of the halves' total times less one,
// and median-overhead-%, that of their medians, which leaves out the ops
// that a collection slowed. The two halves share the heap and its
// collector, so what the feed's extra live memory costs the collector is
// split between them: the goal's figure is BenchmarkDB_Changes against
// _Baseline.
func BenchmarkDB_Changes_Paired(b *testing.B) {
	db, tbl, it := changesFeed(b)
	defer it.Close()
	db0 := New()
	tbl0 := newTestTable(b, db0, "test")
	observed := func() {
		insertIDs(b, db, tbl)
		watch := changesConsume(b, db, it, false)
		changesDeleteAll(b, db, tbl)
		<-watch
		changesConsume(b, db, it, true)
	}
	unobserved := func() {
		insertIDs(b, db0, tbl0)
		changesDeleteAll(b, db0, tbl0)
	}
	timed := func(op func()) time.Duration {
		start := time.Now()
		op()
		return time.Since(start)
	}
	var withFeed, without []time.Duration
	for i := 0; b.Loop(); i++ {
		var f, u time.Duration
		if i%2 == 0 {
			f = timed(observed)
			u = timed(unobserved)
		} else {
			u = timed(unobserved)
			f = timed(observed)
		}
		withFeed, without = append(withFeed, f), append(without, u)
	}
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	b.ReportMetric(100*(float64(sum(withFeed))/float64(sum(without))-1), "overhead-%")
	slices.Sort(withFeed)
	slices.Sort(without)
	f, u := withFeed[len(withFeed)/2], without[len(without)/2]
	b.ReportMetric(100*(float64(f)/float64(u)-1), "median-overhead-%")
}

// changesFeed returns a new database's table "test" and a change feed of
// it, registered in a transaction of its own.
func changesFeed(b testing.TB) (*DB, RWTable[*testObject], ChangeIterator[*testObject]) {
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
	return db, tbl, it
}

// insertIDs inserts numObjectsToInsert new objects, IDs 0..999 in order, in
// a transaction.
func insertIDs(b *testing.B, db *DB, tbl RWTable[*testObject]) {
	txn := db.WriteTxn(tbl)
	for i := range uint64(numObjectsToInsert) {
		if _, _, err := tbl.Insert(txn, &testObject{ID: i}); err != nil {
			b.Fatalf("Insert: %s", err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
}

// changesDeleteAll deletes every object in a transaction.
func changesDeleteAll(b *testing.B, db *DB, tbl RWTable[*testObject]) {
	txn := db.WriteTxn(tbl)
	if err := tbl.DeleteAll(txn); err != nil {
		b.Fatalf("DeleteAll: %s", err)
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
}

// changesConsume consumes one Next on the latest snapshot, which must be
// numObjectsToInsert changes, all deletes or all upserts, and returns
// Next's channel.
func changesConsume(b *testing.B, db *DB, it ChangeIterator[*testObject], deletes bool) <-chan struct{} {
	changes, watch := it.Next(db.ReadTxn())
	n := 0
	for c := range changes {
		if c.Deleted != deletes {
			b.Fatalf("got %+v, want deletes only: %v", c, deletes)
		}
		n++
	}
	if n != numObjectsToInsert {
		b.Fatalf("observed %d changes, want %d", n, numObjectsToInsert)
	}
	return watch
}

// BenchmarkDB_Changes_Delivery: what a feed's delivery of a batch costs
// per change, apart from the writes, whose time swamps it in the
// benchmarks above: the range over the sequence of one Next, timed alone
// and reported as delivery-ns/change. Each op writes numObjectsToInsert
// changes in a transaction, then the feed delivers them: upserts (a log
// batch), the deletes of a DeleteAll (a truncate entry of the log), or
// upserts to a feed WithCreated (a list batch).
//
//	go test -run '^$' -bench 'DB_Changes_Delivery' -count 6 .
func BenchmarkDB_Changes_Delivery(b *testing.B) {
	for _, kind := range []string{"upserts", "deletes", "created"} {
		b.Run(kind, func(b *testing.B) {
			db, tbl, it := createdFeed(b, kind == "created")
			defer it.Close()
			var took time.Duration
			changes := 0
			for b.Loop() {
				insertIDs(b, db, tbl)
				if kind == "deletes" {
					changesConsume(b, db, it, false)
					changesDeleteAll(b, db, tbl)
				}
				seq, _ := it.Next(db.ReadTxn())
				start := time.Now()
				n := 0
				for range seq {
					n++
				}
				took += time.Since(start)
				if n != numObjectsToInsert {
					b.Fatalf("observed %d changes, want %d", n, numObjectsToInsert)
				}
				changes += n
				if kind != "deletes" {
					changesDeleteAll(b, db, tbl)
					changesConsume(b, db, it, true)
				}
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(changes), "delivery-ns/change")
		})
	}
}
