package strata

import (
	"iter"
	"slices"
	"testing"
)

// pairs yields (i, 10*i) for i in 1..n and counts what it was asked for.
func pairs(n int, pulled *int) iter.Seq2[int, Revision] {
	return func(yield func(int, Revision) bool) {
		for i := 1; i <= n; i++ {
			*pulled = i
			if !yield(i, Revision(10*i)) {
				return
			}
		}
	}
}

type pair struct {
	v   any
	rev Revision
}

func collect2[A any](seq iter.Seq2[A, Revision]) []pair {
	var out []pair
	for a, r := range seq {
		out = append(out, pair{a, r})
	}
	return out
}

func TestIteratorHelpers(t *testing.T) {
	var pulled int
	if got := Collect(pairs(3, &pulled)); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Collect = %v", got)
	}
	if got := Collect(pairs(0, &pulled)); got != nil {
		t.Errorf("Collect of nothing = %v, want nil", got)
	}
	double := Map(pairs(3, &pulled), func(i int) string { return string(rune('a' + i)) })
	if got := collect2(double); !slices.Equal(got, []pair{{"b", 10}, {"c", 20}, {"d", 30}}) {
		t.Errorf("Map = %v", got)
	}
	even := Filter(pairs(6, &pulled), func(i int) bool { return i%2 == 0 })
	if got := collect2(even); !slices.Equal(got, []pair{{2, 20}, {4, 40}, {6, 60}}) {
		t.Errorf("Filter = %v", got)
	}
	if got := slices.Collect(ToSeq(pairs(2, &pulled))); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("ToSeq = %v", got)
	}
	if got := slices.Collect(Values(pairs(2, &pulled))); !slices.Equal(got, []Revision{10, 20}) {
		t.Errorf("Values = %v", got)
	}
	// Each helper stops its source when its consumer stops.
	for name, run := range map[string]func(){
		"Map": func() {
			for range Map(pairs(9, &pulled), func(i int) int { return i }) {
				break
			}
		},
		"Filter": func() {
			for i := range Filter(pairs(9, &pulled), func(i int) bool { return i > 1 }) {
				if i == 3 {
					break
				}
			}
		},
		"ToSeq": func() {
			for range ToSeq(pairs(9, &pulled)) {
				break
			}
		},
		"Values": func() {
			for range Values(pairs(9, &pulled)) {
				break
			}
		},
	} {
		pulled = 0
		run()
		if want := map[string]int{"Filter": 3}[name]; pulled != max(want, 1) {
			t.Errorf("%s pulled %d objects after its consumer stopped, want %d", name, pulled, max(want, 1))
		}
	}
}

// TestIteratorHelpersOnTable runs the helpers over a real query: they see
// its snapshot, however often they run.
func TestIteratorHelpersOnTable(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "iter", valueIndex)
	wtxn := db.WriteTxn(tbl)
	for i := range 5 {
		if _, _, err := tbl.Insert(wtxn, &testObject{ID: uint64(i), Value: i % 2}); err != nil {
			t.Fatal(err)
		}
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	ids := Map(Filter(tbl.All(rtxn), func(o *testObject) bool { return o.Value == 1 }), func(o *testObject) uint64 { return o.ID })
	wtxn = db.WriteTxn(tbl)
	if err := tbl.DeleteAll(wtxn); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := slices.Collect(ToSeq(ids)); !slices.Equal(got, []uint64{1, 3}) {
			t.Fatalf("odd objects' IDs = %v, want [1 3]", got)
		}
	}
	if got := slices.Collect(Values(tbl.List(rtxn, valueIndex.Query(0)))); len(got) != 3 || !slices.IsSorted(got) {
		t.Errorf("revisions of List(0) = %v", got)
	}
	if got := Collect(tbl.All(db.ReadTxn())); got != nil {
		t.Errorf("Collect of an emptied table = %v", got)
	}
}
