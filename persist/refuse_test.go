package persist

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// The tests of this file show that a store refuses what it cannot load
// correctly: a changed primary index, another object type or codec, a
// registration that failed.

// itemByShiftedID is a primary index that changed: the key of an item is
// its ID plus 1000.
var itemByShiftedID = strata.Index[*item, uint64]{
	Name:       "id",
	FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.Uint64(o.ID + 1000)) },
	FromKey:    func(id uint64) index.Key { return index.Uint64(id + 1000) },
	Unique:     true,
}

// itemByName10 keys an item by the first character of its name: a primary
// index under which items may collide.
var itemByFirstLetter = strata.Index[*item, string]{
	Name:       "id",
	FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.String(o.Name[:1])) },
	FromKey:    index.String,
	Unique:     true,
}

// memStore reopens a store on fs and registers a table of items under
// name with the given primary index and options.
func registerItems(t *testing.T, fs vfs.FS, primary strata.Indexer[*item], opts ...TableOption) (*Store, *strata.DB, strata.RWTable[*item], error) {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl, err := strata.NewTable(db, "items", primary, itemByName)
	if err != nil {
		t.Fatal(err)
	}
	return s, db, tbl, s.Register(Table(tbl, Binary[item](), opts...))
}

func writeItems(t *testing.T, db *strata.DB, tbl strata.RWTable[*item], objs ...*item) {
	t.Helper()
	txn := db.WriteTxn(tbl)
	for _, o := range objs {
		if _, _, err := tbl.Insert(txn, o); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, txn)
}

// TestPrimaryKeyChanged: objects stored under the keys of an older primary
// index are refused with ErrKeyChanged (a delete made after loading them
// would miss the stored object, which would come back on the next start);
// with Rekey, the keys are rewritten and a delete sticks.
func TestPrimaryKeyChanged(t *testing.T) {
	fs := vfs.NewMem()
	s, db, tbl, err := registerItems(t, fs, itemByID)
	if err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 1, Name: "a"}, &item{ID: 2, Name: "b"}, &item{ID: 3, Name: "c"})
	closeStore(t, s)

	// The index changed: refused, named, nothing loaded.
	s, db, tbl, err = registerItems(t, fs, itemByShiftedID)
	if !errors.Is(err, ErrKeyChanged) || !strings.Contains(err.Error(), `table "items"`) {
		t.Fatalf("Register with a changed primary index: %v", err)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused load left objects")
	}
	closeStore(t, s)

	// With Rekey: loaded under the new keys; a delete sticks.
	s, db, tbl, err = registerItems(t, fs, itemByShiftedID, Rekey())
	if err != nil {
		t.Fatal(err)
	}
	if o, _, ok := tbl.Get(db.ReadTxn(), itemByShiftedID.Query(2)); !ok || o.Name != "b" {
		t.Fatalf("Get by the new key after Rekey: %v %v", o, ok)
	}
	txn := db.WriteTxn(tbl)
	if _, had, err := tbl.Delete(txn, &item{ID: 2}); err != nil || !had {
		t.Fatalf("Delete: %v %v", had, err)
	}
	mustCommit(t, txn)
	closeStore(t, s)

	// Without Rekey now: the keys are the new index's; the delete held.
	s, db, tbl, err = registerItems(t, fs, itemByShiftedID)
	if err != nil {
		t.Fatal(err)
	}
	if got := itemValues(db, tbl); !maps.Equal(got, map[uint64]item{1: {1, "a", 0}, 3: {3, "c", 0}}) {
		t.Fatalf("after Rekey and a delete: %v", got)
	}
	checkNameIndex(t, db.ReadTxn(), tbl)
	closeStore(t, s)

	// The old index now sees changed keys.
	s, _, _, err = registerItems(t, fs, itemByID)
	if !errors.Is(err, ErrKeyChanged) {
		t.Fatalf("Register with the old index after Rekey: %v", err)
	}
	closeStore(t, s)
}

