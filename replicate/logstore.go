package replicate

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

// Options configures Open. The zero value is ready to use.
type Options struct {
	// FS is the file system the store lives in; nil is the operating
	// system's. Tests give Pebble's in-memory file systems.
	FS vfs.FS

	// Logger receives Pebble's messages: its informational ones at Debug
	// level, its errors at Error. nil is slog.Default().
	Logger *slog.Logger

	// VerifyOnOpen makes Open read every entry of the log, checking each
	// record's checksum and that no index is missing between the first
	// and the last. Without it Open checks the first and the last entries
	// only (see the package documentation for why that suffices after a
	// crash).
	VerifyOnOpen bool

	// Pebble, if set, adjusts the options Pebble opens the DB with (cache
	// and memtable sizes, say). The file system, the format, the logger and
	// the write-ahead log are the store's and are set after it.
	Pebble func(*pebble.Options)
}

// LogStore is raft's log store and stable store (raft.LogStore,
// raft.StableStore and raft.MonotonicLogStore) on one Pebble DB in a
// directory. Open it, give it to raft.NewRaft as both stores, and Close
// it after the raft.Raft has shut down.
//
// Every write is durable when it returns: StoreLogs, DeleteRange, Set and
// SetUint64 each commit one Pebble batch with pebble.Sync. The log is
// always one contiguous run of indexes, FirstIndex..LastIndex, or empty.
//
// A LogStore is safe for concurrent use: raft reads entries from its
// replication goroutines while its main loop writes. Writers are
// serialized; readers never wait for a writer's fsync.
type LogStore struct {
	db *pebble.DB

	// writeMu serializes the writers of the log and Close. A writer holds
	// it from reading first and last to updating them, so that each
	// batch is computed from the log as the previous batch left it.
	writeMu sync.Mutex
	// scratch is the writers' record buffer, under writeMu.
	scratch []byte

	// mu guards closed, first and last. Readers hold it shared for as
	// long as they use db, so that Close (which holds it exclusively)
	// waits for them; writers hold it only to read or update the fields,
	// never across a commit (they hold writeMu, which Close also takes).
	mu     sync.RWMutex
	closed bool
	// first and last are the log's first and last indexes, 0 and 0 when
	// it is empty. Invariant: every index in first..last is stored. A
	// writer shrinks the range before its batch commits (entries it
	// deletes or replaces) and widens it after, so that a reader finding
	// an index of the range missing knows it is damage, not a race.
	first, last uint64
}

var (
	_ raft.LogStore          = (*LogStore)(nil)
	_ raft.StableStore       = (*LogStore)(nil)
	_ raft.MonotonicLogStore = (*LogStore)(nil)
)

// Open opens the store in dir, creating it if it does not exist, and
// checks its log (Options.VerifyOnOpen). A log that fails the checks is
// refused with a *CorruptLogError, never repaired: see the package
// documentation. A second Open of the same directory by another process
// fails with Pebble's lock error until the first is closed.
func Open(dir string, opts Options) (*LogStore, error) {
	po := &pebble.Options{}
	if opts.Pebble != nil {
		opts.Pebble(po)
	}
	// What the store relies on, whatever opts.Pebble did.
	po.FS = opts.FS
	if po.FS == nil {
		po.FS = vfs.Default
	}
	po.FormatMajorVersion = pebble.FormatTableFormatV6
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	po.Logger = pebbleLogger{log}
	po.LoggerAndTracer = nil
	po.DisableWAL = false
	po.ReadOnly = false
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("replicate: open %s: %w", dir, err)
	}
	s := &LogStore{db: db}
	if err := s.open(opts.VerifyOnOpen); err != nil {
		db.Close()
		return nil, fmt.Errorf("replicate: open %s: %w", dir, err)
	}
	return s, nil
}

// open checks the format, finds the log's bounds and checks the log.
func (s *LogStore) open(verify bool) error {
	if err := s.checkFormat(); err != nil {
		return err
	}
	if err := s.loadBounds(); err != nil {
		return err
	}
	if s.last == 0 {
		return nil
	}
	if verify {
		return s.verify()
	}
	var l raft.Log
	if err := s.getLog(s.first, &l); err != nil {
		return err
	}
	return s.getLog(s.last, &l)
}

