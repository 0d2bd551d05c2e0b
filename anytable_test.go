package strata

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// anyRegion is a composite key with no text form: an index on it takes no
// text keys.
type anyRegion struct {
	Zone string
	N    int
}

var anyRegionIndex = Index[*testObject, anyRegion]{
	Name: "region",
	FromObject: func(o *testObject) index.KeySet {
		return index.NewKeySet(index.Composite(index.String(o.Name), index.Int(o.Value)))
	},
	FromKey: func(r anyRegion) index.Key { return index.Composite(index.String(r.Zone), index.Int(r.N)) },
}

// anyTestDB returns a database with one table of testObjects indexed by id
// (primary), name (unique), tags (multi-key), value and region, and its
// AnyTable.
func anyTestDB(t testing.TB) (*DB, RWTable[*testObject], AnyTable) {
	t.Helper()
	db := New()
	tbl := newTestTable(t, db, "objects", nameIndex, tagsIndex, valueIndex, anyRegionIndex)
	at, err := db.AnyTable("objects")
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl, at
}

func TestAnyTableMeta(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	if _, err := db.AnyTable("nope"); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("AnyTable(nope): %v, want ErrTableNotFound", err)
	}
	if at.Name() != "objects" || at.Meta != TableMeta(tbl) {
		t.Errorf("AnyTable(objects) = %v, %v", at.Name(), at.Meta)
	}
	if got := at.ObjectType(); got != reflect.TypeFor[*testObject]() {
		t.Errorf("ObjectType = %v", got)
	}
	want := []IndexInfo{
		{Name: "id", Primary: true, Unique: true, KeyType: reflect.TypeFor[uint64](), Text: true},
		{Name: "name", Unique: true, KeyType: reflect.TypeFor[string](), Text: true},
		{Name: "tags", KeyType: reflect.TypeFor[string](), Text: true},
		{Name: "value", KeyType: reflect.TypeFor[int](), Text: true},
		{Name: "region", KeyType: reflect.TypeFor[anyRegion]()},
	}
	if got := at.Indexes(); !slices.Equal(got, want) {
		t.Errorf("Indexes =\n%v\nwant\n%v", got, want)
	}

	wtxn := db.WriteTxn(tbl)
	done := tbl.RegisterInitializer(wtxn, "sync")
	if _, _, err := tbl.Insert(wtxn, &testObject{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	// A write transaction's own reads see its writes.
	if n, rev := at.NumObjects(wtxn), at.Revision(wtxn); n != 1 || rev != tbl.Revision(wtxn) || rev == 0 {
		t.Errorf("in the write transaction: %d objects at revision %d", n, rev)
	}
	if _, _, found, err := at.Get(wtxn, "name", "a"); !found || err != nil {
		t.Errorf("Get(name, a) in the write transaction: %v, %v", found, err)
	}
	rtxn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if init, _ := at.Initialized(rtxn); init || !slices.Equal(at.PendingInitializers(rtxn), []string{"sync"}) {
		t.Errorf("Initialized = %v, pending %v; want false, [sync]", init, at.PendingInitializers(rtxn))
	}
	wtxn = db.WriteTxn(tbl)
	done(wtxn)
	rtxn = mustCommit(t, wtxn)
	if init, ch := at.Initialized(rtxn); !init || !isClosedChan(ch) || len(at.PendingInitializers(rtxn)) != 0 {
		t.Errorf("after done: Initialized = %v, pending %v", init, at.PendingInitializers(rtxn))
	}
}

func isClosedChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestAnyTableKeys(t *testing.T) {
	_, _, at := anyTestDB(t)
	for _, c := range []struct {
		index, text string
		want        index.Key
	}{
		{"", "7", index.Uint64(7)},
		{"id", "18446744073709551615", index.Uint64(1<<64 - 1)},
		{"name", "eu west", index.String("eu west")},
		{"value", "-3", index.Int(-3)},
	} {
		k, err := at.ParseKey(c.index, c.text)
		if err != nil || !k.Equal(c.want) {
			t.Errorf("ParseKey(%q, %q) = %v, %v; want %v", c.index, c.text, k, err, c.want)
		}
		if s, err := at.KeyString(c.index, k); err != nil || s != c.text {
			t.Errorf("KeyString(%q, %v) = %q, %v; want %q", c.index, k, s, err, c.text)
		}
	}
	for _, c := range []struct {
		index, text string
		want        error
	}{
		{"nope", "1", ErrIndexNotFound},
		{"region", "eu", ErrNoFromString},
		{"id", "-1", index.ErrParseKey},
		{"value", "x", index.ErrParseKey},
	} {
		if k, err := at.ParseKey(c.index, c.text); !errors.Is(err, c.want) {
			t.Errorf("ParseKey(%q, %q) = %v, %v; want %v", c.index, c.text, k, err, c.want)
		}
	}
	if _, err := at.KeyString("nope", nil); !errors.Is(err, ErrIndexNotFound) {
		t.Errorf("KeyString(nope): %v", err)
	}
	// An index's own FromString error is made an index.ErrParseKey.
	mine := errors.New("not a colour")
	db := New()
	colour := Index[*testObject, string]{
		Name:       "colour",
		FromObject: func(o *testObject) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
		FromString: func(string) (index.Key, error) { return nil, mine },
	}
	MustNewTable(db, "c", idIndex, colour)
	ct, _ := db.AnyTable("c")
	if _, err := ct.ParseKey("colour", "x"); !errors.Is(err, index.ErrParseKey) || !errors.Is(err, mine) {
		t.Errorf("ParseKey through a failing FromString: %v", err)
	}
}

// anyObjects runs Read and collects its objects' IDs and cursors.
func anyObjects(t *testing.T, at AnyTable, txn ReadTxn, q AnyQuery) (ids []uint64, cursors [][]byte) {
	t.Helper()
	seq, err := at.Read(txn, q)
	if err != nil {
		t.Fatalf("Read(%+v): %v", q, err)
	}
	for o := range seq {
		obj, ok := o.Object.(*testObject)
		if !ok {
			t.Fatalf("Read yields %T", o.Object)
		}
		if o.Revision == 0 {
			t.Fatalf("Read yields revision 0 for %d", obj.ID)
		}
		ids = append(ids, obj.ID)
		cursors = append(cursors, bytes.Clone(o.Cursor))
	}
	return ids, cursors
}

func idsOf(seq func(func(*testObject, Revision) bool)) []uint64 {
	var ids []uint64
	for o := range seq {
		ids = append(ids, o.ID)
	}
	return ids
}

// anyTypedQuery is the typed read that an AnyQuery on the test table must
// match.
func anyTypedQuery(tbl RWTable[*testObject], txn ReadTxn, q AnyQuery) []uint64 {
	ix := q.Index
	if ix == "" {
		ix = "id"
	}
	key := QueryKey[*testObject](ix, q.Key)
	switch q.Op {
	case QueryList:
		return idsOf(tbl.List(txn, key))
	case QueryPrefix:
		return idsOf(tbl.Prefix(txn, key))
	case QueryLowerBound:
		return idsOf(tbl.LowerBound(txn, key))
	case QueryRange:
		return idsOf(tbl.Range(txn, key, QueryKey[*testObject](ix, q.To)))
	}
	if ix == "id" {
		return idsOf(tbl.All(txn))
	}
	return idsOf(tbl.LowerBound(txn, key)) // from the empty key: everything
}

// QueryKey makes a Query of an encoded key on a named index, for tests.
func QueryKey[Obj any](indexName string, key index.Key) Query[Obj] {
	return Query[Obj]{index: indexName, key: sliceKey(key)}
}

// TestAnyTableRead compares Read, on random tables and queries, with the
// typed table's reads, and checks that paging through a result with
// cursors gives the same objects.
func TestAnyTableRead(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	names := []string{"", "a", "ab", "abc", "b", "ba", "c"}
	for round := range 30 {
		db, tbl, at := anyTestDB(t)
		var objs []*testObject
		for i := range 1 + r.IntN(60) {
			tags := part.NewSet[string]()
			for range r.IntN(3) {
				tags = tags.Add(names[r.IntN(len(names))])
			}
			objs = append(objs, &testObject{ID: uint64(r.IntN(100)), Name: fmt.Sprint(names[r.IntN(len(names))], i), Tags: tags, Value: r.IntN(5) - 2})
		}
		txn := mustInsertAll(t, db, tbl, objs...)
		for range 100 {
			q := AnyQuery{Index: []string{"", "id", "name", "tags", "value"}[r.IntN(5)], Op: QueryOp(r.IntN(5))}
			randKey := func() index.Key {
				switch q.Index {
				case "", "id":
					return index.Uint64(uint64(r.IntN(100)))
				case "value":
					return index.Int(r.IntN(5) - 2)
				}
				return index.String(names[r.IntN(len(names))])
			}
			if q.Op != QueryAll {
				q.Key = randKey()
			}
			if q.Op == QueryRange {
				q.To = randKey()
			}
			want := anyTypedQuery(tbl, txn, q)
			got, cursors := anyObjects(t, at, txn, q)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: Read(%v %s %x %x) = %v, typed %v", round, q.Op, q.Index, q.Key, q.To, got, want)
			}
			// Page through with random page sizes; pages may repeat an
			// object of several keys, which a single Read returns once.
			var paged []uint64
			seen := map[uint64]bool{}
			pq := q
			for {
				ids, cs := anyObjects(t, at, txn, pq)
				n := min(len(ids), 1+r.IntN(4))
				for _, id := range ids[:n] {
					if !seen[id] {
						seen[id] = true
						paged = append(paged, id)
					}
				}
				if n == len(ids) {
					break
				}
				pq.After = cs[n-1]
			}
			if !slices.Equal(paged, want) {
				t.Fatalf("round %d: paged Read(%v %s %x %x) = %v, want %v", round, q.Op, q.Index, q.Key, q.To, paged, want)
			}
			if q.Index != "tags" {
				for i := 1; i < len(cursors); i++ {
					if bytes.Compare(cursors[i-1], cursors[i]) >= 0 {
						t.Fatalf("cursors out of order: %x then %x", cursors[i-1], cursors[i])
					}
				}
			}
		}
	}
}

