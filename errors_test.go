package strata

// One test per typed error of errors.go: each checks errors.Is and that the
// failed call changed nothing. Also: WriteTxnContext giving up, a table
// passed twice to WriteTxn, forgotten write transactions, and long keys.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// errSnapshot is what a table holds as seen through a transaction.
type errSnapshot struct {
	n    int
	rev  Revision
	objs []mdlEnt[*testObject]
}

func errSnap(tbl Table[*testObject], txn ReadTxn) errSnapshot {
	return errSnapshot{tbl.NumObjects(txn), tbl.Revision(txn), mdlSeq(tbl.All(txn))}
}

// errUnchanged fails if tbl, read through txn, differs from before.
func errUnchanged(t *testing.T, what string, tbl Table[*testObject], txn ReadTxn, before errSnapshot) {
	t.Helper()
	after := errSnap(tbl, txn)
	if after.n != before.n || after.rev != before.rev || !slices.Equal(after.objs, before.objs) {
		t.Fatalf("%s changed the table: %d objects at revision %d, was %d at %d\n now %v\n was %v",
			what, after.n, after.rev, before.n, before.rev, after.objs, before.objs)
	}
}

// errFilled returns a table with objects 1..n, committed.
func errFilled(t *testing.T, db *DB, name string, n int, secondary ...Indexer[*testObject]) RWTable[*testObject] {
	t.Helper()
	tbl := newTestTable(t, db, name, secondary...)
	txn := db.WriteTxn(tbl)
	for i := 1; i <= n; i++ {
		o := &testObject{ID: uint64(i), Name: fmt.Sprintf("n%d", i), Value: i, Tags: part.NewSet("t", fmt.Sprintf("t%d", i%3))}
		if _, _, err := tbl.Insert(txn, o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func errTableNames(db *DB) []string {
	var names []string
	for _, m := range db.Tables() {
		names = append(names, m.Name())
	}
	return names
}

// errRegister checks that NewTable fails with want and registers nothing.
func errRegister(t *testing.T, db *DB, want error, name string, primary Indexer[*testObject], secondary ...Indexer[*testObject]) {
	t.Helper()
	before := errTableNames(db)
	root := db.ReadTxn()
	tbl, err := NewTable(db, name, primary, secondary...)
	if !errors.Is(err, want) {
		t.Fatalf("NewTable(%q): err = %v, want %v", name, err, want)
	}
	if tbl != nil {
		t.Fatalf("NewTable(%q) failed but returned a table", name)
	}
	if after := errTableNames(db); !slices.Equal(after, before) {
		t.Fatalf("NewTable(%q) failed but the tables changed: %v -> %v", name, before, after)
	}
	if db.ReadTxn() != root {
		t.Fatalf("NewTable(%q) failed but published a new root", name)
	}
}

func TestErrInvalidTableName(t *testing.T) {
	db := New()
	existing := errFilled(t, db, "existing", 3)
	before := errSnap(existing, db.ReadTxn())
	bad := []string{"", "1abc", "_a", "-a", ".a", "a b", "a/b", "a:b", "a\x00", "ä", "tbl\n",
		strings.Repeat("a", 65), " a"}
	for _, name := range bad {
		errRegister(t, db, ErrInvalidTableName, name, idIndex)
	}
	errUnchanged(t, "invalid table names", existing, db.ReadTxn(), before)
	good := []string{"a", "Z", "a1", "a_b-c.d", "A.B_C-1", strings.Repeat("x", 64)}
	for _, name := range good {
		tbl, err := NewTable(db, name, idIndex)
		if err != nil {
			t.Fatalf("NewTable(%q): %v", name, err)
		}
		if tbl.Name() != name {
			t.Fatalf("Name() = %q, want %q", tbl.Name(), name)
		}
	}
	if got, want := errTableNames(db), append([]string{"existing"}, good...); !slices.Equal(got, want) {
		t.Fatalf("Tables() = %q, want %q", got, want)
	}
}

func TestErrDuplicateTable(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "dup", 3)
	before := errSnap(tbl, db.ReadTxn())
	errRegister(t, db, ErrDuplicateTable, "dup", idIndex)
	errRegister(t, db, ErrDuplicateTable, "dup", idIndex, nameIndex)
	// Another object type with the same name.
	if _, err := NewTable(db, "dup", mdlKVIndex); !errors.Is(err, ErrDuplicateTable) {
		t.Fatalf("NewTable(dup) of another type: err = %v", err)
	}
	errUnchanged(t, "duplicate tables", tbl, db.ReadTxn(), before)
	// The first table still works.
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 4 {
		t.Fatalf("NumObjects = %d, want 4", n)
	}
	// The same name in another database is fine.
	if _, err := NewTable(New(), "dup", idIndex); err != nil {
		t.Fatal(err)
	}
}

func errIndexNamed(name string) Index[*testObject, int] {
	ix := valueIndex
	ix.Name = name
	return ix
}

func TestErrEmptyIndexName(t *testing.T) {
	db := New()
	primary := idIndex
	primary.Name = ""
	errRegister(t, db, ErrEmptyIndexName, "t", primary)
	errRegister(t, db, ErrEmptyIndexName, "t", idIndex, errIndexNamed(""))
	errRegister(t, db, ErrEmptyIndexName, "t", idIndex, nameIndex, errIndexNamed(""))
	// The name is free after the failures.
	if _, err := NewTable(db, "t", idIndex); err != nil {
		t.Fatal(err)
	}
}

func TestErrInvalidIndexName(t *testing.T) {
	db := New()
	for _, name := range []string{"1x", "_x", "a b", "a/b", "ä", strings.Repeat("i", 65)} {
		primary := idIndex
		primary.Name = name
		errRegister(t, db, ErrInvalidIndexName, "t", primary)
		errRegister(t, db, ErrInvalidIndexName, "t", idIndex, errIndexNamed(name))
	}
	if _, err := NewTable(db, "t", idIndex, errIndexNamed(strings.Repeat("i", 64)), errIndexNamed("a.b-c_d")); err != nil {
		t.Fatal(err)
	}
}

func TestErrDuplicateIndex(t *testing.T) {
	db := New()
	errRegister(t, db, ErrDuplicateIndex, "t", idIndex, errIndexNamed("id"))
	errRegister(t, db, ErrDuplicateIndex, "t", idIndex, nameIndex, nameIndex)
	errRegister(t, db, ErrDuplicateIndex, "t", idIndex, errIndexNamed("v"), nameIndex, errIndexNamed("v"))
	tbl, err := NewTable(db, "t", idIndex, nameIndex, valueIndex)
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Indexes(); !slices.Equal(got, []string{"id", "name", "value"}) {
		t.Fatalf("Indexes() = %v", got)
	}
}

func TestErrPrimaryIndexNotUnique(t *testing.T) {
	db := New()
	errRegister(t, db, ErrPrimaryIndexNotUnique, "t", valueIndex)
	errRegister(t, db, ErrPrimaryIndexNotUnique, "t", tagsIndex, idIndex)
	// A non-unique secondary index is fine.
	if _, err := NewTable(db, "t", idIndex, valueIndex); err != nil {
		t.Fatal(err)
	}
}

func TestErrTooManyIndexes(t *testing.T) {
	db := New()
	var secondary []Indexer[*testObject]
	for i := range MaxSecondaryIndexes + 1 {
		secondary = append(secondary, errIndexNamed(fmt.Sprintf("v%d", i)))
	}
	errRegister(t, db, ErrTooManyIndexes, "t", idIndex, secondary...)
	// The most that is allowed works, also for the last index.
	tbl, err := NewTable(db, "t", idIndex, secondary[:MaxSecondaryIndexes]...)
	if err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(tbl)
	for i := range uint64(4) {
		if _, _, err := tbl.Insert(txn, &testObject{ID: i, Value: int(i % 2)}); err != nil {
			t.Fatal(err)
		}
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	last := errIndexNamed(fmt.Sprintf("v%d", MaxSecondaryIndexes-1))
	if got := ids(tbl.List(rtxn, last.Query(1))); !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("List on the last index = %v", got)
	}
}

// errWrites runs every write method of tbl in txn (but DeleteAll unless
// deleteAll) and returns their errors by name.
func errWrites(tbl RWTable[*testObject], txn WriteTxn, obj *testObject, rev Revision, deleteAll bool) map[string]error {
	errs := map[string]error{}
	_, _, errs["Insert"] = tbl.Insert(txn, obj)
	_, _, w, err := tbl.InsertWatch(txn, obj)
	errs["InsertWatch"] = err
	if err != nil && w != nil {
		errs["InsertWatch"] = errors.New("InsertWatch failed but returned a channel")
	}
	_, _, errs["Modify"] = tbl.Modify(txn, obj, func(old, new *testObject) *testObject { return new })
	_, _, errs["CompareAndSwap"] = tbl.CompareAndSwap(txn, rev, obj)
	_, _, errs["Delete"] = tbl.Delete(txn, obj)
	_, _, errs["CompareAndDelete"] = tbl.CompareAndDelete(txn, rev, obj)
	if deleteAll {
		errs["DeleteAll"] = tbl.DeleteAll(txn)
	}
	return errs
}

func errAllAre(t *testing.T, what string, errs map[string]error, want error) {
	t.Helper()
	for _, op := range slices.Sorted(maps.Keys(errs)) {
		if !errors.Is(errs[op], want) {
			t.Errorf("%s: %s: err = %v, want %v", what, op, errs[op], want)
		}
	}
}

func TestErrTransactionClosed(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 5, nameIndex)
	other := errFilled(t, db, "other", 2)

	for _, end := range []string{"Commit", "Abort"} {
		txn := db.WriteTxn(tbl, other)
		if _, _, err := tbl.Insert(txn, &testObject{ID: 100, Name: end}); err != nil {
			t.Fatal(err)
		}
		if end == "Commit" {
			if _, err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
		} else {
			txn.Abort()
		}
		before := errSnap(tbl, db.ReadTxn())
		beforeOther := errSnap(other, db.ReadTxn())
		stored, rev, _ := tbl.Get(db.ReadTxn(), idIndex.Query(1))
		errs := errWrites(tbl, txn, &testObject{ID: 1, Name: "x"}, rev, true)
		errs["Insert(stored)"] = func() error { _, _, err := tbl.Insert(txn, stored); return err }()
		errs["Insert(new)"] = func() error { _, _, err := tbl.Insert(txn, &testObject{ID: 200}); return err }()
		errs["other.Insert"] = func() error { _, _, err := other.Insert(txn, &testObject{ID: 200}); return err }()
		_, errs["Commit"] = txn.Commit()
		errAllAre(t, "after "+end, errs, ErrTransactionClosed)
		txn.Abort() // does nothing
		errUnchanged(t, "writes after "+end, tbl, db.ReadTxn(), before)
		errUnchanged(t, "writes after "+end, other, db.ReadTxn(), beforeOther)
		// Reads through the ended transaction: the committed state, or
		// for an aborted one, the state before it.
		errUnchanged(t, "reads through the transaction after "+end, tbl, txn, before)

		// The tables are free again.
		txn2 := db.WriteTxn(tbl, other)
		txn2.Abort()
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 6 {
		t.Fatalf("NumObjects = %d, want 6 (the committed insert only)", n)
	}
}

func TestErrTableNotLockedForWriting(t *testing.T) {
	db := New()
	locked := errFilled(t, db, "locked", 3)
	free := errFilled(t, db, "free", 3, nameIndex)
	before := errSnap(free, db.ReadTxn())
	_, rev, _ := free.Get(db.ReadTxn(), idIndex.Query(2))

	txn := db.WriteTxn(locked)
	errs := errWrites(free, txn, &testObject{ID: 2, Name: "q"}, rev, true)
	errAllAre(t, "table not locked", errs, ErrTableNotLockedForWriting)
	for op, err := range errs {
		if err != nil && !strings.Contains(err.Error(), `"free"`) {
			t.Errorf("%s: error %q does not name the table", op, err)
		}
	}
	errUnchanged(t, "writes to a table not locked", free, txn, before)
	// The transaction goes on for the table it locked, and another one
	// can lock the free table meanwhile.
	if _, _, err := locked.Insert(txn, &testObject{ID: 10}); err != nil {
		t.Fatal(err)
	}
	txn2, err := db.WriteTxnContext(errCtx(t, time.Second), free)
	if err != nil {
		t.Fatalf("locking the free table: %v", err)
	}
	txn2.Abort()
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	errUnchanged(t, "writes to a table not locked", free, db.ReadTxn(), before)
	if n := locked.NumObjects(db.ReadTxn()); n != 4 {
		t.Fatalf("NumObjects(locked) = %d, want 4", n)
	}
}

func errCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// errPKIndex is a primary index that yields no key for objects with Value
// -1 and two keys for those with Value -2.
var errPKIndex = Index[*testObject, uint64]{
	Name: "pk",
	FromObject: func(o *testObject) index.KeySet {
		switch o.Value {
		case -1:
			return index.NewKeySet()
		case -2:
			return index.NewKeySet(index.Uint64(o.ID), index.Uint64(o.ID+1000))
		}
		return index.NewKeySet(index.Uint64(o.ID))
	},
	FromKey: index.Uint64,
	Unique:  true,
}

func TestErrPrimaryKey(t *testing.T) {
	db := New()
	tbl, err := NewTable(db, "t", errPKIndex, nameIndex)
	if err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(tbl)
	for i := range uint64(3) {
		if _, _, err := tbl.Insert(txn, &testObject{ID: i, Name: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	before := errSnap(tbl, db.ReadTxn())
	_, rev, _ := tbl.Get(db.ReadTxn(), errPKIndex.Query(1))

	txn = db.WriteTxn(tbl)
	for _, v := range []int{-1, -2} {
		what := map[int]string{-1: "zero keys", -2: "two keys"}[v]
		// Existing and new IDs.
		for _, id := range []uint64{1, 50} {
			errs := errWrites(tbl, txn, &testObject{ID: id, Name: "new", Value: v}, rev, false)
			errAllAre(t, fmt.Sprintf("%s, id %d", what, id), errs, ErrPrimaryKey)
			errUnchanged(t, what, tbl, txn, before)
		}
		// A merge that returns an object with a bad primary key.
		_, _, err := tbl.Modify(txn, &testObject{ID: 1, Name: "1"}, func(old, new *testObject) *testObject {
			return &testObject{ID: old.ID, Name: old.Name, Value: v}
		})
		if !errors.Is(err, ErrPrimaryKey) {
			t.Errorf("Modify with a merge giving %s: err = %v", what, err)
		}
		errUnchanged(t, what, tbl, txn, before)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	errUnchanged(t, "failed writes", tbl, db.ReadTxn(), before)
}

// errCheckNames checks that the name index of tbl holds exactly the objects
// of the table, each under its name.
func errCheckNames(t *testing.T, tbl Table[*testObject], txn ReadTxn) {
	t.Helper()
	byName := map[string]*testObject{}
	for o := range tbl.All(txn) {
		byName[o.Name] = o
		if got, _, ok := tbl.Get(txn, nameIndex.Query(o.Name)); !ok || got != o {
			t.Fatalf("Get(name %q) = %v %v, want object %d", o.Name, mdlFmtObj(got), ok, o.ID)
		}
		if got := ids(tbl.List(txn, nameIndex.Query(o.Name))); !slices.Equal(got, []uint64{o.ID}) {
			t.Fatalf("List(name %q) = %v, want [%d]", o.Name, got, o.ID)
		}
	}
	var scanned []string
	for o := range tbl.Prefix(txn, nameIndex.Query("")) {
		scanned = append(scanned, o.Name)
		if byName[o.Name] != o {
			t.Fatalf("name index holds %s, which the table does not", mdlFmtObj(o))
		}
	}
	if len(scanned) != len(byName) || !slices.IsSorted(scanned) {
		t.Fatalf("name index scan = %q, table has %d objects", scanned, len(byName))
	}
	var rev []string
	for o := range tbl.ReversePrefix(txn, nameIndex.Query("")) {
		rev = append(rev, o.Name)
	}
	slices.Reverse(rev)
	if !slices.Equal(rev, scanned) {
		t.Fatalf("reverse name index scan = %q, forward %q", rev, scanned)
	}
}

func TestErrUniqueConstraint(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex, tagsIndex)
	txn := db.WriteTxn(tbl)
	for i, name := range []string{"x", "y", "z"} {
		if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(i + 1), Name: name, Tags: part.NewSet(name, "all")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	holder, _, _ := tbl.Get(db.ReadTxn(), nameIndex.Query("x"))
	before := errSnap(tbl, db.ReadTxn())
	_, rev2, _ := tbl.Get(db.ReadTxn(), idIndex.Query(2))

	for _, commit := range []bool{false, true} {
		txn = db.WriteTxn(tbl)
		attempts := map[string]func() error{
			"Insert(new)": func() error {
				_, _, err := tbl.Insert(txn, &testObject{ID: 4, Name: "x"})
				return err
			},
			"Insert(replace)": func() error {
				_, _, err := tbl.Insert(txn, &testObject{ID: 2, Name: "x", Tags: part.NewSet("other")})
				return err
			},
			"InsertWatch(replace)": func() error {
				_, _, _, err := tbl.InsertWatch(txn, &testObject{ID: 2, Name: "x"})
				return err
			},
			"Modify": func() error {
				_, _, err := tbl.Modify(txn, &testObject{ID: 2}, func(old, new *testObject) *testObject {
					return &testObject{ID: old.ID, Name: "x", Tags: old.Tags}
				})
				return err
			},
			"CompareAndSwap": func() error {
				_, _, err := tbl.CompareAndSwap(txn, rev2, &testObject{ID: 2, Name: "x"})
				return err
			},
		}
		for what, f := range attempts {
			if err := f(); !errors.Is(err, ErrUniqueConstraint) {
				t.Fatalf("%s: err = %v, want ErrUniqueConstraint", what, err)
			}
			errUnchanged(t, what, tbl, txn, before)
			errCheckNames(t, tbl, txn)
		}
		if !commit {
			txn.Abort()
			continue
		}
		// Commit the failed transaction (nothing to publish), then delete
		// the holder and check the index in the next transaction.
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		errUnchanged(t, "failed writes", tbl, db.ReadTxn(), before)
		errCheckNames(t, tbl, db.ReadTxn())
	}

	// Deleting the holder frees the name, and leaves no trace of the
	// failed writes in the index.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 5, Name: "x"}); !errors.Is(err, ErrUniqueConstraint) {
		t.Fatalf("Insert in the same txn before the delete: err = %v", err)
	}
	if _, had, err := tbl.Delete(txn, holder); err != nil || !had {
		t.Fatalf("Delete(holder) = %v %v", had, err)
	}
	if _, _, ok := tbl.Get(txn, nameIndex.Query("x")); ok {
		t.Fatalf("name x still found after its holder was deleted")
	}
	errCheckNames(t, tbl, txn)
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	errCheckNames(t, tbl, db.ReadTxn())
	if got := ids(tbl.List(db.ReadTxn(), tagsIndex.Query("all"))); !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("List(tag all) = %v, want [2 3]", got)
	}
	if got := ids(tbl.List(db.ReadTxn(), tagsIndex.Query("other"))); len(got) != 0 {
		t.Fatalf("List(tag other) = %v: a failed write left its tags", got)
	}

	// Now the name can be taken, by a new object and then by a replaced
	// one after the new one gives it up.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 4, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(txn, &testObject{ID: 4, Name: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(txn, &testObject{ID: 2, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	errCheckNames(t, tbl, txn)
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	errCheckNames(t, tbl, db.ReadTxn())
	if got := ids(tbl.Prefix(db.ReadTxn(), nameIndex.Query(""))); !slices.Equal(got, []uint64{4, 2, 3}) {
		t.Fatalf("objects by name = %v, want [4 2 3] (w, x, z)", got)
	}
	// Deleting everyone empties the index.
	txn = db.WriteTxn(tbl)
	for _, id := range []uint64{2, 3, 4} {
		if _, had, err := tbl.Delete(txn, &testObject{ID: id}); err != nil || !had {
			t.Fatalf("Delete(%d) = %v %v", id, had, err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := ids(tbl.LowerBound(db.ReadTxn(), nameIndex.Query(""))); len(got) != 0 {
		t.Fatalf("name index not empty: %v", got)
	}
	if got := ids(tbl.Prefix(db.ReadTxn(), tagsIndex.Query(""))); len(got) != 0 {
		t.Fatalf("tags index not empty: %v", got)
	}
}

func TestErrObjectMutated(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 3, nameIndex)
	before := errSnap(tbl, db.ReadTxn())
	stored, rev, _ := tbl.Get(db.ReadTxn(), idIndex.Query(2))

	txn := db.WriteTxn(tbl)
	errs := map[string]error{}
	_, _, errs["Insert"] = tbl.Insert(txn, stored)
	_, _, _, errs["InsertWatch"] = tbl.InsertWatch(txn, stored)
	_, _, errs["CompareAndSwap"] = tbl.CompareAndSwap(txn, rev, stored)
	_, _, errs["Modify(merge returns old)"] = tbl.Modify(txn, &testObject{ID: 2}, func(old, new *testObject) *testObject { return old })
	_, _, errs["Modify(stored)"] = tbl.Modify(txn, stored, func(old, new *testObject) *testObject { return new })
	errAllAre(t, "stored object", errs, ErrObjectMutated)
	errUnchanged(t, "reinserting the stored object", tbl, txn, before)

	// An object written in this transaction is stored too.
	mine := &testObject{ID: 2, Name: "mine"}
	if _, _, err := tbl.Insert(txn, mine); err != nil {
		t.Fatal(err)
	}
	mid := errSnap(tbl, txn)
	if _, _, err := tbl.Insert(txn, mine); !errors.Is(err, ErrObjectMutated) {
		t.Fatalf("reinserting an object written in the transaction: err = %v", err)
	}
	errUnchanged(t, "reinserting an object written in the transaction", tbl, txn, mid)
	txn.Abort()
	errUnchanged(t, "aborted writes", tbl, db.ReadTxn(), before)

	// A copy is fine.
	txn = db.WriteTxn(tbl)
	c := *stored
	c.Value = 42
	if _, _, err := tbl.Insert(txn, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}

	// Objects that are not pointers cannot be mutated in place: storing
	// an equal value again is an ordinary replace.
	kv, err := NewTable(db, "kv", mdlKVIndex)
	if err != nil {
		t.Fatal(err)
	}
	txn = db.WriteTxn(kv)
	for range 2 {
		if _, _, err := kv.Insert(txn, mdlKV{"a", 1}); err != nil {
			t.Fatal(err)
		}
	}
	if rev := kv.Revision(txn); rev != 2 {
		t.Fatalf("Revision = %d, want 2", rev)
	}
	txn.Abort()
}

func TestErrPrimaryKeyChanged(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 3, nameIndex)
	before := errSnap(tbl, db.ReadTxn())
	txn := db.WriteTxn(tbl)
	calls := 0
	_, _, err := tbl.Modify(txn, &testObject{ID: 2}, func(old, new *testObject) *testObject {
		calls++
		return &testObject{ID: old.ID + 10, Name: "moved"}
	})
	if !errors.Is(err, ErrPrimaryKeyChanged) || calls != 1 {
		t.Fatalf("Modify changing the key: err = %v, merge called %d times", err, calls)
	}
	errUnchanged(t, "Modify changing the key", tbl, txn, before)
	if _, _, ok := tbl.Get(txn, idIndex.Query(12)); ok {
		t.Fatalf("object found under the merged key")
	}
	// Modify of a missing object does not merge: the object goes in as is.
	calls = 0
	if _, had, err := tbl.Modify(txn, &testObject{ID: 20, Name: "new"}, func(old, new *testObject) *testObject {
		calls++
		return &testObject{ID: 99}
	}); err != nil || had || calls != 0 {
		t.Fatalf("Modify(missing) = had %v, err %v, %d merges", had, err, calls)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, rev := tbl.NumObjects(db.ReadTxn()), tbl.Revision(db.ReadTxn()); n != 4 || rev != before.rev+1 {
		t.Fatalf("NumObjects, Revision = %d, %d, want 4, %d", n, rev, before.rev+1)
	}
}

func TestErrRevisionNotEqual(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 3, nameIndex)
	before := errSnap(tbl, db.ReadTxn())
	obj, rev, _ := tbl.Get(db.ReadTxn(), idIndex.Query(2))
	txn := db.WriteTxn(tbl)
	for _, wrong := range []Revision{0, rev - 1, rev + 1, before.rev, before.rev + 1, ^Revision(0)} {
		if wrong == rev {
			continue
		}
		c := *obj
		c.Value = 7
		if old, had, err := tbl.CompareAndSwap(txn, wrong, &c); !errors.Is(err, ErrRevisionNotEqual) {
			t.Fatalf("CompareAndSwap(rev %d): err = %v", wrong, err)
		} else if had && old != obj {
			t.Fatalf("CompareAndSwap(rev %d) returned %v", wrong, mdlFmtObj(old))
		}
		if _, _, err := tbl.CompareAndDelete(txn, wrong, obj); !errors.Is(err, ErrRevisionNotEqual) {
			t.Fatalf("CompareAndDelete(rev %d): err = %v", wrong, err)
		}
		errUnchanged(t, fmt.Sprintf("compare with revision %d", wrong), tbl, txn, before)
	}
	// The right revision works; the old one then no longer does.
	c := *obj
	c.Value = 8
	if old, had, err := tbl.CompareAndSwap(txn, rev, &c); err != nil || !had || old != obj {
		t.Fatalf("CompareAndSwap(right) = %v %v %v", mdlFmtObj(old), had, err)
	}
	if _, _, err := tbl.CompareAndDelete(txn, rev, obj); !errors.Is(err, ErrRevisionNotEqual) {
		t.Fatalf("CompareAndDelete(old revision): err = %v", err)
	}
	_, newRev, _ := tbl.Get(txn, idIndex.Query(2))
	if _, had, err := tbl.CompareAndDelete(txn, newRev, obj); err != nil || !had {
		t.Fatalf("CompareAndDelete(right) = %v %v", had, err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, r := tbl.NumObjects(db.ReadTxn()), tbl.Revision(db.ReadTxn()); n != 2 || r != before.rev+2 {
		t.Fatalf("NumObjects, Revision = %d, %d, want 2, %d", n, r, before.rev+2)
	}
}

func TestErrObjectNotFound(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 3, nameIndex)
	before := errSnap(tbl, db.ReadTxn())
	txn := db.WriteTxn(tbl)
	for _, id := range []uint64{0, 4, 1 << 40} {
		for _, rev := range []Revision{0, 1, before.rev} {
			if _, had, err := tbl.CompareAndSwap(txn, rev, &testObject{ID: id}); !errors.Is(err, ErrObjectNotFound) || had {
				t.Fatalf("CompareAndSwap(%d, rev %d): had %v, err = %v", id, rev, had, err)
			}
			if _, had, err := tbl.CompareAndDelete(txn, rev, &testObject{ID: id}); !errors.Is(err, ErrObjectNotFound) || had {
				t.Fatalf("CompareAndDelete(%d, rev %d): had %v, err = %v", id, rev, had, err)
			}
			errUnchanged(t, "compare on a missing object", tbl, txn, before)
		}
	}
	// Deleted in this transaction: not found either.
	_, rev, _ := tbl.Get(txn, idIndex.Query(1))
	if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	mid := errSnap(tbl, txn)
	if _, _, err := tbl.CompareAndSwap(txn, rev, &testObject{ID: 1}); !errors.Is(err, ErrObjectNotFound) {
		t.Fatalf("CompareAndSwap(deleted): err = %v", err)
	}
	if _, _, err := tbl.CompareAndDelete(txn, rev, &testObject{ID: 1}); !errors.Is(err, ErrObjectNotFound) {
		t.Fatalf("CompareAndDelete(deleted): err = %v", err)
	}
	errUnchanged(t, "compare on a deleted object", tbl, txn, mid)
	// A plain Delete of a missing object is no error and no change.
	if _, had, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil || had {
		t.Fatalf("Delete(missing) = %v %v", had, err)
	}
	errUnchanged(t, "Delete of a missing object", tbl, txn, mid)
	txn.Abort()
	errUnchanged(t, "aborted transaction", tbl, db.ReadTxn(), before)
}

func TestErrWriteTxnContext(t *testing.T) {
	db := New()
	// first comes before a in the lock order, b after it.
	first := errFilled(t, db, "first", 1)
	a := errFilled(t, db, "a", 2)
	b := errFilled(t, db, "b", 2)
	holder := db.WriteTxn(a)
	if _, _, err := a.Insert(holder, &testObject{ID: 10}); err != nil {
		t.Fatal(err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	cases := []struct {
		name   string
		ctx    context.Context
		tables []TableMeta
		want   error
	}{
		{"cancelled", cancelled, []TableMeta{a}, context.Canceled},
		{"deadline", deadline, []TableMeta{a}, context.DeadlineExceeded},
		// first is free and gets locked before the wait for a: it must be
		// unlocked again.
		{"cancelled, first free", cancelled, []TableMeta{b, a, first}, context.Canceled},
		{"deadline, first free", deadline, []TableMeta{a, first, a}, context.DeadlineExceeded},
	}
	for _, c := range cases {
		txn, err := db.WriteTxnContext(c.ctx, c.tables[0], c.tables[1:]...)
		if !errors.Is(err, c.want) || txn != nil {
			t.Fatalf("%s: WriteTxnContext = %v, %v; want nil, %v", c.name, txn, err, c.want)
		}
		// No lock is left held.
		txn, err = db.WriteTxnContext(errCtx(t, 5*time.Second), first, b)
		if err != nil {
			t.Fatalf("%s: a table is still locked after the failed WriteTxnContext: %v", c.name, err)
		}
		txn.Abort()
	}
	// The holder is not disturbed and commits.
	if _, err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	txn, err := db.WriteTxnContext(errCtx(t, 5*time.Second), a, b, first)
	if err != nil {
		t.Fatalf("WriteTxnContext after the holder committed: %v", err)
	}
	if n := a.NumObjects(txn); n != 3 {
		t.Fatalf("NumObjects(a) = %d, want 3", n)
	}
	txn.Abort()

	// A waiter gets the lock once the holder releases it.
	holder = db.WriteTxn(a)
	ctx := errCtx(t, 10*time.Second)
	done := make(chan error)
	go func() {
		txn, err := db.WriteTxnContext(ctx, first, a)
		if err == nil {
			txn.Abort()
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	holder.Abort()
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

// errWithin runs f and fails if it does not return within d (a deadlock).
func errWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

func TestErrSameTableTwice(t *testing.T) {
	db := New()
	a := errFilled(t, db, "a", 2)
	b := errFilled(t, db, "b", 2)
	for i, tables := range [][]TableMeta{{a, a}, {a, b, a}, {b, a, b, a}, {b, b, b}} {
		errWithin(t, 5*time.Second, fmt.Sprintf("WriteTxn %d", i), func() {
			txn := db.WriteTxn(tables[0], tables[1:]...)
			for _, tbl := range []RWTable[*testObject]{a, b} {
				if slices.Contains(tables, TableMeta(tbl)) {
					if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(100 + i)}); err != nil {
						t.Errorf("Insert into %s: %v", tbl.Name(), err)
					}
				}
			}
			if _, err := txn.Commit(); err != nil {
				t.Errorf("Commit: %v", err)
			}
			// Everything is unlocked once.
			txn = db.WriteTxn(a, b)
			txn.Abort()
		})
	}
	if na, nb := a.NumObjects(db.ReadTxn()), b.NumObjects(db.ReadTxn()); na != 5 || nb != 5 {
		t.Fatalf("NumObjects = %d, %d, want 5, 5", na, nb)
	}
}

// errForget starts a write transaction, writes to it and drops it.
//
//go:noinline
func errForget(db *DB, tbl RWTable[*testObject]) {
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 1000}); err != nil {
		panic(err)
	}
}

func TestErrForgottenWriteTxn(t *testing.T) {
	db := New()
	tbl := errFilled(t, db, "t", 2)
	before := errSnap(tbl, db.ReadTxn())
	errForget(db, tbl)
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		txn, err := db.WriteTxnContext(ctx, tbl)
		cancel()
		if err == nil {
			errUnchanged(t, "the forgotten transaction", tbl, txn, before)
			txn.Abort()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forgotten write transaction was not aborted: %v", err)
		}
	}
	errUnchanged(t, "the forgotten transaction", tbl, db.ReadTxn(), before)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// errLongObj is keyed by a string of any length.
type errLongObj struct {
	Key string
	Tag string
}

var (
	errLongKey = Index[*errLongObj, string]{
		Name:       "key",
		FromObject: func(o *errLongObj) index.KeySet { return index.NewKeySet(index.String(o.Key)) },
		FromKey:    index.String,
		Unique:     true,
	}
	errLongTag = Index[*errLongObj, string]{
		Name:       "tag",
		FromObject: func(o *errLongObj) index.KeySet { return index.NewKeySet(index.String(o.Tag)) },
		FromKey:    index.String,
	}
)

func TestLongKeys(t *testing.T) {
	db := New()
	tbl, err := NewTable(db, "long", errLongKey, errLongTag)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.Repeat("k", 70_000)
	mib := strings.Repeat("m", 1<<20)
	keys := []string{
		base,                // 70,000 bytes
		base + "\x00",       // the same and one more byte
		base[:69_999] + "j", // differs in the last byte
		mib,                 // 1 MiB
		mib[:1<<20-1] + "\x00",
		"short",
	}
	objs := map[string]*errLongObj{}
	txn := db.WriteTxn(tbl)
	for i, k := range keys {
		o := &errLongObj{Key: k, Tag: []string{"even", "odd"}[i%2]}
		objs[k] = o
		if _, had, err := tbl.Insert(txn, o); err != nil || had {
			t.Fatalf("Insert(key of %d bytes) = %v %v", len(k), had, err)
		}
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(keys))
	keysOf := func(seq func(func(*errLongObj, Revision) bool)) []string {
		var out []string
		for o := range seq {
			out = append(out, o.Key)
		}
		return out
	}
	short := func(ks []string) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = fmt.Sprintf("%d:%q", len(k), k[len(k)-min(len(k), 3):])
		}
		return out
	}
	expect := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s = %v, want %v", what, short(got), short(want))
		}
	}
	if n := tbl.NumObjects(rtxn); n != len(keys) {
		t.Fatalf("NumObjects = %d", n)
	}
	for _, k := range keys {
		if o, _, ok := tbl.Get(rtxn, errLongKey.Query(k)); !ok || o != objs[k] {
			t.Fatalf("Get(key of %d bytes) = %v", len(k), ok)
		}
		expect("List(key)", keysOf(tbl.List(rtxn, errLongKey.Query(k))), []string{k})
		expect("Prefix(key)", keysOf(tbl.Prefix(rtxn, errLongKey.Query(k))),
			slices.DeleteFunc(slices.Clone(sorted), func(s string) bool { return !strings.HasPrefix(s, k) }))
	}
	// Not there: a key one byte shorter, and one byte longer.
	for _, k := range []string{base[:69_999], mib + "x", base + "\x00\x00"} {
		if _, _, ok := tbl.Get(rtxn, errLongKey.Query(k)); ok {
			t.Fatalf("Get(absent key of %d bytes) found an object", len(k))
		}
	}
	expect("All", keysOf(tbl.All(rtxn)), sorted)
	rsorted := slices.Clone(sorted)
	slices.Reverse(rsorted)
	expect("ReverseAll", keysOf(tbl.ReverseAll(rtxn)), rsorted)
	expect("Prefix(k...)", keysOf(tbl.Prefix(rtxn, errLongKey.Query(base[:50_000]))), sorted[:3])
	expect("LowerBound(base)", keysOf(tbl.LowerBound(rtxn, errLongKey.Query(base))), sorted[1:])
	expect("ReverseLowerBound(base)", keysOf(tbl.ReverseLowerBound(rtxn, errLongKey.Query(base))), []string{base, sorted[0]})
	var even, odd []string
	for i, k := range keys {
		if i%2 == 0 {
			even = append(even, k)
		} else {
			odd = append(odd, k)
		}
	}
	slices.Sort(even)
	slices.Sort(odd)
	expect("List(tag even)", keysOf(tbl.List(rtxn, errLongTag.Query("even"))), even)
	expect("List(tag odd)", keysOf(tbl.List(rtxn, errLongTag.Query("odd"))), odd)

	// Delete them one by one.
	txn = db.WriteTxn(tbl)
	for i, k := range keys {
		if old, had, err := tbl.Delete(txn, &errLongObj{Key: k}); err != nil || !had || old != objs[k] {
			t.Fatalf("Delete(key of %d bytes) = %v %v", len(k), had, err)
		}
		if _, _, ok := tbl.Get(txn, errLongKey.Query(k)); ok {
			t.Fatalf("Get after Delete(key of %d bytes) found it", len(k))
		}
		if n := tbl.NumObjects(txn); n != len(keys)-i-1 {
			t.Fatalf("NumObjects = %d", n)
		}
		for o := range tbl.Prefix(txn, errLongTag.Query("")) {
			if o.Key == k {
				t.Fatalf("tag index still holds the deleted key of %d bytes", len(k))
			}
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("NumObjects = %d after deleting all", n)
	}
	if got := keysOf(tbl.Prefix(db.ReadTxn(), errLongTag.Query(""))); len(got) != 0 {
		t.Fatalf("tag index not empty: %d entries", len(got))
	}
}

// TestErrKeyTooLong checks that keys beyond MaxKeyLen are refused with a
// typed error and change nothing (with the limit lowered: the real one is
// over a gigabyte).
func TestErrKeyTooLong(t *testing.T) {
	defer func(old int) { maxKeyLen = old }(maxKeyLen)
	maxKeyLen = 100
	db := New()
	tbl := newTestTable(t, db, "long", nameIndex)
	txn := db.WriteTxn(tbl)
	long := string(make([]byte, 101))
	if _, _, err := tbl.Insert(txn, &testObject{ID: 1, Name: long}); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("secondary key too long: err = %v", err)
	}
	if n := tbl.NumObjects(txn); n != 0 {
		t.Fatalf("refused insert left %d objects", n)
	}
	if _, _, err := tbl.Insert(txn, &testObject{ID: 1, Name: string(make([]byte, 100))}); err != nil {
		t.Fatalf("key of exactly the limit: %v", err)
	}
	txn.Abort()

	byName, err := NewTable(db, "by-name", nameIndex)
	if err != nil {
		t.Fatal(err)
	}
	txn = db.WriteTxn(byName)
	if _, _, err := byName.Insert(txn, &testObject{Name: long}); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("primary key too long: err = %v", err)
	}
	if err := Restore(txn, byName, func(yield func(*testObject, Revision) bool) {
		yield(&testObject{Name: long}, 1)
	}, 0); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("Restore of a primary key too long: err = %v", err)
	}
	txn.Abort()
}

// TestErrNoFromObject: an index without FromObject is refused at NewTable.
func TestErrNoFromObject(t *testing.T) {
	db := New()
	bad := Index[*testObject, uint64]{Name: "bad", FromKey: index.Uint64, Unique: true}
	if _, err := NewTable(db, "t", bad); !errors.Is(err, ErrNoFromObject) {
		t.Fatalf("primary without FromObject: %v", err)
	}
	if _, err := NewTable(db, "t", idIndex, Indexer[*testObject](bad)); !errors.Is(err, ErrNoFromObject) {
		t.Fatalf("secondary without FromObject: %v", err)
	}
	if len(db.Tables()) != 0 {
		t.Fatalf("refused tables were registered")
	}
}

// TestUniqueConstraintMessage: a unique-constraint error renders keys
// through their index and names the object that holds the key, once per
// table name; so does Restore's.
func TestUniqueConstraintMessage(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "svcs", nameIndex)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &testObject{ID: 80, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := tbl.Insert(txn, &testObject{ID: 81, Name: "a"})
	txn.Abort()
	want := `table "svcs": index "name": key "a" is held by the object with primary key "80": ` + ErrUniqueConstraint.Error()
	if !errors.Is(err, ErrUniqueConstraint) || err.Error() != want {
		t.Fatalf("Insert of a taken key:\n got %v\nwant %s", err, want)
	}

	txn = db.WriteTxn(tbl)
	err = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
		_ = yield(&testObject{ID: 80, Name: "a"}, 1) && yield(&testObject{ID: 81, Name: "a"}, 2)
	}, 0)
	txn.Abort()
	if !errors.Is(err, ErrUniqueConstraint) || err.Error() != want {
		t.Fatalf("Restore of a taken key:\n got %v\nwant %s", err, want)
	}
	txn = db.WriteTxn(tbl)
	err = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
		_ = yield(&testObject{ID: 80}, 1) && yield(&testObject{ID: 80}, 2)
	}, 0)
	txn.Abort()
	if want := `table "svcs": primary key "80" twice: ` + ErrRestoreInput.Error(); err == nil || err.Error() != want {
		t.Fatalf("Restore of a key twice:\n got %v\nwant %s", err, want)
	}
}
