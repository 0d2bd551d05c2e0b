package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// serverMember is one member of TestStartServer's cluster: its config,
// which stays across restarts, and its current server.
type serverMember struct {
	cfg  ServerConfig
	db   *strata.DB
	objs strata.RWTable[*item]
	srv  *Server
}

func (m *serverMember) start(t *testing.T) {
	t.Helper()
	m.db = strata.New()
	objs, err := strata.NewTable(m.db, "a", itemByID)
	must(t, err)
	m.objs = objs
	m.cfg.DB, m.cfg.Tables = m.db, []Binding{Bind(objs, persist.JSON[*item]())}
	m.srv, err = StartServer(m.cfg)
	must(t, err)
}

// serverRaft gives the servers' raft configurations testRaftConfig's
// timeouts.
func serverRaft(c *raft.Config) { testTimeouts(c) }

// TestRaftConfig: RaftConfig is raft's DefaultConfig with the heartbeat
// and leader-lease timeouts at half the election timeout, and raft takes
// it.
func TestRaftConfig(t *testing.T) {
	c, d := RaftConfig(), raft.DefaultConfig()
	if c.ElectionTimeout != d.ElectionTimeout || c.HeartbeatTimeout != c.ElectionTimeout/2 || c.LeaderLeaseTimeout != c.HeartbeatTimeout {
		t.Errorf("RaftConfig: election %v (raft's %v), heartbeat %v, lease %v; want the heartbeat and lease at half the election timeout",
			c.ElectionTimeout, d.ElectionTimeout, c.HeartbeatTimeout, c.LeaderLeaseTimeout)
	}
	if c.CommitTimeout != d.CommitTimeout || c.MaxAppendEntries != d.MaxAppendEntries || c.TrailingLogs != d.TrailingLogs {
		t.Errorf("RaftConfig changed more than the timeouts: %+v", c)
	}
	c.LocalID = "n1"
	if err := raft.ValidateConfig(c); err != nil {
		t.Errorf("raft refuses RaftConfig: %v", err)
	}
}

// TestStartServer runs three members on loopback TCP through StartServer
// alone: a write through each member (followers forward theirs), every
// member equal, a member closed and started again on its directory with
// its state back, and nothing left running after Close (goleak, in
// TestMain). Durable members keep their tables in a persist store: the
// restarted member holds its state as soon as StartServer returns.
func TestStartServer(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			t.Parallel()
			testStartServer(t, durable)
		})
	}
}

