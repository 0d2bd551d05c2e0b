package strata

// Tests of DeleteEach and ModifyEach (table_bulk.go) against a model: the
// deletion and the modification of what And, In and Or return, through
// the write transaction itself, with a change feed that must see every
// change once. DeletePrefix,
// DeleteRange and DeleteMatches are in the model of model_index_test.go,
// and the panics of index functions in TestRegressPanickingIndexManyObjects.

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// TestBulkModel deletes or modifies, in random transactions, what random
// And, In and Or queries of the transaction return, beside random
// inserts, and checks the table against a map of the objects after every
// call and every commit: the count DeleteEach or ModifyEach returns, the
// objects, every index entry (checkModel), each object written at a
// revision of its own, and a change feed's view of the table.
func TestBulkModel(t *testing.T) {
	r := seededRand(t, *multiSeedFlag, "strata.multi.seed", 31)
	db := New()
	tbl := newTestTable(t, db, "multi", nameIndex, tagsIndex, valueIndex)
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	must(t, err)
	defer it.Close()
	mustCommit(t, txn)
	committed := map[uint64]*testObject{}
	view := map[uint64]*testObject{}
	steps := 500
	if testing.Short() {
		steps = 100
	}
	deleted, modified := 0, 0
	for step := range steps {
		wtxn := db.WriteTxn(tbl)
		model := maps.Clone(committed)
		for range 1 + r.IntN(8) {
			id := uint64(r.IntN(40))
			var tags []string
			for _, tg := range []string{"a", "b", "c", "d"} {
				if r.IntN(3) == 0 {
					tags = append(tags, tg)
				}
			}
			o := &testObject{ID: id, Name: fmt.Sprintf("h%d", id), Value: r.IntN(6), Tags: part.NewSet(tags...)}
			mustInsert(t, tbl, wtxn, o)
			model[id] = o
		}
		for _, c := range multiCases(r, tbl)[:1+r.IntN(2)] {
			want := c.want(model)
			seq, _, err := c.run(wtxn)
			must(t, err)
			before := tbl.Revision(wtxn)
			var n, wantN int
			call := "DeleteEach"
			if r.IntN(2) == 0 {
				n, err = DeleteEach(wtxn, tbl, seq)
				wantN = len(want)
				for _, o := range want {
					delete(model, o.ID)
				}
				deleted += n
			} else {
				// Moves each object to another value, and keeps those
				// at value 0 as they are.
				call = "ModifyEach"
				shift := 1 + r.IntN(5)
				next := map[uint64]*testObject{}
				for _, o := range want {
					if o.Value != 0 {
						c := *o
						c.Value = (o.Value + shift) % 6
						next[o.ID] = &c
					}
				}
				n, err = ModifyEach(wtxn, tbl, seq, func(o *testObject) (*testObject, bool) {
					if o != model[o.ID] {
						t.Errorf("step %d: ModifyEach called modify with object %d %v, the table holds %v", step, o.ID, o, model[o.ID])
					}
					nx, ok := next[o.ID]
					return nx, ok
				})
				for id, o := range next {
					model[id] = o
				}
				wantN = len(next)
				modified += n
			}
			must(t, err)
			if n != wantN {
				t.Fatalf("step %d: %s(%s) = %d, want %d (%v)", step, call, c.desc, n, wantN, multiIDs(want))
			}
			if got := tbl.Revision(wtxn); got != before+Revision(n) {
				t.Fatalf("step %d: %s(%s) of %d took the table from revision %d to %d", step, call, c.desc, n, before, got)
			}
			checkModel(t, fmt.Sprintf("step %d, after %s(%s)", step, call, c.desc), tbl, wtxn, model)
		}
		if r.IntN(5) == 0 {
			wtxn.Abort()
			continue
		}
		rtxn := mustCommit(t, wtxn)
		committed = model
		checkModel(t, fmt.Sprintf("step %d, committed", step), tbl, rtxn, committed)
		mdlFeedView(t, view, it, rtxn)
		if !maps.Equal(view, committed) {
			t.Fatalf("step %d: the feed's view holds %d objects, the table %d", step, len(view), len(committed))
		}
	}
	if deleted == 0 || modified == 0 {
		t.Fatalf("%d objects deleted, %d modified", deleted, modified)
	}
	t.Logf("%d objects deleted, %d modified", deleted, modified)
}

