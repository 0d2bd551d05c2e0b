package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
)

// item is the object of the store's unit tests: a primary key, a
// non-unique secondary key, a value.
type item struct {
	ID    uint64
	Name  string
	Value int64
}

func (it *item) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, it.ID)
	b = binary.AppendVarint(b, it.Value)
	return append(b, it.Name...), nil
}

func (it *item) UnmarshalBinary(b []byte) error {
	if len(b) < 9 {
		return errors.New("item: short")
	}
	it.ID = binary.BigEndian.Uint64(b)
	v, n := binary.Varint(b[8:])
	if n <= 0 {
		return errors.New("item: bad value")
	}
	it.Value = v
	it.Name = string(b[8+n:]) // a copy
	return nil
}

var (
	itemByID = strata.Index[*item, uint64]{
		Name:       "id",
		FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	itemByName = strata.Index[*item, string]{
		Name:       "name",
		FromObject: func(o *item) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
	}
)

// quietLogger discards Pebble's messages unless the test is verbose.
func quietLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger(t)
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func closeStore(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// itemTable creates a table of items in db and registers it with s.
func itemTable(t testing.TB, s *Store, db *strata.DB, name string, codec Codec[*item]) strata.RWTable[*item] {
	t.Helper()
	tbl, err := strata.NewTable(db, name, itemByID, itemByName)
	if err != nil {
		t.Fatal(err)
	}
	if codec == nil {
		codec = Binary[item]()
	}
	if err := Register(s, db, tbl, codec); err != nil {
		t.Fatalf("Register(%s): %v", name, err)
	}
	return tbl
}

// itemRow is an object with its revision, for comparisons.
type itemRow struct {
	item
	Rev strata.Revision
}

func itemRows(txn strata.ReadTxn, tbl strata.Table[*item]) map[uint64]itemRow {
	out := map[uint64]itemRow{}
	for o, rev := range tbl.All(txn) {
		out[o.ID] = itemRow{*o, rev}
	}
	return out
}

// checkNameIndex checks that the name index holds exactly the objects of
// the primary index, each under its name.
func checkNameIndex(t testing.TB, txn strata.ReadTxn, tbl strata.Table[*item]) {
	t.Helper()
	n := 0
	for o, rev := range tbl.All(txn) {
		found := false
		for p, prev := range tbl.List(txn, itemByName.Query(o.Name)) {
			if p.ID == o.ID {
				found = p == o && prev == rev
			}
		}
		if !found {
			t.Fatalf("object %d not found under its name %q", o.ID, o.Name)
		}
		n++
	}
	m := 0
	for range tbl.Prefix(txn, itemByName.QueryKey(nil)) {
		m++
	}
	if m != n {
		t.Fatalf("name index holds %d objects, primary %d", m, n)
	}
}

func mustCommit(t testing.TB, txn strata.WriteTxn) strata.ReadTxn {
	t.Helper()
	r, err := txn.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	for _, mode := range []SyncMode{Sync{}, Buffered{Interval: time.Millisecond}} {
		t.Run(fmt.Sprintf("%T", mode), func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{Sync: mode})
			db := strata.New()
			tbl := itemTable(t, s, db, "items", nil)
			plain, _ := strata.NewTable(db, "plain", itemByID)

			txn := db.WriteTxn(tbl, plain)
			for i := range uint64(100) {
				if _, _, err := tbl.Insert(txn, &item{ID: i, Name: fmt.Sprint("n", i%7), Value: int64(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := plain.Insert(txn, &item{ID: 1}); err != nil {
				t.Fatal(err)
			}
			mustCommit(t, txn)
			txn = db.WriteTxn(tbl)
			if _, _, err := tbl.Delete(txn, &item{ID: 5}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tbl.Insert(txn, &item{ID: 6, Name: "six", Value: -6}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tbl.Insert(txn, &item{ID: 6, Name: "six", Value: 66}); err != nil { // last write wins
				t.Fatal(err)
			}
			if _, _, err := tbl.Insert(txn, &item{ID: 200, Name: "gone"}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := tbl.Delete(txn, &item{ID: 200}); err != nil {
				t.Fatal(err)
			}
			want := mustCommit(t, txn)
			wantRows, wantRev := itemRows(want, tbl), tbl.Revision(want)
			closeStore(t, s)

			s = openStore(t, dir, Options{Sync: mode})
			defer closeStore(t, s)
			db = strata.New()
			tbl = itemTable(t, s, db, "items", nil)
			got := db.ReadTxn()
			if rows := itemRows(got, tbl); !maps.Equal(rows, wantRows) {
				t.Fatalf("reloaded %d objects, want %d:\n%v\n%v", len(rows), len(wantRows), rows, wantRows)
			}
			if rev := tbl.Revision(got); rev != wantRev {
				t.Fatalf("reloaded revision %d, want %d", rev, wantRev)
			}
			if ok, _ := tbl.Initialized(got); !ok {
				t.Fatalf("loaded table not initialized")
			}
			checkNameIndex(t, got, tbl)
			txn = db.WriteTxn(tbl)
			if _, _, err := tbl.Insert(txn, &item{ID: 1000}); err != nil {
				t.Fatal(err)
			}
			r := mustCommit(t, txn)
			if _, rev, _ := tbl.Get(r, itemByID.Query(1000)); rev != wantRev+1 {
				t.Fatalf("first revision after reload %d, want %d", rev, wantRev+1)
			}
		})
	}
}

func TestDeleteAll(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	a := itemTable(t, s, db, "a", nil)
	b := itemTable(t, s, db, "b", nil)
	txn := db.WriteTxn(a, b)
	for i := range uint64(10) {
		if _, _, err := a.Insert(txn, &item{ID: i}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Insert(txn, &item{ID: i}); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, txn)
	txn = db.WriteTxn(a)
	if err := a.DeleteAll(txn); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Insert(txn, &item{ID: 3, Name: "back"}); err != nil {
		t.Fatal(err)
	}
	want := mustCommit(t, txn)
	wantA, wantB := itemRows(want, a), itemRows(want, b)
	closeStore(t, s)

	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	a = itemTable(t, s, db, "a", nil)
	b = itemTable(t, s, db, "b", nil)
	got := db.ReadTxn()
	if !maps.Equal(itemRows(got, a), wantA) || !maps.Equal(itemRows(got, b), wantB) {
		t.Fatalf("after DeleteAll: a=%v b has %d", itemRows(got, a), len(itemRows(got, b)))
	}
}

func TestRegisterInitializer(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID)
	called := false
	testHookLoading = func(name string) {
		if name != "items" {
			return
		}
		called = true
		txn := db.ReadTxn()
		if ok, _ := tbl.Initialized(txn); ok {
			t.Errorf("table initialized while loading")
		}
		if p := tbl.PendingInitializers(txn); !slices.Equal(p, []string{InitializerName}) {
			t.Errorf("pending initializers while loading: %v", p)
		}
	}
	defer func() { testHookLoading = nil }()
	if err := Register(s, db, tbl, Binary[item]()); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Fatal("hook not called")
	}
	if ok, _ := tbl.Initialized(db.ReadTxn()); !ok {
		t.Fatal("not initialized after Register")
	}

	// A table that is not empty is refused, and stays not initialized.
	other, _ := strata.NewTable(db, "other", itemByID)
	txn := db.WriteTxn(other)
	if _, _, err := other.Insert(txn, &item{ID: 1}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	if err := Register(s, db, other, Binary[item]()); !errors.Is(err, strata.ErrTableNotEmpty) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("Register of a non-empty table: %v", err)
	}
	// Refused: not initialized, and later writes fail.
	if p := other.PendingInitializers(db.ReadTxn()); !slices.Equal(p, []string{InitializerName}) {
		t.Fatalf("a refused table has pending initializers %v", p)
	}
	txn = db.WriteTxn(other)
	if _, _, err := other.Insert(txn, &item{ID: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrNotLoaded) || !errors.Is(err, strata.ErrTableNotEmpty) {
		t.Fatalf("commit to a refused table: %v", err)
	}
	if u := s.Unregistered(); len(u) != 0 {
		// The catalog entry was made; the refused table holds the name.
		t.Fatalf("Unregistered after a refused Register: %v", u)
	}
}

func TestUnregistered(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	a := itemTable(t, s, db, "a", nil)
	b := itemTable(t, s, db, "b", nil)
	txn := db.WriteTxn(a, b)
	if _, _, err := a.Insert(txn, &item{ID: 1, Name: "a1"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Insert(txn, &item{ID: 2, Name: "b2"}); err != nil {
		t.Fatal(err)
	}
	want := mustCommit(t, txn)
	wantB := itemRows(want, b)
	if u := s.Unregistered(); len(u) != 0 {
		t.Fatalf("Unregistered: %v", u)
	}
	closeStore(t, s)

	// Only a: b is reported and kept.
	s = openStore(t, dir, Options{})
	db = strata.New()
	a = itemTable(t, s, db, "a", nil)
	if u := s.Unregistered(); !slices.Equal(u, []string{"b"}) {
		t.Fatalf("Unregistered: %v", u)
	}
	txn = db.WriteTxn(a)
	if err := a.DeleteAll(txn); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	if st := s.Stats(); st.Tables != 2 {
		t.Fatalf("Stats.Tables = %d", st.Tables)
	}
	closeStore(t, s)

	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	b = itemTable(t, s, db, "b", nil)
	if got := itemRows(db.ReadTxn(), b); !maps.Equal(got, wantB) {
		t.Fatalf("unregistered table changed: %v", got)
	}
	if u := s.Unregistered(); !slices.Equal(u, []string{"a"}) {
		t.Fatalf("Unregistered: %v", u)
	}
}

func TestAlreadyRegistered(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	db := strata.New()
	itemTable(t, s, db, "a", nil)
	db2 := strata.New()
	tbl, _ := strata.NewTable(db2, "a", itemByID)
	if err := Register(s, db2, tbl, Binary[item]()); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("second Register: %v", err)
	}
}

func TestJournalConflict(t *testing.T) {
	s1 := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s1)
	s2 := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s2)
	db := strata.New()
	itemTable(t, s1, db, "a", nil)
	tbl, _ := strata.NewTable(db, "b", itemByID)
	if err := Register(s2, db, tbl, Binary[item]()); !errors.Is(err, strata.ErrJournalConflict) {
		t.Fatalf("Register with a second store: %v", err)
	}
	if u := s2.Unregistered(); !slices.Equal(u, []string{"b"}) {
		t.Fatalf("Unregistered: %v", u)
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if _, err := Open(dir, Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open in the process: %v", err)
	}
	// Through another path to the same directory.
	if _, err := Open(dir+"/.", Options{Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open through another path: %v", err)
	}
	// From another process.
	if out := runChild(t, "lock", dir); out != "locked" {
		t.Fatalf("Open in a child process: %s", out)
	}
	closeStore(t, s)
	if out := runChild(t, "lock", dir); out != "opened" {
		t.Fatalf("Open in a child process after Close: %s", out)
	}
	s = openStore(t, dir, Options{})
	closeStore(t, s)

	// An in-memory file system refuses a second lock by itself.
	fs := vfs.NewMem()
	s = openStore(t, "/db", Options{FS: fs})
	if _, err := Open("/db", Options{FS: fs, Logger: quietLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open on a MemFS: %v", err)
	}
	closeStore(t, s)
}

// runChild runs this test binary as a child in the given mode, and returns
// its output, trimmed.
func runChild(t testing.TB, mode, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return strings.TrimSpace(string(out))
}

// childLock is the child mode "lock": it opens the store and says whether
// it was locked.
func childLock(dir string) {
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("locked")
	case err != nil:
		fmt.Println("error:", err)
	default:
		s.Close()
		fmt.Println("opened")
	}
}

func TestNewerFormat(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	closeStore(t, s)
	setRaw(t, fs, "/db", formatKey, binary.AppendUvarint(nil, storeFormat+1))
	if _, err := Open("/db", Options{FS: fs, Logger: quietLogger(t)}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Open of a newer format: %v", err)
	}
	// The store was left as it was, and is not locked.
	setRaw(t, fs, "/db", formatKey, binary.AppendUvarint(nil, storeFormat))
	closeStore(t, openStore(t, "/db", Options{FS: fs}))
}

// setRaw writes one key into the Pebble database of a closed store.
func setRaw(t testing.TB, fs vfs.FS, dir string, key, value []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: &pebbleLogger{log: quietLogger(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(key, value, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, "/db", Options{FS: fs})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &item{ID: 1}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	closeStore(t, s)

	keys := makeTableKeys(1)
	setRaw(t, fs, "/db", append(slices.Clone(keys.prefix), 9), []byte{0x80}) // a truncated uvarint
	s = openStore(t, "/db", Options{FS: fs})
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID)
	if err := Register(s, db, tbl, Binary[item]()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"items"`) {
		t.Fatalf("Register over a malformed value: %v", err)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a failed load left objects")
	}
	closeStore(t, s)

	setRaw(t, fs, "/db", catalogKey("broken"), nil)
	if _, err := Open("/db", Options{FS: fs, Logger: quietLogger(t)}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a malformed catalog entry: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{Sync: Buffered{Interval: time.Hour}})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	closeStore(t, s)
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn, &item{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if tbl.NumObjects(db.ReadTxn()) != 0 {
		t.Fatal("a refused commit was published")
	}
	other, _ := strata.NewTable(db, "other", itemByID)
	if err := Register(s, db, other, Binary[item]()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register after Close: %v", err)
	}
	if err := s.Checkpoint(t.TempDir() + "/cp"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checkpoint after Close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if st := s.Stats(); st != (metrics.StoreStats{}) {
		t.Fatalf("Stats after Close: %+v", st)
	}
}

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "live"), Options{Sync: Buffered{Interval: time.Hour}})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	txn := db.WriteTxn(tbl)
	for i := range uint64(1000) {
		if _, _, err := tbl.Insert(txn, &item{ID: i, Name: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	want := itemRows(mustCommit(t, txn), tbl)
	cp := filepath.Join(dir, "backup")
	if err := s.Checkpoint(cp); err != nil {
		t.Fatal(err)
	}
	// Later commits are not in the checkpoint.
	txn = db.WriteTxn(tbl)
	if err := tbl.DeleteAll(txn); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	if err := s.Checkpoint(cp); err == nil {
		t.Fatal("Checkpoint into an existing directory succeeded")
	}
	closeStore(t, s)

	s = openStore(t, cp, Options{})
	defer closeStore(t, s)
	db = strata.New()
	tbl = itemTable(t, s, db, "items", nil)
	if got := itemRows(db.ReadTxn(), tbl); !maps.Equal(got, want) {
		t.Fatalf("checkpoint holds %d objects, want %d", len(got), len(want))
	}
}

func TestRegisterConcurrently(t *testing.T) {
	dir := t.TempDir()
	const tables, objects = 8, 500
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprint("t", i)
	}
	s := openStore(t, dir, Options{})
	db := strata.New()
	tbls := make([]strata.RWTable[*item], tables)
	var specs []TableBinding
	for i, name := range names {
		tbls[i], _ = strata.NewTable(db, name, itemByID, itemByName)
		specs = append(specs, Table(tbls[i], Binary[item]()))
	}
	if err := s.Register(specs...); err != nil {
		t.Fatal(err)
	}
	// Write from every table at once: commits share syncs.
	var wg sync.WaitGroup
	for i, tbl := range tbls {
		wg.Go(func() {
			for j := range uint64(objects / 50) {
				txn := db.WriteTxn(tbl)
				for k := range uint64(50) {
					if _, _, err := tbl.Insert(txn, &item{ID: j*50 + k, Name: names[i], Value: int64(i)}); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := txn.Commit(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	want := db.ReadTxn()
	closeStore(t, s)

	// Register concurrently, each table its own goroutine.
	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db2 := strata.New()
	loaded := make([]strata.RWTable[*item], tables)
	for i, name := range names {
		loaded[i], _ = strata.NewTable(db2, name, itemByID, itemByName)
	}
	for i := range loaded {
		wg.Go(func() {
			if err := Register(s, db2, loaded[i], Binary[item]()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := db2.ReadTxn()
	for i := range tbls {
		if !maps.Equal(itemRows(got, loaded[i]), itemRows(want, tbls[i])) {
			t.Fatalf("table %s differs after a parallel load", names[i])
		}
		checkNameIndex(t, got, loaded[i])
	}
}

// recordingStore is a metrics.Store that keeps what it gets.
type recordingStore struct {
	mu      sync.Mutex
	commits int
	bytes   int
	failed  int
	stats   []metrics.StoreStats
}

func (r *recordingStore) Commit(bytes int, took time.Duration, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits++
	r.bytes += bytes
	if failed {
		r.failed++
	}
}

func (r *recordingStore) Stats(st metrics.StoreStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats = append(r.stats, st)
}

func TestMetrics(t *testing.T) {
	rec := &recordingStore{}
	s := openStore(t, t.TempDir(), Options{Metrics: rec, StatsInterval: 5 * time.Millisecond})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	for i := range uint64(20) {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &item{ID: i, Name: "some name"}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)
	}
	st := s.Stats()
	// The latency is that of the syncs since the last sample: the sampler
	// may have taken them all just before; then a sample has it.
	if st.WALBytesWritten == 0 || st.WALSyncs < 20 || st.DiskUsage == 0 || st.Tables != 1 {
		t.Fatalf("Stats: %+v", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec.mu.Lock()
		n := len(rec.stats)
		rec.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closeStore(t, s)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// 20 commits; Register's writes nothing (the revision it loaded is
	// the one the store gives), so it is not one.
	if rec.commits != 20 || rec.failed != 0 || rec.bytes < 20*9 || len(rec.stats) == 0 {
		t.Fatalf("metrics got %d commits (%d failed, %d bytes), %d samples", rec.commits, rec.failed, rec.bytes, len(rec.stats))
	}
	latency := st.WALSyncLatency
	for _, sample := range rec.stats {
		latency = max(latency, sample.WALSyncLatency)
	}
	if latency <= 0 {
		t.Fatalf("no sync latency in Stats (%+v) nor in the samples", st)
	}
}

// TestFatalfDoesNotReturn: the adapter's Fatalf logs at Error level, marks
// the store failed and panics; it never returns.
func TestFatalfDoesNotReturn(t *testing.T) {
	var buf bytes.Buffer
	var failedWith error
	l := &pebbleLogger{
		log:     slog.New(slog.NewTextHandler(&buf, nil)),
		onFatal: func(err error) { failedWith = err },
	}
	returned := false
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		l.Fatalf("sync %s: %v", "000001.log", errors.New("disk on fire"))
		returned = true
	}()
	if returned {
		t.Fatal("Fatalf returned")
	}
	p, ok := recovered.(*fatalPanic)
	if !ok || !strings.Contains(p.Error(), "disk on fire") {
		t.Fatalf("Fatalf panicked with %#v", recovered)
	}
	if failedWith == nil || !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "000001.log") {
		t.Fatalf("Fatalf did not log at Error level or mark the store: %q, %v", buf.String(), failedWith)
	}

	// recoverFatal turns that panic into ErrStoreFailed, and lets others
	// through.
	err := func() (err error) {
		defer recoverFatal(&err)
		l.Fatalf("boom")
		return nil
	}()
	if !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("recoverFatal: %v", err)
	}
	defer func() {
		if r := recover(); r != "other" {
			t.Fatalf("recoverFatal swallowed another panic: %v", r)
		}
	}()
	_ = func() (err error) { // panics: there is no error to check
		defer recoverFatal(&err)
		panic("other")
	}()
}

func TestLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := &pebbleLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	l.Infof("routine %d", 1)
	l.Errorf("trouble %d", 2)
	out := buf.String()
	if strings.Contains(out, "routine") || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "trouble 2") {
		t.Fatalf("log: %q", out)
	}
}

// TestUpsertAllocs: encoding an object into the batch allocates nothing
// (with a codec that does not).
func TestUpsertAllocs(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	defer closeStore(t, s)
	tj := &tableJournal[*item]{codec: Binary[item](), version: 1, keys: makeTableKeys(7)}
	jb := s.Begin().(*journalBatch)
	defer jb.Discard()
	obj := &item{ID: 42, Name: "a name of some length", Value: 7}
	pk := index.Uint64(42)
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		if n%100 == 0 {
			jb.b.Reset()
		}
		n++
		if err := tj.Upsert(jb, pk, obj, 12345); err != nil {
			t.Fatal(err)
		}
		if err := tj.Delete(jb, pk); err != nil {
			t.Fatal(err)
		}
		if err := tj.SetRevision(jb, 12345); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Upsert+Delete+SetRevision", allocs)
	}
}

// TestOpenRegisterWriteNothing: reopening a store and registering its
// tables writes nothing to the log (no record, no sync) when the loaded
// revision is the one the store gives, with or without a revision record
// (the last commit a delete); a table whose revision in memory was above
// it before Register gets it recorded, and keeps it across a restart.
func TestOpenRegisterWriteNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	writeItems(t, db, tbl, &item{ID: 1}, &item{ID: 2}, &item{ID: 3})
	txn := db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &item{ID: 3}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn) // revision 4, recorded: the object at 4 is gone
	closeStore(t, s)

	for run := range 2 {
		rec := &recordingStore{}
		s = openStore(t, dir, Options{Metrics: rec})
		db = strata.New()
		tbl = itemTable(t, s, db, "items", nil)
		if rev := tbl.Revision(db.ReadTxn()); rev != 4 {
			t.Fatalf("run %d: revision %d after Register, want 4", run, rev)
		}
		if st := s.Stats(); st.WALBytesWritten != 0 || st.WALSyncs != 0 {
			t.Fatalf("run %d: Open and Register wrote %d bytes to the log, %d syncs", run, st.WALBytesWritten, st.WALSyncs)
		}
		rec.mu.Lock()
		commits := rec.commits
		rec.mu.Unlock()
		if commits != 0 {
			t.Fatalf("run %d: Register wrote %d commits", run, commits)
		}
		closeStore(t, s)
	}

	// A revision of the table in memory above the store's is recorded.
	s = openStore(t, dir, Options{})
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID, itemByName)
	for range 10 {
		writeItems(t, db, tbl, &item{ID: 100})
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Delete(txn, &item{ID: 100}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)
	}
	if err := Register(s, db, tbl, Binary[item]()); err != nil {
		t.Fatal(err)
	}
	if rev := tbl.Revision(db.ReadTxn()); rev != 20 {
		t.Fatalf("revision %d after Register, want 20", rev)
	}
	closeStore(t, s)
	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	tbl = itemTable(t, s, db, "items", nil)
	if rev := tbl.Revision(db.ReadTxn()); rev != 20 {
		t.Fatalf("revision %d after a restart, want 20", rev)
	}
}
