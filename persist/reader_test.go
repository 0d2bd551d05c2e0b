package persist

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
)

// readerStore makes a store with two tables of items, "items" (Binary) and
// "docs" (JSON), whose last changes include deletes, closes it and returns
// its directory, the database it was written from and its tables.
func readerStore(t *testing.T, fs vfs.FS, dir string) (*strata.DB, strata.RWTable[*item], strata.RWTable[*item]) {
	t.Helper()
	s := openStore(t, dir, Options{FS: fs})
	db := strata.New()
	items := itemTable(t, s, db, "items", nil)
	docs := itemTable(t, s, db, "docs", JSON[*item]())
	txn := db.WriteTxn(items, docs)
	for i := range 300 {
		if _, _, err := items.Insert(txn, &item{ID: uint64(i), Name: "n" + strings.Repeat("x", i%7), Value: int64(i)}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, _, err := docs.Insert(txn, &item{ID: uint64(i), Name: "doc", Value: -int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustCommit(t, txn)
	txn = db.WriteTxn(items, docs)
	if _, _, err := items.Delete(txn, &item{ID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := docs.Insert(txn, &item{ID: 3, Name: "changed"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := docs.Delete(txn, &item{ID: 6}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	closeStore(t, s)
	return db, items, docs
}

func openReader(t testing.TB, fs vfs.FS, dir string) *Reader {
	t.Helper()
	r, err := OpenReader(dir, Options{FS: fs, Logger: quietLogger(t)})
	if err != nil {
		t.Fatalf("OpenReader: %v", err)
	}
	return r
}

// TestReader reads back the catalog, schemas, revisions and objects of a
// store as they were written.
func TestReader(t *testing.T) {
	fs := vfs.NewMem()
	db, items, docs := readerStore(t, fs, "/db")
	r := openReader(t, fs, "/db")
	defer r.Close()

	if f := r.Format(); f.Store != storeFormat || f.Pebble != uint64(pebbleFormat) {
		t.Errorf("format %+v", f)
	}
	rtxn := db.ReadTxn()
	tables := r.Tables()
	if len(tables) != 2 || tables[0].Name != "docs" || tables[1].Name != "items" {
		t.Fatalf("tables %+v", tables)
	}
	for _, c := range []struct {
		tbl   strata.RWTable[*item]
		codec Codec[*item]
	}{{docs, JSON[*item]()}, {items, Binary[item]()}} {
		st, err := r.Table(c.tbl.Name())
		if err != nil {
			t.Fatal(err)
		}
		if st.Schema == nil || *st.Schema != TableSchema(c.codec) {
			t.Errorf("%s: schema %v, want %v", st.Name, st.Schema, TableSchema(c.codec))
		}
		// Both tables' last change was a delete: their revision is recorded.
		if st.Revision != c.tbl.Revision(rtxn) {
			t.Errorf("%s: revision %d, want %d", st.Name, st.Revision, c.tbl.Revision(rtxn))
		}
		var got, want []StoredRecord
		for o, err := range r.Objects(st.Name, nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, StoredRecord{slices.Clone(o.Key), o.Version, o.Revision, slices.Clone(o.Value)})
		}
		for o, rev := range c.tbl.All(rtxn) {
			v, _ := c.codec.Append(nil, o)
			key, _ := itemByID.QueryFromObject(o)
			want = append(want, StoredRecord{key.Key(), 1, rev, v})
		}
		if !slices.EqualFunc(got, want, storedEqual) {
			t.Errorf("%s: %d objects read, %d written, or they differ", st.Name, len(got), len(want))
		}
		if n, err := r.TableDiskUsage(st.Name); err != nil || n == 0 {
			t.Errorf("%s: disk usage %d, %v", st.Name, n, err)
		}
	}
	if r.DiskUsage() == 0 {
		t.Error("no disk usage")
	}
	// Bounds.
	var ids []uint64
	for o, err := range r.Objects("items", itemByID.Query(5).Key(), itemByID.Query(10).Key()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, binary.BigEndian.Uint64(o.Key))
	}
	if !slices.Equal(ids, []uint64{5, 6, 8, 9}) {
		t.Errorf("objects in [5, 10): %v", ids)
	}
	// A JSON table's values are the objects' JSON.
	for o, err := range r.Objects("docs", nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(o.Value) {
			t.Fatalf("docs value %q", o.Value)
		}
	}
	// An unknown table.
	for _, err := range r.Objects("nope", nil, nil) {
		if !errors.Is(err, ErrTableUnknown) {
			t.Errorf("Objects of an unknown table: %v", err)
		}
	}
	if _, err := r.TableDiskUsage("nope"); !errors.Is(err, ErrTableUnknown) {
		t.Errorf("TableDiskUsage of an unknown table: %v", err)
	}
	var problems []error
	if err := r.Check(func(err error) { problems = append(problems, err) }); err != nil || len(problems) != 0 {
		t.Errorf("Check of a sound store: %v, %v", err, problems)
	}
	if err := r.CheckLSM(); err != nil {
		t.Errorf("CheckLSM of a sound store: %v", err)
	}
}

func storedEqual(a, b StoredRecord) bool {
	return bytes.Equal(a.Key, b.Key) && a.Version == b.Version && a.Revision == b.Revision && bytes.Equal(a.Value, b.Value)
}

// TestReaderLocks: a Reader and a Store exclude each other, in this
// process and across processes.
func TestReaderLocks(t *testing.T) {
	dir := t.TempDir()
	readerStore(t, vfs.Default, dir)
	s := openStore(t, dir, Options{})
	if _, err := OpenReader(dir, Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenReader of an open store: %v", err)
	}
	closeStore(t, s)
	r := openReader(t, vfs.Default, dir)
	if _, err := Open(dir, Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a store a Reader has: %v", err)
	}
	if _, err := OpenReader(dir+"/.", Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second OpenReader: %v", err)
	}
	if out := runChild(t, "lock", dir); out != "locked" {
		t.Fatalf("Open in a child process while a Reader has the store: %s", out)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, openStore(t, dir, Options{}))
}

// TestReaderWritesNothing: reading a store, even one whose log was not
// flushed, leaves its files as they were; a directory without a store is
// refused with ErrNoStore and left empty.
func TestReaderWritesNothing(t *testing.T) {
	dir := t.TempDir()
	readerStore(t, vfs.Default, dir)
	before := dirState(t, dir)
	r := openReader(t, vfs.Default, dir)
	for _, err := range r.Objects("items", nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Check(func(error) {}); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckLSM(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirState(t, dir); after != before {
		t.Errorf("the store's files changed:\n%s\nto\n%s", before, after)
	}

	empty := t.TempDir()
	for _, d := range []string{empty, filepath.Join(empty, "missing")} {
		if _, err := OpenReader(d, Options{Logger: quietLogger(t)}); !errors.Is(err, ErrNoStore) {
			t.Errorf("OpenReader(%s): %v", d, err)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("OpenReader wrote into a directory without a store: %v", ents)
	}
}

// dirState describes the files of dir: names, sizes and modification times.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue // taking the lock may touch it
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %v\n", e.Name(), info.Size(), info.ModTime())
	}
	return b.String()
}

// TestReaderCheck: each kind of record this package does not write is
// reported once, and a malformed value by Objects, which goes on.
func TestReaderCheck(t *testing.T) {
	fs := vfs.NewMem()
	readerStore(t, fs, "/db")
	items, docs := uint32(1), uint32(2)
	bad := map[string][2][]byte{
		"catalog entry \"bad\": table id":  {catalogKey("bad"), {0x80}},
		"both have table id 1":             {catalogKey("twin"), binary.AppendUvarint(nil, uint64(items))},
		"schema of table id 9":             {schemaKey(9), appendSchema(nil, schema{codec: "json", version: 1, typ: "x"})},
		"table \"docs\": schema record":    {schemaKey(docs), {5}},
		"table \"docs\": revision record":  {makeTableKeys(docs).rev, {0x80}},
		"revision of table id 9":           {makeTableKeys(9).rev, {1}},
		"objects of table id 9":            {append(makeTableKeys(9).prefix, 1), {1, 1, 'x'}},
		"unknown record \"mjunk\"":         {[]byte("mjunk"), {1}},
		"unknown record \"zzz\"":           {[]byte("zzz"), {1}},
		"catalog entry \"zero\": table id": {catalogKey("zero"), {0}},
	}
	for _, kv := range bad {
		setRaw(t, fs, "/db", kv[0], kv[1])
	}
	// A malformed value among the objects, and objects of table 9 beyond
	// the first (reported once).
	setRaw(t, fs, "/db", append(makeTableKeys(items).prefix, itemByID.Query(5).Key()...), []byte{0x80})
	setRaw(t, fs, "/db", append(makeTableKeys(9).prefix, 2), []byte{1, 1, 'y'})

	r := openReader(t, fs, "/db")
	defer r.Close()
	var problems []string
	if err := r.Check(func(err error) {
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("problem %v does not wrap ErrCorrupt", err)
		}
		problems = append(problems, err.Error())
	}); err != nil {
		t.Fatal(err)
	}
	for what := range bad {
		n := 0
		for _, p := range problems {
			if strings.Contains(p, what) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q reported %d times in %q", what, n, problems)
		}
	}
	if len(problems) != len(bad) {
		t.Errorf("%d problems for %d bad records: %q", len(problems), len(bad), problems)
	}
	// The damaged docs schema and revision leave docs out of the catalog,
	// and the bad entries too; "twin" is well formed.
	var names []string
	for _, t := range r.Tables() {
		names = append(names, t.Name)
	}
	if !slices.Equal(names, []string{"items", "twin"}) {
		t.Errorf("tables %v", names)
	}
	n, errs := 0, 0
	for o, err := range r.Objects("items", nil, nil) {
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !bytes.Equal(o.Key, itemByID.Query(5).Key()) {
				t.Errorf("malformed value: %v, key %x", err, o.Key)
			}
			errs++
			continue
		}
		n++
	}
	if errs != 1 || n != 298 {
		t.Errorf("%d objects and %d errors, want 298 and 1", n, errs)
	}
	// The raw export refuses the malformed value.
	if err := r.WriteSnapshot(new(bytes.Buffer), "items"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("WriteSnapshot of a table with a malformed value: %v", err)
	}

	// A store without its format record.
	fs2 := vfs.NewMem()
	readerStore(t, fs2, "/db")
	deleteRaw(t, fs2, "/db", formatKey)
	r2 := openReader(t, fs2, "/db")
	defer r2.Close()
	problems = nil
	if err := r2.Check(func(err error) { problems = append(problems, err.Error()) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "no format record") {
		t.Errorf("store without a format record: %q", problems)
	}
}

// deleteRaw deletes one key from the Pebble database of a closed store.
func deleteRaw(t testing.TB, fs vfs.FS, dir string, key []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: &pebbleLogger{log: quietLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Delete(key, pebble.Sync), db.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestReaderDamage: a flipped byte in a table file fails OpenReader,
// CheckLSM or the scan with ErrCorrupt, never crashes; a newer format
// fails with ErrNewerFormat.
func TestReaderDamage(t *testing.T) {
	dir := damagedStore(t, 1000)
	for _, sst := range filesOf(t, dir, "*.sst") {
		flipByte(t, sst, 10)
	}
	r, err := OpenReader(dir, Options{Logger: quietLogger(t)})
	if err == nil {
		err = r.CheckLSM()
		for _, e := range r.Objects("items", nil, nil) {
			err = errors.Join(err, e)
		}
		r.Close()
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged table file: %v", err)
	}

	fs := vfs.NewMem()
	readerStore(t, fs, "/db")
	setRaw(t, fs, "/db", formatKey, binary.AppendUvarint(nil, storeFormat+1))
	if _, err := OpenReader("/db", Options{FS: fs, Logger: quietLogger(t)}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("a newer format: %v", err)
	}
}

// TestReaderWriteSnapshot: the raw export is, byte for byte, what
// WriteSnapshot writes of the tables loaded from the store, and reads back
// into them.
func TestReaderWriteSnapshot(t *testing.T) {
	setBlockTarget(t, 512)
	fs := vfs.NewMem()
	readerStore(t, fs, "/db")

	// The tables as a program loads them.
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	items := itemTable(t, s, db, "items", nil)
	docs := itemTable(t, s, db, "docs", JSON[*item]())
	want := snapWrite(t, db.ReadTxn(), Table(docs, JSON[*item]()), Table(items, Binary[item]()))
	wantItems := snapWrite(t, db.ReadTxn(), Table(items, Binary[item]()))
	closeStore(t, s)

	r := openReader(t, fs, "/db")
	defer r.Close()
	var all, one bytes.Buffer
	if err := r.WriteSnapshot(&all); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSnapshot(&one, "items"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all.Bytes(), want) || !bytes.Equal(one.Bytes(), wantItems) {
		t.Fatalf("raw export of %d and %d bytes differs from WriteSnapshot's %d and %d", all.Len(), one.Len(), len(want), len(wantItems))
	}
	if err := r.WriteSnapshot(new(bytes.Buffer), "items", "nope"); !errors.Is(err, ErrTableUnknown) {
		t.Errorf("an unknown table: %v", err)
	}
	if err := r.WriteSnapshot(new(bytes.Buffer), "items", "items"); err == nil {
		t.Error("a table given twice: no error")
	}
	path := filepath.Join(t.TempDir(), "s.snap")
	if err := r.WriteSnapshotFile(path, "items"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, wantItems) {
		t.Fatalf("WriteSnapshotFile: %d bytes, %v", len(data), err)
	}
}

// TestReaderWriteSnapshotVersions: a table whose values have one older
// codec version is exported with it and migrates on import; one whose
// values have two versions is refused.
func TestReaderWriteSnapshotVersions(t *testing.T) {
	fs := vfs.NewMem()
	readerStore(t, fs, "/db")
	// Register items with a Versioned codec: the schema goes to version 2,
	// the stored values stay at 1.
	v2 := Versioned(Binary[item](), 2, func(data []byte, _ uint32) (*item, error) {
		it := new(item)
		return it, it.UnmarshalBinary(data)
	})
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	items := itemTable(t, s, db, "items", v2)
	closeStore(t, s)

	r := openReader(t, fs, "/db")
	var buf bytes.Buffer
	if err := r.WriteSnapshot(&buf, "items"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	sr, _, err := snapRecords(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if info := sr.Tables()[0]; info.CodecVersion != 1 || info.Codec != "binary" {
		t.Errorf("header %+v", info)
	}
	db2 := strata.New()
	items2 := strata.MustNewTable(db2, "items", itemByID, itemByName)
	if _, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), Table(items2, v2)); err != nil {
		t.Fatal(err)
	}
	if got, want := itemRows(db2.ReadTxn(), items2), itemRows(db.ReadTxn(), items); !maps.Equal(got, want) {
		t.Error("the migrated import differs")
	}

	// One object written at version 2.
	s = openStore(t, "/db", Options{FS: fs})
	db = strata.New()
	items = itemTable(t, s, db, "items", v2)
	txn := db.WriteTxn(items)
	if _, _, err := items.Insert(txn, &item{ID: 1000, Name: "new"}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	closeStore(t, s)
	r = openReader(t, fs, "/db")
	defer r.Close()
	if err := r.WriteSnapshot(new(bytes.Buffer), "items"); err == nil || !strings.Contains(err.Error(), "2 codec versions") {
		t.Errorf("a table of two codec versions: %v", err)
	}
}

// TestTableSchema: the schema a binding records, with and without
// TypeName.
func TestTableSchema(t *testing.T) {
	if got, want := TableSchema(JSON[*item]()), (Schema{"json", 1, "*github.com/strata-db/strata/persist.item"}); got != want {
		t.Errorf("%v, want %v", got, want)
	}
	if got := TableSchema(Codec[*item](snapFuncsItem), TypeName("it")); got != (Schema{"funcs", 3, "it"}) {
		t.Errorf("%v", got)
	}
}

var snapFuncsItem = Funcs[*item]{V: 3}

// TestStoreCompact: compacting a store whose objects were replaced and
// mostly deleted (with Pebble's own compactions off) shrinks it and keeps
// what is left; a done context stops it.
func TestStoreCompact(t *testing.T) {
	dir := t.TempDir()
	// reopen closes s (flushing it into table files) and opens it again.
	reopen := func(s *Store) (*Store, *strata.DB, strata.RWTable[*item]) {
		if s != nil {
			closeStore(t, s)
		}
		s = openStore(t, dir, Options{Pebble: func(o *pebble.Options) { o.DisableAutomaticCompactions = true }})
		db := strata.New()
		return s, db, itemTable(t, s, db, "items", nil)
	}
	s, db, items := reopen(nil)
	for round := range 4 {
		txn := db.WriteTxn(items)
		for i := range 5000 {
			if _, _, err := items.Insert(txn, &item{ID: uint64(i), Name: fmt.Sprint(rand.Uint64(), rand.Uint64()), Value: int64(round)}); err != nil {
				t.Fatal(err)
			}
		}
		mustCommit(t, txn)
		s, db, items = reopen(s)
	}
	txn := db.WriteTxn(items)
	if _, err := items.DeleteRange(txn, itemByID.Query(10), itemByID.Query(5000)); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	closeStore(t, s)
	before := sstBytes(t, dir)
	s, db, items = reopen(nil)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Compact(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Compact with a done context: %v", err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := itemRows(db.ReadTxn(), items)
	closeStore(t, s)
	if after := sstBytes(t, dir); after >= before/2 {
		t.Errorf("table files of %d bytes before, %d after compacting", before, after)
	}
	if err := s.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact of a closed store: %v", err)
	}
	s, db, items = reopen(nil)
	defer closeStore(t, s)
	if got := itemRows(db.ReadTxn(), items); len(got) != 10 || !maps.Equal(got, want) {
		t.Errorf("after compacting: %d objects", len(got))
	}
}

// sstBytes returns the size of the table files in dir.
func sstBytes(t *testing.T, dir string) int64 {
	var n int64
	for _, f := range filesOf(t, dir, "*.sst") {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}