// checkModel fails t unless tbl holds the objects of model, through txn,
// and every secondary index holds exactly the entries of those objects'
// keys, each with the object's revision in the primary index.
func checkModel(t *testing.T, step string, tbl Table[*testObject], txn ReadTxn, model map[uint64]*testObject) {
	t.Helper()
	var got []*testObject
	revs := map[uint64]Revision{}
	for o, rev := range tbl.All(txn) {
		got = append(got, o)
		revs[o.ID] = rev
	}
	if want := byID(model, func(*testObject) bool { return true }); !slices.Equal(got, want) {
		t.Fatalf("%s: the table holds %v, want %v", step, multiIDs(got), multiIDs(want))
	}
	impl := tableOf(tbl)
	st := impl.read(txn)
	for i, sec := range st.secondary[:impl.nsec] {
		ix := &impl.indexes[i+1]
		want := map[string]Revision{}
		for _, o := range got {
			pk, err := impl.primaryKey(nil, o)
			must(t, err)
			keys := ix.fromObject(o)
			for j := range keys.Len() {
				k := keys.At(j)
				if !ix.unique {
					k = append(index.AppendEscaped(nil, k), pk...)
				}
				want[string(k)] = revs[o.ID]
			}
		}
		have := map[string]Revision{}
		for k, o := range sec.All() {
			have[string(k)] = o.rev
		}
		if !maps.Equal(have, want) {
			t.Fatalf("%s: index %q holds %d entries, want %d: %v, want %v", step, ix.name, len(have), len(want), have, want)
		}
	}
}

// TestDeleteEachObjects: DeleteEach finds each object by its primary key
// and removes the one the table holds. An object the table does not hold
// is skipped, one yielded twice is removed once, and a stale version
// removes the stored one, with every one of its index entries.
func TestDeleteEachObjects(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex, tagsIndex, valueIndex)
	stored := &testObject{ID: 1, Name: "one", Value: 2, Tags: part.NewSet("a", "b")}
	two := &testObject{ID: 2, Name: "two", Value: 3}
	mustInsertAll(t, db, tbl, stored, two)
	stale := &testObject{ID: 1, Name: "old", Value: 9, Tags: part.NewSet("z")}
	yielded := []*testObject{stale, {ID: 7}, stored, stale}
	txn := db.WriteTxn(tbl)
	n, err := DeleteEach(txn, tbl, func(yield func(*testObject, Revision) bool) {
		for _, o := range yielded {
			if !yield(o, 0) {
				return
			}
		}
	})
	if err != nil || n != 1 {
		t.Fatalf("DeleteEach = %d, %v; want 1, nil", n, err)
	}
	rtxn := mustCommit(t, txn)
	checkModel(t, "after DeleteEach", tbl, rtxn, map[uint64]*testObject{2: two})
	if _, _, found := tbl.Get(rtxn, tagsIndex.Query("a")); found {
		t.Fatal("the stored object's tag is still indexed")
	}
}