// TestRekeyCollision: a Rekey under which two objects get one key fails and
// changes nothing in the store.
func TestRekeyCollision(t *testing.T) {
	fs := vfs.NewMem()
	s, db, tbl, err := registerItems(t, fs, itemByID)
	if err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 1, Name: "apple"}, &item{ID: 2, Name: "avocado"}, &item{ID: 3, Name: "berry"})
	closeStore(t, s)

	s, db, tbl, err = registerItems(t, fs, itemByFirstLetter, Rekey())
	if !errors.Is(err, strata.ErrRestoreInput) {
		t.Fatalf("Rekey with colliding keys: %v", err)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a failed Rekey left objects")
	}
	closeStore(t, s)

	s, db, tbl, err = registerItems(t, fs, itemByID)
	if err != nil {
		t.Fatal(err)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 3 {
		t.Fatalf("after a failed Rekey the store holds %d objects", n)
	}
	closeStore(t, s)
}

// host is a type other than item, stored under the same table name.
type host struct {
	Addr string
	Port int
}

var hostByAddr = strata.Index[*host, string]{
	Name:       "id",
	FromObject: func(h *host) index.KeySet { return index.NewKeySet(index.String(h.Addr)) },
	FromKey:    index.String,
	Unique:     true,
}

// TestSchemaMismatch: a table stored with one object type is refused when
// registered with another (JSON would decode every record into zero-valued
// hosts), naming what is stored and what is bound; the same holds for a
// snapshot; a codec whose version went up migrates; TypeName keeps a
// renamed type's identity.
func TestSchemaMismatch(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	items, _ := strata.NewTable(db, "things", itemByID, itemByName)
	if err := s.Register(Table(items, JSON[*item]())); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, items, &item{ID: 1, Name: "a", Value: 1}, &item{ID: 2, Name: "b", Value: 2})
	var snap bytes.Buffer
	if err := WriteSnapshot(&snap, db.ReadTxn(), Table(items, JSON[*item]())); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)

	registerHosts := func(codec Codec[*host], opts ...TableOption) (*Store, *strata.DB, strata.RWTable[*host], error) {
		s := openStore(t, "/db", Options{FS: fs})
		db := strata.New()
		hosts, _ := strata.NewTable(db, "things", hostByAddr)
		return s, db, hosts, s.Register(Table(hosts, codec, opts...))
	}
	s, db, hosts, err := registerHosts(JSON[*host]())
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Register of another type: %v", err)
	}
	for _, want := range []string{`table "things"`, "persist.item", "persist.host", "stored with", "bound with"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if hosts.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused table was loaded")
	}
	closeStore(t, s)

	// A snapshot of items restored into hosts: refused, nothing restored.
	db2 := strata.New()
	hosts2, _ := strata.NewTable(db2, "things", hostByAddr)
	if _, err := ReadSnapshot(bytes.NewReader(snap.Bytes()), Table(hosts2, JSON[*host]())); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("ReadSnapshot into another type: %v", err)
	}
	if hosts2.NumObjects(db2.ReadTxn()) != 0 {
		t.Fatal("a refused snapshot restored objects")
	}

	// A codec of a higher version migrates the items into hosts.
	migrate := func(data []byte, version uint32) (*host, error) {
		it, err := JSON[*item]().Decode(data, version)
		if err != nil {
			return nil, err
		}
		return &host{Addr: it.Name, Port: int(it.Value)}, nil
	}
	// (Their primary keys change too: Rekey.)
	s, db, hosts, err = registerHosts(Versioned(JSON[*host](), 2, migrate), Rekey())
	if err != nil {
		t.Fatal(err)
	}
	if h, _, ok := hosts.Get(db.ReadTxn(), hostByAddr.Query("b")); !ok || h.Port != 2 {
		t.Fatalf("migrated host b: %v %v", h, ok)
	}
	closeStore(t, s)
	// The store now records hosts: a plain JSON codec of version 1 is
	// refused as older than the stored values.
	s, _, _, err = registerHosts(JSON[*host]())
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("Register with an older codec after a migration: %v", err)
	}
	closeStore(t, s)

	// TypeName: a type renamed keeps its identity.
	s = openStore(t, "/db", Options{FS: fs})
	db = strata.New()
	items, _ = strata.NewTable(db, "named", itemByID)
	if err := s.Register(Table(items, JSON[*item](), TypeName("app.Thing"))); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, items, &item{ID: 7, Name: "g"})
	closeStore(t, s)
	s = openStore(t, "/db", Options{FS: fs})
	db = strata.New()
	renamed, _ := strata.NewTable(db, "named", renamedByID)
	if err := s.Register(Table(renamed, JSON[*renamedItem](), TypeName("app.Thing"))); err != nil {
		t.Fatalf("Register of a renamed type with its TypeName: %v", err)
	}
	if o, _, ok := renamed.Get(db.ReadTxn(), renamedByID.Query(7)); !ok || o.Name != "g" {
		t.Fatalf("renamed type: %v %v", o, ok)
	}
	closeStore(t, s)
}

