package strata

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/strata-db/strata/index"
)

// TestRestoreStored: RestoreStored compares each object's primary key with
// the key it was stored under and calls keyChanged for those that differ,
// with both keys; its error fails the restore, which leaves the table as
// it was, and nil restores the object under its key computed now. Without
// keyChanged a changed key is ErrRestoreInput.
func TestRestoreStored(t *testing.T) {
	// Objects 0..4, stored under their keys, except object 3, stored
	// under the key of 103.
	stored := func(yield func(StoredObject[*testObject], Revision) bool) {
		for i := range uint64(5) {
			key := index.Uint64(i)
			if i == 3 {
				key = index.Uint64(103)
			}
			if !yield(StoredObject[*testObject]{Obj: &testObject{ID: i, Name: string(rune('a' + i))}, Key: key}, 10+i) {
				return
			}
		}
	}
	type change struct{ stored, now uint64 }
	errRefused := errors.New("refused")
	for _, c := range []struct {
		name    string
		refuse  bool
		nilFunc bool
		want    error
	}{
		{"accepted", false, false, nil},
		{"refused", true, false, errRefused},
		{"no keyChanged", false, true, ErrRestoreInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", nameIndex)
			var changes []change
			keyChanged := func(s, now []byte) error {
				changes = append(changes, change{decodeUint64(t, s), decodeUint64(t, now)})
				if c.refuse {
					return errRefused
				}
				return nil
			}
			if c.nilFunc {
				keyChanged = nil
			}
			txn := db.WriteTxn(tbl)
			err := RestoreStored(txn, tbl, stored, 0, keyChanged)
			if !errors.Is(err, c.want) {
				t.Fatalf("RestoreStored: err = %v, want %v", err, c.want)
			}
			if !c.nilFunc && !slices.Equal(changes, []change{{103, 3}}) {
				t.Fatalf("keyChanged saw %v, want [{103 3}]", changes)
			}
			rtxn := mustCommit(t, txn)
			if c.want != nil {
				if n := tbl.NumObjects(rtxn); n != 0 {
					t.Fatalf("a failed RestoreStored left %d objects", n)
				}
				return
			}
			checkIndexesAgree(t, tbl, rtxn)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
				t.Fatalf("restored %v", got)
			}
			if o, rev, ok := tbl.Get(rtxn, idIndex.Query(3)); !ok || o.ID != 3 || rev != 13 {
				t.Fatalf("object 3 under its key now: %v %d %v", o, rev, ok)
			}
			if rev := tbl.Revision(rtxn); rev != 14 {
				t.Fatalf("table revision %d, want 14", rev)
			}
		})
	}
}

// decodeUint64 is the uint64 whose index.Uint64 key is key.
func decodeUint64(t *testing.T, key []byte) uint64 {
	t.Helper()
	for i := range uint64(200) {
		if bytes.Equal(index.Uint64(i), key) {
			return i
		}
	}
	t.Fatalf("key %x is no uint64 below 200", key)
	return 0
}