// TestAnyTableCursorNewSnapshot: a cursor from one snapshot resumes in a
// newer one just after its position, seeing the objects written since.
func TestAnyTableCursorNewSnapshot(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	txn := mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "1"}, &testObject{ID: 3, Name: "3"}, &testObject{ID: 5, Name: "5"})
	seq, _ := at.Read(txn, AnyQuery{})
	var cursor []byte
	for o := range seq {
		cursor = bytes.Clone(o.Cursor)
		break
	}
	wtxn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(wtxn, &testObject{ID: 2, Name: "2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Delete(wtxn, &testObject{ID: 3}); err != nil {
		t.Fatal(err)
	}
	txn = mustCommit(t, wtxn)
	if ids, _ := anyObjects(t, at, txn, AnyQuery{After: cursor}); !slices.Equal(ids, []uint64{2, 5}) {
		t.Errorf("after the cursor of 1 in a newer snapshot: %v, want [2 5]", ids)
	}
	// A cursor before a query's bound does not widen it.
	if ids, _ := anyObjects(t, at, txn, AnyQuery{Op: QueryLowerBound, Key: index.Uint64(3), After: cursor}); !slices.Equal(ids, []uint64{5}) {
		t.Errorf("LowerBound(3) after the cursor of 1: %v, want [5]", ids)
	}
}

