package strata

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
)

func TestWriteJSON(t *testing.T) {
	db := New()
	a := newTestTable(t, db, "a")
	b := newTestTable(t, db, "b")
	newTestTable(t, db, "empty")
	mustInsertAll(t, db, a, &testObject{ID: 2, Name: "two"}, &testObject{ID: 1, Name: "one"})
	txn := mustInsertAll(t, db, b, &testObject{ID: 7, Value: -1})

	var out bytes.Buffer
	if err := WriteJSON(&out, txn); err != nil {
		t.Fatal(err)
	}
	want := `{
  "a": [
    {"ID":1,"Name":"one","Tags":[],"Value":0},
    {"ID":2,"Name":"two","Tags":[],"Value":0}
  ],
  "b": [
    {"ID":7,"Name":"","Tags":[],"Value":-1}
  ],
  "empty": []
}
`
	if out.String() != want {
		t.Fatalf("WriteJSON =\n%s\nwant\n%s", out.String(), want)
	}
	var parsed map[string][]testObject
	if err := json.Unmarshal(out.Bytes(), &parsed); err != nil || len(parsed["a"]) != 2 || parsed["b"][0].ID != 7 {
		t.Fatalf("output does not decode: %v, %v", parsed, err)
	}

	// Some tables, in the order asked for.
	out.Reset()
	if err := WriteJSON(&out, txn, "empty", "b"); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "{\n  \"empty\": [],\n  \"b\": [") {
		t.Fatalf("WriteJSON(empty, b) =\n%s", got)
	}
	// An unknown table: an error, and nothing written.
	out.Reset()
	if err := WriteJSON(&out, txn, "b", "nope"); !errors.Is(err, ErrTableNotFound) || out.Len() != 0 {
		t.Fatalf("WriteJSON(nope) = %v, wrote %q", err, out.String())
	}
	// No tables at all.
	out.Reset()
	if err := WriteJSON(&out, New().ReadTxn()); err != nil || out.String() != "{}\n" {
		t.Fatalf("WriteJSON of an empty database = %q, %v", out.String(), err)
	}
	// A snapshot taken before a table was registered does not have it.
	old := db.ReadTxn()
	newTestTable(t, db, "later")
	out.Reset()
	if err := WriteJSON(&out, old); err != nil || strings.Contains(out.String(), "later") {
		t.Fatalf("WriteJSON of an older snapshot = %q, %v", out.String(), err)
	}
	// A write transaction's own writes are in its dump.
	wtxn := db.WriteTxn(a)
	if _, _, err := a.Insert(wtxn, &testObject{ID: 3, Name: "three"}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteJSON(&out, wtxn, "a"); err != nil || !strings.Contains(out.String(), `"three"`) {
		t.Fatalf("WriteJSON in a write transaction = %q, %v", out.String(), err)
	}
	// The method (statedb's form) is the function.
	var method bytes.Buffer
	if err := wtxn.WriteJSON(&method, "a"); err != nil || method.String() != out.String() {
		t.Fatalf("wtxn.WriteJSON = %q, %v; want %q", method.String(), err, out.String())
	}
	out.Reset()
	method.Reset()
	if err := WriteJSON(&out, txn); err != nil {
		t.Fatal(err)
	}
	if err := txn.WriteJSON(&method); err != nil || method.String() != out.String() {
		t.Fatalf("txn.WriteJSON = %q, %v; want %q", method.String(), err, out.String())
	}
	wtxn.Abort()
}

// jsonBad is an object whose JSON encoding fails for a negative N.
type jsonBad struct{ N int }

var errJSONBad = errors.New("negative N")

func (b *jsonBad) MarshalJSON() ([]byte, error) {
	if b.N < 0 {
		return nil, errJSONBad
	}
	return json.Marshal(b.N)
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

var errWriteFailed = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errWriteFailed
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteJSONErrors(t *testing.T) {
	db := New()
	bad := MustNewTable(db, "bad", Index[*jsonBad, int]{
		Name:       "n",
		FromObject: func(b *jsonBad) index.KeySet { return index.KeySetOf(index.Int(b.N)) },
		FromKey:    index.Int,
		Unique:     true,
	})
	wtxn := db.WriteTxn(bad)
	for _, n := range []int{-1, 1} {
		if _, _, err := bad.Insert(wtxn, &jsonBad{n}); err != nil {
			t.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	err = WriteJSON(&bytes.Buffer{}, txn)
	if !errors.Is(err, errJSONBad) || !strings.Contains(err.Error(), `table "bad": object at revision 1`) {
		t.Fatalf("WriteJSON of an object that does not encode: %v", err)
	}

	// A writer that fails: the dump stops with its error, whether the
	// failure comes in the middle (a big table) or at the final flush.
	objs := newTestTable(t, db, "objs")
	var many []*testObject
	for i := range 5000 {
		many = append(many, &testObject{ID: uint64(i), Name: strings.Repeat("x", 20)})
	}
	txn = mustInsertAll(t, db, objs, many...)
	for _, n := range []int{0, 10, 100_000} {
		if err := WriteJSON(&failWriter{n: n}, txn, "objs"); !errors.Is(err, errWriteFailed) {
			t.Errorf("WriteJSON to a writer failing after %d bytes: %v", n, err)
		}
	}
}
