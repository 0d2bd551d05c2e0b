package strata

import "testing"

// instantJournal is a Journal whose records queue (QueuedBatch) and are
// durable as soon as they are enqueued: the commit queue's own cost, with
// no fsync to wait for.
type instantJournal struct{}

type instantRecord struct{ memBatch }

func (instantJournal) Begin() JournalBatch {
	return &instantRecord{memBatch{upserts: map[string]int{}}}
}

func (r *instantRecord) Commit() error  { return nil }
func (r *instantRecord) Queues() bool   { return true }
func (r *instantRecord) Enqueue() error { return nil }
func (r *instantRecord) Wait() error    { return nil }

type instantTableJournal struct{}

func (instantTableJournal) batch(b JournalBatch) JournalBatch { return &b.(*instantRecord).memBatch }

func (tj instantTableJournal) Upsert(b JournalBatch, pk []byte, obj *testObject, rev Revision) error {
	return memTableJournal{}.Upsert(tj.batch(b), pk, obj, rev)
}

func (tj instantTableJournal) Delete(b JournalBatch, pk []byte) error {
	return memTableJournal{}.Delete(tj.batch(b), pk)
}

func (tj instantTableJournal) DeleteAll(b JournalBatch) error {
	return memTableJournal{}.DeleteAll(tj.batch(b))
}

func (tj instantTableJournal) SetRevision(b JournalBatch, rev Revision) error {
	return memTableJournal{}.SetRevision(tj.batch(b), rev)
}

// BenchmarkDB_WriteTxn_Queued_1: one insert per transaction into a table
// whose journal queues its records (early lock release, commitqueue.go)
// and makes them durable at once: enqueue, release, wait, publish.
func BenchmarkDB_WriteTxn_Queued_1(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	txn := db.WriteTxn(tbl)
	must(b, SetJournal(txn, tbl, instantJournal{}, instantTableJournal{}))
	if _, err := txn.Commit(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &testObject{ID: 123, Value: n}); err != nil {
			b.Fatalf("Insert: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	if o, _, _ := tbl.Get(db.ReadTxn(), idIndex.Query(123)); o.Value != n-1 {
		b.Fatalf("Value = %d, want %d", o.Value, n-1)
	}
}
