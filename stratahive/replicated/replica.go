package replicated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/hive/cell"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
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

// registrar is a Forwarder that must know the nodes it reaches
// (replicate.LocalForwarder).
type registrar interface {
	Register(raft.ServerAddress, *replicate.Node)
	Unregister(raft.ServerAddress)
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

// running is what start opened and stop closes, in reverse order.
type running struct {
	store     *replicate.LogStore
	state     *persist.Store // --strata-raft-durable
	transport raft.Transport
	tcp       *raft.NetworkTransport // the transport, if the Cell opened it
	netFwd    *replicate.NetForwarder
	fwdSrv    *replicate.ForwardServer
	reg       registrar
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
	run := &running{}
	n, err := r.open(run)
	if err != nil {
		return errors.Join(err, run.close())
	}
	r.node, r.run = n, run
	r.watchHealth(run)
	return nil
}

// open opens, into run, what the node runs on, and starts the node.
func (r *Replica) open(run *running) (*replicate.Node, error) {
	cfg := r.cfg
	rlog := raftLogger(r.log)
	var err error
	run.store, err = replicate.Open(filepath.Join(cfg.StrataRaftDir, "raft-log"), replicate.Options{Logger: r.log})
	if err != nil {
		return nil, err
	}
	if cfg.StrataRaftDurable {
		if run.state, err = persist.Open(filepath.Join(cfg.StrataRaftDir, "state"), persist.Options{Logger: r.log}); err != nil {
			return nil, err
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.StrataRaftDir, 2, rlog)
	if err != nil {
		return nil, err
	}
	if run.transport = r.opts.Transport; run.transport == nil {
		t, err := tcpTransport(cfg, rlog)
		if err != nil {
			return nil, err
		}
		run.transport, run.tcp = t, t
	}
	var fwdLn net.Listener
	if cfg.StrataRaftForward != "" {
		if fwdLn, err = net.Listen("tcp", cfg.StrataRaftForward); err != nil {
			return nil, fmt.Errorf("replicated: --strata-raft-forward: %w", err)
		}
	}
	fwd := r.opts.Forwarder
	if fwd == nil {
		run.netFwd = replicate.NewNetForwarder(r.resolve)
		fwd = run.netFwd
	}
	conf := replicate.RaftConfig()
	conf.LocalID = raft.ServerID(cfg.StrataRaftID)
	conf.Logger = rlog
	if r.opts.Raft != nil {
		r.opts.Raft(conf)
	}
	n, err := replicate.NewNode(replicate.Config{
		DB: r.db, Tables: r.tables, NodeNumber: uint16(cfg.StrataRaftNodeNumber), Raft: conf,
		LogStore: run.store, StableStore: run.store, Snapshots: snaps, Transport: run.transport,
		Forwarder: fwd, Store: run.state,
	})
	if err != nil {
		if fwdLn != nil {
			fwdLn.Close()
		}
		return nil, err
	}
	if fwdLn != nil {
		run.fwdSrv = replicate.ServeForward(n, fwdLn)
	}
	if reg, ok := fwd.(registrar); ok {
		reg.Register(run.transport.LocalAddr(), n)
		run.reg = reg
	}
	if cfg.StrataRaftBootstrap {
		if err := r.bootstrap(n); err != nil {
			return nil, errors.Join(err, r.closeNode(n, run))
		}
	}
	return n, nil
}

// bootstrap makes the peers (or this node alone) the first configuration
// of the cluster; a node that has state already leaves it as it is.
func (r *Replica) bootstrap(n *replicate.Node) error {
	var err error
	if len(r.peers) == 0 {
		err = n.BootstrapSelf()
	} else {
		servers := make([]raft.Server, len(r.peers))
		for i, p := range r.peers {
			servers[i] = raft.Server{ID: p.ID, Address: p.Address, Suffrage: raft.Voter}
		}
		err = n.Bootstrap(servers)
	}
	if errors.Is(err, replicate.ErrAlreadyBootstrapped) {
		return nil
	}
	return err
}

// closeNode closes n when its start failed after it was created.
func (r *Replica) closeNode(n *replicate.Node, run *running) error {
	if run.reg != nil {
		run.reg.Unregister(run.transport.LocalAddr())
		run.reg = nil
	}
	var errs []error
	if run.fwdSrv != nil {
		errs = append(errs, run.fwdSrv.Close())
		run.fwdSrv = nil
	}
	return errors.Join(append(errs, n.Close())...)
}

// resolve is the NetForwarder's resolver: the forward address of a raft
// address, from --strata-raft-peers.
func (r *Replica) resolve(addr raft.ServerAddress) (string, bool) {
	for _, p := range r.peers {
		if p.Address == addr && p.Forward != "" {
			return p.Forward, true
		}
	}
	return "", false
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
	if run.reg != nil {
		// Before the shutdown: a follower's write is not sent to a node
		// on its way out.
		run.reg.Unregister(run.transport.LocalAddr())
		run.reg = nil
	}
	// The leader hands its leadership over, then the node closes; the
	// forward server after, so that the followers' writes in flight end
	// with the node's answer. The node is closed whatever Shutdown
	// returns, and its error can only be the handover's (raft's Shutdown
	// has none): one that failed, as the last node of a cluster that
	// lost its quorum must, is not a failure to stop.
	if err := r.node.Shutdown(ctx); err != nil {
		r.log.Warn("replicated: the leadership was not handed over", "error", err)
	}
	if r.health != nil {
		r.health.Stopped("node closed")
	}
	return run.close()
}

// close closes what open opened, but the node, in reverse order.
func (run *running) close() error {
	var errs []error
	if run.fwdSrv != nil {
		errs = append(errs, run.fwdSrv.Close())
	}
	if run.netFwd != nil {
		run.netFwd.Close()
	}
	if run.tcp != nil {
		// raft's Shutdown closed it (its listener and the connections it
		// accepted) unless the node failed to start; its connections to
		// the other nodes are closed here.
		errs = append(errs, run.tcp.Close())
		run.tcp.CloseStreams()
	}
	if run.store != nil {
		errs = append(errs, run.store.Close())
	}
	if run.state != nil {
		errs = append(errs, run.state.Close())
	}
	return errors.Join(errs...)
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
