package persist

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
)

// failedRegistration is a way for Register to fail: setup opens a store,
// makes a table of items and registers it so that the registration fails.
type failedRegistration struct {
	name string
	// setup returns the store, the table and Register's error; retry, if
	// not nil, is a registration of the table that succeeds.
	setup func(t *testing.T) (s *Store, tbl strata.RWTable[*item], retry func() error, err error)
	want  error // what err, and the error of every refused commit, wrap
	// deletesPass is set for the table refused as not empty: commits that
	// only delete go through (writing nothing), the way to empty it.
	deletesPass bool
}

// storedItems returns a memory file system with a store whose table
// "items" was written with codec and holds objs.
func storedItems(t *testing.T, codec Codec[*item], objs ...*item) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := s.Register(Table(tbl, codec)); err != nil {
		t.Fatal(err)
	}
	writeItems(t, db, tbl, objs...)
	closeStore(t, s)
	return fs
}

// newItems returns a new table "items" of a new database.
func newItems(t *testing.T) strata.RWTable[*item] {
	t.Helper()
	tbl, err := strata.NewTable(strata.New(), "items", itemByID, itemByName)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

var failedRegistrations = []failedRegistration{{
	name: "wrong database",
	want: ErrForeignTable,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		tbl := newItems(t)
		return s, tbl, func() error {
			return Register(s, tbl.DB(), tbl, Binary[item]())
		}, Register(s, strata.New(), tbl, Binary[item]())
	},
}, {
	name: "primary index of an unknown kind",
	want: errUnknownPrimary,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		tbl := newItems(t)
		b := Table(tbl, Binary[item]()).(*binding[*item])
		b.primaryKeys = nil // no such index kind exists yet
		return s, tbl, func() error { return s.Register(Table(tbl, Binary[item]())) }, s.Register(b)
	},
}, {
	name: "name held by another table",
	want: ErrAlreadyRegistered,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		if err := s.Register(Table(newItems(t), Binary[item]())); err != nil {
			t.Fatal(err)
		}
		tbl := newItems(t)
		return s, tbl, nil, s.Register(Table(tbl, Binary[item]()))
	},
}, {
	name: "closed store",
	want: ErrClosed,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		closeStore(t, s)
		tbl := newItems(t)
		return nil, tbl, nil, s.Register(Table(tbl, Binary[item]()))
	},
}, {
	name: "failed store",
	want: ErrStoreFailed,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		s.fail(errors.New("injected"))
		tbl := newItems(t)
		return s, tbl, nil, s.Register(Table(tbl, Binary[item]()))
	},
}, {
	name: "table not empty",
	want: strata.ErrTableNotEmpty,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, t.TempDir(), Options{})
		tbl := newItems(t)
		writeItems(t, tbl.DB(), tbl, &item{ID: 9, Name: "early"})
		// checkRefused emptied the table.
		return s, tbl, func() error { return s.Register(Table(tbl, Binary[item]())) }, s.Register(Table(tbl, Binary[item]()))
	},
	deletesPass: true,
}, {
	name: "stored with another codec",
	want: ErrSchemaMismatch,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, "/db", Options{FS: storedItems(t, JSON[*item](), &item{ID: 1, Name: "a"})})
		tbl := newItems(t)
		return s, tbl, func() error { return s.Register(Table(tbl, JSON[*item]())) }, s.Register(Table(tbl, Binary[item]()))
	},
}, {
	name: "stored with a newer codec version",
	want: ErrUnknownVersion,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		v2 := Versioned(JSON[*item](), 2, JSON[*item]().Decode)
		s := openStore(t, "/db", Options{FS: storedItems(t, v2, &item{ID: 1, Name: "a"})})
		tbl := newItems(t)
		return s, tbl, func() error { return s.Register(Table(tbl, v2)) }, s.Register(Table(tbl, JSON[*item]()))
	},
}, {
	name: "a value that does not decode",
	want: errBadItem,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, "/db", Options{FS: storedItems(t, Codec[*item](failingItems), &item{ID: 1, Name: "bad"})})
		tbl := newItems(t)
		fixed := failingItems
		fixed.Dec = func(data []byte, _ uint32) (*item, error) { o := new(item); return o, o.UnmarshalBinary(data) }
		return s, tbl, func() error {
			return s.Register(Table(tbl, Codec[*item](fixed)))
		}, s.Register(Table(tbl, Codec[*item](failingItems)))
	},
}, {
	name: "primary key changed",
	want: ErrKeyChanged,
	setup: func(t *testing.T) (*Store, strata.RWTable[*item], func() error, error) {
		s := openStore(t, "/db", Options{FS: storedItems(t, Binary[item](), &item{ID: 1, Name: "a"})})
		tbl, _ := strata.NewTable(strata.New(), "items", itemByShiftedID, itemByName)
		return s, tbl, func() error { return s.Register(Table(tbl, Binary[item](), Rekey())) }, s.Register(Table(tbl, Binary[item]()))
	},
}}

