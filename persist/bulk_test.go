package persist

import (
	"fmt"
	"maps"
	"testing"

	"github.com/strata-db/strata"
)

// TestBulkWrites: what DeleteMatches, DeletePrefix (on a secondary index:
// one cut of its tree), DeleteEach over an Or and ModifyEach write is
// journaled like any write: the store reloads the table as committed,
// revisions included, with the name index agreeing.
func TestBulkWrites(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	txn := db.WriteTxn(tbl)
	for i := range uint64(200) {
		if _, _, err := tbl.Insert(txn, &item{ID: i, Name: fmt.Sprintf("g%d-%03d", i%4, i/4)}); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, txn)

	txn = db.WriteTxn(tbl)
	steps := []struct {
		name string
		want int
		run  func() (int, error)
	}{
		{"DeleteMatches", 1, func() (int, error) { return tbl.DeleteMatches(txn, itemByName.Query("g1-001")) }},
		{"DeletePrefix", 50, func() (int, error) { return tbl.DeletePrefix(txn, itemByName.Query("g2-")) }},
		{"DeleteEach(Or)", 2, func() (int, error) {
			seq, err := strata.Or(txn, tbl, itemByID.Query(3), itemByName.Query("g0-010"))
			if err != nil {
				return 0, err
			}
			return strata.DeleteEach(txn, tbl, seq)
		}},
		{"ModifyEach", 49, func() (int, error) {
			return strata.ModifyEach(txn, tbl, tbl.Prefix(txn, itemByName.Query("g0-")), func(o *item) (*item, bool) {
				c := *o
				c.Name, c.Value = "moved-"+o.Name, 7
				return &c, true
			})
		}},
	}
	for _, st := range steps {
		if n, err := st.run(); err != nil || n != st.want {
			t.Fatalf("%s = %d, %v; want %d", st.name, n, err, st.want)
		}
	}
	want := mustCommit(t, txn)
	wantRows, wantRev := itemRows(want, tbl), tbl.Revision(want)
	if len(wantRows) != 200-1-50-2 {
		t.Fatalf("%d objects left, want %d", len(wantRows), 200-1-50-2)
	}
	closeStore(t, s)

	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	tbl = itemTable(t, s, db, "items", nil)
	got := db.ReadTxn()
	if rows := itemRows(got, tbl); !maps.Equal(rows, wantRows) {
		t.Fatalf("reloaded %d objects, want %d", len(rows), len(wantRows))
	}
	if rev := tbl.Revision(got); rev != wantRev {
		t.Fatalf("reloaded revision %d, want %d", rev, wantRev)
	}
	checkNameIndex(t, got, tbl)
}