func testStartServer(t *testing.T, durable bool) {
	addrs := freePorts(t, 6)
	dir := t.TempDir()
	var peers []Peer
	for i := range 3 {
		peers = append(peers, Peer{ID: raft.ServerID(fmt.Sprint("n", i+1)), RaftAddr: addrs[2*i], ForwardAddr: addrs[2*i+1]})
	}
	members := make([]*serverMember, 3)
	for i, p := range peers {
		members[i] = &serverMember{cfg: ServerConfig{
			ID: p.ID, NodeNumber: uint16(i + 1), Dir: filepath.Join(dir, string(p.ID)),
			RaftAddr: p.RaftAddr, ForwardAddr: p.ForwardAddr, Peers: peers,
			Raft: func(c *raft.Config) {
				// StartServer starts from RaftConfig.
				if want := RaftConfig(); c.HeartbeatTimeout != want.HeartbeatTimeout || c.ElectionTimeout != want.ElectionTimeout || c.LeaderLeaseTimeout != want.LeaderLeaseTimeout {
					t.Errorf("StartServer's raft timeouts: heartbeat %v, election %v, lease %v; RaftConfig's %v, %v, %v",
						c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, want.HeartbeatTimeout, want.ElectionTimeout, want.LeaderLeaseTimeout)
				}
				serverRaft(c)
			},
			Logger: hclog.NewNullLogger(), Durable: durable,
			Persist: func(o *persist.Options) { o.Logger = slog.New(slog.DiscardHandler) },
		}}
		members[i].start(t)
	}
	defer func() {
		// A handover can fail as the cluster shrinks (the last two
		// members lose their quorum): Close still closes.
		for _, m := range members {
			if m.srv != nil {
				if err := m.srv.Close(context.Background()); err != nil {
					t.Logf("%s: Close: %v", m.cfg.ID, err)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	write := func(m *serverMember, id uint64) uint64 {
		t.Helper()
		var index uint64
		var err error
		for range 5 {
			// A conflict is a follower's that applied an entry while
			// its transaction ran (ObjectConflicts): written again.
			index, err = m.srv.Node().Write(ctx, []strata.TableMeta{m.objs}, func(txn strata.WriteTxn) error {
				_, _, err := m.objs.Insert(txn, &item{ID: id, Val: string(m.cfg.ID)})
				return err
			}, ObjectConflicts())
			if !errors.Is(err, ErrConflict) {
				break
			}
		}
		if err != nil {
			t.Fatalf("write %d through %s: %v", id, m.cfg.ID, err)
		}
		return index
	}
	for _, m := range members {
		if _, _, err := m.srv.Node().WaitLeader(ctx); err != nil {
			t.Fatalf("%s: WaitLeader: %v", m.cfg.ID, err)
		}
	}
	var last uint64
	for i, m := range members {
		last = max(last, write(m, uint64(i+1)))
	}
	leaders := 0
	for _, m := range members {
		must(t, m.srv.Node().WaitApplied(ctx, last))
		if m.srv.Node().Raft().State() == raft.Leader {
			leaders++
		}
		if n := m.objs.NumObjects(m.db.ReadTxn()); n != 3 {
			t.Errorf("%s holds %d objects, want 3", m.cfg.ID, n)
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders, want 1", leaders)
	}

	// A member closed (handing the lead over if it had it) and started
	// again on its directory: its state is rebuilt from raft's log, and it
	// writes again.
	m := members[0]
	closed := m.srv.Node()
	must(t, m.srv.Close(ctx))
	stoppedAt := closed.AppliedIndex()
	m.srv = nil
	if _, _, err := closed.WaitLeader(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("WaitLeader on a closed node: %v, want ErrShutdown", err)
	}
	last = max(last, write(members[1], 4))
	m.start(t)
	if got := m.srv.Node().replayedTo; durable && got != stoppedAt {
		t.Errorf("%s restarted on its store at index %d, it stopped at %d", m.cfg.ID, got, stoppedAt)
	}
	if _, _, err := m.srv.Node().WaitLeader(ctx); err != nil {
		t.Fatalf("%s after its restart: WaitLeader: %v", m.cfg.ID, err)
	}
	must(t, m.srv.Node().WaitApplied(ctx, last))
	if n := m.objs.NumObjects(m.db.ReadTxn()); n != 4 {
		t.Errorf("%s after its restart holds %d objects, want 4", m.cfg.ID, n)
	}
	write(m, 5)
}

// TestStartServerRefuses checks that a config StartServer cannot run is
// refused before anything is opened: the directory stays empty.
func TestStartServerRefuses(t *testing.T) {
	t.Parallel()
	db := strata.New()
	objs, err := strata.NewTable(db, "a", itemByID)
	must(t, err)
	tables := []Binding{Bind(objs, persist.JSON[*item]())}
	good := func() ServerConfig {
		return ServerConfig{
			ID: "n1", NodeNumber: 1, Dir: t.TempDir(), RaftAddr: "127.0.0.1:1", ForwardAddr: "127.0.0.1:2",
			Peers: []Peer{{ID: "n1", RaftAddr: "127.0.0.1:1", ForwardAddr: "127.0.0.1:2"}},
			DB:    db, Tables: tables,
		}
	}
	for name, change := range map[string]func(*ServerConfig){
		"no ID":               func(c *ServerConfig) { c.ID = "" },
		"no Dir":              func(c *ServerConfig) { c.Dir = "" },
		"no RaftAddr":         func(c *ServerConfig) { c.RaftAddr = "" },
		"no DB":               func(c *ServerConfig) { c.DB = nil },
		"no table":            func(c *ServerConfig) { c.Tables = nil },
		"not among the peers": func(c *ServerConfig) { c.Peers[0].ID = "n2" },
		"peer elsewhere":      func(c *ServerConfig) { c.Peers[0].RaftAddr = "127.0.0.1:3" },
		"advertised elsewhere": func(c *ServerConfig) {
			c.RaftAdvertise = "127.0.0.1:5"
		},
	} {
		cfg := good()
		change(&cfg)
		srv, err := StartServer(cfg)
		if !errors.Is(err, ErrInvalidServerConfig) || srv != nil {
			t.Errorf("%s: StartServer returned %v, %v; want ErrInvalidServerConfig", name, srv, err)
		}
		if membership := strings.Contains(name, "peer") || strings.Contains(name, "elsewhere"); membership != errors.Is(err, ErrInvalidMembership) {
			t.Errorf("%s: StartServer returned %v; ErrInvalidMembership %v", name, err, membership)
		}
		if cfg.Dir != "" {
			if entries, _ := filepath.Glob(filepath.Join(cfg.Dir, "*")); len(entries) > 0 {
				t.Errorf("%s: the refused config left %v", name, entries)
			}
		}
	}
	// An address other nodes cannot dial is refused by the transport,
	// and what was opened before it is closed (goleak, TestMain).
	cfg := good()
	cfg.RaftAddr, cfg.Peers[0].RaftAddr = "0.0.0.0:0", "0.0.0.0:0"
	if srv, err := StartServer(cfg); !errors.Is(err, ErrInvalidServerConfig) || srv != nil {
		t.Errorf("a raft address of 0.0.0.0: StartServer returned %v, %v; want ErrInvalidServerConfig", srv, err)
	}
	// Addresses taken: a *ListenError naming the part.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer taken.Close()
	for _, part := range []string{"raft", "forward"} {
		cfg := good()
		cfg.Peers = nil
		cfg.RaftAddr, cfg.ForwardAddr = "127.0.0.1:0", "127.0.0.1:0"
		if part == "raft" {
			cfg.RaftAddr = taken.Addr().String()
		} else {
			cfg.ForwardAddr = taken.Addr().String()
		}
		var le *ListenError
		if srv, err := StartServer(cfg); !errors.As(err, &le) || le.Part != part || le.Addr != taken.Addr().String() || srv != nil {
			t.Errorf("%s address taken: StartServer returned %v, %v; want a *ListenError of part %s", part, srv, err, part)
		}
	}
}

// closeLogged closes srv and logs its error: the handover of the last
// member of a cluster fails (no one to hand over to, no quorum).
func closeLogged(t *testing.T, srv *Server) {
	if err := srv.Close(context.Background()); err != nil {
		t.Logf("Close: %v", err)
	}
}

// TestStartServerShapes: a member alone (no peers, no forward server),
// listening on every interface and advertising loopback, bootstraps a
// cluster of itself; a second member joins it (Join: it bootstraps
// nothing) once the first adds it, takes its log, and writes through it
// (its Peers name the first's forward address).
func TestStartServerShapes(t *testing.T) {
	t.Parallel()
	addrs := freePorts(t, 3)
	_, port, _ := net.SplitHostPort(addrs[0])
	first := &serverMember{cfg: ServerConfig{
		ID: "n1", NodeNumber: 1, Dir: t.TempDir(),
		RaftAddr: "0.0.0.0:" + port, RaftAdvertise: addrs[0], ForwardAddr: addrs[1],
		Raft: serverRaft, Logger: hclog.NewNullLogger(),
	}}
	first.start(t)
	defer closeLogged(t, first.srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ld := first.srv.Node()
	if addr, id, err := ld.WaitLeader(ctx); err != nil || id != "n1" || string(addr) != addrs[0] {
		t.Fatalf("the member alone: leader %s at %s (%v), want n1 at %s", id, addr, err, addrs[0])
	}
	second := &serverMember{cfg: ServerConfig{
		ID: "n2", NodeNumber: 2, Dir: t.TempDir(), RaftAddr: addrs[2], Join: true,
		Peers: []Peer{{ID: "n1", RaftAddr: addrs[0], ForwardAddr: addrs[1]}},
		Raft:  serverRaft, Logger: hclog.NewNullLogger(),
	}}
	second.start(t)
	defer closeLogged(t, second.srv)
	if cfg, err := second.srv.Node().Raft().GetConfiguration().Configuration(), second.srv.Node().Raft().GetConfiguration().Error(); err != nil || len(cfg.Servers) != 0 {
		t.Fatalf("a joining member bootstrapped: %+v (%v)", cfg, err)
	}
	must(t, ld.AddVoter(ctx, "n2", raft.ServerAddress(addrs[2])))
	index, err := second.srv.Node().Write(ctx, []strata.TableMeta{second.objs}, func(txn strata.WriteTxn) error {
		_, _, err := second.objs.Insert(txn, &item{ID: 1, Val: "joined"})
		return err
	})
	if err != nil {
		t.Fatalf("a write through the member that joined: %v", err)
	}
	txn, err := ld.ReadAtLeast(ctx, index)
	must(t, err)
	if o, _, ok := first.objs.Get(txn, itemByID.Query(1)); !ok || o.Val != "joined" {
		t.Errorf("the first member reads %v, %v", o, ok)
	}
}