// renamedItem is item under another name.
type renamedItem item

var renamedByID = strata.Index[*renamedItem, uint64]{
	Name:       "id",
	FromObject: func(o *renamedItem) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// TestStrictJSON: StrictJSON refuses a record with a field the type does
// not have, where JSON drops it.
func TestStrictJSON(t *testing.T) {
	data := []byte(`{"ID":1,"Name":"a","Colour":"red"}`)
	if _, err := JSON[*item]().Decode(data, 1); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if _, err := StrictJSON[*item]().Decode(data, 1); err == nil || !strings.Contains(err.Error(), "Colour") {
		t.Fatalf("StrictJSON with an unknown field: %v", err)
	}
	o, err := StrictJSON[*item]().Decode([]byte(`{"ID":1,"Name":"a","Value":3}`), 1)
	if err != nil || *o != (item{1, "a", 3}) {
		t.Fatalf("StrictJSON: %v %v", o, err)
	}
	if _, err := StrictJSON[*item]().Decode([]byte(`{"ID":1} {"ID":2}`), 1); err == nil {
		t.Fatal("StrictJSON decoded two values as one")
	}
	if codecName(StrictJSON[*item]()) != codecName(JSON[*item]()) {
		t.Fatal("StrictJSON and JSON have different names")
	}
}

// failingItems is the binary codec of items, except that it cannot decode
// an item named "bad".
var failingItems = Funcs[*item]{
	V:   1,
	Enc: func(dst []byte, o *item) ([]byte, error) { return o.AppendBinary(dst) },
	Dec: func(data []byte, _ uint32) (*item, error) {
		o := new(item)
		if err := o.UnmarshalBinary(data); err != nil {
			return nil, err
		}
		if o.Name == "bad" {
			return nil, errBadItem
		}
		return o, nil
	},
}

var errBadItem = errors.New("cannot decode a bad item")

// TestFailedRegisterRefusesWrites: a table whose registration failed (here
// a value that does not decode) refuses every commit that writes it, with
// the registration's error, so that no write is acknowledged that the next
// start would lose; a retry with a codec that works loads the table and
// completes its initializer; writes made while a table loads are refused.
func TestFailedRegisterRefusesWrites(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := s.Register(Table(tbl, Codec[*item](failingItems))); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 1, Name: "good"}, &item{ID: 2, Name: "bad"})
	closeStore(t, s)

	s = openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID, itemByName)
	plain, _ := strata.NewTable(db, "plain", itemByID)
	err := s.Register(Table(tbl, Codec[*item](failingItems)))
	if !errors.Is(err, errBadItem) {
		t.Fatalf("Register: %v", err)
	}
	for _, write := range []func(strata.WriteTxn) error{
		func(txn strata.WriteTxn) error { _, _, err := tbl.Insert(txn, &item{ID: 3, Name: "new"}); return err },
		func(txn strata.WriteTxn) error {
			if _, _, err := tbl.Insert(txn, &item{ID: 4, Name: "gone"}); err != nil {
				t.Fatal(err)
			}
			_, _, err := tbl.Delete(txn, &item{ID: 4})
			return err
		},
		func(txn strata.WriteTxn) error {
			if _, _, err := tbl.Insert(txn, &item{ID: 5, Name: "gone"}); err != nil {
				t.Fatal(err)
			}
			return tbl.DeleteAll(txn)
		},
	} {
		txn := db.WriteTxn(tbl, plain)
		if err := write(txn); err != nil {
			t.Fatal(err)
		}
		if _, _, err := plain.Insert(txn, &item{ID: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, errBadItem) || !strings.Contains(err.Error(), `"items"`) {
			t.Fatalf("commit to a table whose registration failed: %v", err)
		}
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 || plain.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused commit changed the database")
	}
	if ok, _ := tbl.Initialized(db.ReadTxn()); ok {
		t.Fatal("a table whose load failed reads as initialized")
	}

	// A retry with a codec that reads the bad item (as written) succeeds:
	// the table is loaded and initialized, and writes go to the store.
	fixed := failingItems
	fixed.Dec = func(data []byte, _ uint32) (*item, error) { o := new(item); return o, o.UnmarshalBinary(data) }
	if err := s.Register(Table(tbl, Codec[*item](fixed))); err != nil {
		t.Fatalf("retried Register: %v", err)
	}
	if ok, _ := tbl.Initialized(db.ReadTxn()); !ok {
		t.Fatalf("not initialized after a retried Register: pending %v", tbl.PendingInitializers(db.ReadTxn()))
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 2 {
		t.Fatalf("retried Register loaded %d objects", n)
	}
	writeItems(t, db, tbl, &item{ID: 3, Name: "new"})
}

// TestWritesWhileLoading: a commit that writes a table while Register
// loads it fails with ErrNotLoaded and changes nothing; the load goes on.
func TestWritesWhileLoading(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID)
	var commitErr error
	testHookLoading = func(string) {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &item{ID: 1}); err != nil {
			t.Fatal(err)
		}
		_, commitErr = txn.Commit()
	}
	defer func() { testHookLoading = nil }()
	if err := s.Register(Table(tbl, Binary[item]())); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(commitErr, ErrNotLoaded) {
		t.Fatalf("commit while loading: %v", commitErr)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused commit left an object")
	}
}

