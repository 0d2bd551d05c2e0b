package replicated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/cilium/hive/cell"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/replicate"
)

// Cell provides the hive's raft node, *Replica, over the hive's
// *strata.DB: when the hive starts it opens raft's log (a Pebble store in
// --strata-raft-dir), its snapshot store and its TCP transport, starts a
// replicate.Node replicating every table declared with Table, serves the
// followers' forwarded writes (--strata-raft-forward) and bootstraps the
// cluster if told to (--strata-raft-bootstrap); when the hive stops it
// shuts the node down gracefully (a leader hands its leadership over
// first: replicate.Node.Shutdown) and closes all of it. The node's health
// goes to the hive's cell.Health, if the program provides one, under the
// scope "strata-raft".
//
// A configuration it cannot run with fails the hive's construction with
// ErrInvalidConfig; a store, transport or listener that cannot open fails
// its start with their error, and closes what had opened.
var Cell = cell.Module(
	"strata-replicated",
	"Replicated Strata tables on a raft node",

	cell.Config(DefaultConfig),
	cell.Provide(newReplica, scriptCommands),
)

// Options are what a program (or a test) may give the Cell beyond its
// flags, by providing them to the hive:
//
//	cell.Provide(func() replicated.Options { return replicated.Options{Transport: trans} })
type Options struct {
	// Transport, if not nil, is raft's transport instead of a TCP
	// transport on --strata-raft-bind (tests give raft.InmemTransport, so
	// that several hives form a cluster in one process). The program
	// closes it, after the hive stopped.
	Transport raft.Transport
	// Raft, if not nil, changes raft's configuration after the Cell set
	// its own (replicate.RaftConfig, with LocalID and the logger):
	// timeouts, snapshot thresholds.
	Raft func(*raft.Config)
	// Forwarder, if not nil, carries this node's forwarded writes instead
	// of a replicate.NetForwarder resolving --strata-raft-peers. One that
	// has Register and Unregister methods (replicate.LocalForwarder) is
	// given the node when it starts and takes it back when it stops.
	Forwarder replicate.Forwarder
}

// ErrNoTables is the start error of a Cell with no table declared with
// Table: a node replicates at least one.
var ErrNoTables = errors.New("replicated: no table declared with replicated.Table")

// Replica is this program's member of the replicated database: the
// replicate.Node the Cell runs from the hive's start to its stop, with
// what it runs on (raft's stores and transport, the forward server).
type Replica struct {
	// Set by the constructor, read-only after.
	cfg   Config
	peers []Peer
	opts  Options
	db    *strata.DB
	log   *slog.Logger
	// health is the Cell's scope of the hive's health, nil without one.
	health cell.Health

	mu sync.Mutex
	// tables are the bindings of the tables declared with Table, in
	// declaration order; added before the start only.
	tables []replicate.Binding
	// node and what it runs on: set by start, under mu; node stays set
	// (closed) after stop, so that callers holding the Replica get
	// replicate.ErrShutdown rather than nil. run is nil when the node is
	// not running.
	node *replicate.Node
	run  *running
}

// running is the server start started and stop closes, and the health
// watch on its node.
type running struct {
	srv       *replicate.Server
	stopWatch context.CancelFunc
	watchDone chan struct{}
}

type replicaParams struct {
	cell.In

	Config    Config
	Lifecycle cell.Lifecycle
	Log       *slog.Logger
	DB        *strata.DB
	Health    cell.Health `optional:"true"`
	Options   Options     `optional:"true"`
}

func newReplica(p replicaParams) (*Replica, error) {
	peers, err := p.Config.check(p.Options.Transport != nil)
	if err != nil {
		return nil, err
	}
	r := &Replica{cfg: p.Config, peers: peers, opts: p.Options, db: p.DB, log: p.Log}
	if p.Health != nil {
		r.health = p.Health.NewScope("strata-raft")
	}
	p.Lifecycle.Append(cell.Hook{OnStart: r.start, OnStop: r.stop})
	return r, nil
}

// Node returns the replicate.Node: nil before the hive started, the
// closed node after it stopped (whose calls fail with
// replicate.ErrShutdown). A cell that depends on the Replica starts after
// it: its start hooks and jobs find the node running.
func (r *Replica) Node() *replicate.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.node
}