// TestDeleteEachErrors: a closed transaction, one that did not lock the
// table, and an object without one primary key are typed errors, and
// change nothing.
func TestDeleteEachErrors(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", valueIndex)
	other := newTestTable(t, db, "other")
	mustInsertAll(t, db, tbl, &testObject{ID: 1, Value: 1}, &testObject{ID: 2, Value: 1})

	txn := db.WriteTxn(tbl)
	rtxn := mustCommit(t, txn)
	if _, err := DeleteEach(txn, tbl, tbl.All(rtxn)); !errors.Is(err, ErrTransactionClosed) {
		t.Fatalf("DeleteEach on a committed transaction: %v, want ErrTransactionClosed", err)
	}
	txn = db.WriteTxn(other)
	if _, err := DeleteEach(txn, tbl, tbl.All(rtxn)); !errors.Is(err, ErrTableNotLockedForWriting) {
		t.Fatalf("DeleteEach on a table the transaction did not lock: %v, want ErrTableNotLockedForWriting", err)
	}
	txn.Abort()

	// The primary index of a composite table yields no key for an
	// object it refuses: the error comes before any change.
	type kv struct{ k, v string }
	keyIndex := Index[kv, string]{
		Name: "key",
		FromObject: func(o kv) index.KeySet {
			if o.k == "" {
				return index.KeySet{}
			}
			return index.NewKeySet(index.String(o.k))
		},
		FromKey: index.String,
		Unique:  true,
	}
	kvs, err := NewTable(db, "kvs", keyIndex)
	must(t, err)
	txn = db.WriteTxn(kvs)
	for _, k := range []string{"a", "b"} {
		if _, _, err := kvs.Insert(txn, kv{k, "1"}); err != nil {
			t.Fatal(err)
		}
	}
	rtxn = mustCommit(t, txn)
	txn = db.WriteTxn(kvs)
	n, err := DeleteEach(txn, kvs, func(yield func(kv, Revision) bool) {
		_ = yield(kv{"a", "1"}, 0) && yield(kv{}, 0)
	})
	if !errors.Is(err, ErrPrimaryKey) || n != 0 {
		t.Fatalf("DeleteEach of an object without a primary key = %d, %v; want 0, ErrPrimaryKey", n, err)
	}
	if got := kvs.NumObjects(txn); got != 2 {
		t.Fatalf("after the error the transaction holds %d objects, want 2", got)
	}
	txn.Abort()
	if got := kvs.NumObjects(rtxn); got != 2 {
		t.Fatalf("the table holds %d objects, want 2", got)
	}
}