// TestRefusedBeforeLoading: refusals that need no scan come before the
// scan: nothing is loaded, and the refused table reads as not initialized,
// unless its database has another journal (the table is not the store's).
func TestRefusedBeforeLoading(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	db := strata.New()
	loads := 0
	testHookLoading = func(string) { loads++ }
	defer func() { testHookLoading = nil }()

	full, _ := strata.NewTable(db, "full", itemByID)
	writeItems(t, db, full, &item{ID: 1})
	if err := s.Register(Table(full, Binary[item]())); !errors.Is(err, strata.ErrTableNotEmpty) {
		t.Fatalf("Register of a full table: %v", err)
	}

	// Another journal on the database.
	other := strata.New()
	conflicted, _ := strata.NewTable(other, "conflicted", itemByID)
	txn := other.WriteTxn(conflicted)
	if err := strata.SetJournal(txn, conflicted, otherJournal{}, strata.TableJournal[*item](otherTableJournal{})); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	if err := s.Register(Table(conflicted, Binary[item]())); !errors.Is(err, strata.ErrJournalConflict) {
		t.Fatalf("Register into a database with another journal: %v", err)
	}
	// A retry of it goes the same way: no initializer is left behind.
	if err := s.Register(Table(conflicted, Binary[item]())); !errors.Is(err, strata.ErrJournalConflict) {
		t.Fatalf("second Register into a database with another journal: %v", err)
	}
	if p := full.PendingInitializers(db.ReadTxn()); !slices.Equal(p, []string{InitializerName}) {
		t.Errorf("table full refused with pending initializers %v", p)
	}
	if p := conflicted.PendingInitializers(other.ReadTxn()); len(p) != 0 {
		t.Errorf("table conflicted refused with pending initializers %v", p)
	}
	if loads != 0 {
		t.Fatalf("%d loads for tables refused before loading", loads)
	}
}

