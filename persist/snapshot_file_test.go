package persist

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-db/strata"
)

// snapDirHolds fails unless dir holds exactly the named files.
func snapDirHolds(t testing.TB, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Fatalf("directory holds %q, want %q", got, names)
	}
}

// snapReadFileContents reads the snapshot file at path into a fresh
// database and returns its tables' contents.
func snapReadFileContents(t testing.TB, path string) []snapContent {
	t.Helper()
	dst := newSnapDB(t)
	if _, err := ReadSnapshotFile(path, dst.tables()...); err != nil {
		t.Fatal(err)
	}
	return dst.contents(dst.db.ReadTxn())[:3]
}

func snapEqualContents(a, b []snapContent) bool {
	return slices.EqualFunc(a, b, snapContent.equal)
}

func TestSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.snap")
	src := newSnapDB(t)
	src.fill(t, 5, 10)
	if err := WriteSnapshotFile(path, src.db.ReadTxn(), src.tables()...); err != nil {
		t.Fatal(err)
	}
	snapDirHolds(t, dir, "db.snap")

	// A newer snapshot replaces the file.
	txn := src.write(t, func(txn strata.WriteTxn) { snapInsert(t, txn, src.people, &snapObj{ID: 99, Name: "new"}) })
	if err := WriteSnapshotFile(path, txn, src.tables()...); err != nil {
		t.Fatal(err)
	}
	snapDirHolds(t, dir, "db.snap")
	if got := snapReadFileContents(t, path); !snapEqualContents(got, src.contents(txn)[:3]) {
		t.Error("the file does not hold the newer snapshot")
	}

	if _, err := ReadSnapshotFile(filepath.Join(dir, "nothing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
	if err := WriteSnapshotFile(filepath.Join(dir, "no", "dir"), txn, src.tables()...); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: got %v", err)
	}
}

// snapFaultFile is a file whose writes fail (or crash) after a number of
// bytes, and whose Sync may fail.
type snapFaultFile struct {
	*os.File
	fw       snapFaultWriter
	failSync bool
}

func (f *snapFaultFile) Write(p []byte) (int, error) { return f.fw.Write(p) }

func (f *snapFaultFile) Sync() error {
	if f.failSync {
		return errSnapInjected
	}
	return f.File.Sync()
}

// TestSnapshotFileCrash fails and crashes WriteSnapshotFile after every
// number of bytes: the file keeps the previous snapshot, a failure leaves
// no temporary file, and the temporary file a crash leaves does not load.
func TestSnapshotFileCrash(t *testing.T) {
	setBlockTarget(t, 64)
	dir := t.TempDir()
	path := filepath.Join(dir, "db.snap")
	src := newSnapDB(t)
	src.fill(t, 5, 10, 100)
	if err := WriteSnapshotFile(path, src.db.ReadTxn(), src.tables()...); err != nil {
		t.Fatal(err)
	}
	old := snapReadFileContents(t, path)
	txn := src.write(t, func(txn strata.WriteTxn) { snapInsert(t, txn, src.people, &snapObj{ID: 99, Name: "new"}) })
	size := len(snapWrite(t, txn, src.tables()...))

	create := createSnapshotFile
	t.Cleanup(func() { createSnapshotFile = create })
	inject := func(fail int, crash, failSync bool) {
		createSnapshotFile = func(name string) (snapshotFile, error) {
			f, err := create(name)
			if err != nil {
				return nil, err
			}
			return &snapFaultFile{File: f.(*os.File), fw: snapFaultWriter{w: f, left: fail, crash: crash}, failSync: failSync}, nil
		}
	}
	write := func() (crashed bool, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(snapCrash); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		return false, WriteSnapshotFile(path, txn, src.tables()...)
	}

	for n := range size {
		inject(n, false, false)
		if _, err := write(); !errors.Is(err, errSnapInjected) {
			t.Fatalf("failing after %d bytes: got %v", n, err)
		}
		snapDirHolds(t, dir, "db.snap")

		inject(n, true, false)
		if crashed, _ := write(); !crashed {
			t.Fatalf("no crash after %d bytes", n)
		}
		tmps, _ := filepath.Glob(path + ".tmp-*")
		if len(tmps) != 1 {
			t.Fatalf("crash after %d bytes left %q", n, tmps)
		}
		_, err := ReadSnapshotFile(tmps[0])
		snapCheckErr(t, err, false, "the temporary file of a crashed write")
		os.Remove(tmps[0])
	}
	inject(size, false, true)
	if _, err := write(); !errors.Is(err, errSnapInjected) {
		t.Fatalf("failing sync: got %v", err)
	}
	snapDirHolds(t, dir, "db.snap")
	if got := snapReadFileContents(t, path); !snapEqualContents(got, old) {
		t.Fatal("the previous snapshot was damaged")
	}

	// Without a previous snapshot, there is no file.
	os.Remove(path)
	inject(size/2, false, false)
	if _, err := write(); err == nil {
		t.Fatal("no error")
	}
	snapDirHolds(t, dir)
}

var snapUpdate = flag.Bool("snapshot.update", false, "rewrite testdata/snapshot's golden files")

// TestSnapshotGolden pins the format: a snapshot written today must load in
// every later version, and the writer must keep writing the same bytes
// until the format's version changes.
//
// testdata/snapshot/v1.snap, written by format version 1 (no schemas), must
// load still.
func TestSnapshotGolden(t *testing.T) {
	golden := filepath.Join("testdata", "snapshot", fmt.Sprintf("v%d.snap", snapshotVersion))
	src := newSnapDB(t)
	src.fill(t, 4, 0, 5)
	txn := src.db.ReadTxn()
	data := snapWrite(t, txn, src.tables()...)
	if *snapUpdate {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{golden, filepath.Join("testdata", "snapshot", "v1.snap")} {
		if got := snapReadFileContents(t, file); !snapEqualContents(got, src.contents(txn)[:3]) {
			t.Errorf("%s: the golden file's content differs", file)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("the writer's bytes differ from %s: a format change needs a new version (-snapshot.update rewrites it)", golden)
	}
}
