package strata

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// TestQueryKeyFixed: a query built with one of package index's fixed-width
// encoders keeps its key in place, byte for byte the encoder's; any other
// encoder's key is the encoder's own slice.
func TestQueryKeyFixed(t *testing.T) {
	check := func(name string, q Query[*testObject], want index.Key, inPlace bool) {
		t.Helper()
		if got := q.Key(); !bytes.Equal(got, want) {
			t.Errorf("%s: key %x, want %x", name, got, want)
		}
		if got := q.key.inlined() >= 0; got != inPlace {
			t.Errorf("%s: kept in place %v, want %v", name, got, inPlace)
		}
	}
	for _, v := range []uint64{0, 1, 255, 1 << 40, ^uint64(0)} {
		check("Uint64", Index[*testObject, uint64]{Name: "x", FromKey: index.Uint64}.Query(v), index.Uint64(v), true)
		check("Uint", Index[*testObject, uint]{Name: "x", FromKey: index.Uint}.Query(uint(v)), index.Uint(uint(v)), true)
		check("Int64", Index[*testObject, int64]{Name: "x", FromKey: index.Int64}.Query(int64(v)), index.Int64(int64(v)), true)
		check("Int", Index[*testObject, int]{Name: "x", FromKey: index.Int}.Query(int(v)), index.Int(int(v)), true)
		check("Uint32", Index[*testObject, uint32]{Name: "x", FromKey: index.Uint32}.Query(uint32(v)), index.Uint32(uint32(v)), true)
		check("Int32", Index[*testObject, int32]{Name: "x", FromKey: index.Int32}.Query(int32(v)), index.Int32(int32(v)), true)
		check("Uint16", Index[*testObject, uint16]{Name: "x", FromKey: index.Uint16}.Query(uint16(v)), index.Uint16(uint16(v)), true)
		check("Int16", Index[*testObject, int16]{Name: "x", FromKey: index.Int16}.Query(int16(v)), index.Int16(int16(v)), true)
		// An encoder of the user's own, even one that calls index.Uint64.
		own := func(v uint64) index.Key { return index.Uint64(v + 1) }
		check("own", Index[*testObject, uint64]{Name: "x", FromKey: own}.Query(v), index.Uint64(v+1), false)
	}
	check("String", Index[*testObject, string]{Name: "x", FromKey: index.String}.Query("abc"), index.Key("abc"), false)
	check("QueryKey", idIndex.QueryKey(index.Key("a long key, more than 8 bytes")), index.Key("a long key, more than 8 bytes"), false)
	o := &testObject{ID: 7, Name: "a name longer than eight"}
	q, ok := idIndex.QueryFromObject(o)
	if !ok {
		t.Fatal("QueryFromObject found no ID")
	}
	check("QueryFromObject", q, index.Uint64(7), true)
	if q, ok = nameIndex.QueryFromObject(o); !ok {
		t.Fatal("QueryFromObject found no name")
	}
	check("QueryFromObject long", q, index.Key(o.Name), false)
	if q.Key().String() == "" {
		t.Fatal("empty key")
	}
}

// TestPairLayout: object[Obj] and part.Pair[Obj, Revision] have one layout,
// which pairTree relies on.
func TestPairLayout(t *testing.T) {
	type big struct { // blank fields: only its layout matters
		_ [3]int
		_ string
		_ bool
	}
	check := func(name string, so, sp, oo, op, ro, rp uintptr) {
		if so != sp || oo != op || ro != rp {
			t.Errorf("%s: object is %d bytes, obj at %d, rev at %d; Pair is %d bytes, %d, %d", name, so, oo, ro, sp, op, rp)
		}
	}
	var a object[*testObject]
	var pa part.Pair[*testObject, Revision]
	check("pointer", unsafe.Sizeof(a), unsafe.Sizeof(pa), unsafe.Offsetof(a.obj), unsafe.Offsetof(pa.First), unsafe.Offsetof(a.rev), unsafe.Offsetof(pa.Second))
	var b object[big]
	var pb part.Pair[big, Revision]
	check("struct", unsafe.Sizeof(b), unsafe.Sizeof(pb), unsafe.Offsetof(b.obj), unsafe.Offsetof(pb.First), unsafe.Offsetof(b.rev), unsafe.Offsetof(pb.Second))
	var c object[uint8]
	var pc part.Pair[uint8, Revision]
	check("byte", unsafe.Sizeof(c), unsafe.Sizeof(pc), unsafe.Offsetof(c.obj), unsafe.Offsetof(pc.First), unsafe.Offsetof(c.rev), unsafe.Offsetof(pc.Second))
}

