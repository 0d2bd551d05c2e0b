package persist

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata/metrics"
)

// Options configure a Store. The zero value is ready to use: Sync commits,
// slog.Default for Pebble's messages, no metrics, the operating system's
// file system.
type Options struct {
	// Sync says when a commit is durable: Sync{} (the default) or
	// Buffered{Interval}.
	Sync SyncMode
	// Logger receives Pebble's messages (its informational ones at Debug
	// level) and the store's own. The default is slog.Default().
	Logger *slog.Logger
	// Metrics receives a measurement for every commit and, every
	// StatsInterval, the figures of the LSM. The default, nil or
	// metrics.NopStore, costs nothing: not even a clock read per commit.
	Metrics metrics.Store
	// StatsInterval is how often the LSM's figures are sent to Metrics.
	// The default is 10 seconds. Nothing is sampled without Metrics.
	StatsInterval time.Duration
	// FS is the file system the store lives in: vfs.Default (the default),
	// or an in-memory or fault-injecting one in tests.
	FS vfs.FS

	// CacheSize is the size in bytes of Pebble's block cache. Reads are
	// served from memory, so the cache only speeds up loading and
	// compactions; the default is 8 MiB.
	CacheSize int64
	// MemTableSize is the size in bytes of Pebble's memtable: larger ones
	// mean fewer, larger table files and a longer log to replay on open.
	// The default is Pebble's (4 MiB).
	MemTableSize uint64
	// Pebble, if set, may change any other Pebble option before the store
	// opens. The store then sets what it relies on, whatever Pebble did:
	// FS, the directory lock, the format major version, Logger and
	// EventListener.
	Pebble func(*pebble.Options)
}

// SyncMode says when a commit is durable: Sync or Buffered.
type SyncMode interface{ syncMode() }

// Sync makes every commit durable before it is acknowledged: Commit returns
// only after Pebble has written the commit's record to its log and synced
// the log to disk. Commits made at the same time share one batch and one
// sync, whether they write different tables or one: the store gathers them
// (its group commit, group.go), and a commit unlocks its tables once its
// record is queued (the database's early lock release), so concurrent
// writers do not pay one sync each.
type Sync struct{}

// Buffered acknowledges a commit once Pebble has taken its record, before
// the log is synced; a goroutine syncs the log every Interval (default
// 100ms), and Close syncs it.
//
// Its promise is weaker, and it is meant plainly: Pebble buffers the log in
// the process's memory before writing it to the operating system, so not
// only a power loss or a kernel crash but also a crash of the process (a
// panic, kill -9, an out-of-memory kill) can lose the last commits: those
// acknowledged after the start of the last periodic sync that completed.
// That is the last Interval plus the time the log syncs around the crash
// take, as Pebble's log writer writes nothing to the operating system
// while it waits for an fsync: about the Interval on a fast disk, and as long as
// the slowest fsync on a slow one (README.md, "How much a crash loses":
// with Interval 20ms, at most 69ms in 300 kills on a quiet disk; 433ms
// was seen on a loaded one). What survives is always a prefix of the
// commits, each whole: a commit is never torn, and a lost commit takes
// every later one with it.
type Buffered struct {
	Interval time.Duration
}

func (Sync) syncMode()     {}
func (Buffered) syncMode() {}

const (
	defaultSyncInterval  = 100 * time.Millisecond
	defaultStatsInterval = 10 * time.Second
	defaultCacheSize     = 8 << 20
)

// pebbleFormat is the Pebble format major version a store is created with
// and upgraded to: pinned, never FormatNewest, so that a Pebble upgrade
// never changes the files under a user's feet. Raising it is a deliberate
// change, with a note in README.md: stores it upgrades can no longer be
// opened by older releases. FormatTableFormatV6 brings WAL sync chunks
// (in every log but a new store's first) and checksummed table footers. With sync chunks Pebble tells damage in an
// older log, or before the last synced block of the newest one, from a
// torn tail; damage in the newest log's last block looks to it like a
// torn tail, and recovery drops the rest of the log: the store then says
// where the recovery stopped and how much it dropped, at Warn level if
// what was dropped may hold acknowledged commits (pebbleLogger.walStopped).
const pebbleFormat = pebble.FormatTableFormatV6

// storeFormat is the version of the layout this package writes on top of
// Pebble (keys.go). A store written with a higher one is refused with
// ErrNewerFormat. Format 2 added the tables' schemas, which format 1 did
// not record: Open raises a format 1 store to 2, and Register checks a
// table without a recorded schema against nothing and records its own.
const storeFormat = 2