// otherJournal is a journal that is not the store; otherTableJournal
// attaches a table to it.
type otherJournal struct{}

func (otherJournal) Begin() strata.JournalBatch { return nil }

type otherTableJournal struct{}

func (otherTableJournal) Upsert(strata.JournalBatch, []byte, *item, strata.Revision) error {
	return nil
}
func (otherTableJournal) Delete(strata.JournalBatch, []byte) error               { return nil }
func (otherTableJournal) DeleteAll(strata.JournalBatch) error                    { return nil }
func (otherTableJournal) SetRevision(strata.JournalBatch, strata.Revision) error { return nil }

// TestRegisterForeignDatabase: Register given a database the table does not
// belong to fails with ErrForeignTable (it panicked, about WriteTxn); the
// table refuses writes until it registers with its own database
// (TestEveryFailedRegisterRefusesWrites), and a table registered already
// goes on.
func TestRegisterForeignDatabase(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID)
	if err := Register(s, strata.New(), tbl, Binary[item]()); !errors.Is(err, ErrForeignTable) {
		t.Fatalf("Register with another database: %v", err)
	}
	if err := Register(s, db, tbl, Binary[item]()); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 1})
	if err := Register(s, strata.New(), tbl, Binary[item]()); !errors.Is(err, ErrForeignTable) {
		t.Fatalf("Register of a registered table with another database: %v", err)
	}
	writeItems(t, db, tbl, &item{ID: 2}) // goes on
}

// wrappedFS is a file system of the user's own over the operating
// system's.
type wrappedFS struct{ vfs.FS }

// TestLockedOtherPaths: a second Open of a store in this process through
// another path to its directory (a symbolic link, /proc/self/root) or
// through a file system of the user's own is refused with ErrLocked, and
// leaves the first store's lock in place (POSIX locks are per process: a
// second lock and its release would have dropped the first's).
func TestLockedOtherPaths(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "store")
	s := openStore(t, dir, Options{})
	defer closeStore(t, s)
	link := filepath.Join(base, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	paths := []string{link, link + "/."}
	if _, err := os.Stat("/proc/self/root" + dir); err == nil {
		paths = append(paths, "/proc/self/root"+dir)
	}
	for _, p := range paths {
		if s2, err := Open(p, Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
			if err == nil {
				s2.Close()
			}
			t.Errorf("second Open through %s: %v", p, err)
		}
	}
	if s2, err := Open(dir, Options{FS: wrappedFS{vfs.Default}, Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		if err == nil {
			s2.Close()
		}
		t.Errorf("second Open through a file system of the user's own: %v", err)
	}
	if out := runChild(t, "lock", dir); out != "locked" {
		t.Fatalf("after the refused Opens, another process: %s", out)
	}
	// The first store still works.
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	writeItems(t, db, tbl, &item{ID: 1})
}

// TestLockedError: Pebble's in-process message and the POSIX errors are
// ErrLocked.
func TestLockedError(t *testing.T) {
	for _, err := range []error{syscall.EAGAIN, syscall.EACCES, errors.New("lock held by current process")} {
		if !lockedError(err) {
			t.Errorf("%v is not taken for a held lock", err)
		}
	}
	if lockedError(os.ErrNotExist) {
		t.Error("ErrNotExist is taken for a held lock")
	}
}

// TestErrorMessages: errors name the table once, and render keys through
// the table's primary index (a uint64 key as its number, a string as its
// text), not as raw hex.
func TestErrorMessages(t *testing.T) {
	fs := vfs.NewMem()
	s, db, tbl, err := registerItems(t, fs, itemByID)
	if err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, &item{ID: 80, Name: "apple"}, &item{ID: 81, Name: "avocado"}, &item{ID: 82, Name: "bad"})
	closeStore(t, s)

	once := func(what string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if n := strings.Count(err.Error(), `"items"`); n != 1 {
			t.Errorf("%s: the table is named %d times: %v", what, n, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q is not in %v", what, w, err)
			}
		}
	}
	// The stored key is the old index's: the new one cannot render it
	// (its default renderer shows only a value whose key is the very key).
	s, _, _, err = registerItems(t, fs, itemByFirstLetter)
	once("changed key", err, `has key "a" in primary index "id"`)
	closeStore(t, s)
	s, _, _, err = registerItems(t, fs, itemByFirstLetter, Rekey())
	once("rekey collision", err, `primary key "a" twice`)
	closeStore(t, s)

	s = openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID, itemByName)
	err = s.Register(Table(tbl, Versioned(Codec[*item](failingItems), 2, failingItems.Dec)))
	once("decode", err, `key "82"`)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &item{ID: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = txn.Commit()
	once("commit to a table not loaded", err, `key "82"`, "registration failed")
}

