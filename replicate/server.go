package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// ServerConfig is what StartServer needs to run a node on the network.
type ServerConfig struct {
	// ID is this node's raft ID, and NodeNumber its number (Config): both
	// unique in the cluster.
	ID         raft.ServerID
	NodeNumber uint16
	// Dir holds the node's raft log (Open, in Dir/raft-log), raft's
	// snapshots (a raft.FileSnapshotStore in Dir) and, if Durable, the
	// tables' persist store (Dir/state).
	Dir string
	// Durable keeps the tables in a persist store (Config.Store), so that
	// the node starts again from its own state and the log after it,
	// rather than from its latest snapshot and the log after that.
	Durable bool
	// Persist, if not nil, adjusts the persist store's options (Durable).
	Persist func(*persist.Options)
	// RaftAddr is the host:port raft listens on. The other nodes reach
	// this one at RaftAdvertise, or at RaftAddr if that is empty, which
	// must then be an address they can dial (not 0.0.0.0). Neither is
	// used with a Transport.
	RaftAddr      string
	RaftAdvertise string
	// ForwardAddr is the host:port of the node's ForwardServer, which
	// takes the writes and read-index requests of the followers when this
	// node leads, and answers the other members' questions
	// (ClusterStatus). Empty: no forward server; the other members reach
	// the node only through a Forwarder that needs none (LocalForwarder),
	// or not at all (a cluster of one).
	ForwardAddr string
	// Peers are the members of the cluster. A node that has no raft
	// state bootstraps the cluster with them, unless Join (they must then
	// include this node, at its addresses), or alone if there are none;
	// the NetForwarder finds the other members' forward addresses in
	// them.
	Peers []Peer
	// Join: the node does not bootstrap a cluster; a member adds it
	// (Node.AddVoter, AddNonvoter), and it takes the leader's log.
	Join bool
	// ForwardTimeout bounds each request this node's NetForwarder sends
	// to the leader (WithRequestTimeout); 0: DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// Transport, if not nil, is raft's transport instead of TCP at
	// RaftAddr (raft.InmemTransport in tests); the program closes it,
	// after Close.
	Transport raft.Transport
	// Forwarder, if not nil, carries the node's requests to the other
	// members instead of a NetForwarder over the Peers' forward
	// addresses. One with the methods Register and Unregister
	// (LocalForwarder) is given the node once it started and takes it
	// back first thing in Close.
	Forwarder Forwarder
	// DB and Tables are Config's: the database and the tables the node
	// replicates.
	DB     *strata.DB
	Tables []Binding
	// Raft, if not nil, adjusts raft's configuration (timeouts, snapshot
	// thresholds) before the node starts: RaftConfig's, with LocalID and
	// Logger set.
	Raft func(*raft.Config)
	// Logger receives raft's log; nil: hclog's default logger at Warn.
	// StoreLogger is the log store's (Options.Logger) and the persist
	// store's, unless Persist sets one; nil: theirs by default.
	Logger      hclog.Logger
	StoreLogger *slog.Logger
}

// RaftConfig returns the raft configuration StartServer starts from, and
// the one to start from when building a Node by hand: raft's
// DefaultConfig with the heartbeat and leader-lease timeouts at half the
// election timeout (500 ms and 1 s).
//
// raft v1.7.2 refuses a vote, and a pre-vote, while the voter still knows
// a leader, and a follower forgets its leader only when its own
// heartbeat timer fires, one to three heartbeat timeouts after the
// leader's last contact. So the heartbeat timeout decides how soon a
// dead leader is replaced: with raft's equal timeouts, writes through a
// cluster of three processes were acknowledged again 2.4 to 2.6 election
// timeouts after SIGKILL of the leader (median), with the heartbeat
// timeout at half of it 1.0 to 1.2 (replicate/BENCH.md, "Failover"). The
// leader lease may not exceed the heartbeat timeout; a leader cut off
// from a quorum steps down after it.
func RaftConfig() *raft.Config {
	conf := raft.DefaultConfig()
	conf.HeartbeatTimeout = conf.ElectionTimeout / 2
	conf.LeaderLeaseTimeout = conf.HeartbeatTimeout
	return conf
}