// checkFormat records the store's format in a new store, and refuses a
// store of a newer one.
func (s *LogStore) checkFormat() error {
	v, closer, err := s.db.Get([]byte(formatKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return s.db.Set([]byte(formatKey), []byte{storeFormat}, pebble.Sync)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if len(v) != 1 || v[0] > storeFormat {
		return fmt.Errorf("%w: %x", ErrUnknownFormat, v)
	}
	return nil
}

// loadBounds sets first and last from the log's first and last keys.
func (s *LogStore) loadBounds() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logLower, UpperBound: logUpper})
	if err != nil {
		return err
	}
	defer it.Close()
	var first, last uint64
	if it.First() {
		var ok bool
		if first, ok = logIndex(it.Key()); !ok {
			return &CorruptLogError{Reason: fmt.Sprintf("malformed log key %x", it.Key())}
		}
		it.Last()
		if last, ok = logIndex(it.Key()); !ok {
			return &CorruptLogError{Reason: fmt.Sprintf("malformed log key %x", it.Key())}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	s.first, s.last = first, last
	return nil
}

// verify reads every entry of the log, in order.
func (s *LogStore) verify() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logLower, UpperBound: logUpper})
	if err != nil {
		return err
	}
	defer it.Close()
	want := s.first
	var l raft.Log
	for ok := it.First(); ok; ok = it.Next() {
		index, ok := logIndex(it.Key())
		if !ok {
			return &CorruptLogError{Index: want, Reason: fmt.Sprintf("malformed log key %x after it", it.Key())}
		}
		if index != want {
			return &CorruptLogError{Index: want, Reason: fmt.Sprintf("missing: the log has a hole up to %d", index)}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := decodeRecord(index, v, &l); err != nil {
			return err
		}
		want++
	}
	return it.Error()
}

// Close closes the Pebble DB. It waits for the calls in progress; every
// call after it returns ErrClosed.
func (s *LogStore) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	return s.db.Close()
}

// IsMonotonic implements raft.MonotonicLogStore, and returns true: the
// log never has a hole (see StoreLogs), and deleting all of it is one
// range deletion. raft then deletes the whole log after it restores or
// installs a snapshot (raft.go:1190, raft.go:1942) instead of leaving the
// old entries below a gap that a non-monotonic store must tolerate.
func (s *LogStore) IsMonotonic() bool { return true }

// FirstIndex returns the index of the log's first entry, 0 if it is empty.
// It reads a field, not the disk.
func (s *LogStore) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.first, nil
}

// LastIndex returns the index of the log's last entry, 0 if it is empty.
// It reads a field, not the disk.
func (s *LogStore) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.last, nil
}

// GetLog reads the entry at index into l. It returns raft.ErrLogNotFound
// for an index outside FirstIndex..LastIndex, and a *CorruptLogError,
// leaving l alone, for an entry inside it that is missing or whose record
// is not whole. l's slices are its own.
func (s *LogStore) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.last == 0 || index < s.first || index > s.last {
		return raft.ErrLogNotFound
	}
	return s.getLog(index, l)
}

// getLog reads the entry at index, which first..last holds. The caller
// holds mu, or is Open.
func (s *LogStore) getLog(index uint64, l *raft.Log) error {
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return &CorruptLogError{Index: index, Reason: "missing from inside the log"}
	}
	if err != nil {
		return fmt.Errorf("replicate: log entry %d: %w", index, err)
	}
	defer closer.Close()
	return decodeRecord(index, v, l)
}

