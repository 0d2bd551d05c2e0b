package strata

import "testing"

// statedb's names of the metrics are metrics' types.
func TestStatedbMetricsNames(t *testing.T) {
	var m *ExpVarMetrics = NewExpVarMetrics(false)
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	var dbm Metrics = m
	db := New(WithMetrics(dbm))
	tbl := newTestTable(t, db, "t")
	wtxn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(wtxn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Values("t"); !ok || v.Objects != 1 {
		t.Errorf("figures of t: %+v, %v; want 1 object", v, ok)
	}
}
