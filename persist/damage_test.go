package persist

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
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
		if _, _, err := tbl.Insert(txn, &item{ID: uint64(i), Name: strings.Repeat("n", 50)}); err != nil {
			t.Fatal(err)
		}
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
	defer func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}()
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

// copyDir copies the files of the directory src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// sstLayout returns where the blocks of the table file at path are.
func sstLayout(t *testing.T, path string) *sstable.Layout {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDamagedTableFile: a byte flipped anywhere Pebble reads in a table
// file (the first and the last data block, the index block, the
// properties, the meta index, the footer and its magic number) makes Open
// or the loading of the table fail with ErrCorrupt, in one line, never
// crash the process; the store closes.
func TestDamagedTableFile(t *testing.T) {
	dir := damagedStore(t, 1000)
	ssts := filesOf(t, dir, "*.sst")
	if len(ssts) != 1 {
		t.Fatalf("%d table files, want 1", len(ssts))
	}
	l := sstLayout(t, ssts[0])
	if len(l.Data) < 2 {
		t.Fatalf("%d data blocks, want several", len(l.Data))
	}
	middle := func(h block.Handle) int64 { return int64(h.Offset + h.Length/2) }
	offsets := []struct {
		name string
		off  int64
	}{
		{"first data block", middle(l.Data[0].Handle)},
		{"first data block's trailer (checksum)", int64(l.Data[0].Offset + l.Data[0].Length + 1)},
		{"last data block", middle(l.Data[len(l.Data)-1].Handle)},
		{"index block", middle(l.Index[0])},
		{"properties block", middle(l.Properties)},
		{"meta index block", middle(l.MetaIndex)},
		{"footer", int64(l.Footer.Offset + 1)},
		{"footer's magic number", int64(l.Footer.Offset + l.Footer.Length - 1)},
	}
	for _, c := range offsets {
		t.Run(c.name, func(t *testing.T) {
			damaged := copyDir(t, dir)
			sst := filepath.Join(damaged, filepath.Base(ssts[0]))
			flipByte(t, sst, c.off)
			s, err := Open(damaged, Options{Logger: quietLogger(t)})
			if err == nil {
				db := strata.New()
				tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
				err = s.Register(Table(tbl, Binary[item]()))
				if cerr := s.Close(); err == nil {
					err = cerr
				}
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open or Register with a byte flipped at %d: %v", c.off, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error has several lines: %q", err)
			}
		})
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
