package strata

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRevisionIndex: after random writes of every kind (commits and
// aborts), LowerBound on the revision index yields the objects written at
// a revision or later, in revision order, as the table holds them; Get by
// revision finds each object.
func TestRevisionIndex(t *testing.T) {
	db := New()
	tbl, err := NewTable(db, "t", idIndex, RevisionIndex[*testObject](), tagsIndex)
	must(t, err)
	if got := tbl.Indexes(); !slices.Equal(got, []string{"id", "tags", RevisionIndexName}) {
		t.Fatalf("Indexes() = %v", got)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for step := range 400 {
		txn := db.WriteTxn(tbl)
		for range 1 + r.IntN(20) {
			id := uint64(r.IntN(50))
			switch k := r.IntN(20); {
			case k < 12:
				mustInsert(t, tbl, txn, &testObject{ID: id, Value: step})
			case k < 17:
				_, _, err = tbl.Delete(txn, &testObject{ID: id})
			case k < 18:
				_, err = tbl.DeletePrefix(txn, idIndex.QueryKey(idIndex.FromKey(id)[:7]))
			case k < 19:
				err = tbl.DeleteAll(txn)
			default:
				if err = tbl.DeleteAll(txn); err == nil {
					err = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
						for i := range uint64(5) {
							if !yield(&testObject{ID: i, Value: -1}, Revision(1+r.IntN(3))+3*i) {
								return
							}
						}
					}, 0)
				}
			}
			must(t, err)
		}
		if r.IntN(4) == 0 {
			txn.Abort()
		} else {
			_, err = txn.Commit()
			must(t, err)
		}
		rtxn := db.ReadTxn()
		type ent struct {
			id  uint64
			rev Revision
		}
		var want []ent
		for o, rev := range tbl.All(rtxn) {
			want = append(want, ent{o.ID, rev})
		}
		slices.SortFunc(want, func(a, b ent) int { return cmp.Compare(a.rev, b.rev) })
		from := Revision(r.IntN(int(tbl.Revision(rtxn)) + 2))
		i, _ := slices.BinarySearchFunc(want, from, func(e ent, rev Revision) int { return cmp.Compare(e.rev, rev) })
		var got []ent
		for o, rev := range tbl.LowerBound(rtxn, ByRevision[*testObject](from)) {
			got = append(got, ent{o.ID, rev})
		}
		if !slices.Equal(got, want[i:]) {
			t.Fatalf("step %d: LowerBound(ByRevision(%d)) = %v, want %v", step, from, got, want[i:])
		}
		for _, e := range want {
			if o, rev, found := tbl.Get(rtxn, ByRevision[*testObject](e.rev)); !found || o.ID != e.id || rev != e.rev {
				t.Fatalf("step %d: Get(ByRevision(%d)) = %v, %d, %v", step, e.rev, o, rev, found)
			}
		}
	}
}

// TestRevisionIndexRefused: the revision index once, never as primary.
func TestRevisionIndexRefused(t *testing.T) {
	db := New()
	if _, err := NewTable(db, "a", idIndex, RevisionIndex[*testObject](), RevisionIndex[*testObject]()); err == nil {
		t.Error("a table with two revision indexes")
	}
	if _, err := NewTable(db, "b", RevisionIndex[*testObject]()); err == nil {
		t.Error("a table with the revision index as its primary index")
	}
	tbl, err := NewTable(db, "c", idIndex, RevisionIndex[*testObject]())
	must(t, err)
	if k, err := tbl.(*table[*testObject]).index(RevisionIndexName).fromString("42"); err != nil || string(k) != string(ByRevision[*testObject](42).Key()) {
		t.Errorf("revision index FromString(42) = %x, %v", k, err)
	}
}
