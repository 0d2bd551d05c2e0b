package replicate

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// quiet is the tests' logger: Pebble's errors only.
var quiet = slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError}))

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// openStore opens the store in dir (in fs, if not nil) with the full
// check on open, and fails the test if it cannot.
func openStore(t testing.TB, fs vfs.FS, dir string) *LogStore {
	t.Helper()
	s, err := Open(dir, Options{FS: fs, Logger: quiet, VerifyOnOpen: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// testSnapshots returns a snapshot store in a new directory of tb's:
// raft's FileSnapshotStore. raft v1.7.2's InmemSnapshotStore makes a
// snapshot the latest at Create, before it is written, so a follower
// could be sent half of one while the leader writes it, which the race
// detector reported (TestFaultCatchUp, a snapshot every 50 ms).
func testSnapshots(tb testing.TB) raft.SnapshotStore {
	tb.Helper()
	s, err := raft.NewFileSnapshotStoreWithLogger(tb.TempDir(), 2, hclog.NewNullLogger())
	if err != nil {
		tb.Fatalf("snapshot store: %v", err)
	}
	return s
}

func closeStore(t testing.TB, s *LogStore) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// must fails the test if err is not nil: every write a test makes is
// checked, so that none can pass because a write silently failed.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// bounds returns the store's first and last indexes.
func bounds(t testing.TB, s *LogStore) (first, last uint64) {
	t.Helper()
	first, err := s.FirstIndex()
	must(t, err)
	last, err = s.LastIndex()
	must(t, err)
	return first, last
}

// entries returns the entries lo..hi made by entryFor with the given term.
func entries(lo, hi, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := lo; i <= hi; i++ {
		ls = append(ls, entryFor(i, term))
	}
	return ls
}

// testRaftConfig is the raft configuration of the in-process clusters.
//
// The timeouts are sized for CI's shared 2-core machine, not for speed: a
// leader steps down when it has not heard from a quorum for
// LeaderLeaseTimeout, and at 50 ms a scheduler or GC stall under load
// was enough to lose leadership in the middle of a test about something
// else (TestReadAtLeastOwnCommits failed in CI that way). At 250 ms a
// stall must last a quarter of a second; a first election still takes
// under a second. Tests of failover choose their own.
func testRaftConfig(id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.HeartbeatTimeout = 250 * time.Millisecond
	conf.ElectionTimeout = 250 * time.Millisecond
	conf.LeaderLeaseTimeout = 250 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotThreshold = 1 << 40 // snapshots only when a test asks
	conf.SnapshotInterval = time.Hour
	conf.Logger = hclog.NewNullLogger()
	return conf
}