// TestDropRename: Drop and Rename change the catalog of a store, atomically
// and durably, for tables that are not registered; registered tables, names
// the store does not hold and taken names are refused.
func TestDropRename(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	a := itemTable(t, s, db, "a", nil)
	b := itemTable(t, s, db, "b", nil)
	writeItems(t, db, a, &item{ID: 1, Name: "one"}, &item{ID: 2, Name: "two"})
	writeItems(t, db, b, &item{ID: 3, Name: "three"})
	if err := s.Drop("a"); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("Drop of a registered table: %v", err)
	}
	if err := s.Rename("a", "c"); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("Rename of a registered table: %v", err)
	}
	closeStore(t, s)

	s = openStore(t, "/db", Options{FS: fs})
	for _, c := range []struct {
		err  error
		want error
	}{
		{s.Drop("nothing"), ErrTableUnknown},
		{s.Rename("nothing", "x"), ErrTableUnknown},
		{s.Rename("a", "b"), ErrTableExists},
	} {
		if !errors.Is(c.err, c.want) {
			t.Fatalf("got %v, want %v", c.err, c.want)
		}
	}
	if err := s.Rename("a", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop("b"); err != nil {
		t.Fatal(err)
	}
	if u := s.Unregistered(); !slices.Equal(u, []string{"c"}) {
		t.Fatalf("Unregistered after Rename and Drop: %v", u)
	}
	closeStore(t, s)

	// Durable: c holds a's objects, b starts empty, a is gone.
	s = openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	if u := s.Unregistered(); !slices.Equal(u, []string{"c"}) {
		t.Fatalf("Unregistered after a reopen: %v", u)
	}
	db = strata.New()
	c := itemTable(t, s, db, "c", nil)
	b = itemTable(t, s, db, "b", nil)
	if got := itemValues(db, c); !maps.Equal(got, map[uint64]item{1: {1, "one", 0}, 2: {2, "two", 0}}) {
		t.Fatalf("renamed table: %v", got)
	}
	if n := b.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("dropped table came back with %d objects", n)
	}
	checkNameIndex(t, db.ReadTxn(), c)
	// Revisions go on above the renamed table's.
	writeItems(t, db, c, &item{ID: 4, Name: "four"})
	if _, rev, _ := c.Get(db.ReadTxn(), itemByID.Query(4)); rev <= 2 {
		t.Fatalf("revision after rename: %d", rev)
	}
}

