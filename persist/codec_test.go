package persist

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
)

// itemV1 is an older encoding of items: the ID and the name, no value.
var itemV1 = Funcs[*item]{
	V: 1,
	Enc: func(dst []byte, o *item) ([]byte, error) {
		return append(binary.BigEndian.AppendUint64(dst, o.ID), o.Name...), nil
	},
	Dec: func(data []byte, _ uint32) (*item, error) {
		if len(data) < 8 {
			return nil, errors.New("item v1: short")
		}
		return &item{ID: binary.BigEndian.Uint64(data), Name: string(data[8:])}, nil
	},
}

// itemV2 writes the binary encoding as version 2 and migrates version 1
// values, giving them the value -1.
var itemV2 = Versioned(Binary[item](), 2, func(data []byte, version uint32) (*item, error) {
	o, err := itemV1.Decode(data, version)
	if err == nil {
		o.Value = -1
	}
	return o, err
})

// TestSchemaEvolution: values keep the version they were written with;
// a Versioned codec reads old ones through its migration; a value of a
// newer version than the codec knows fails Register with ErrUnknownVersion,
// wrapped with the table's name, and changes nothing.
func TestSchemaEvolution(t *testing.T) {
	fs := vfs.NewMem()
	reopen := func(codec Codec[*item]) (*Store, *strata.DB, strata.RWTable[*item], error) {
		s := openStore(t, "/db", Options{FS: fs})
		db := strata.New()
		tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
		return s, db, tbl, Register(s, db, tbl, codec)
	}
	write := func(db *strata.DB, tbl strata.RWTable[*item], objs ...*item) {
		txn := db.WriteTxn(tbl)
		for _, o := range objs {
			if _, _, err := tbl.Insert(txn, o); err != nil {
				t.Fatal(err)
			}
		}
		mustCommit(t, txn)
	}

	// Version 1.
	s, db, tbl, err := reopen(itemV1)
	if err != nil {
		t.Fatal(err)
	}
	write(db, tbl, &item{ID: 1, Name: "one", Value: 10}, &item{ID: 2, Name: "two", Value: 20})
	closeStore(t, s)

	// Version 2 reads version 1 through the migration, and writes version 2.
	s, db, tbl, err = reopen(itemV2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]item{1: {1, "one", -1}, 2: {2, "two", -1}}
	if got := itemValues(db, tbl); !maps.Equal(got, want) {
		t.Fatalf("migrated: %v", got)
	}
	write(db, tbl, &item{ID: 2, Name: "two", Value: 22}, &item{ID: 3, Name: "three", Value: 33})
	closeStore(t, s)

	// A mix of versions 1 and 2.
	s, db, tbl, err = reopen(itemV2)
	if err != nil {
		t.Fatal(err)
	}
	want = map[uint64]item{1: {1, "one", -1}, 2: {2, "two", 22}, 3: {3, "three", 33}}
	if got := itemValues(db, tbl); !maps.Equal(got, want) {
		t.Fatalf("versions 1 and 2: %v", got)
	}
	checkNameIndex(t, db.ReadTxn(), tbl)
	closeStore(t, s)

	// Version 1 cannot read version 2: refused, named, nothing loaded.
	s, db, tbl, err = reopen(itemV1)
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), `table "items"`) {
		t.Fatalf("Register with an older codec: %v", err)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused load left objects")
	}
	// Refused: not initialized, and writes to it are refused.
	if ok, _ := tbl.Initialized(db.ReadTxn()); ok {
		t.Fatal("a refused table reads as initialized")
	}
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &item{ID: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("commit to a refused table: %v", err)
	}
	closeStore(t, s)

	// The refused load changed nothing in the store.
	s, db, tbl, err = reopen(itemV2)
	if err != nil {
		t.Fatal(err)
	}
	if got := itemValues(db, tbl); !maps.Equal(got, want) {
		t.Fatalf("after a refused load: %v", got)
	}
	closeStore(t, s)
}

func itemValues(db *strata.DB, tbl strata.Table[*item]) map[uint64]item {
	out := map[uint64]item{}
	for o := range tbl.All(db.ReadTxn()) {
		out[o.ID] = *o
	}
	return out
}

// TestCodecsCopy: the decoded objects of the package's codecs do not share
// memory with the data they were decoded from, which Pebble reuses.
func TestCodecsCopy(t *testing.T) {
	o := &item{ID: 7, Name: "seven", Value: 77}
	for name, c := range map[string]Codec[*item]{
		"json":      JSON[*item](),
		"binary":    Binary[item](),
		"funcs":     itemV1,
		"versioned": itemV2,
	} {
		data, err := c.Append(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(data, c.Version())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before := *got
		for i := range data {
			data[i] = 'X'
		}
		if *got != before || got.Name != "seven" {
			t.Fatalf("%s: the decoded object changed with its data: %+v", name, got)
		}
		if _, err := c.Decode(data, c.Version()+1); !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("%s: decoding a newer version: %v", name, err)
		}
	}
}

// panickyItems is the binary codec of items, except that it panics when it
// encodes an item named "panic": a codec with a bug.
var panickyItems = Funcs[*item]{
	V: 1,
	Enc: func(dst []byte, o *item) ([]byte, error) {
		if o.Name == "panic" {
			panic("codec bug")
		}
		return o.AppendBinary(dst)
	},
	Dec: func(data []byte, _ uint32) (*item, error) { o := new(item); return o, o.UnmarshalBinary(data) },
}

