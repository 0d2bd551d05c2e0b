package stratacli

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// readCounter is a file system for Pebble that counts the bytes read from
// its files into the progress it reports to, if any: so work that Pebble
// does without telling how far it got (its level checker, CheckLSM) shows
// progress that moves. Reading is otherwise the operating system's
// (vfs.Default).
type readCounter struct {
	vfs.FS
	// to is the progress the reads count into; nil: none. Set between
	// phases of the command while Pebble's goroutines may read.
	to atomic.Pointer[progress]
}

func newReadCounter() *readCounter { return &readCounter{FS: vfs.Default} }

// Open opens the file name, whose reads count.
func (c *readCounter) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := c.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, c: c}, nil
}

// count counts n bytes read.
func (c *readCounter) count(n int) {
	if p := c.to.Load(); p != nil && n > 0 {
		p.add(int64(n), 0)
	}
}

// countedFile is a file of a readCounter.
type countedFile struct {
	vfs.File
	c *readCounter
}

// Read reads from the file, counting the bytes read.
func (f *countedFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.c.count(n)
	return n, err
}

// ReadAt reads from the file at off, counting the bytes read.
func (f *countedFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.c.count(n)
	return n, err
}

// sstBytes returns the size of the store's table files (Pebble's *.sst),
// which CheckLSM reads whole: the total of its progress. The log and the
// manifest are not read by it.
func sstBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		if info, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
			n += info.Size()
		}
	}
	return n
}
