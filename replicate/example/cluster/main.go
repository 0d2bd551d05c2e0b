// Command cluster runs one node of a replicated Strata database as its
// own process: a raft member on TCP (raft.NewTCPTransport), its log on
// Pebble (replicate.Open), its snapshots in files
// (raft.NewFileSnapshotStore), writes from any node forwarded to the
// leader over HTTP (replicate.NetForwarder, replicate.ServeForward), and a
// small HTTP API to write, read and watch one table of objects.
//
// Three nodes on one machine (demo.sh does this, then kills the leader):
//
//	peers=n1=127.0.0.1:7001=127.0.0.1:7101,n2=127.0.0.1:7002=127.0.0.1:7102,n3=127.0.0.1:7003=127.0.0.1:7103
//	cluster -id n1 -api 127.0.0.1:7201 -dir data/n1 -peers $peers &
//	cluster -id n2 -api 127.0.0.1:7202 -dir data/n2 -peers $peers &
//	cluster -id n3 -api 127.0.0.1:7203 -dir data/n3 -peers $peers &
//	curl -X PUT -d hello 127.0.0.1:7202/objects/greeting
//	curl '127.0.0.1:7203/objects/greeting?read=linearizable'
//	curl -N 127.0.0.1:7203/watch
//
// Every node bootstraps the cluster from -peers on its first start (the
// same configuration on every node, which raft allows) and restarts from
// its data directory: the state is in memory, rebuilt from raft's latest
// snapshot and the log after it. The API is in api.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
)

// object is the replicated table's object.
type object struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Writes counts the writes of the key that committed: each PUT reads
	// the object and writes it back with one more.
	Writes int `json:"writes"`
}

var objectByKey = strata.Index[*object, string]{
	Name:       "key",
	FromObject: func(o *object) index.KeySet { return index.NewKeySet(index.String(o.Key)) },
	FromKey:    index.String,
	Unique:     true,
}

// peer is one member of -peers.
type peer struct {
	id      raft.ServerID
	raft    string // raft's TCP address
	forward string // the ForwardServer's
}

// options are the command's flags.
type options struct {
	id       string
	peers    []peer
	self     int // the index of -id in peers
	raftBind string
	fwdBind  string
	api      string
	dir      string
	timeout  time.Duration
	// heartbeat is raft's HeartbeatTimeout and LeaderLeaseTimeout (which
	// raft wants no larger).
	heartbeat time.Duration
	snapN     uint64
	snapInt   time.Duration
	trailing  uint64
	logLevel  hclog.Level
	durable   bool
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cluster -id ID -peers ID=RAFT=FORWARD,... -api ADDR -dir DIR [flags]")
		fs.PrintDefaults()
	}
	// parse errors are printed once, by main
	fs.SetOutput(io.Discard)
	o := &options{}
	var peers, level string
	fs.StringVar(&o.id, "id", "", "this node's id: one of -peers (required)")
	fs.StringVar(&peers, "peers", "", "the cluster: id=raftaddr=forwardaddr,... the same list on every node (required)")
	fs.StringVar(&o.raftBind, "raft", "", "address raft listens on (default: this node's raft address in -peers)")
	fs.StringVar(&o.fwdBind, "forward", "", "address the forward server listens on (default: this node's forward address in -peers)")
	fs.StringVar(&o.api, "api", "", "address of the HTTP API (required)")
	fs.StringVar(&o.dir, "dir", "", "data directory: raft's log and snapshots, and the tables' store with -durable (required)")
	fs.BoolVar(&o.durable, "durable", false, "keep the tables in a persist store in -dir: a restart loads them and replays only the log after them")
	fs.DurationVar(&o.timeout, "timeout", time.Second, "raft's election timeout; the heartbeat and leader-lease timeouts are half of it unless -heartbeat")
	fs.DurationVar(&o.heartbeat, "heartbeat", 0, "raft's heartbeat and leader-lease timeout (default half of -timeout, as replicate.RaftConfig): a follower starts an election one to three of them after the leader's last contact; lower fails over sooner, and steps a stalled leader down sooner")
	fs.Uint64Var(&o.snapN, "snapshot-threshold", 8192, "log entries between raft snapshots")
	fs.DurationVar(&o.snapInt, "snapshot-interval", 30*time.Second, "how often raft checks -snapshot-threshold")
	fs.Uint64Var(&o.trailing, "trailing-logs", 10240, "log entries kept behind a snapshot")
	fs.StringVar(&level, "log", "warn", "raft's log level on stderr: off, error, warn, info, debug")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
		}
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.id == "" || peers == "" || o.api == "" || o.dir == "":
		return nil, errors.New("-id, -peers, -api and -dir are required")
	case o.timeout < 10*time.Millisecond:
		return nil, fmt.Errorf("-timeout %v: at least 10ms", o.timeout)
	case o.heartbeat < 0 || o.heartbeat > 0 && o.heartbeat < 10*time.Millisecond:
		return nil, fmt.Errorf("-heartbeat %v: at least 10ms", o.heartbeat)
	case o.snapN == 0:
		return nil, errors.New("-snapshot-threshold must be at least 1")
	case o.snapInt <= 0:
		return nil, errors.New("-snapshot-interval must be positive")
	}
	if o.heartbeat == 0 {
		o.heartbeat = o.timeout / 2
	}
	if o.logLevel = hclog.LevelFromString(level); o.logLevel == hclog.NoLevel {
		return nil, fmt.Errorf("-log %q: not one of off, error, warn, info, debug", level)
	}
	var err error
	if o.peers, err = parsePeers(peers); err != nil {
		return nil, err
	}
	o.self = -1
	for i, p := range o.peers {
		if string(p.id) == o.id {
			o.self = i
		}
	}
	if o.self < 0 {
		return nil, fmt.Errorf("-id %q is not in -peers", o.id)
	}
	if o.raftBind == "" {
		o.raftBind = o.peers[o.self].raft
	}
	if o.fwdBind == "" {
		o.fwdBind = o.peers[o.self].forward
	}
	return o, nil
}

