package replicated_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/replicated"
)

// listen returns a listener on a free port of the loopback address.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	return ln
}

// freeAddr returns an address of the loopback that was free a moment
// ago, for a flag: the Cell listens on it itself.
func freeAddr(t testing.TB) string {
	ln := listen(t)
	defer ln.Close()
	return ln.Addr().String()
}

// tcpMember is a hive of a cluster over TCP, as a program runs it: its
// flags only, raft's timeouts aside.
type tcpMember struct {
	id, dir string
	durable bool // --strata-raft-durable
	h       *hive.Hive
	replica *replicated.Replica
	db      *strata.DB
	hosts   strata.RWTable[*Host]
}

func (m *tcpMember) start(t *testing.T, num int, raftAddr, fwdAddr, peers string) {
	t.Helper()
	m.h = hive.New(stratahive.Cell, replicated.Cell,
		cell.Provide(func() replicated.Options { return replicated.Options{Raft: testRaft} }),
		cell.Module("app", "The test application",
			replicated.Table("hosts", persist.JSON[*Host](), hostByName),
			cell.Invoke(func(r *replicated.Replica, db *strata.DB, hosts strata.RWTable[*Host]) {
				m.replica, m.db, m.hosts = r, db, hosts
			}),
		),
	)
	for k, v := range map[string]any{
		"strata-raft-id": m.id, "strata-raft-node-number": num, "strata-raft-dir": m.dir,
		"strata-raft-bind": raftAddr, "strata-raft-forward": fwdAddr,
		"strata-raft-peers": peers, "strata-raft-bootstrap": true,
		"strata-raft-durable": m.durable,
	} {
		m.h.Viper().Set(k, v)
	}
	must(t, m.h.Start(hivetest.Logger(t), context.Background()))
}

func (m *tcpMember) names() []string {
	var names []string
	for h := range m.hosts.All(m.db.ReadTxn()) {
		names = append(names, h.Name)
	}
	return names
}

// TestTCPCluster: three hives configured by their flags alone form a
// cluster over TCP; a follower's write goes to the leader over HTTP
// (the NetForwarder and the leader's forward server) and reaches every
// table; stopped and started again on their directories, the hives find
// their tables as they were (n0, durable, as soon as it starts).
func TestTCPCluster(t *testing.T) {
	const n = 3
	members := make([]*tcpMember, n)
	raftAddrs, fwdAddrs := make([]string, n), make([]string, n)
	var peers []string
	for i := range n {
		// n0 keeps its tables in a persist store: a cluster may mix
		// durable nodes and nodes that rebuild theirs from raft.
		members[i] = &tcpMember{id: fmt.Sprint("n", i), dir: t.TempDir(), durable: i == 0}
		raftAddrs[i], fwdAddrs[i] = freeAddr(t), freeAddr(t)
		peers = append(peers, fmt.Sprintf("n%d=%s/%s", i, raftAddrs[i], fwdAddrs[i]))
	}
	log := hivetest.Logger(t)
	startAll := func() {
		for i, m := range members {
			m.start(t, i+1, raftAddrs[i], fwdAddrs[i], strings.Join(peers, ","))
		}
	}
	stopAll := func() {
		for _, m := range members {
			must(t, m.h.Stop(log, context.Background()))
		}
	}
	startAll()
	stopped := false
	defer func() {
		if !stopped {
			stopAll()
		}
	}()

	// A follower: the first hive that is not the leader once one leads.
	var follower *tcpMember
	waitFor(t, "a leader", func() bool {
		for _, m := range members {
			if leading, _ := m.replica.Node().Leading(); leading {
				follower = members[(slices.Index(members, m)+1)%n]
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	index, err := follower.replica.Node().Write(ctx, []strata.TableMeta{follower.hosts}, func(txn strata.WriteTxn) error {
		_, _, err := follower.hosts.Insert(txn, &Host{Name: "a1", Zone: "eu"})
		return err
	})
	must(t, err)
	for _, m := range members {
		must(t, m.replica.Node().WaitApplied(ctx, index))
		waitFor(t, m.id+" holding a1", func() bool { return slices.Equal(m.names(), []string{"a1"}) })
	}
	stopAll()
	stopped = true

	// Again on the same directories: raft's log gives the tables back.
	startAll()
	stopped = false
	if got := members[0].names(); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("the durable member holds %v as it starts, want [a1] from its store", got)
	}
	for _, m := range members {
		waitFor(t, m.id+" holding a1 after the restart", func() bool { return slices.Equal(m.names(), []string{"a1"}) })
		if h := m.replica.Node().Health(); h.Stopped != nil {
			t.Fatalf("%s stopped: %v", m.id, h.Stopped)
		}
	}
}