// TestModifyEachErrors: an object modify returns with another primary
// key, or a key too long, is a typed error before any change; a unique key
// another object holds stops the writes there; an object yielded twice
// is written once; the stored object itself is ErrObjectMutated.
func TestModifyEachErrors(t *testing.T) {
	defer func(old int) { maxKeyLen = old }(maxKeyLen)
	maxKeyLen = 100 // the real limit is over a gigabyte
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex, valueIndex)
	a, b := &testObject{ID: 1, Name: "a", Value: 1}, &testObject{ID: 2, Name: "b", Value: 1}
	rtxn := mustInsertAll(t, db, tbl, a, b)
	rev := tbl.Revision(rtxn)
	both := func(txn ReadTxn) iter.Seq2[*testObject, Revision] { return tbl.List(txn, valueIndex.Query(1)) }
	for _, c := range []struct {
		name   string
		modify func(o *testObject) (*testObject, bool)
		want   error
	}{
		{"primary key changed", func(o *testObject) (*testObject, bool) {
			c := *o
			c.ID += 10
			return &c, true
		}, ErrPrimaryKeyChanged},
		{"key too long", func(o *testObject) (*testObject, bool) {
			c := *o
			if c.ID == 2 {
				c.Name = strings.Repeat("x", maxKeyLen+1)
			}
			return &c, true
		}, ErrKeyTooLong},
		{"stored object", func(o *testObject) (*testObject, bool) { return o, true }, ErrObjectMutated},
	} {
		txn := db.WriteTxn(tbl)
		n, err := ModifyEach(txn, tbl, both(txn), c.modify)
		if !errors.Is(err, c.want) || n != 0 {
			t.Errorf("%s: ModifyEach = %d, %v; want 0, %v", c.name, n, err, c.want)
		}
		if got := tbl.Revision(txn); got != rev {
			t.Errorf("%s: the transaction's revision went from %d to %d", c.name, rev, got)
		}
		checkModel(t, c.name, tbl, txn, map[uint64]*testObject{1: a, 2: b})
		txn.Abort()
	}

	// A unique key another object holds: the writes before it stay.
	txn := db.WriteTxn(tbl)
	n, err := ModifyEach(txn, tbl, both(txn), func(o *testObject) (*testObject, bool) {
		c := *o
		c.Name = "b"
		return &c, true
	})
	if !errors.Is(err, ErrUniqueConstraint) || n != 0 {
		t.Errorf("unique key: ModifyEach = %d, %v; want 0, ErrUniqueConstraint", n, err)
	}
	txn.Abort()

	// Twice the same object, and one the table does not hold.
	txn = db.WriteTxn(tbl)
	var written []*testObject
	n, err = ModifyEach(txn, tbl, func(yield func(*testObject, Revision) bool) {
		_ = yield(a, 0) && yield(&testObject{ID: 7}, 0) && yield(a, 0)
	}, func(o *testObject) (*testObject, bool) {
		c := *o
		c.Value = 2
		written = append(written, &c)
		return &c, true
	})
	if err != nil || n != 1 {
		t.Fatalf("ModifyEach of an object twice = %d, %v; want 1, nil", n, err)
	}
	rtxn = mustCommit(t, txn)
	if o, r, _ := tbl.Get(rtxn, idIndex.Query(1)); o != written[0] || r != rev+1 {
		t.Fatalf("object 1 is %v at revision %d, want %v at %d", o, r, written[0], rev+1)
	}

	txn = db.WriteTxn(tbl)
	rtxn = mustCommit(t, txn)
	if _, err := ModifyEach(txn, tbl, tbl.All(rtxn), func(o *testObject) (*testObject, bool) { return o, false }); !errors.Is(err, ErrTransactionClosed) {
		t.Fatalf("ModifyEach on a committed transaction: %v, want ErrTransactionClosed", err)
	}
}

// TestAnyDeleteEach: AnyTable.DeleteEach removes what a combined read of
// the table through the same transaction selects, and refuses an object
// of another type before anything changed.
func TestAnyDeleteEach(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", nameIndex, tagsIndex, valueIndex)
	objs := map[uint64]*testObject{}
	for i := range uint64(20) {
		o := &testObject{ID: i, Name: fmt.Sprint("n", i), Value: int(i % 4), Tags: part.NewSet(fmt.Sprint("t", i%3))}
		objs[i] = o
		mustInsertAll(t, db, tbl, o)
	}
	at := AnyTable{Meta: tbl}
	q := func(ix, key string) AnyQuery {
		k, err := at.ParseKey(ix, key)
		must(t, err)
		return AnyQuery{Index: ix, Key: k, Op: QueryList}
	}
	txn := db.WriteTxn(tbl)
	seq, err := at.And(txn, q("tags", "t1"), q("value", "2"))
	must(t, err)
	n, err := at.DeleteEach(txn, seq)
	want := 0
	for id, o := range objs {
		if o.ID%3 == 1 && o.Value == 2 {
			delete(objs, id)
			want++
		}
	}
	if err != nil || n != want || want == 0 {
		t.Fatalf("DeleteEach of an And = %d, %v; want %d", n, err, want)
	}
	rtxn := mustCommit(t, txn)
	checkModel(t, "after AnyTable.DeleteEach", tbl, rtxn, objs)

	txn = db.WriteTxn(tbl)
	mixed := func(yield func(AnyObject) bool) {
		_ = yield(AnyObject{Object: objs[0]}) && yield(AnyObject{Object: "not an object"})
	}
	if n, err := at.DeleteEach(txn, mixed); !errors.Is(err, ErrObjectType) || n != 0 {
		t.Fatalf("DeleteEach of an object of another type = %d, %v; want ErrObjectType", n, err)
	}
	checkModel(t, "after a refused DeleteEach", tbl, mustCommit(t, txn), objs)
}