func TestAnyTableReadErrors(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	txn := mustInsertAll(t, db, tbl, &testObject{ID: 1})
	for _, c := range []struct {
		q    AnyQuery
		want error
	}{
		{AnyQuery{Op: QueryRange + 1}, ErrInvalidQuery},
		{AnyQuery{Op: QueryPrefix, To: index.Uint64(1)}, ErrInvalidQuery},
		{AnyQuery{Index: "nope"}, ErrIndexNotFound},
	} {
		if seq, err := at.Read(txn, c.q); !errors.Is(err, c.want) || seq != nil {
			t.Errorf("Read(%+v) = %v; want %v", c.q, err, c.want)
		}
		if _, ch, err := at.ReadWatch(txn, c.q); !errors.Is(err, c.want) || ch != nil {
			t.Errorf("ReadWatch(%+v) = %v; want %v", c.q, err, c.want)
		}
	}
	if _, err := ParseQueryOp("between"); !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("ParseQueryOp(between): %v", err)
	}
	for op := QueryAll; op <= QueryRange; op++ {
		if got, err := ParseQueryOp(op.String()); got != op || err != nil {
			t.Errorf("ParseQueryOp(%q) = %v, %v", op.String(), got, err)
		}
	}
	if op, _ := ParseQueryOp("get"); op != QueryList {
		t.Errorf("ParseQueryOp(get) = %v", op)
	}
	if s := (QueryRange + 1).String(); s != "QueryOp(5)" {
		t.Errorf("String of an unknown op: %q", s)
	}
}

