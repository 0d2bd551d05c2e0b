package strata

// Tests of writes (table_write.go): that a table's part of a write
// transaction (tableTxn) begins each transaction afresh, that writes with
// another database's transaction or through a panicking index function
// leave the table as it was, and watch channels of a transaction's own
// writes. Every error a write may return is in errors_test.go.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// staleJournal and staleWriteJournal are sentinel journals: values that
// no transaction sets.
type (
	staleJournal      struct{ TableJournal[*testObject] }
	staleWriteJournal struct{ TableWriteJournal[*testObject] }
)

// TestTableTxnBeginResets checks that a write transaction observes no
// per-transaction state of the previous one on the table: every field of
// tableTxn.cur and of its log appender's cur (logAppender.cur), found
// by reflection so that a field added later is covered too, is set to a
// sentinel after a transaction ends, and the next transaction must begin
// with each as a transaction begins after a clean one (slices: the same
// length).
func TestTableTxnBeginResets(t *testing.T) {
	for _, tc := range []struct{ end, feed string }{
		{"commit", "no feed"}, {"abort", "no feed"}, {"commit", "a feed"}, {"abort", "a feed"},
	} {
		end := tc.end
		t.Run(end+", "+tc.feed, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", tagsIndex)
			impl := tbl.(*table[*testObject])
			tt := &impl.txn
			if tc.feed == "a feed" {
				// The table has a log: the log writer's begin takes its
				// longer way.
				txn := db.WriteTxn(tbl)
				it, err := tbl.Changes(txn)
				must(t, err)
				_, err = txn.Commit()
				must(t, err)
				defer it.Close()
			}
			// begin starts a transaction's write state on tbl, hands its
			// per-transaction parts to check, and aborts it.
			begin := func(check func(txnState[*testObject], logTxn[*testObject])) {
				txn := db.WriteTxn(tbl)
				if _, err := impl.txnFor(txn); err != nil {
					t.Fatal(err)
				}
				check(tt.cur, tt.log.cur)
				// A sentinel left by a missing reset may make the abort
				// panic: the check has reported it already.
				if p := catch(txn.Abort); p != nil && !t.Failed() {
					panic(p)
				}
			}

			txn := db.WriteTxn(tbl)
			mustInsert(t, tbl, txn, &testObject{ID: 1, Tags: part.NewSet("a")}, &testObject{ID: 2})
			_, _, err := tbl.Delete(txn, &testObject{ID: 2})
			must(t, err)
			if end == "commit" {
				_, err = txn.Commit()
				must(t, err)
			} else {
				txn.Abort()
			}
			// What a transaction begins with after a clean one: its
			// per-transaction state as a table's first transaction finds it.
			tt.cur, tt.log.cur = txnState[*testObject]{}, logTxn[*testObject]{}
			var want txnState[*testObject]
			var wantLog logTxn[*testObject]
			begin(func(cur txnState[*testObject], log logTxn[*testObject]) { want, wantLog = cur, log })

			// Whatever a finished transaction left, in every field.
			n := setSentinels(t, reflect.ValueOf(&tt.cur).Elem(), reflect.ValueOf(want), "cur")
			n += setSentinels(t, reflect.ValueOf(&tt.log.cur).Elem(), reflect.ValueOf(wantLog), "log.cur")
			if n < 20 {
				t.Fatalf("sentinels set in %d fields, want every field", n)
			}
			begin(func(got txnState[*testObject], gotLog logTxn[*testObject]) {
				compareBegun(t, reflect.ValueOf(got), reflect.ValueOf(want), "cur")
				compareBegun(t, reflect.ValueOf(gotLog), reflect.ValueOf(wantLog), "log.cur")
			})
		})
	}
}

// settable returns v, a field reached through unexported fields, as a
// value that can be set.
func settable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// setSentinels sets every leaf field of the struct v to a value that
// differs from its counterpart in want, and returns how many it set. A
// field of a kind it has no sentinel for fails the test: extend it.
func setSentinels(t *testing.T, v, want reflect.Value, path string) int {
	t.Helper()
	n := 0
	for i := range v.NumField() {
		f, w := settable(v.Field(i)), want.Field(i)
		p := path + "." + v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Struct:
			n += setSentinels(t, f, w, p)
			continue
		case reflect.Bool:
			f.SetBool(!w.Bool())
		case reflect.Int, reflect.Int64:
			f.SetInt(w.Int() + 7)
		case reflect.Uint, reflect.Uint8, reflect.Uint64:
			f.SetUint(w.Uint() + 7)
		case reflect.String:
			f.SetString(w.String() + "-stale")
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), w.Len()+1, w.Len()+1))
		case reflect.Interface:
			s := reflect.ValueOf(staleJournal{})
			if !s.Type().Implements(f.Type()) {
				s = reflect.ValueOf(staleWriteJournal{})
			}
			if !s.Type().Implements(f.Type()) {
				t.Fatalf("%s: no sentinel for a %s: extend setSentinels", p, f.Type())
			}
			f.Set(s)
		default:
			t.Fatalf("%s: no sentinel for a %s: extend setSentinels", p, f.Type())
		}
		n++
	}
	return n
}