// StoreLog stores one entry, as StoreLogs does.
func (s *LogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries, whose indexes must follow each other (else
// ErrNotContiguous, and nothing is written), in one batch committed with
// pebble.Sync: when it returns nil, every entry is on disk, and a crash
// at any moment leaves all of them or none.
//
// The log it leaves is the stored entries below the first new index
// followed by the new entries, so that the log stays one contiguous run:
//
//   - entries that follow the last one are appended (what raft does);
//   - entries that start inside the log replace the entries from their
//     first index on, including any beyond their last (raft deletes a
//     conflicting suffix with DeleteRange first, raft.go:1525, so it
//     never asks this, but the result is the same);
//   - entries that start after a gap, or at or below the first entry,
//     replace the whole log. raft appends after a gap only when a
//     snapshot covers it (a follower that crashed between installing a
//     snapshot and deleting its old log), and then the entries below the
//     gap are of no use.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	lo, hi := logs[0].Index, logs[len(logs)-1].Index
	if lo == 0 {
		return fmt.Errorf("%w: index 0", ErrNotContiguous)
	}
	for i := 1; i < len(logs); i++ {
		if logs[i].Index != logs[i-1].Index+1 {
			return fmt.Errorf("%w: %d follows %d", ErrNotContiguous, logs[i].Index, logs[i-1].Index)
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	first, last, err := s.bounds()
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	// keep is the last stored index the new log keeps: 0 for none.
	keep := lo - 1
	switch {
	case last == 0:
		keep = 0
	case lo == last+1:
	case lo > last+1 || lo <= first:
		keep = 0
		if err := b.DeleteRange(logKey(first), logKeyAfter(last), nil); err != nil {
			return err
		}
	default:
		if err := b.DeleteRange(logKey(lo), logKeyAfter(last), nil); err != nil {
			return err
		}
	}
	for _, l := range logs {
		s.scratch = appendRecord(s.scratch[:0], l)
		if err := b.Set(logKey(l.Index), s.scratch, nil); err != nil {
			return err
		}
	}
	newFirst := first
	if keep == 0 {
		newFirst = lo
	}
	if keep < last { // entries are deleted or replaced: shrink first
		if keep == 0 {
			s.setBounds(0, 0)
		} else {
			s.setBounds(first, keep)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return s.failed(fmt.Errorf("replicate: store logs %d..%d: %w", lo, hi, err))
	}
	s.setBounds(newFirst, hi)
	return nil
}

// DeleteRange deletes the entries from..to, inclusive, in one batch
// committed with pebble.Sync (a Pebble range deletion: its cost does not
// grow with the number of entries). The part of the range outside the log
// is ignored. The range must reach the log's head or its tail (raft
// deletes a compacted head, snapshot.go:244, and a conflicting tail,
// raft.go:1525), or
// both; a range strictly inside the log would leave a hole and is refused
// with ErrNotContiguous.
func (s *LogStore) DeleteRange(from, to uint64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	first, last, err := s.bounds()
	if err != nil || from > to || last == 0 || to < first || from > last {
		return err
	}
	lo, hi := max(from, first), min(to, last)
	newFirst, newLast := first, last
	switch {
	case lo == first && hi == last:
		newFirst, newLast = 0, 0
	case lo == first:
		newFirst = hi + 1
	case hi == last:
		newLast = lo - 1
	default:
		return fmt.Errorf("%w: deleting %d..%d from the log %d..%d would leave a hole", ErrNotContiguous, from, to, first, last)
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(logKey(lo), logKeyAfter(hi), nil); err != nil {
		return err
	}
	s.setBounds(newFirst, newLast)
	if err := b.Commit(pebble.Sync); err != nil {
		return s.failed(fmt.Errorf("replicate: delete logs %d..%d: %w", lo, hi, err))
	}
	return nil
}

// bounds returns first and last, or ErrClosed. The caller holds writeMu.
func (s *LogStore) bounds() (first, last uint64, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, 0, ErrClosed
	}
	return s.first, s.last, nil
}

// setBounds sets first and last. The caller holds writeMu.
func (s *LogStore) setBounds(first, last uint64) {
	s.mu.Lock()
	s.first, s.last = first, last
	s.mu.Unlock()
}

// failed reloads first and last from the DB after a batch failed to
// commit (it may have shrunk them for nothing), and returns err. The
// caller holds writeMu.
func (s *LogStore) failed(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lerr := s.loadBounds(); lerr != nil {
		return errors.Join(err, lerr)
	}
	return err
}

// pebbleLogger passes Pebble's messages to a slog.Logger. Fatalf, which
// Pebble calls when it cannot go on (a failed fsync of its log), logs and
// panics: a store whose durability is unknown must not answer raft.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	l.log.Error(msg)
	panic(msg)
}