// parsePeers parses -peers: id=raftaddr=forwardaddr, comma-separated.
func parsePeers(s string) ([]peer, error) {
	var peers []peer
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		f := strings.Split(strings.TrimSpace(item), "=")
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("-peers: %q is not id=raftaddr=forwardaddr", item)
		}
		for _, addr := range f[1:] {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("-peers: %q: %v", item, err)
			}
		}
		for _, k := range f {
			if seen[k] {
				return nil, fmt.Errorf("-peers: %q appears twice", k)
			}
			seen[k] = true
		}
		peers = append(peers, peer{id: raft.ServerID(f[0]), raft: f[1], forward: f[2]})
	}
	if len(peers) > 1<<16-1 {
		return nil, errors.New("-peers: too many")
	}
	return peers, nil
}

// member is the node of this process and the database it replicates.
type member struct {
	db      *strata.DB
	objects strata.RWTable[*object]
	node    *replicate.Node
}

// startMember creates the database and its table, starts the node on
// raft's stores and transport, and bootstraps the cluster of -peers on
// the node's first start (on a restart, raft has it in the log already).
func startMember(o *options, logger hclog.Logger, store *replicate.LogStore, state *persist.Store, snaps raft.SnapshotStore, trans raft.Transport, fwd replicate.Forwarder) (*member, error) {
	m := &member{db: strata.New()}
	var err error
	if m.objects, err = strata.NewTable(m.db, "objects", objectByKey); err != nil {
		return nil, err
	}
	conf := replicate.RaftConfig()
	conf.LocalID = o.peers[o.self].id
	conf.HeartbeatTimeout = o.heartbeat
	conf.ElectionTimeout = o.timeout
	conf.LeaderLeaseTimeout = o.heartbeat
	conf.SnapshotThreshold = o.snapN
	conf.SnapshotInterval = o.snapInt
	conf.TrailingLogs = o.trailing
	conf.Logger = logger
	m.node, err = replicate.NewNode(replicate.Config{
		DB:         m.db,
		Tables:     []replicate.Binding{replicate.Bind(m.objects, persist.JSON[*object]())},
		NodeNumber: uint16(o.self + 1),
		Raft:       conf,
		LogStore:   store, StableStore: store, Snapshots: snaps, Transport: trans,
		Forwarder: fwd, Store: state,
	})
	if err != nil {
		return nil, err
	}
	var servers []raft.Server
	for _, p := range o.peers {
		servers = append(servers, raft.Server{ID: p.id, Address: raft.ServerAddress(p.raft)})
	}
	if err := m.node.Bootstrap(servers); err != nil && !errors.Is(err, replicate.ErrAlreadyBootstrapped) {
		return nil, errors.Join(err, m.node.Close())
	}
	return m, nil
}

// forwardAddrs maps each peer's raft address to its forward address: a
// follower learns its leader's raft address only.
func (o *options) forwardAddrs() map[raft.ServerAddress]string {
	addrs := map[raft.ServerAddress]string{}
	for _, p := range o.peers {
		addrs[raft.ServerAddress(p.raft)] = p.forward
	}
	return addrs
}

// run starts the node, serves until SIGINT or SIGTERM, then shuts down
// gracefully (a leader hands its leadership over first).
func run(o *options) (err error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: o.id, Level: o.logLevel, Output: os.Stderr})
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	store, err := replicate.Open(filepath.Join(o.dir, "raft"), replicate.Options{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(o.dir, 2, logger.Named("snapshots"))
	if err != nil {
		return err
	}
	self := o.peers[o.self]
	advertise, err := net.ResolveTCPAddr("tcp", self.raft)
	if err != nil {
		return fmt.Errorf("raft address %s: %w", self.raft, err)
	}
	trans, err := raft.NewTCPTransportWithLogger(o.raftBind, advertise, 3, 10*time.Second, logger.Named("transport"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, trans.Close()) }()

	fwd := replicate.NewNetForwarder(replicate.StaticResolver(o.forwardAddrs(), nil))
	defer fwd.Close()        // after the node (Shutdown, in the return)
	var state *persist.Store // -durable: the tables' store
	if o.durable {
		state, err = persist.Open(filepath.Join(o.dir, "state"), persist.Options{
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, state.Close()) }()
	}
	m, err := startMember(o, logger, store, state, snaps, trans, fwd)
	if err != nil {
		return err
	}
	node := m.node

	fwdLn, err := net.Listen("tcp", o.fwdBind)
	if err != nil {
		_ = node.Close()
		return err
	}
	fwdSrv := replicate.ServeForward(node, fwdLn)
	apiLn, err := net.Listen("tcp", o.api)
	if err != nil {
		_ = fwdSrv.Close()
		_ = node.Close()
		return err
	}
	a := newAPI(o.id, node, m.db, m.objects, store)
	apiDone := make(chan error, 1)
	go func() { apiDone <- a.serve(apiLn) }()
	logger.Info("serving", "raft", self.raft, "forward", self.forward, "api", o.api)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s)
	case err = <-apiDone:
	}
	a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*o.timeout+time.Second)
	defer cancel()
	return errors.Join(err, node.Shutdown(ctx), fwdSrv.Close())
}
