package strata

import (
	"errors"
	"slices"
	"testing"
)

// panickingWriter is a table's writer that panics in one of its steps (a
// bug to come), and else does what the table's writer does.
type panickingWriter struct {
	tableCommitter
	in string // "commit", "notify" or "abort"
}

func (p panickingWriter) commit() *tableStateHeader {
	if p.in == "commit" {
		panic("writer's commit failed")
	}
	return p.tableCommitter.commit()
}

func (p panickingWriter) notify() {
	if p.in == "notify" {
		panic("writer's notify failed")
	}
	p.tableCommitter.notify()
}

func (p panickingWriter) abort() {
	if p.in == "abort" {
		panic("writer's abort failed")
	}
	p.tableCommitter.abort()
}

// TestTxnPanicUnlocks: a panic in a table's writer, while a transaction
// commits or aborts, unlocks the tables all the same and closes the
// handle, so that later writers go on and a later Abort of the handle (or
// its cleanup) does not unlock the tables a second time. A panic before
// the commit published leaves the table as it was; one after (in notify)
// leaves the commit published.
func TestTxnPanicUnlocks(t *testing.T) {
	for _, c := range []struct {
		in, end   string
		published bool
	}{
		{"commit", "Commit", false},
		{"notify", "Commit", true},
		{"abort", "Abort", false},
		{"abort", "Commit with a failing journal", false},
	} {
		t.Run(c.in+"/"+c.end, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t")
			other := newTestTable(t, db, "other")
			j := &memJournal{objects: map[string]int{}}
			txn := db.WriteTxn(tbl, other)
			mustInsert(t, tbl, txn, &testObject{ID: 1})
			mustInsert(t, other, txn, &testObject{ID: 1})
			if c.end == "Commit with a failing journal" {
				must(t, SetJournal(txn, tbl, j, memTableJournal{}))
			}
			_, err := txn.Commit()
			must(t, err)
			j.fail = errors.New("disk full")

			txn = db.WriteTxn(tbl, other)
			mustInsert(t, tbl, txn, &testObject{ID: 2})
			mustInsert(t, other, txn, &testObject{ID: 2})
			w := txn.(*txnRef).w
			lt := w.find(&tbl.(*table[*testObject]).meta)
			lt.txn = panickingWriter{lt.txn, c.in}
			p := catch(func() {
				if c.end == "Abort" {
					txn.Abort()
				} else if _, err := txn.Commit(); err != nil {
					t.Errorf("Commit returned %v, want the writer's panic", err)
				}
			})
			if p == nil {
				t.Fatal("the writer did not panic")
			}
			for _, m := range []TableMeta{tbl, other} {
				if !lockFree(db, m) {
					t.Fatalf("table %s stayed locked after the panic", m.Name())
				}
			}
			if p := catch(txn.Abort); p != nil {
				t.Fatalf("Abort after the panic panicked: %v", p)
			}
			if _, err := txn.Commit(); !errors.Is(err, ErrTransactionClosed) {
				t.Fatalf("Commit after the panic: err = %v, want ErrTransactionClosed", err)
			}
			want := []uint64{1}
			if c.published {
				want = []uint64{1, 2}
			}
			rtxn := db.ReadTxn()
			for _, tb := range []RWTable[*testObject]{tbl, other} {
				if got := ids(tb.All(rtxn)); !slices.Equal(got, want) {
					t.Errorf("table %s holds %v, want %v", tb.Name(), got, want)
				}
			}
			// The tables take writes again.
			j.fail = nil
			txn = db.WriteTxn(tbl, other)
			mustInsert(t, tbl, txn, &testObject{ID: 3})
			_, err = txn.Commit()
			must(t, err)
		})
	}
}
