package strata

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/strata-db/strata/part"
)

// staleJournal is a sentinel TableJournal: a value that no transaction
// sets.
type staleJournal struct{ TableJournal[*testObject] }

// TestTableTxnBeginResets checks that a write transaction observes no
// per-transaction state of the previous one on the table: every field of
// tableTxn.cur and of its change-log writer's cur (logAppender.cur), found
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
