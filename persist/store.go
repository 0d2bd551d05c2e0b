package persist

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	dto "github.com/prometheus/client_model/go"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/metrics"
)

// Store keeps the tables registered with it durable in a Pebble database in
// one directory. It is the strata.Journal of the databases whose tables it
// keeps: every commit that changes one of them is written to the store
// before it becomes visible. Reads never go to the store: they are served
// from memory.
//
// A Store is safe for concurrent use. Close it when done: it syncs the log,
// stops its goroutines and releases the directory.
type Store struct {
	db   *pebble.DB
	dir  string
	fs   vfs.FS
	log  *slog.Logger
	lock *pebble.Lock
	// release ends the store's claim on the directory within this process
	// (see claimDir).
	release func()

	metrics   metrics.Store
	metricsOn bool // Metrics is not a no-op: commits read the clock
	// writeOpts is pebble.Sync, or pebble.NoSync in Buffered mode.
	writeOpts *pebble.WriteOptions
	buffered  bool
	// unsynced is set by every Buffered commit after it is applied, and
	// cleared by the sync loop just before it syncs: a sync after the
	// clear covers every commit that set it before.
	unsynced atomic.Bool

	// batches holds *journalBatch values for reuse.
	batches sync.Pool
	// group gathers concurrent Sync commits (group.go).
	group groupCommit

	// failed holds the first fatal error Pebble reported (pebbleLogger),
	// after which the store refuses every commit.
	failed atomic.Pointer[error]

	// closeMu is held for reading by every use of db (commits, loading,
	// checkpoints, stats) and for writing by Close, which sets closed. A
	// use checks closed first, so db is never used after it is closed.
	closeMu sync.RWMutex
	closed  bool

	// mu guards the catalog, registered and pending.
	mu sync.Mutex
	// catalog maps the name of every table in the store to its id and
	// schema; nextID is the id the next new table gets (ids start at 1 and
	// are never reused).
	catalog map[string]catalogEntry
	nextID  uint32
	// registered holds the tables registered since Open (or being
	// registered), and the tables whose registration was refused or failed
	// once attached to the store: they hold their name until a
	// registration of theirs succeeds (register.go).
	registered map[string]strata.TableMeta
	// pending holds, by table, the registrations that have not succeeded:
	// the initializer each left pending and why it failed (register.go).
	pending map[strata.TableMeta]*pendingReg

	// stop is closed by Close to stop the goroutines in wg.
	stop chan struct{}
	wg   sync.WaitGroup

	// statsMu guards the sync counters of the last sample, from which
	// Stats computes the mean sync latency since.
	statsMu     sync.Mutex
	lastSyncs   uint64
	lastSyncSum float64 // nanoseconds
}

// Open opens the store in directory dir, creating it if needed. Only one
// Store may have a directory open at a time, in this process or any other:
// a second Open fails with ErrLocked. A store written by a newer release in
// an unknown format is refused with ErrNewerFormat.
//
// Open recovers whatever Pebble had durably written; the tables' objects
// come back when each table is registered (Register).
func Open(dir string, opts Options) (_ *Store, err error) {
	s := &Store{
		dir:        dir,
		fs:         opts.FS,
		log:        opts.Logger,
		metrics:    opts.Metrics,
		writeOpts:  pebble.Sync,
		catalog:    map[string]catalogEntry{},
		nextID:     1,
		registered: map[string]strata.TableMeta{},
		pending:    map[strata.TableMeta]*pendingReg{},
		stop:       make(chan struct{}),
	}
	if s.fs == nil {
		s.fs = vfs.Default
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if _, nop := s.metrics.(metrics.NopStore); s.metrics == nil || nop {
		s.metrics, s.metricsOn = metrics.NopStore{}, false
	} else {
		s.metricsOn = true
	}
	syncInterval := time.Duration(0)
	switch m := opts.Sync.(type) {
	case nil, Sync:
	case Buffered:
		s.writeOpts, s.buffered = pebble.NoSync, true
		syncInterval = m.Interval
		if syncInterval <= 0 {
			syncInterval = defaultSyncInterval
		}
	default:
		return nil, fmt.Errorf("persist: open %s: unknown sync mode %T", dir, m)
	}

	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", dir, err)
	}
	if s.release, err = claimDir(s.fs, dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if s.db != nil {
				s.abandonPebble()
			}
			if s.lock != nil {
				s.lock.Close()
			}
			s.release()
		}
	}()
	defer recoverFatal(&err)
	if s.lock, err = pebble.LockDirectory(dir, s.fs); err != nil {
		if lockedError(err) {
			return nil, fmt.Errorf("persist: open %s: %w (%v)", dir, ErrLocked, err)
		}
		return nil, fmt.Errorf("persist: open %s: lock: %w", dir, err)
	}
	if s.db, err = pebble.Open(dir, s.pebbleOptions(opts)); err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", dir, fromPebble(err))
	}
	if err := s.loadMeta(); err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", dir, fromPebble(err))
	}
	s.batches.New = func() any { return &journalBatch{s: s, b: s.db.NewBatch(), done: make(chan error, 1)} }
	if h := testHookOpen; h != nil {
		h(s) // before the store's goroutines read its hooks
	}
	if s.buffered {
		s.wg.Add(1)
		go s.every(syncInterval, s.periodicSync)
	}
	if s.metricsOn {
		s.wg.Add(1)
		interval := opts.StatsInterval
		if interval <= 0 {
			interval = defaultStatsInterval
		}
		go s.every(interval, func() { s.metrics.Stats(s.Stats()) })
	}
	return s, nil
}