// TestClaimRefusedRefusesWrites: a Register refused before the table
// could be claimed (another table holds the name in the store, or the
// store is closed) leaves the table refusing writes too, while the table
// that holds the name goes on; registering that very table again changes
// nothing.
func TestClaimRefusedRefusesWrites(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	db := strata.New()
	holder, _ := strata.NewTable(db, "items", itemByID)
	if err := s.Register(Table(holder, Binary[item]())); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(Table(holder, Binary[item]())); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("Register of the same table again: %v", err)
	}
	writeItems(t, db, holder, &item{ID: 1}) // goes on

	other := strata.New()
	twin, _ := strata.NewTable(other, "items", itemByID)
	if err := s.Register(Table(twin, Binary[item]())); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("Register of another table of the name: %v", err)
	}
	closeStore(t, s)
	late, _ := strata.NewTable(db, "late", itemByID)
	if err := s.Register(Table(late, Binary[item]())); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register with the store closed: %v", err)
	}
	for _, tc := range []struct {
		db  *strata.DB
		tbl strata.RWTable[*item]
	}{{other, twin}, {db, late}} {
		txn := tc.db.WriteTxn(tc.tbl)
		if _, _, err := tc.tbl.Insert(txn, &item{ID: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(); !errors.Is(err, ErrNotLoaded) {
			t.Fatalf("%s: a write after a refused Register committed: %v", tc.tbl.Name(), err)
		}
		if n := tc.tbl.NumObjects(tc.db.ReadTxn()); n != 0 {
			t.Fatalf("%s: a refused commit left %d objects", tc.tbl.Name(), n)
		}
	}
}

// refusedRegistrations are the registrations refused before loading,
// with the table attached to the store: another codec, and a table that
// is not empty. setup returns the store, the table, and Register's error.
var refusedRegistrations = []struct {
	name  string
	want  error
	setup func(t *testing.T) (*Store, strata.RWTable[*item], error)
}{{
	name: "stored with another codec",
	want: ErrSchemaMismatch,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], error) {
		s := openStore(t, "/db", Options{FS: storedItems(t, JSON[*item](), &item{ID: 1, Name: "a"})})
		tbl := newItems(t)
		return s, tbl, s.Register(Table(tbl, Binary[item]()))
	},
}, {
	name: "table not empty",
	want: strata.ErrTableNotEmpty,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], error) {
		s := openStore(t, "/db", Options{FS: storedItems(t, Binary[item](), &item{ID: 1, Name: "a"})})
		tbl := newItems(t)
		writeItems(t, tbl.DB(), tbl, &item{ID: 9, Name: "early"})
		return s, tbl, s.Register(Table(tbl, Binary[item]()))
	},
}}

// TestRefusedNeverInitialized: a table whose registration was refused
// reads as not initialized (a controller waiting for it would otherwise
// take the empty or unloaded table for the world), with the store's
// initializer pending, and its channel open.
func TestRefusedNeverInitialized(t *testing.T) {
	for _, c := range refusedRegistrations {
		t.Run(c.name, func(t *testing.T) {
			s, tbl, err := c.setup(t)
			defer closeStore(t, s)
			if !errors.Is(err, c.want) {
				t.Fatalf("Register: %v, want %v", err, c.want)
			}
			txn := tbl.DB().ReadTxn()
			ok, ch := tbl.Initialized(txn)
			if ok {
				t.Errorf("a table refused with %v reads as initialized", c.want)
			}
			select {
			case <-ch:
				t.Errorf("the initialization channel of a refused table is closed")
			default:
			}
			if p := tbl.PendingInitializers(txn); !slices.Equal(p, []string{InitializerName}) {
				t.Errorf("pending initializers of a refused table: %v, want [%s]", p, InitializerName)
			}
			if err := s.LoadError(tbl); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, c.want) {
				t.Errorf("LoadError of a refused table: %v, want ErrNotLoaded and %v", err, c.want)
			}
		})
	}
}