// Peer is a member of a cluster, as ServerConfig.Peers gives it.
type Peer struct {
	ID       raft.ServerID
	RaftAddr string
	// ForwardAddr is the member's forward server; empty if it has none.
	ForwardAddr string
}

// Server is a Node that StartServer started on the network, with what it
// opened for it: the log store, the snapshot store, the persist store if
// Durable, raft's TCP transport, the forward server and the forwarder.
type Server struct {
	node   *Node
	store  *LogStore
	state  *persist.Store // Durable
	tcp    *raft.NetworkTransport
	fwd    *NetForwarder
	fwdSrv *ForwardServer
	// reg is the Forwarder the node is registered with, and addr its
	// address there; handedOver is set by Handover.
	reg        registrar
	addr       raft.ServerAddress
	handedOver bool
}

// registrar is a Forwarder that must be told the nodes it reaches
// (LocalForwarder).
type registrar interface {
	Register(raft.ServerAddress, *Node)
	Unregister(raft.ServerAddress)
}

// ListenError is StartServer's failure to listen at one of its addresses:
// Part is "raft" (RaftAddr) or "forward" (ForwardAddr).
type ListenError struct {
	Part, Addr string
	Err        error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("replicate: listening for %s at %q: %v", e.Part, e.Addr, e.Err)
}

// Unwrap returns the listener's error.
func (e *ListenError) Unwrap() error { return e.Err }

// StartServer opens a node's stores in cfg.Dir, starts raft on TCP at
// cfg.RaftAddr (or on cfg.Transport) and the forward server at
// cfg.ForwardAddr, and bootstraps the cluster from cfg.Peers unless the
// node has raft state already or joins one. It is the whole of what a
// program needs to run a member of a cluster; the parts (Open,
// NewTCPTransport, NewNode, ServeForward, NewNetForwarder, Bootstrap)
// remain for a program that wants them otherwise.
//
// A config that names no ID or directory, no raft address or transport,
// or no table is refused with ErrInvalidServerConfig before anything is
// opened, and so are peers that do not include this node at its
// addresses (unless it joins), with ErrInvalidMembership too; an address it cannot listen at is a *ListenError;
// an error opening a part closes what was opened.
func StartServer(cfg ServerConfig) (_ *Server, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn})
	}
	s := &Server{}
	var fwdLn net.Listener
	defer func() {
		if err != nil {
			if fwdLn != nil && s.fwdSrv == nil {
				fwdLn.Close()
			}
			err = errors.Join(err, s.close())
		}
	}()
	if s.store, err = Open(filepath.Join(cfg.Dir, "raft-log"), Options{Logger: cfg.StoreLogger}); err != nil {
		return nil, err
	}
	if cfg.Durable {
		po := persist.Options{Logger: cfg.StoreLogger}
		if cfg.Persist != nil {
			cfg.Persist(&po)
		}
		if s.state, err = persist.Open(filepath.Join(cfg.Dir, "state"), po); err != nil {
			return nil, err
		}
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, logger)
	if err != nil {
		return nil, err
	}
	trans := cfg.Transport
	if trans == nil {
		if s.tcp, err = listenRaft(&cfg, logger); err != nil {
			return nil, err
		}
		trans = s.tcp
	}
	if cfg.ForwardAddr != "" {
		if fwdLn, err = net.Listen("tcp", cfg.ForwardAddr); err != nil {
			return nil, &ListenError{Part: "forward", Addr: cfg.ForwardAddr, Err: err}
		}
	}
	fwd := cfg.Forwarder
	if fwd == nil {
		forwards := make(map[raft.ServerAddress]string, len(cfg.Peers))
		for _, p := range cfg.Peers {
			if p.ForwardAddr != "" {
				forwards[raft.ServerAddress(p.RaftAddr)] = p.ForwardAddr
			}
		}
		s.fwd = NewNetForwarder(StaticResolver(forwards, nil), WithRequestTimeout(cfg.ForwardTimeout))
		fwd = s.fwd
	}
	conf := RaftConfig()
	conf.LocalID = cfg.ID
	conf.Logger = logger
	if cfg.Raft != nil {
		cfg.Raft(conf)
	}
	if s.node, err = NewNode(Config{
		DB: cfg.DB, Tables: cfg.Tables, NodeNumber: cfg.NodeNumber, Raft: conf,
		LogStore: s.store, StableStore: s.store, Snapshots: snaps, Transport: trans,
		Forwarder: fwd, Store: s.state,
	}); err != nil {
		s.node = nil
		return nil, err
	}
	if fwdLn != nil {
		s.fwdSrv = ServeForward(s.node, fwdLn)
	}
	if reg, ok := fwd.(registrar); ok {
		s.reg, s.addr = reg, trans.LocalAddr()
		reg.Register(s.addr, s.node)
	}
	if !cfg.Join {
		if err := s.bootstrap(cfg.Peers); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// listenRaft opens raft's TCP transport at cfg.RaftAddr, advertised at
// cfg.RaftAdvertise or at the address it listens at.
func listenRaft(cfg *ServerConfig, logger hclog.Logger) (*raft.NetworkTransport, error) {
	var adv net.Addr
	if cfg.RaftAdvertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.RaftAdvertise)
		if err != nil {
			return nil, fmt.Errorf("%w: RaftAdvertise %q: %w", ErrInvalidServerConfig, cfg.RaftAdvertise, err)
		}
		adv = a
	}
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, &ListenError{Part: "raft", Addr: cfg.RaftAddr, Err: err}
	}
	if adv == nil {
		adv = ln.Addr()
	}
	if a, ok := adv.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("%w: raft listens at %q, and %s is not an address other nodes can dial: set RaftAdvertise",
			ErrInvalidServerConfig, cfg.RaftAddr, adv)
	}
	return NewTCPTransportOn(ln, adv, logger), nil
}

