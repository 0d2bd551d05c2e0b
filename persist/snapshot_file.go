package persist

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/strata-db/strata"
)

// snapshotFile is what WriteSnapshotFile needs of the file it writes:
// *os.File, or a test's fault-injecting wrapper.
type snapshotFile interface {
	io.Writer
	Sync() error
	Close() error
}

// createSnapshotFile creates a new file that must not exist yet. Tests
// replace it to inject failures.
var createSnapshotFile = func(name string) (snapshotFile, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
}

// WriteSnapshotFile writes a snapshot of tables, as txn sees them, to the
// file at path (see WriteSnapshot), replacing it atomically: it writes to a
// new temporary file in the same directory (named path + ".tmp-" and a
// random suffix), fsyncs it, renames it to path and fsyncs the directory.
// Whenever it fails or the process dies, path holds either the previous
// file or the complete new snapshot, never a partial one; a temporary file
// left by a crash is never loaded (and a partial snapshot does not verify
// anyway). On error, the temporary file is removed.
//
// The file is created with mode 0666 less the umask, like os.Create.
func WriteSnapshotFile(path string, txn strata.ReadTxn, tables ...TableBinding) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return WriteSnapshot(w, txn, tables...) })
}

// WriteFileAtomic writes the file at path through write, replacing it
// atomically as WriteSnapshotFile does (which calls it): to a new
// temporary file beside path, fsynced, renamed to path, and the directory
// fsynced. Whenever it fails or the process dies, path holds the previous
// file or the complete new one; on error the temporary file is removed.
// For writers of snapshots that WriteSnapshotFile does not cover, such as
// one that reports progress or stops when a context ends.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	f, tmp, err := createSnapTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("writing snapshot %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing snapshot %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing snapshot %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return syncSnapDir(filepath.Dir(path))
}

// createSnapTemp creates a fresh temporary file beside path.
func createSnapTemp(path string) (snapshotFile, string, error) {
	for range 100 {
		name := path + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := createSnapshotFile(name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("writing snapshot: %w", err)
		}
		return f, name, nil
	}
	return nil, "", fmt.Errorf("writing snapshot: no free temporary name beside %s", path)
}

// syncSnapDir makes a rename in dir durable. Windows cannot open a directory
// for syncing: there the rename's durability is the file system's.
func syncSnapDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return d.Close()
}

// ReadSnapshotFile reads the snapshot file at path into the given tables,
// as ReadSnapshot does, and changes nothing unless it succeeds.
func ReadSnapshotFile(path string, tables ...TableBinding) (SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	info, err := ReadSnapshot(f, tables...)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return info, nil
}
