// Command cluster runs one node of a replicated Strata database as its
// own process, started by replicate.StartServer: a raft member on TCP,
// its log on Pebble, its snapshots in files, writes from any node
// forwarded to the leader over HTTP; and a small HTTP API to write, read
// and watch one table of objects.
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
// snapshot and the log after it (with -durable, loaded from its persist
// store and the log after it). The API is in api.go.
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

// run starts the node, serves until SIGINT or SIGTERM, then shuts down
// gracefully (a leader hands its leadership over first).
func run(o *options) (err error) {
	logger := hclog.New(&hclog.LoggerOptions{Name: o.id, Level: o.logLevel, Output: os.Stderr})
	db := strata.New()
	objects, err := strata.NewTable(db, "objects", objectByKey)
	if err != nil {
		return err
	}
	self := o.peers[o.self]
	peers := make([]replicate.Peer, len(o.peers))
	for i, p := range o.peers {
		peers[i] = replicate.Peer{ID: p.id, RaftAddr: p.raft, ForwardAddr: p.forward}
	}
	// A member with the tables in -dir (and in Pebble with -durable),
	// raft on TCP at -raft advertised at its -peers address, the forward
	// server at -forward; it bootstraps the cluster of -peers on its
	// first start (on a restart, raft has it in the log already).
	srv, err := replicate.StartServer(replicate.ServerConfig{
		ID: self.id, NodeNumber: uint16(o.self + 1), Dir: o.dir, Durable: o.durable,
		RaftAddr: o.raftBind, RaftAdvertise: self.raft, ForwardAddr: o.fwdBind, Peers: peers,
		DB: db, Tables: []replicate.Binding{replicate.Bind(objects, persist.JSON[*object]())},
		Raft: func(conf *raft.Config) {
			conf.HeartbeatTimeout = o.heartbeat
			conf.ElectionTimeout = o.timeout
			conf.LeaderLeaseTimeout = o.heartbeat
			conf.SnapshotThreshold = o.snapN
			conf.SnapshotInterval = o.snapInt
			conf.TrailingLogs = o.trailing
		},
		Logger:      logger,
		StoreLogger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	node := srv.Node()
	apiLn, err := net.Listen("tcp", o.api)
	if err != nil {
		return errors.Join(err, srv.Close(context.Background()))
	}
	a := newAPI(o.id, node, db, objects, srv.LogStore())
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
	return errors.Join(err, srv.Close(ctx))
}