// bootstrap makes peers (or this node alone, without any) the cluster's
// first configuration; a node that has raft state leaves it as it is.
func (s *Server) bootstrap(peers []Peer) error {
	var err error
	if len(peers) == 0 {
		err = s.node.BootstrapSelf()
	} else {
		servers := make([]raft.Server, len(peers))
		for i, p := range peers {
			servers[i] = raft.Server{ID: p.ID, Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter}
		}
		err = s.node.Bootstrap(servers)
	}
	if errors.Is(err, ErrAlreadyBootstrapped) {
		return nil
	}
	return err
}

// ErrInvalidServerConfig is StartServer's refusal of a ServerConfig.
var ErrInvalidServerConfig = errors.New("replicate: invalid server config")

func (cfg *ServerConfig) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidServerConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case cfg.ID == "":
		return bad("no ID")
	case cfg.Dir == "":
		return bad("no Dir")
	case cfg.RaftAddr == "" && cfg.Transport == nil:
		return bad("no RaftAddr and no Transport")
	case cfg.DB == nil || len(cfg.Tables) == 0:
		return bad("no DB or no table")
	}
	if cfg.Join || len(cfg.Peers) == 0 {
		return nil
	}
	raftAddr := cfg.RaftAdvertise
	if raftAddr == "" {
		raftAddr = cfg.RaftAddr
	}
	if cfg.Transport != nil {
		raftAddr = string(cfg.Transport.LocalAddr())
	}
	// Bootstrap would refuse a membership without this node at its raft
	// address (ErrInvalidMembership): refused here, before anything
	// opens, as both.
	member := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: %s", ErrInvalidServerConfig, ErrInvalidMembership, fmt.Sprintf(format, args...))
	}
	for _, p := range cfg.Peers {
		if p.ID == cfg.ID {
			// (Its forward address may differ from ForwardAddr: the one
			// the others dial, the other the one listened at.)
			if p.RaftAddr != raftAddr {
				return member("peer %s is at %s, not at this node's raft address %s", p.ID, p.RaftAddr, raftAddr)
			}
			return nil
		}
	}
	return member("Peers do not include %s, which does not join", cfg.ID)
}

// Node returns the server's node.
func (s *Server) Node() *Node { return s.node }