// TestRefusedNotUnregistered: a table whose registration was refused is
// not among the tables nobody registered: a cleanup that drops those would
// delete the very objects the refused table is to load once fixed. Nor
// can it be dropped or renamed while refused.
func TestRefusedNotUnregistered(t *testing.T) {
	for _, c := range refusedRegistrations {
		t.Run(c.name, func(t *testing.T) {
			s, _, err := c.setup(t)
			defer closeStore(t, s)
			if !errors.Is(err, c.want) {
				t.Fatalf("Register: %v, want %v", err, c.want)
			}
			if u := s.Unregistered(); len(u) != 0 {
				t.Errorf("Unregistered after a refused Register: %v", u)
			}
			if err := s.Drop("items"); !errors.Is(err, ErrAlreadyRegistered) {
				t.Errorf("Drop of a refused table: %v, want ErrAlreadyRegistered", err)
			}
			if err := s.Rename("items", "other"); !errors.Is(err, ErrAlreadyRegistered) {
				t.Errorf("Rename of a refused table: %v, want ErrAlreadyRegistered", err)
			}
		})
	}
}

// TestNotEmptyWayOut: a table refused as not empty has the way out its
// error names: a commit that empties it goes through (it writes nothing to
// the store: those objects were never stored), and a second Register
// loads the stored objects, initializes the table, and lets writes
// through.
func TestNotEmptyWayOut(t *testing.T) {
	fs := storedItems(t, Binary[item](), &item{ID: 1, Name: "a"}, &item{ID: 2, Name: "b"})
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	tbl := newItems(t)
	db := tbl.DB()
	writeItems(t, db, tbl, &item{ID: 1, Name: "early"}, &item{ID: 9, Name: "early"})
	if err := s.Register(Table(tbl, Binary[item]())); !errors.Is(err, strata.ErrTableNotEmpty) {
		t.Fatalf("Register of a table that is not empty: %v", err)
	}
	// A commit that writes objects stays refused.
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &item{ID: 10, Name: "more"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, strata.ErrTableNotEmpty) {
		t.Fatalf("an insert into a table refused as not empty: %v", err)
	}
	// Emptying it goes through, and deletes nothing stored.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &item{ID: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatalf("a delete from a table refused as not empty: %v", err)
	}
	txn = db.WriteTxn(tbl)
	if err := tbl.DeleteAll(txn); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatalf("emptying a table refused as not empty: %v", err)
	}
	if !isStored(t, s, "items", itemByID, &item{ID: 1}) || !isStored(t, s, "items", itemByID, &item{ID: 2}) {
		t.Fatal("emptying the refused table deleted stored objects")
	}
	if err := s.Register(Table(tbl, Binary[item]())); err != nil {
		t.Fatalf("Register after emptying the table: %v", err)
	}
	if ok, _ := tbl.Initialized(db.ReadTxn()); !ok {
		t.Fatalf("not initialized after the second Register: pending %v", tbl.PendingInitializers(db.ReadTxn()))
	}
	got := itemRows(db.ReadTxn(), tbl)
	if len(got) != 2 || got[1].Name != "a" || got[2].Name != "b" {
		t.Fatalf("loaded %v, want the stored items 1 (a) and 2 (b)", got)
	}
	if err := s.LoadError(tbl); err != nil {
		t.Fatalf("LoadError after the second Register: %v", err)
	}
	// A third Register of the loaded table changes nothing.
	if err := s.Register(Table(tbl, Binary[item]())); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("Register of a loaded table: %v", err)
	}
	if ok, _ := tbl.Initialized(db.ReadTxn()); !ok || s.LoadError(tbl) != nil {
		t.Fatalf("a loaded table registered again: initialized %v, LoadError %v", ok, s.LoadError(tbl))
	}
	writeItems(t, db, tbl, &item{ID: 3, Name: "c"})
	if !isStored(t, s, "items", itemByID, &item{ID: 3}) {
		t.Fatal("a write after the second Register is not in the store")
	}
	if isStored(t, s, "items", itemByID, &item{ID: 9}) {
		t.Fatal("an object written before the first Register is in the store")
	}
}