// TestCodecPanicInCommit: a codec that panics inside Commit, with a real
// store, leaves the transaction aborted (nothing of it in memory or in the
// store, in any of its tables), the tables unlocked at once, and the store
// usable: the panic goes on to the caller, later commits succeed and are
// durable.
func TestCodecPanicInCommit(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	other, _ := strata.NewTable(db, "other", itemByID)
	memory, _ := strata.NewTable(db, "memory", itemByID)
	if err := s.Register(Table(tbl, Codec[*item](panickyItems)), Table(other, Binary[item]())); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 1, Name: "one"})
	before := db.ReadTxn()

	txn := db.WriteTxn(tbl, other, memory)
	for _, w := range []struct {
		tbl strata.RWTable[*item]
		obj *item
	}{{other, &item{ID: 2, Name: "two"}}, {memory, &item{ID: 3}}, {tbl, &item{ID: 4, Name: "panic"}}} {
		if _, _, err := w.tbl.Insert(txn, w.obj); err != nil {
			t.Fatal(err)
		}
	}
	func() {
		defer func() {
			if r := recover(); r != "codec bug" {
				t.Fatalf("Commit recovered %v, want the codec's panic", r)
			}
		}()
		_, err := txn.Commit()
		t.Fatalf("Commit returned (error %v), want the codec's panic", err)
	}()

	now := db.ReadTxn()
	for _, x := range []strata.RWTable[*item]{tbl, other, memory} {
		if x.NumObjects(now) != x.NumObjects(before) || x.Revision(now) != x.Revision(before) {
			t.Fatalf("table %s: the panicked commit changed it", x.Name())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	locked, err := db.WriteTxnContext(ctx, tbl, other, memory)
	if err != nil {
		t.Fatalf("tables still locked after the panic: %v", err)
	}
	locked.Abort()

	// The store goes on: a commit of the same tables succeeds.
	txn = db.WriteTxn(tbl, other)
	if _, _, err := tbl.Insert(txn, &item{ID: 5, Name: "five"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Insert(txn, &item{ID: 6, Name: "six"}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	closeStore(t, s)

	// Durable is exactly what was acknowledged.
	s = openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID, itemByName)
	other, _ = strata.NewTable(db, "other", itemByID)
	if err := s.Register(Table(tbl, Codec[*item](panickyItems)), Table(other, Binary[item]())); err != nil {
		t.Fatal(err)
	}
	got := map[string][]uint64{}
	for _, x := range []strata.RWTable[*item]{tbl, other} {
		for o := range x.All(db.ReadTxn()) {
			got[x.Name()] = append(got[x.Name()], o.ID)
		}
	}
	if want := map[string][]uint64{"items": {1, 5}, "other": {6}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("reopened: %v, want %v", got, want)
	}
}

// TestSnapshotMigratesType: a snapshot of a table of items restored into a
// table of another object type (hosts) through a Versioned codec whose
// migration turns the old values into the new type: every object is
// migrated once, under its new primary key; the same codec without the
// version step is refused; a snapshot of the migrated table records the
// new schema and reads back without migrating.
func TestSnapshotMigratesType(t *testing.T) {
	db := strata.New()
	items, _ := strata.NewTable(db, "things", itemByID, itemByName)
	writeItems(t, db, items, &item{ID: 1, Name: "a", Value: 80}, &item{ID: 2, Name: "b", Value: 443})
	var snap bytes.Buffer
	if err := WriteSnapshot(&snap, db.ReadTxn(), Table(items, JSON[*item]())); err != nil {
		t.Fatal(err)
	}

	migrated := 0
	toHost := Versioned(JSON[*host](), 2, func(data []byte, version uint32) (*host, error) {
		migrated++
		it, err := JSON[*item]().Decode(data, version)
		if err != nil {
			return nil, err
		}
		return &host{Addr: it.Name, Port: int(it.Value)}, nil
	})
	hostsOf := func() (*strata.DB, strata.RWTable[*host]) {
		db := strata.New()
		hosts, _ := strata.NewTable(db, "things", hostByAddr)
		return db, hosts
	}
	hostMap := func(db *strata.DB, hosts strata.Table[*host]) map[string]int {
		m := map[string]int{}
		for h := range hosts.All(db.ReadTxn()) {
			m[h.Addr] = h.Port
		}
		return m
	}

	hdb, hosts := hostsOf()
	if _, err := ReadSnapshot(bytes.NewReader(snap.Bytes()), Table(hosts, JSON[*host]())); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("ReadSnapshot into another type without a migration: %v", err)
	}
	if _, err := ReadSnapshot(bytes.NewReader(snap.Bytes()), Table(hosts, toHost)); err != nil {
		t.Fatalf("ReadSnapshot with a migration: %v", err)
	}
	want := map[string]int{"a": 80, "b": 443}
	if got := hostMap(hdb, hosts); !maps.Equal(got, want) || migrated != 2 {
		t.Fatalf("migrated %d objects into %v, want %v", migrated, got, want)
	}
	if h, _, ok := hosts.Get(hdb.ReadTxn(), hostByAddr.Query("b")); !ok || h.Port != 443 {
		t.Fatalf("host b by its new primary key: %v %v", h, ok)
	}

	// The migrated table's snapshot is of hosts: it reads back as it is.
	var again bytes.Buffer
	if err := WriteSnapshot(&again, hdb.ReadTxn(), Table(hosts, toHost)); err != nil {
		t.Fatal(err)
	}
	migrated = 0
	hdb2, hosts2 := hostsOf()
	if _, err := ReadSnapshot(bytes.NewReader(again.Bytes()), Table(hosts2, toHost)); err != nil {
		t.Fatal(err)
	}
	if got := hostMap(hdb2, hosts2); !maps.Equal(got, want) || migrated != 0 {
		t.Fatalf("second snapshot: %v, %d migrated", got, migrated)
	}
}