// LogStore returns the raft log store the server opened, for what a
// program reads of it (FirstIndex, LastIndex); raft writes it.
func (s *Server) LogStore() *LogStore { return s.store }

// Handover prepares the server's close: it takes the node back from a
// Forwarder it was registered with, and hands the leadership over if the
// node leads (Node.Shutdown, within ctx), which closes the node. It
// returns the handover's error: the last node of a cluster that lost its
// quorum cannot hand over. Close then closes the rest, without a second
// attempt.
func (s *Server) Handover(ctx context.Context) error {
	if s.handedOver {
		return nil
	}
	s.handedOver = true
	if s.reg != nil {
		// First: a follower's write is not sent to a node on its way
		// out.
		s.reg.Unregister(s.addr)
		s.reg = nil
	}
	return s.node.Shutdown(ctx)
}

// Close hands the leadership over if Handover did not (within ctx), then
// closes the node and everything StartServer opened. The node is closed
// whatever the handover returned; Close returns the handover's error
// with the others.
func (s *Server) Close(ctx context.Context) error {
	return errors.Join(s.Handover(ctx), s.close())
}

// close closes what StartServer opened, in reverse order: the node before
// the forward server, so that the followers' requests in flight end with
// the node's answer (ErrShutdown: they ask the next leader).
func (s *Server) close() error {
	var errs []error
	if s.reg != nil {
		s.reg.Unregister(s.addr)
		s.reg = nil
	}
	if s.node != nil {
		errs = append(errs, s.node.Close())
	}
	if s.fwdSrv != nil {
		errs = append(errs, s.fwdSrv.Close())
	}
	if s.fwd != nil {
		s.fwd.Close()
	}
	if s.tcp != nil {
		// raft's shutdown closed it (its listener and the connections it
		// accepted) unless the node never started; the connections it
		// dialled are closed here.
		errs = append(errs, s.tcp.Close())
		s.tcp.CloseStreams()
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.state != nil {
		errs = append(errs, s.state.Close())
	}
	return errors.Join(errs...)
}

// NewTCPTransport returns raft's NetworkTransport on TCP at addr, which
// must be an address the other nodes can dial (it is the one they are
// told). Its stream layer is this package's rather than
// raft.NewTCPTransport's: raft's closes its listener on Close but not the
// connections it accepted, whose handler goroutines then live until the
// other nodes close their ends; this one closes them.
func NewTCPTransport(addr string, logger hclog.Logger) (*raft.NetworkTransport, error) {
	adv, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("replicate: raft transport at %q: %w", addr, err)
	}
	if adv.IP == nil || adv.IP.IsUnspecified() {
		return nil, fmt.Errorf("replicate: raft transport at %q: not an address other nodes can dial", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("replicate: raft transport at %q: %w", addr, err)
	}
	return NewTCPTransportOn(ln, ln.Addr(), logger), nil
}

// NewTCPTransportOn is NewTCPTransport on a listener the caller opened,
// telling the other nodes to dial advertise.
func NewTCPTransportOn(ln net.Listener, advertise net.Addr, logger hclog.Logger) *raft.NetworkTransport {
	s := &tcpStream{ln: ln, advertise: advertise, conns: map[*trackedConn]struct{}{}}
	return raft.NewNetworkTransportWithLogger(s, 3, 10*time.Second, logger)
}

// tcpStream is raft's stream layer over TCP: it closes the connections
// it accepted when it closes.
type tcpStream struct {
	ln        net.Listener
	advertise net.Addr

	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{} // accepted and not closed
}

// Accept waits for the next connection.
func (s *tcpStream) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close() // refused: nothing was read from it
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// Close closes the listener and every connection accepted.
func (s *tcpStream) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close() // its handler's read fails, and ends it
	}
	return s.ln.Close()
}

// Addr is the address the other nodes reach this one at.
func (s *tcpStream) Addr() net.Addr { return s.advertise }

// Dial connects to the node at address.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// trackedConn is an accepted connection, which its stream forgets when it
// closes.
type trackedConn struct {
	net.Conn
	s *tcpStream
}

// Close closes the connection and forgets it.
func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
