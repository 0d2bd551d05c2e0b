package strata

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// BenchmarkWriteJSON dumps a table of 10,000 objects with WriteJSON, which
// streams, and with what one writes without it: collect the objects and
// json.Marshal them at once. Both outputs decode to the same objects.
func BenchmarkWriteJSON(b *testing.B) {
	const n = 10_000
	db := New()
	tbl := newTestTable(b, db, "objs")
	objs := make([]*testObject, n)
	for i := range objs {
		objs[i] = &testObject{ID: uint64(i), Name: "object-name", Value: i}
	}
	txn := mustInsertAll(b, db, tbl, objs...)
	var streamed, marshalled bytes.Buffer
	if err := WriteJSON(&streamed, txn); err != nil {
		b.Fatal(err)
	}
	out, _ := json.Marshal(map[string][]*testObject{"objs": Collect(tbl.All(txn))})
	marshalled.Write(out)
	var x, y map[string][]testObject
	if json.Unmarshal(streamed.Bytes(), &x) != nil || json.Unmarshal(marshalled.Bytes(), &y) != nil || len(x["objs"]) != n || len(y["objs"]) != n {
		b.Fatal("the two dumps differ")
	}
	b.Run("impl=WriteJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(streamed.Len()))
		for b.Loop() {
			if err := WriteJSON(io.Discard, txn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(marshalled.Len()))
		for b.Loop() {
			out, err := json.Marshal(map[string][]*testObject{"objs": Collect(tbl.All(txn))})
			if err != nil || len(out) != marshalled.Len() {
				b.Fatal(err)
			}
			if _, err := io.Discard.Write(out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
