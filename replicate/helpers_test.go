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

// testRaftConfig is the raft configuration of the in-process clusters,
// changed by opts: the one builder of the tests' raft configurations
// (the cluster benchmarks' is testRaftConfig(id, benchRaft()...), the
// servers' timeouts are testTimeouts).
//
// The timeouts are sized for CI's shared 2-core machine, not for speed: a
// leader steps down when it has not heard from a quorum for
// LeaderLeaseTimeout, and at 50 ms a scheduler or GC stall under load
// was enough to lose leadership in the middle of a test about something
// else (TestReadAtLeastOwnCommits failed in CI that way). At 250 ms a
// stall must last a quarter of a second; a first election still takes
// under a second. Tests of failover choose their own.
func testRaftConfig(id raft.ServerID, opts ...raftOption) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	testTimeouts(conf)
	conf.SnapshotThreshold = 1 << 40 // snapshots only when a test asks
	conf.SnapshotInterval = time.Hour
	conf.Logger = hclog.NewNullLogger()
	for _, o := range opts {
		o(conf)
	}
	return conf
}

// A raftOption changes a testRaftConfig.
type raftOption func(*raft.Config)

// testTimeouts sets testRaftConfig's timeouts: heartbeat, election and
// leader lease 250 ms, CommitTimeout 5 ms.
func testTimeouts(conf *raft.Config) {
	raftTimeouts(250 * time.Millisecond)(conf)
	conf.CommitTimeout = 5 * time.Millisecond
}

// raftTimeouts sets the heartbeat, election and leader-lease timeouts to d.
func raftTimeouts(d time.Duration) raftOption {
	return func(conf *raft.Config) {
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = d, d, d
	}
}

// raftCommitTimeout sets CommitTimeout.
func raftCommitTimeout(d time.Duration) raftOption {
	return func(conf *raft.Config) { conf.CommitTimeout = d }
}

// raftSnapshotInterval sets SnapshotInterval.
func raftSnapshotInterval(d time.Duration) raftOption {
	return func(conf *raft.Config) { conf.SnapshotInterval = d }
}

// config returns the Config of nd as a member of an in-process test
// cluster, changed by opts: the one builder of the test clusters' node
// Configs. Its database and bindings are nd.db's and binds, its number
// nd.num, its raft configuration conf, its log and stable store
// nd.store, its snapshots nd.snaps, its transport nd.trans.
func (nd *rnode) config(binds []Binding, conf *raft.Config, opts ...nodeOption) Config {
	cfg := Config{
		DB: nd.db, Tables: binds, NodeNumber: nd.num, Raft: conf,
		LogStore: nd.store, StableStore: nd.store, Snapshots: nd.snaps, Transport: nd.trans,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// A nodeOption changes an rnode.config.
type nodeOption func(*Config)

// withLeaderIndex sets Config.LeaderIndex.
func withLeaderIndex(li LeaderIndexer) nodeOption {
	return func(cfg *Config) { cfg.LeaderIndex = li }
}

// withForwarder sets Config.Forwarder.
func withForwarder(f Forwarder) nodeOption {
	return func(cfg *Config) { cfg.Forwarder = f }
}

// withHold sets the hook at the hold points (Config.hold).
func withHold(h func(holdPoint, int)) nodeOption {
	return func(cfg *Config) { cfg.hold = h }
}

// withLogStore gives raft ls as its log store (its stable store stays
// nd.store).
func withLogStore(ls raft.LogStore) nodeOption {
	return func(cfg *Config) { cfg.LogStore = ls }
}

// withTransport gives the node t as its transport.
func withTransport(t raft.Transport) nodeOption {
	return func(cfg *Config) { cfg.Transport = t }
}