// pebbleOptions returns the options Pebble opens the store with.
func (s *Store) pebbleOptions(opts Options) *pebble.Options {
	po := &pebble.Options{
		CacheSize:    cmp.Or(opts.CacheSize, defaultCacheSize),
		MemTableSize: opts.MemTableSize,
	}
	if opts.Pebble != nil {
		opts.Pebble(po)
	}
	// What the store relies on, whatever opts.Pebble did.
	po.FS = s.fs
	po.Lock = s.lock
	po.FormatMajorVersion = pebbleFormat
	po.Logger = &pebbleLogger{log: s.log, onFatal: s.fail, fs: s.fs}
	po.LoggerAndTracer = nil
	po.EventListener = eventListener(s.log, s.fail)
	po.ReadOnly = false
	po.DisableWAL = false
	return po
}

// fail records the first fatal error: from then on the store refuses
// commits.
func (s *Store) fail(err error) { s.failed.CompareAndSwap(nil, &err) }

// usable returns why the store cannot be written, or nil. The caller holds
// closeMu.
func (s *Store) usable() error {
	if s.closed {
		return ErrClosed
	}
	if p := s.failed.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrStoreFailed, *p)
	}
	return nil
}

// openDirs holds the identities (device and inode) of the directories that
// Stores of this process have open. Pebble's lock tells processes apart
// (a POSIX lock), but within one process it knows a directory only by the
// path it was given: a second Open through a symbolic link or
// /proc/self/root would take the same POSIX lock again, and closing either
// store would drop it for both. Claiming the directory by its identity
// first refuses that with ErrLocked.
var openDirs struct {
	sync.Mutex
	m map[string]bool
}

// claimDir claims dir for a Store of this process, if fs reports the
// operating system's identity of the directory (vfs.Default does, and so
// do file systems that wrap it), and returns the function that releases the
// claim. Other file systems, such as vfs.MemFS, refuse a second lock within
// the process themselves.
func claimDir(fs vfs.FS, dir string) (func(), error) {
	info, err := fs.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", dir, err)
	}
	id, ok := fileIdentity(info)
	if !ok {
		return func() {}, nil
	}
	openDirs.Lock()
	defer openDirs.Unlock()
	if openDirs.m[id] {
		return nil, fmt.Errorf("persist: open %s: %w (by this process)", dir, ErrLocked)
	}
	if openDirs.m == nil {
		openDirs.m = map[string]bool{}
	}
	openDirs.m[id] = true
	return func() {
		openDirs.Lock()
		delete(openDirs.m, id)
		openDirs.Unlock()
	}, nil
}

// lockedError reports whether err, from Pebble's lock, says that another
// holder has the lock: another process (EAGAIN, EACCES: POSIX locks), or
// this one (Pebble's own message, for a file system that wraps the
// operating system's under another path).
func lockedError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// loadMeta checks the store's format, writes it into a new store, and
// reads the catalog.
func (s *Store) loadMeta() error {
	// The format as this release writes it: the store format, and the
	// Pebble format Open may have upgraded the store to.
	val := binary.AppendUvarint(nil, storeFormat)
	val = binary.AppendUvarint(val, uint64(s.db.FormatMajorVersion()))
	_, rec, err := readFormat(s.db)
	if err != nil {
		return err
	}
	same := bytes.Equal(rec, val)
	// (Re)write the format if it changed: new stores get it, and the
	// recorded Pebble format follows the upgrade Open may have made. An
	// unchanged one is not written again, which would cost every Open a
	// log sync.
	if !same {
		if err := s.db.Set(formatKey, val, pebble.Sync); err != nil {
			return err
		}
	}

	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: catalogPrefix, UpperBound: catalogEnd})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[1:])
		id, err := parseUvarint(it.Value())
		if err != nil || id == 0 || id > uint64(^uint32(0)) {
			it.Close()
			return fmt.Errorf("catalog entry %q: %w", name, ErrCorrupt)
		}
		e := catalogEntry{id: uint32(id)}
		if e.schema, err = s.readSchema(e.id); err != nil {
			it.Close()
			return fmt.Errorf("catalog entry %q: %w", name, err)
		}
		s.catalog[name] = e
		s.nextID = max(s.nextID, uint32(id)+1)
	}
	err = it.Error()
	return errors.Join(err, it.Close())
}