func TestAnyTableReadWatch(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	txn := mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "a"}, &testObject{ID: 2, Name: "b"})
	watch := func(q AnyQuery) <-chan struct{} {
		seq, ch, err := at.ReadWatch(txn, q)
		if err != nil || seq == nil || ch == nil {
			t.Fatalf("ReadWatch(%+v): %v", q, err)
		}
		return ch
	}
	getA := watch(AnyQuery{Index: "name", Op: QueryList, Key: index.String("a")})
	getB := watch(AnyQuery{Index: "name", Op: QueryList, Key: index.String("b")})
	prefixA := watch(AnyQuery{Index: "name", Op: QueryPrefix, Key: index.String("a")})
	all := watch(AnyQuery{})
	mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "a", Value: 1})
	for name, c := range map[string]struct {
		ch   <-chan struct{}
		want bool
	}{"get a": {getA, true}, "get b": {getB, false}, "prefix a": {prefixA, true}, "all": {all, true}} {
		if got := isClosedChan(c.ch); got != c.want {
			t.Errorf("%s: closed %v, want %v", name, got, c.want)
		}
	}
}

func TestAnyTableTextReads(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	a := &testObject{ID: 1, Name: "ab", Value: 2, Tags: part.NewSet("x")}
	b := &testObject{ID: 2, Name: "b", Value: 2}
	txn := mustInsertAll(t, db, tbl, a, b)
	if obj, rev, found, err := at.Get(txn, "name", "ab"); obj != a || !found || err != nil || rev == 0 {
		t.Errorf("Get(name, ab) = %v, %d, %v, %v", obj, rev, found, err)
	}
	if obj, _, found, err := at.Get(txn, "name", "zz"); obj != nil || found || err != nil {
		t.Errorf("Get(name, zz) = %v, %v, %v", obj, found, err)
	}
	if _, _, _, err := at.Get(txn, "value", "x"); !errors.Is(err, index.ErrParseKey) {
		t.Errorf("Get(value, x): %v", err)
	}
	count := func(seq func(func(any, Revision) bool), err error) int {
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range seq {
			n++
		}
		return n
	}
	for name, c := range map[string]struct{ got, want int }{
		"List(value, 2)":       {count(at.List(txn, "value", "2")), 2},
		"Prefix(name, a)":      {count(at.Prefix(txn, "name", "a")), 1},
		"LowerBound(id, 2)":    {count(at.LowerBound(txn, "id", "2")), 1},
		"List(tags, x)":        {count(at.List(txn, "tags", "x")), 1},
		"All":                  {count(at.All(txn), nil), 2},
		"LowerBound(name, aa)": {count(at.LowerBound(txn, "", "0")), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d objects, want %d", name, c.got, c.want)
		}
	}
	for _, err := range []error{errOf2(at.List(txn, "nope", "1")), errOf2(at.Prefix(txn, "region", "x")), errOf2(at.LowerBound(txn, "id", "-"))} {
		if err == nil {
			t.Errorf("a bad text read gave no error")
		}
	}
	seq, ch := at.AllWatch(txn)
	if count(seq, nil) != 2 || isClosedChan(ch) {
		t.Errorf("AllWatch")
	}
	mustInsertAll(t, db, tbl, &testObject{ID: 3, Name: "c"})
	if !isClosedChan(ch) {
		t.Errorf("AllWatch channel open after an insert")
	}
}