// TestReadAllocations: a Get from a query built with Index.Query allocates
// nothing, and a scan allocates the same whether it reads 10 objects or
// 1000: nothing per object.
func TestReadAllocations(t *testing.T) {
	var b testing.B
	db := New()
	tbl := newTestTable(&b, db, "test", tagsIndex)
	fillTable(&b, db, tbl, 1000, func(i int) *testObject {
		return &testObject{ID: uint64(i), Tags: part.NewSet("t")}
	})
	txn := db.ReadTxn()
	if a := testing.AllocsPerRun(100, func() {
		if _, _, ok := tbl.Get(txn, idIndex.Query(500)); !ok {
			t.Fatal("not found")
		}
	}); a != 0 {
		t.Errorf("Get allocates %v times", a)
	}
	scan := func(n int) float64 {
		return testing.AllocsPerRun(100, func() {
			seen := 0
			for range tbl.LowerBound(db.ReadTxn(), idIndex.Query(0)) {
				if seen++; seen == n {
					break
				}
			}
		})
	}
	if a, b := scan(10), scan(1000); a != b || a > 4 {
		t.Errorf("a scan of 10 objects allocates %v times, of 1000 %v times; want the same, at most 4", a, b)
	}
	list := func() {
		n := 0
		for range tbl.List(txn, tagsIndex.Query("t")) {
			n++
		}
		if n != 1000 {
			t.Fatalf("List saw %d objects", n)
		}
	}
	if a := testing.AllocsPerRun(20, list); a > 4 {
		t.Errorf("List allocates %v times; want at most 4", a)
	}
}

// TestQueryIndexNameCopy: an index is found by its name's bytes, not only
// by the string the table was defined with, for the primary index and a
// secondary one, in a read transaction (Get's fast path) and a write
// transaction.
func TestQueryIndexNameCopy(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "objs", nameIndex)
	rtxn := mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "one"}, &testObject{ID: 2, Name: "two"})
	byID, byName := idIndex, nameIndex
	byID.Name, byName.Name = strings.Clone(idIndex.Name), strings.Clone(nameIndex.Name)
	wtxn := db.WriteTxn(tbl)
	defer wtxn.Abort()
	for _, txn := range []ReadTxn{db.ReadTxn(), rtxn, wtxn} {
		if o, _, ok := tbl.Get(txn, byID.Query(2)); !ok || o.Name != "two" {
			t.Errorf("Get by a copy of the primary index's name: %v, %v", o, ok)
		}
		if o, _, ok := tbl.Get(txn, byName.Query("one")); !ok || o.ID != 1 {
			t.Errorf("Get by a copy of a secondary index's name: %v, %v", o, ok)
		}
		if _, _, ok := tbl.Get(txn, byID.Query(3)); ok {
			t.Error("Get of an absent key found it")
		}
	}
}

// TestAppendEscapedShort checks that appendEscapedShort escapes every key
// as index.AppendEscaped does: keys of every length up to past the buffer,
// without a 0x00 and with one at each position.
func TestAppendEscapedShort(t *testing.T) {
	for n := 0; n <= escapedKeyBuf+2; n++ {
		k := make([]byte, n)
		for i := range k {
			k[i] = byte('a' + i%26)
		}
		for z := -1; z < n; z++ {
			key := append([]byte(nil), k...)
			if z >= 0 {
				key[z] = 0
			}
			var buf [escapedKeyBuf]byte
			got := appendEscapedShort(&buf, key)
			if want := index.AppendEscaped(nil, key); !bytes.Equal(got, want) {
				t.Fatalf("appendEscapedShort(%q) = %q, want %q", key, got, want)
			}
		}
	}
}