// catalogEntry is a table of the catalog: its id, and the schema it was
// last registered with (nil if none was recorded: a store written by an
// older release).
type catalogEntry struct {
	id     uint32
	schema *schema
}

// readSchema returns the schema recorded for table id, or nil.
func (s *Store) readSchema(id uint32) (*schema, error) {
	v, closer, err := s.db.Get(schemaKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	sc, rest, err := parseSchema(v)
	if err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("schema: %w", ErrCorrupt)
	}
	return &sc, nil
}

// Close syncs the log, flushes Pebble's memtable (so that the next Open
// has no log to replay), stops the store's goroutines and releases the
// directory. Commits to persisted tables fail with ErrClosed afterwards.
// Closing a closed store returns ErrClosed.
//
// Close returns the error of a store that failed (ErrStoreFailed); it
// releases the directory all the same.
func (s *Store) Close() (err error) {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.closeMu.Unlock()

	close(s.stop)
	s.wg.Wait()

	defer func() {
		s.lock.Close()
		s.release()
	}()
	defer recoverFatal(&err)
	if p := s.failed.Load(); p != nil {
		// Pebble's memtable may hold a write whose log sync failed: do
		// not flush it into a table file. Pebble's Close may fail too.
		_ = s.closePebble()
		return fmt.Errorf("persist: close %s: %w: %w", s.dir, ErrStoreFailed, *p)
	}
	if s.buffered {
		err = s.db.LogData(nil, pebble.Sync)
	}
	if err == nil {
		err = s.db.Flush()
	}
	err = errors.Join(err, s.closePebble())
	if err != nil {
		return fmt.Errorf("persist: close %s: %w", s.dir, err)
	}
	return nil
}

// closePebble closes the Pebble database, turning a fatal error into an
// error.
func (s *Store) closePebble() (err error) {
	defer recoverFatal(&err)
	return s.db.Close()
}

// abandonPebble closes the Pebble database of a store whose Open failed.
// After a fatal error (damaged media) Pebble's Close may panic on the
// references that the failed read left behind: that panic is recovered and
// logged, as there is nothing more to release.
func (s *Store) abandonPebble() {
	defer func() {
		if r := recover(); r != nil {
			s.log.Debug("persist: closing Pebble after a failed open", "dir", s.dir, "panic", r)
		}
	}()
	if err := s.closePebble(); err != nil {
		s.log.Debug("persist: closing Pebble after a failed open", "dir", s.dir, "err", err)
	}
}

// every runs f every interval until the store closes; the caller has
// added it to s.wg.
func (s *Store) every(interval time.Duration, f func()) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// periodicSync syncs the log, in Buffered mode, if a commit came since the
// last sync.
func (s *Store) periodicSync() {
	s.group.at(holdSyncStart, holdSyncer)
	defer s.group.at(holdSyncEnd, holdSyncer)
	if s.unsynced.Swap(false) {
		hook := testHookSync
		var start time.Time
		if hook != nil {
			start = time.Now()
			hook(start, time.Time{})
		}
		err := s.syncLog()
		if hook != nil {
			hook(start, time.Now())
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			s.log.Error("persist: periodic sync of the log failed", "dir", s.dir, "err", err)
		}
	}
}

// testHookSync, if set, is called by the periodic sync of Buffered mode
// when a sync starts (end is zero) and when it ends: TestBufferedLossAge
// relates what a killed process lost to the syncs.
var testHookSync func(start, end time.Time)

// testHookOpen, if set, is called by Open with the store before it starts
// its goroutines: the interleaving test sets the store's hold points
// (holds.go) there.
var testHookOpen func(s *Store)

// syncLog syncs Pebble's log: every commit applied before is durable when
// it returns nil. (A record synced with pebble.Sync makes the log writer
// sync the file, which covers everything written before it.)
func (s *Store) syncLog() (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	defer recoverFatal(&err)
	return s.db.LogData(nil, pebble.Sync)
}

