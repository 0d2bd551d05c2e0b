package replicated_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/replicated"
)

// Host is the replicated table of the tests.
type Host struct {
	Name string `json:"name" yaml:"name"`
	Zone string `json:"zone" yaml:"zone"`
}

func (h *Host) TableHeader() []string { return []string{"Name", "Zone"} }
func (h *Host) TableRow() []string    { return []string{h.Name, h.Zone} }

var hostByName = strata.Index[*Host, string]{
	Name:       "name",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testRaft sizes raft's timeouts for the shared 2-core machine, as
// replicate's tests do: a stall must last a quarter of a second to lose a
// leadership.
func testRaft(conf *raft.Config) {
	conf.HeartbeatTimeout = 250 * time.Millisecond
	conf.ElectionTimeout = 250 * time.Millisecond
	conf.LeaderLeaseTimeout = 250 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
}

// jobLog records the runs of the leader-only job on every member: which
// run now, and whether two ever ran at once.
type jobLog struct {
	mu      sync.Mutex
	running []string // the members whose job runs now
	runs    []string // every run's member, in order
	overlap string   // the first overlap seen
	changed chan struct{}
}

func newJobLog() *jobLog { return &jobLog{changed: make(chan struct{})} }

func (l *jobLog) fn(id string) replicated.LeaderFunc {
	return func(ctx context.Context, health cell.Health) error {
		l.mu.Lock()
		if len(l.running) > 0 && l.overlap == "" {
			l.overlap = fmt.Sprintf("%s started while %v ran", id, l.running)
		}
		l.running = append(l.running, id)
		l.runs = append(l.runs, id)
		l.notify()
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		l.running = slices.DeleteFunc(l.running, func(s string) bool { return s == id })
		l.notify()
		l.mu.Unlock()
		return nil
	}
}

// notify wakes the waiters. l.mu is held.
func (l *jobLog) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// state returns who runs now, every run so far, and the first overlap.
func (l *jobLog) state() (running, runs []string, overlap string, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.running), slices.Clone(l.runs), l.overlap, l.changed
}

// member is one hive of a test cluster.
type member struct {
	id      string
	addr    raft.ServerAddress
	trans   *raft.InmemTransport
	dir     string
	h       *hive.Hive
	health  *cell.SimpleHealth
	replica *replicated.Replica
	db      *strata.DB
	hosts   strata.RWTable[*Host]
	stopped bool
}

// node returns the member's running replicate.Node.
func (m *member) node() *replicate.Node { return m.replica.Node() }

// cluster is n hives in one process, on raft's in-memory transport, with
// an in-process forwarder, every one bootstrapping the same peers.
type cluster struct {
	t       *testing.T
	members []*member
	jobs    *jobLog
	fwd     *replicate.LocalForwarder
	// extra, if not nil, gives each member's module more cells.
	extra func(m *member) []cell.Cell
}

func newCluster(t *testing.T, n int) *cluster { return newClusterWith(t, n, nil) }

// newClusterWith is newCluster with extra cells in each member's module.
func newClusterWith(t *testing.T, n int, extra func(m *member) []cell.Cell) *cluster {
	t.Helper()
	c := &cluster{t: t, jobs: newJobLog(), fwd: replicate.NewLocalForwarder(), extra: extra}
	var peers []string
	for i := range n {
		m := &member{id: fmt.Sprint("n", i), dir: t.TempDir()}
		m.addr, m.trans = raft.NewInmemTransport(raft.ServerAddress(fmt.Sprint("a", i)))
		peers = append(peers, fmt.Sprintf("%s=%s", m.id, m.addr))
		c.members = append(c.members, m)
	}
	for _, a := range c.members {
		for _, b := range c.members {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	t.Cleanup(c.close)
	for i, m := range c.members {
		c.build(m, i+1, strings.Join(peers, ","))
	}
	for _, m := range c.members {
		must(t, m.h.Start(hivetest.Logger(t), context.Background()))
	}
	return c
}

// build makes m's hive: the Cell on m's transport, the hosts table, the
// leader-only job "leader-work".
func (c *cluster) build(m *member, num int, peers string) {
	opts := replicated.Options{Transport: m.trans, Raft: testRaft, Forwarder: c.fwd}
	var extra []cell.Cell
	if c.extra != nil {
		extra = c.extra(m)
	}
	m.h = hive.New(
		stratahive.Cell, job.Cell, replicated.Cell,
		cell.Provide(func() (cell.Health, *cell.SimpleHealth) {
			h, sh := cell.NewSimpleHealth()
			m.health = sh
			return h, sh
		}),
		cell.Provide(func() replicated.Options { return opts }),
		cell.Module("app", "The test application", append([]cell.Cell{
			replicated.Table("hosts", persist.JSON[*Host](), hostByName),
			cell.Provide(job.Registry.NewGroup),
			replicated.LeaderJob("leader-work", c.jobs.fn(m.id)),
			cell.Invoke(func(r *replicated.Replica, db *strata.DB, hosts strata.RWTable[*Host]) {
				m.replica, m.db, m.hosts = r, db, hosts
			}),
		}, extra...)...),
	)
	for k, v := range map[string]any{
		"strata-raft-id": m.id, "strata-raft-node-number": num, "strata-raft-dir": m.dir,
		"strata-raft-peers": peers, "strata-raft-bootstrap": true,
	} {
		m.h.Viper().Set(k, v)
	}
}

// stop stops m's hive: its node shuts down gracefully.
func (c *cluster) stop(m *member) {
	c.t.Helper()
	if m.stopped {
		return
	}
	m.stopped = true
	if err := m.h.Stop(hivetest.Logger(c.t), context.Background()); err != nil {
		c.t.Errorf("stop %s: %v", m.id, err)
	}
}

func (c *cluster) close() {
	for _, m := range c.members {
		c.stop(m)
	}
	for _, m := range c.members {
		m.trans.DisconnectAll()
		must(c.t, m.trans.Close())
	}
}

func (c *cluster) live() []*member {
	var l []*member
	for _, m := range c.members {
		if !m.stopped {
			l = append(l, m)
		}
	}
	return l
}

// leader waits until a live member leads and is ready, and returns it.
func (c *cluster) leader() *member {
	c.t.Helper()
	var ld *member
	waitFor(c.t, "a leader", func() bool {
		for _, m := range c.live() {
			if leading, _ := m.node().Leading(); leading {
				ld = m
				return true
			}
		}
		return false
	})
	return ld
}

// waitFor waits until cond holds; only a hang reaches its deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hostNames returns the names in m's hosts table.
func (m *member) hostNames() []string {
	var names []string
	for h := range m.hosts.All(m.db.ReadTxn()) {
		names = append(names, h.Name+"@"+h.Zone)
	}
	return names
}

// healthOf returns m's health of scope as the health command shows it.
func (m *member) healthOf(scope string) string {
	h := m.health.GetChild(scope)
	if h == nil {
		return ""
	}
	h.Lock()
	defer h.Unlock()
	s := fmt.Sprintf("level=%s message=%s", h.Level, h.Status)
	if h.Error != nil {
		s += " error=" + h.Error.Error()
	}
	return s
}