// compareBegun reports each field of the struct got that differs from
// want: slices by length, everything else by value (pointers and
// interfaces by identity).
func compareBegun(t *testing.T, got, want reflect.Value, path string) {
	t.Helper()
	for i := range got.NumField() {
		g, w := got.Field(i), want.Field(i)
		p := path + "." + got.Type().Field(i).Name
		switch g.Kind() {
		case reflect.Struct:
			compareBegun(t, g, w, p)
		case reflect.Slice:
			if g.Len() != w.Len() {
				t.Errorf("%s: len %d from the previous transaction, want %d", p, g.Len(), w.Len())
			}
		default:
			if !g.Equal(w) {
				t.Errorf("%s: %s from the previous transaction, want %s", p, show(g), show(w))
			}
		}
	}
}

func show(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "nil"
		}
		if v.Kind() == reflect.Interface {
			return "a " + v.Elem().Type().String()
		}
		return fmt.Sprintf("%s %#x", v.Type(), v.Pointer())
	}
	return fmt.Sprint(v)
}

// TestBug_InsertWatchNotClosedBySameTxnOverwrite: InsertWatch documents
// that its channel closes "when the stored object is next replaced or
// deleted (by a later commit, or by a later write in this transaction once
// it commits)". A later Insert of the same key in the same transaction
// replaces the object, yet the channel stays open after Commit.
func TestInsertWatchClosedBySameTxnOverwrite(t *testing.T) {
	db := New()
	tbl := newConcPairTable(t, db, "bug-insertwatch")
	txn := db.WriteTxn(tbl)
	_, _, watch, err := tbl.InsertWatch(txn, concPair{ID: 1, Gen: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(txn, concPair{ID: 1, Gen: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	default:
		t.Fatal("InsertWatch channel still open after a later write in the same transaction replaced the object and committed")
	}
}

// A regression the adversarial trial of the public API found (its case 7):
// using a table with a transaction of another database is a programming
// error: writes panic with the same message as reads.
func TestRegressOtherDBWritePanics(t *testing.T) {
	db1, db2 := New(), New()
	t1 := newTestTable(t, db1, "t")
	t2 := newTestTable(t, db2, "t")
	txn := db2.WriteTxn(t2)
	defer txn.Abort()
	readMsg := fmt.Sprint(catch(func() { t1.Get(txn, idIndex.Query(1)) }))
	if !strings.Contains(readMsg, "another DB") {
		t.Fatalf("read with another DB's transaction: panic %q", readMsg)
	}
	writes := map[string]func(){
		"Insert":    func() { _, _, _ = t1.Insert(txn, &testObject{ID: 1}) },
		"Delete":    func() { _, _, _ = t1.Delete(txn, &testObject{ID: 1}) },
		"DeleteAll": func() { _ = t1.DeleteAll(txn) },
		"Changes":   func() { _, _ = t1.Changes(txn) },
	}
	for name, f := range writes {
		if msg := fmt.Sprint(catch(f)); msg != readMsg {
			t.Errorf("%s with another DB's transaction: panic %q, want %q", name, msg, readMsg)
		}
	}
}

// A regression the adversarial trial of the public API found (its case 8):
// an index function that panics must leave the table as it was, so that a
// transaction recovered from the panic and committed publishes consistent
// indexes: every key, the old object's too, is computed before the first
// tree change. The index panics, once armed, for the stored object (Value
// 5), which only the old object's keys ask for.
func TestRegressPanickingIndexLeavesTableIntact(t *testing.T) {
	armed := false
	ix := Index[*testObject, int]{
		Name: "flaky",
		FromObject: func(o *testObject) index.KeySet {
			if armed && o.Value == 5 {
				panic("index function failed")
			}
			return index.NewKeySet(index.Int(o.Value))
		},
		FromKey: index.Int,
	}
	for _, op := range []string{"Delete", "Insert", "CompareAndDelete"} {
		t.Run(op, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", ix)
			armed = false
			txn := db.WriteTxn(tbl)
			mustInsert(t, tbl, txn, &testObject{ID: 1, Value: 5}, &testObject{ID: 2, Value: 6})
			_, err := txn.Commit()
			must(t, err)

			txn = db.WriteTxn(tbl)
			armed = true
			p := catch(func() {
				switch op {
				case "Delete":
					_, _, _ = tbl.Delete(txn, &testObject{ID: 1})
				case "Insert":
					_, _, _ = tbl.Insert(txn, &testObject{ID: 1, Value: 9})
				case "CompareAndDelete":
					_, rev, _ := tbl.Get(txn, idIndex.Query(1))
					_, _, _ = tbl.CompareAndDelete(txn, rev, &testObject{ID: 1})
				}
			})
			armed = false
			if p == nil {
				t.Fatal("the index function did not panic")
			}
			mustInsert(t, tbl, txn, &testObject{ID: 3, Value: 7}) // the transaction goes on
			rtxn, err := txn.Commit()
			must(t, err)
			checkIndexesAgree(t, tbl, rtxn)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, []uint64{1, 2, 3}) {
				t.Fatalf("after the panic the table holds %v, want [1 2 3]", got)
			}
			if o, _, _ := tbl.Get(rtxn, idIndex.Query(1)); o.Value != 5 {
				t.Fatalf("after the panic object 1 has value %d, want 5", o.Value)
			}
		})
	}
}

// A regression the adversarial trial of the public API found (its case 8,
// for the writes of many objects): DeletePrefix (on the primary index, in
// one cut; on a secondary one, object by object), DeleteRange,
// DeleteMatches, DeleteEach, ModifyEach and Restore. An index function that panics for one object,
// after others were written, must leave the table as it was too, and the
// change log in step with it: a transaction recovered from the panic and
// committed publishes consistent indexes, and a feed's view of the table
// stays the table. The index panics, once armed, for objects of value 5.
func TestRegressPanickingIndexManyObjects(t *testing.T) {
	armed := false
	ix := Index[*testObject, int]{
		Name: "flaky",
		FromObject: func(o *testObject) index.KeySet {
			if armed && o.Value == 5 {
				panic("index function failed")
			}
			return index.NewKeySet(index.Int(o.Value), index.Int(-1))
		},
		FromKey: index.Int,
	}
	// Objects 1, 2, 3 at values 3, 5, 7 (and all under key -1): in the
	// order of either index, the one that panics comes after another.
	objs := []*testObject{{ID: 1, Value: 3}, {ID: 2, Value: 5}, {ID: 3, Value: 7}}
	for _, op := range []string{"DeletePrefix(primary)", "DeletePrefix(secondary)", "DeleteRange", "DeleteMatches", "DeleteEach", "ModifyEach", "Restore"} {
		t.Run(op, func(t *testing.T) {
			db := New()
			tbl := newTestTable(t, db, "t", ix)
			armed = false
			txn := db.WriteTxn(tbl)
			it, err := tbl.Changes(txn)
			must(t, err)
			mustInsert(t, tbl, txn, objs...)
			rtxn, err := txn.Commit()
			must(t, err)
			view := map[uint64]*testObject{}
			mdlFeedView(t, view, it, rtxn)

			txn = db.WriteTxn(tbl)
			want := []uint64{1, 2, 3, 4}
			if op == "Restore" {
				must(t, tbl.DeleteAll(txn)) // Restore fills an empty table
				want = []uint64{4}
			}
			armed = true
			p := catch(func() {
				switch op {
				case "DeletePrefix(primary)":
					_, _ = tbl.DeletePrefix(txn, idIndex.QueryKey(index.Uint64(0)[:7]))
				case "DeletePrefix(secondary)":
					_, _ = tbl.DeletePrefix(txn, ix.QueryKey(nil))
				case "DeleteRange":
					_, _ = tbl.DeleteRange(txn, idIndex.Query(0), idIndex.Query(100))
				case "DeleteMatches":
					_, _ = tbl.DeleteMatches(txn, ix.Query(-1)) // every object
				case "DeleteEach":
					_, _ = DeleteEach(txn, tbl, tbl.All(txn))
				case "ModifyEach":
					_, _ = ModifyEach(txn, tbl, tbl.All(txn), func(o *testObject) (*testObject, bool) {
						c := *o
						c.Name = "modified"
						return &c, true
					})
				case "Restore":
					_ = Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
						_ = yield(&testObject{ID: 10, Value: 3}, 50) && yield(&testObject{ID: 11, Value: 5}, 51)
					}, 0)
				}
			})
			armed = false
			if p != "index function failed" {
				t.Fatalf("the index function did not panic, but: %v", p)
			}
			mustInsert(t, tbl, txn, &testObject{ID: 4, Value: 8}) // the transaction goes on
			rtxn, err = txn.Commit()
			must(t, err)
			checkIndexesAgree(t, tbl, rtxn)
			if got := ids(tbl.All(rtxn)); !slices.Equal(got, want) {
				t.Fatalf("after the panic the table holds %v, want %v", got, want)
			}
			for o := range tbl.All(rtxn) {
				if o.Name == "modified" {
					t.Fatalf("after the panic object %d is modified", o.ID)
				}
			}
			mdlFeedView(t, view, it, rtxn)
			if got := slices.Sorted(maps.Keys(view)); !slices.Equal(got, want) {
				t.Fatalf("after the panic a feed's view holds %v, the table %v", got, want)
			}
			revs := map[Revision]bool{}
			for o, rev := range tbl.All(rtxn) {
				if revs[rev] || rev > tbl.Revision(rtxn) {
					t.Fatalf("object %d at revision %d: twice, or above the table's %d", o.ID, rev, tbl.Revision(rtxn))
				}
				revs[rev] = true
			}
			it.Close()
		})
	}
}
