package persist

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
)

// loadTestItems is more objects than several of the load's scan batches
// hold, and not a multiple of one.
var loadTestItems = 5*loadBatchSize + 7

// storeManyItems writes loadTestItems items in a few transactions to a new
// store in fs, closes it, and returns the items by ID with their revisions.
func storeManyItems(t *testing.T, fs vfs.FS, codec Codec[*item], name func(i int) string) (map[uint64]item, map[uint64]strata.Revision) {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := s.Register(Table(tbl, codec)); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < loadTestItems; start += 300 {
		txn := db.WriteTxn(tbl)
		for i := start; i < min(start+300, loadTestItems); i++ {
			if _, _, err := tbl.Insert(txn, &item{ID: uint64(i), Name: name(i), Value: int64(i * 7)}); err != nil {
				t.Fatal(err)
			}
		}
		mustCommit(t, txn)
	}
	want := itemValues(db, tbl)
	revs := map[uint64]strata.Revision{}
	for o, rev := range tbl.All(db.ReadTxn()) {
		revs[o.ID] = rev
	}
	closeStore(t, s)
	return want, revs
}

// TestLoadPipeline: a table of several scan batches loads whole, each
// object with its revision; refused for changed keys (the scan's goroutine
// ends: goleak, in TestMain); with Rekey, every object of every batch under
// its new key, its value kept.
func TestLoadPipeline(t *testing.T) {
	fs := vfs.NewMem()
	want, revs := storeManyItems(t, fs, Binary[item](), func(i int) string { return fmt.Sprintf("n%d", i%13) })

	s, db, tbl, err := registerItems(t, fs, itemByID)
	if err != nil {
		t.Fatal(err)
	}
	if got := itemValues(db, tbl); !maps.Equal(got, want) {
		t.Fatalf("loaded %d objects, want %d, or other values", len(got), len(want))
	}
	for o, rev := range tbl.All(db.ReadTxn()) {
		if rev != revs[o.ID] {
			t.Fatalf("object %d: revision %d, stored with %d", o.ID, rev, revs[o.ID])
		}
	}
	checkNameIndex(t, db.ReadTxn(), tbl)
	closeStore(t, s)

	s, db, tbl, err = registerItems(t, fs, itemByShiftedID)
	if !errors.Is(err, ErrKeyChanged) || tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatalf("Register with a changed primary index: %v, %d objects", err, tbl.NumObjects(db.ReadTxn()))
	}
	closeStore(t, s)

	s, db, tbl, err = registerItems(t, fs, itemByShiftedID, Rekey())
	if err != nil {
		t.Fatal(err)
	}
	txn := db.ReadTxn()
	for id, w := range want {
		if o, _, ok := tbl.Get(txn, itemByShiftedID.Query(id)); !ok || *o != w {
			t.Fatalf("Get %d by the new key after Rekey: %v %v, want %v", id, o, ok, w)
		}
	}
	closeStore(t, s)
	s, db, tbl, err = registerItems(t, fs, itemByShiftedID)
	if err != nil {
		t.Fatal(err)
	}
	if got := itemValues(db, tbl); !maps.Equal(got, want) {
		t.Fatalf("after Rekey, loaded %d objects, want %d, or other values", len(got), len(want))
	}
	closeStore(t, s)
}

// panickyDecode is the binary codec of items, except that it panics when it
// decodes an item named "panic": a codec with a bug.
var panickyDecode = Funcs[*item]{
	V:   1,
	Enc: func(dst []byte, o *item) ([]byte, error) { return o.AppendBinary(dst) },
	Dec: func(data []byte, _ uint32) (*item, error) {
		o := new(item)
		err := o.UnmarshalBinary(data)
		if o.Name == "panic" {
			panic("decode bug")
		}
		return o, err
	},
}

// TestLoadCodecPanic: a codec that panics decoding an object in the middle
// of a table of several scan batches panics in Register's caller, as it
// would without the scan's goroutine, which ends (goleak, in TestMain); the
// table is left empty.
func TestLoadCodecPanic(t *testing.T) {
	fs := vfs.NewMem()
	storeManyItems(t, fs, Codec[*item](panickyDecode), func(i int) string {
		if i == 3*loadBatchSize+5 {
			return "panic"
		}
		return "x"
	})
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	func() {
		defer func() {
			if r := recover(); r != "decode bug" {
				t.Fatalf("Register recovered %v, want the codec's panic", r)
			}
		}()
		err := s.Register(Table(tbl, Codec[*item](panickyDecode)))
		t.Fatalf("Register returned (error %v), want the codec's panic", err)
	}()
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("the panicked load left %d objects", n)
	}
}