// ID returns the node's raft server ID (--strata-raft-id).
func (r *Replica) ID() raft.ServerID { return raft.ServerID(r.cfg.StrataRaftID) }

// Tables returns the tables declared with Table, in declaration order.
func (r *Replica) Tables() []strata.TableMeta {
	r.mu.Lock()
	defer r.mu.Unlock()
	metas := make([]strata.TableMeta, len(r.tables))
	for i, b := range r.tables {
		metas[i] = b.Table()
	}
	return metas
}

func (r *Replica) add(b replicate.Binding) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.node != nil {
		return fmt.Errorf("replicated: table %q declared after the node started", b.Table().Name())
	}
	r.tables = append(r.tables, b)
	return nil
}

func (r *Replica) start(ctx cell.HookContext) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != nil {
		return nil
	}
	if len(r.tables) == 0 {
		return ErrNoTables
	}
	srv, err := r.open()
	if err != nil {
		return err
	}
	run := &running{srv: srv}
	r.node, r.run = srv.Node(), run
	r.watchHealth(run)
	return nil
}

// open starts the node with replicate.StartServer, from the flags and
// the Options. StartServer's refusals and listen errors name its
// fields; open names the flags.
func (r *Replica) open() (*replicate.Server, error) {
	cfg := r.cfg
	peers := make([]replicate.Peer, len(r.peers))
	for i, p := range r.peers {
		peers[i] = replicate.Peer{ID: p.ID, RaftAddr: string(p.Address), ForwardAddr: p.Forward}
	}
	srv, err := replicate.StartServer(replicate.ServerConfig{
		ID: raft.ServerID(cfg.StrataRaftID), NodeNumber: uint16(cfg.StrataRaftNodeNumber),
		Dir: cfg.StrataRaftDir, Durable: cfg.StrataRaftDurable,
		RaftAddr: cfg.StrataRaftBind, RaftAdvertise: cfg.StrataRaftAdvertise, ForwardAddr: cfg.StrataRaftForward,
		Peers: peers, Join: !cfg.StrataRaftBootstrap,
		Transport: r.opts.Transport, Forwarder: r.opts.Forwarder,
		DB: r.db, Tables: r.tables, Raft: r.opts.Raft,
		Logger: raftLogger(r.log), StoreLogger: r.log,
	})
	var le *replicate.ListenError
	switch {
	case errors.As(err, &le) && le.Part == "raft":
		return nil, fmt.Errorf("replicated: raft transport on --strata-raft-bind=%q: %w", cfg.StrataRaftBind, le.Err)
	case errors.As(err, &le) && le.Part == "forward":
		return nil, fmt.Errorf("replicated: --strata-raft-forward: %w", le.Err)
	case errors.Is(err, replicate.ErrInvalidServerConfig):
		return nil, fmt.Errorf("%w: %w (flags --strata-raft-bind, --strata-raft-advertise, --strata-raft-forward, --strata-raft-peers)", ErrInvalidConfig, err)
	}
	return srv, err
}

func (r *Replica) stop(ctx cell.HookContext) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.run
	if run == nil {
		return nil
	}
	r.run = nil
	run.stopWatch()
	<-run.watchDone
	// The leader hands its leadership over, and the node closes
	// (replicate.Server.Handover). Its error can only be the handover's:
	// one that failed, as the last node of a cluster that lost its
	// quorum must, is not a failure to stop.
	if err := run.srv.Handover(ctx); err != nil {
		r.log.Warn("replicated: the leadership was not handed over", "error", err)
	}
	if r.health != nil {
		r.health.Stopped("node closed")
	}
	return run.srv.Close(ctx)
}

// raftLogger is raft's logger: its warnings and errors, line by line, to
// the hive's logger (raft's informational messages, every election and
// snapshot, are left out).
func raftLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Warn,
		Output:      slogWriter{log},
		DisableTime: true,
	})
}

// slogWriter writes each line it is given to a logger, as a warning.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		w.log.Warn(line)
	}
	return len(p), nil
}