// TestEveryFailedRegisterRefusesWrites: whichever way Register fails, the
// table refuses every commit that writes it with ErrNotLoaded wrapping the
// registration's error, and the commit changes nothing, in that table or
// another (a table refused as not empty lets through the commits that
// only delete, writing nothing: the way to empty it); the table reads as
// not initialized, with the store's initializer pending, and LoadError
// says why; once a registration of the table succeeds, it is initialized,
// LoadError is nil, and commits that write it succeed and are durable.
// (The one exception, a database with another journal, is
// TestRefusedBeforeLoading's: its writes go to that journal.)
func TestEveryFailedRegisterRefusesWrites(t *testing.T) {
	for _, c := range failedRegistrations {
		t.Run(c.name, func(t *testing.T) {
			s, tbl, retry, err := c.setup(t)
			if s != nil {
				defer func() {
					if err := s.Close(); err != nil && !errors.Is(err, ErrStoreFailed) {
						t.Errorf("Close: %v", err)
					}
				}()
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Register: %v, want %v", err, c.want)
			}
			if n := strings.Count(err.Error(), `table "items"`); n != 1 {
				t.Errorf("Register's error names the table %d times: %v", n, err)
			}
			db := tbl.DB()
			before := tbl.NumObjects(db.ReadTxn())
			plain, _ := strata.NewTable(db, "plain", itemByID)
			checkRefused(t, db, tbl, plain, c.want, c.deletesPass)
			if c.deletesPass {
				before = 0 // emptied
			}
			if n := tbl.NumObjects(db.ReadTxn()); n != before {
				t.Fatalf("a refused commit changed the table: %d objects, want %d", n, before)
			}
			if plain.NumObjects(db.ReadTxn()) != 0 && !c.deletesPass {
				t.Fatal("a refused commit changed the other table it wrote")
			}
			if pending := tbl.PendingInitializers(db.ReadTxn()); len(pending) != 1 || pending[0] != InitializerName {
				t.Fatalf("pending initializers %v after a failure", pending)
			}
			if s != nil {
				if err := s.LoadError(tbl); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, c.want) {
					t.Fatalf("LoadError after a failure: %v", err)
				}
			}
			if retry == nil {
				return
			}
			if err := retry(); err != nil {
				t.Fatalf("retried Register: %v", err)
			}
			if ok, _ := tbl.Initialized(db.ReadTxn()); !ok {
				t.Fatalf("not initialized after a retry: pending %v", tbl.PendingInitializers(db.ReadTxn()))
			}
			if err := s.LoadError(tbl); err != nil {
				t.Fatalf("LoadError after a retry: %v", err)
			}
			after := &item{ID: 100, Name: "after"}
			writeItems(t, db, tbl, after)
			if !isStored(t, s, "items", tbl.PrimaryIndexer(), after) {
				t.Fatal("a write after a successful retry is not in the store")
			}
		})
	}
}

// checkRefused checks that commits writing tbl (an insert; a delete; a
// DeleteAll), together with a write of plain, fail with ErrNotLoaded
// wrapping want, naming the table once. If deletesPass, the commits that
// only delete (the last two) succeed instead.
func checkRefused(t *testing.T, db *strata.DB, tbl, plain strata.RWTable[*item], want error, deletesPass bool) {
	t.Helper()
	for i, write := range []func(strata.WriteTxn) error{
		func(txn strata.WriteTxn) error { _, _, err := tbl.Insert(txn, &item{ID: 3, Name: "new"}); return err },
		func(txn strata.WriteTxn) error {
			if _, had, err := tbl.Delete(txn, &item{ID: 1}); had || err != nil {
				return err
			}
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
			txn.Abort()
			t.Fatal(err)
		}
		if _, _, err := plain.Insert(txn, &item{ID: 1}); err != nil {
			txn.Abort()
			t.Fatal(err)
		}
		_, err := txn.Commit()
		if deletesPass && i > 0 {
			if err != nil {
				t.Fatalf("write %d: a commit that only deletes from a table refused as not empty: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrNotLoaded) || !errors.Is(err, want) {
			t.Fatalf("write %d: commit to a table whose registration failed: %v", i, err)
		}
		if n := strings.Count(err.Error(), `"items"`); n != 1 {
			t.Errorf("the commit's error names the table %d times: %v", n, err)
		}
	}
}

// isStored reports whether the store holds obj in the table name, under
// its key in the primary index.
func isStored(t *testing.T, s *Store, name string, primary strata.Indexer[*item], obj *item) bool {
	t.Helper()
	s.mu.Lock()
	e, ok := s.catalog[name]
	s.mu.Unlock()
	if !ok {
		return false
	}
	ix, _ := primary.(strata.Index[*item, uint64])
	keys := ix.FromObject(obj)
	key := append(makeTableKeys(e.id).prefix, keys.At(0)...)
	_, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	closer.Close()
	return true
}
