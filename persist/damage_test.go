package persist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata"
)

// damagedStore makes a store in a new directory with a table of items, all
// in table files (Close flushes), and returns the directory.
func damagedStore(t *testing.T, objects int) string {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	db := strata.New()
	tbl := itemTable(t, s, db, "items", nil)
	txn := db.WriteTxn(tbl)
	for i := range objects {
		tbl.Insert(txn, &item{ID: uint64(i), Name: strings.Repeat("n", 50)})
	}
	mustCommit(t, txn)
	closeStore(t, s)
	return dir
}

// flipByte flips the bits of the byte at off in the file.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func filesOf(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	return m
}

// TestDamagedTableFile: a byte flipped in the first data block of a table
// file makes Open (or the loading of the table) fail with ErrCorrupt, never
// crash the process.
func TestDamagedTableFile(t *testing.T) {
	dir := damagedStore(t, 1000)
	for _, sst := range filesOf(t, dir, "*.sst") {
		flipByte(t, sst, 10)
	}
	s, err := Open(dir, Options{Logger: quietLogger(t)})
	if err == nil {
		db := strata.New()
		tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
		err = s.Register(Table(tbl, Binary[item]()))
		s.Close()
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open or Register of a store with a damaged table file: %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error has several lines: %q", err)
	}
}

// TestGarbageManifest: a store whose MANIFEST is garbage, and a directory
// without its format marker (a foreign store), are reported as
// damaged or foreign (ErrCorrupt), not as stores of an unsupported format.
func TestGarbageManifest(t *testing.T) {
	garbage := []byte(strings.Repeat("garbage\x00\xff", 100))
	damaged := damagedStore(t, 10)
	for _, m := range filesOf(t, damaged, "MANIFEST-*") {
		if err := os.WriteFile(m, garbage, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A store whose format marker is gone: Pebble would take it for a
	// store of format 1.
	foreign := damagedStore(t, 10)
	for _, m := range filesOf(t, foreign, "marker.format-version.*") {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{damaged, foreign} {
		_, err := Open(dir, Options{Logger: quietLogger(t)})
		if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "no longer supported") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Open with a garbage MANIFEST: %v", err)
		}
	}
}