func errOf2(_ func(func(any, Revision) bool), err error) error { return err }

func TestAnyTableWrites(t *testing.T) {
	db, tbl, at := anyTestDB(t)
	wtxn := db.WriteTxn(tbl)
	if old, hadOld, err := at.Insert(wtxn, &testObject{ID: 1, Name: "a"}); old != nil || hadOld || err != nil {
		t.Fatalf("Insert = %v, %v, %v", old, hadOld, err)
	}
	if old, hadOld, err := at.Insert(wtxn, &testObject{ID: 1, Name: "b"}); !hadOld || old.(*testObject).Name != "a" || err != nil {
		t.Fatalf("second Insert = %v, %v, %v", old, hadOld, err)
	}
	for _, bad := range []any{testObject{ID: 2}, "x", nil, (*int)(nil)} {
		if _, _, err := at.Insert(wtxn, bad); !errors.Is(err, ErrObjectType) {
			t.Errorf("Insert(%T): %v, want ErrObjectType", bad, err)
		}
		if _, _, err := at.Delete(wtxn, bad); !errors.Is(err, ErrObjectType) {
			t.Errorf("Delete(%T): %v, want ErrObjectType", bad, err)
		}
	}
	// A write the typed table refuses is refused the same way.
	if _, _, err := at.Insert(wtxn, &testObject{ID: 2, Name: "b"}); !errors.Is(err, ErrUniqueConstraint) {
		t.Errorf("Insert of a duplicate name: %v", err)
	}
	if old, hadOld, err := at.Delete(wtxn, &testObject{ID: 9}); old != nil || hadOld || err != nil {
		t.Errorf("Delete of a missing object = %v, %v, %v", old, hadOld, err)
	}
	txn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.NumObjects(txn); n != 1 {
		t.Fatalf("%d objects, want 1", n)
	}
	wtxn = db.WriteTxn(tbl)
	if old, hadOld, err := at.Delete(wtxn, &testObject{ID: 1}); !hadOld || old.(*testObject).Name != "b" || err != nil {
		t.Errorf("Delete = %v, %v, %v", old, hadOld, err)
	}
	wtxn.Abort()
	if _, _, err := at.Insert(wtxn, &testObject{ID: 5}); !errors.Is(err, ErrTransactionClosed) {
		t.Errorf("Insert after Abort: %v", err)
	}

	obj, err := at.DecodeJSON([]byte(`{"ID": 7, "Name": "x", "Tags": ["t"]}`))
	if o, ok := obj.(*testObject); err != nil || !ok || o.ID != 7 || !o.Tags.Has("t") {
		t.Errorf("DecodeJSON = %#v, %v", obj, err)
	}
	if obj, err := at.DecodeJSON([]byte(`{"ID": "seven"}`)); err == nil || obj != nil {
		t.Errorf("DecodeJSON of a bad object = %v, %v", obj, err)
	}
}

// TestAnyTableRevisionIndex: a table's revision index is read like any
// other, its keys typed as revisions.
func TestAnyTableRevisionIndex(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "byrev", RevisionIndex[*testObject]())
	txn := mustInsertAll(t, db, tbl, &testObject{ID: 3}, &testObject{ID: 1}, &testObject{ID: 2})
	at, err := db.AnyTable("byrev")
	if err != nil {
		t.Fatal(err)
	}
	infos := at.Indexes()
	if last := infos[len(infos)-1]; last.Name != RevisionIndexName || !last.Text || last.KeyType != reflect.TypeFor[Revision]() {
		t.Fatalf("revision index described as %+v", last)
	}
	seq, err := at.LowerBound(txn, RevisionIndexName, "2")
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for o := range seq {
		ids = append(ids, o.(*testObject).ID)
	}
	if !slices.Equal(ids, []uint64{1, 2}) {
		t.Fatalf("objects from revision 2: %v, want [1 2]", ids)
	}
}