// Checkpoint writes a consistent copy of the store, as of now, to the
// directory dir, which must not exist; it may be opened as a store of its
// own. Pebble hard-links the table files where it can, so it is cheap; the
// log is synced first, so every commit acknowledged before the call is in
// the copy. Commits may go on meanwhile.
func (s *Store) Checkpoint(dir string) (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	defer recoverFatal(&err)
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	return nil
}

// Unregistered returns, sorted, the names of the tables the store holds
// that were not registered since it was opened. Their objects stay in the
// store untouched, until Drop deletes them or Rename gives them another
// name. A table whose registration was refused or failed once it was
// attached to the store is not listed: it holds its name (Register).
func (s *Store) Unregistered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.catalog {
		if s.registered[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Drop deletes the table name and all its objects from the store, in one
// synced batch: afterwards the store holds nothing of it, and a table
// registered under that name starts empty. Only a table that was not
// registered since the store was opened (one that Unregistered lists) can
// be dropped: a registered one fails with ErrAlreadyRegistered, a name the
// store does not hold with ErrTableUnknown.
func (s *Store) Drop(name string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("persist: drop table %q: %w", name, err)
		}
	}()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	defer recoverFatal(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.unregisteredEntry(name)
	if err != nil {
		return err
	}
	keys := makeTableKeys(e.id)
	b := s.db.NewBatch()
	defer b.Close()
	err = errors.Join(
		b.Delete(catalogKey(name), nil),
		b.Delete(schemaKey(e.id), nil),
		b.Delete(keys.rev, nil),
		b.Delete(appliedMarkKey(e.id), nil),
		b.DeleteRange(keys.prefix, keys.upper, nil))
	if err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	delete(s.catalog, name)
	return nil
}

// Rename gives the table from, with its objects, its revision and its
// schema, the name to, in one synced batch: a table registered under to
// then gets them back. Only a table that was not registered since the
// store was opened can be renamed (ErrAlreadyRegistered), and to must be
// free: neither registered (ErrAlreadyRegistered) nor held by the store
// (ErrTableExists). A name the store does not hold fails with
// ErrTableUnknown.
func (s *Store) Rename(from, to string) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("persist: rename table %q to %q: %w", from, to, err)
		}
	}()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	defer recoverFatal(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.unregisteredEntry(from)
	if err != nil {
		return err
	}
	if s.registered[to] != nil {
		return ErrAlreadyRegistered
	}
	if _, taken := s.catalog[to]; taken {
		return ErrTableExists
	}
	b := s.db.NewBatch()
	defer b.Close()
	err = errors.Join(
		b.Delete(catalogKey(from), nil),
		b.Set(catalogKey(to), binary.AppendUvarint(nil, uint64(e.id)), nil))
	if err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	delete(s.catalog, from)
	s.catalog[to] = e
	return nil
}

// unregisteredEntry returns the catalog entry of name, a table the store
// holds that is not registered. The caller holds mu.
func (s *Store) unregisteredEntry(name string) (catalogEntry, error) {
	if s.registered[name] != nil {
		return catalogEntry{}, ErrAlreadyRegistered
	}
	e, ok := s.catalog[name]
	if !ok {
		return catalogEntry{}, ErrTableUnknown
	}
	return e, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Stats returns the figures of the store's LSM now. The mean sync latency
// is that of the syncs since the previous call (or sample sent to the
// metrics). A closed store returns zero figures.
func (s *Store) Stats() metrics.StoreStats {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return metrics.StoreStats{}
	}
	m := s.db.Metrics()
	s.closeMu.RUnlock()

	st := metrics.StoreStats{
		WALBytesWritten: m.WAL.BytesWritten,
		Compactions:     m.Compact.Count,
		CompactionDebt:  m.Compact.EstimatedDebt,
		DiskUsage:       m.DiskSpaceUsage(),
	}
	if h := m.LogWriter.FsyncLatency; h != nil {
		var pm dto.Metric
		if h.Write(&pm) == nil && pm.Histogram != nil {
			count, sum := pm.Histogram.GetSampleCount(), pm.Histogram.GetSampleSum()
			st.WALSyncs = count
			s.statsMu.Lock()
			if count > s.lastSyncs {
				st.WALSyncLatency = time.Duration((sum - s.lastSyncSum) / float64(count-s.lastSyncs))
			}
			s.lastSyncs, s.lastSyncSum = count, sum
			s.statsMu.Unlock()
		}
	}
	s.mu.Lock()
	st.Tables = len(s.catalog)
	s.mu.Unlock()
	return st
}
