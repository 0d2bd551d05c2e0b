package replicate

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// The cluster harness of BenchmarkClusterCommits: three raft nodes in this
// process, each on raft's NetworkTransport over loopback TCP
// (127.0.0.1:0), a LogStore (replicate.Open, fsync on every write) in
// b.TempDir() behind raft.NewLogCache(512), an in-memory snapshot store,
// and snapshots effectively disabled. The same shape serves the raw probe
// (raft + a go-memdb FSM) and Strata (a Node per member).
//
// Timeouts, chosen for loopback on a loaded 2-core machine: heartbeat,
// election and leader lease 300 ms, so that a follower busy with an fsync
// under 256 clients never starts an election, while the cluster still
// elects within about half a second of its start. CommitTimeout,
// MaxAppendEntries (64) and BatchApplyCh (off) are raft's defaults,
// identical for every peer.

const (
	benchHeartbeat = 300 * time.Millisecond
	benchPool      = 3 // NetworkTransport connections kept per peer
	benchTimeout   = 10 * time.Second
)

// benchObj is the benchmarks' object: an id and about 90 bytes of value,
// about 100 bytes encoded.
type benchObj struct {
	ID  uint64
	Val string
}

// benchVal is every object's value.
var benchVal = "v-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789-abcdefghij"

// AppendBinary encodes o: the id (8 bytes), then the value's length
// (uvarint) and bytes.
func (o *benchObj) AppendBinary(dst []byte) ([]byte, error) {
	dst = binary.BigEndian.AppendUint64(dst, o.ID)
	dst = binary.AppendUvarint(dst, uint64(len(o.Val)))
	return append(dst, o.Val...), nil
}

var errBenchObj = errors.New("benchObj: bad encoding")

// decodeBenchObj decodes one object from the front of data and returns the
// rest.
func decodeBenchObj(o *benchObj, data []byte) ([]byte, error) {
	if len(data) < 8 {
		return nil, errBenchObj
	}
	o.ID = binary.BigEndian.Uint64(data)
	n, k := binary.Uvarint(data[8:])
	if k <= 0 || n > uint64(len(data)-8-k) {
		return nil, errBenchObj
	}
	data = data[8+k:]
	o.Val = string(data[:n]) // copies
	return data[n:], nil
}

// UnmarshalBinary decodes o, copying what it keeps.
func (o *benchObj) UnmarshalBinary(data []byte) error {
	rest, err := decodeBenchObj(o, data)
	if err == nil && len(rest) != 0 {
		err = errBenchObj
	}
	return err
}

var benchObjByID = strata.Index[*benchObj, uint64]{
	Name:       "id",
	FromObject: func(o *benchObj) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// benchMember is one member of a benchmark cluster.
type benchMember struct {
	id    raft.ServerID
	store *LogStore
	trans *raft.NetworkTransport
	raft  *raft.Raft // the raw probe's; Strata's is node.Raft()

	// The raw probe's state machine.
	fsm *memdbFSM

	// Strata's, with forwarding over TCP as StartServer sets it up (a
	// follower's writes and its requests for commit notices).
	db     *strata.DB
	tables []strata.RWTable[*benchObj]
	node   *Node
	fwd    *NetForwarder
	fwdSrv *ForwardServer
}

func (m *benchMember) raftNode() *raft.Raft {
	if m.node != nil {
		return m.node.Raft()
	}
	return m.raft
}

// benchCluster is three members, bootstrapped.
type benchCluster struct {
	b       testing.TB
	members []*benchMember
}

// benchRaft changes testRaftConfig into the cluster benchmarks' raft
// configuration: benchHeartbeat's timeouts, raft's CommitTimeout (or
// -replicate.bench.commit-timeout's), no snapshots.
func benchRaft() []raftOption {
	commit := raft.DefaultConfig().CommitTimeout
	if *benchCommitTimeout > 0 {
		commit = *benchCommitTimeout
	}
	return []raftOption{raftTimeouts(benchHeartbeat), raftCommitTimeout(commit), raftSnapshotInterval(24 * time.Hour)}
}

var benchCommitTimeout = flag.Duration("replicate.bench.commit-timeout", 0,
	"raft's CommitTimeout in the cluster benchmarks (0: raft's default, 50ms): how soon an idle leader tells its followers the commit index")

// newBenchCluster starts three members: the raw probe's if tables is 0,
// Strata Nodes binding tables tables otherwise (named t0, t1, ...,
// bound with persist.Binary), and waits for a leader that can take
// writes. The stores are in directories of dirs' (a benchmark that
// outlives the runs sharing the cluster).
func newBenchCluster(tb, dirs testing.TB, tables int) *benchCluster {
	tb.Helper()
	c := &benchCluster{b: tb}
	var conf raft.Configuration
	for i := range 3 {
		m := &benchMember{id: raft.ServerID(fmt.Sprint("n", i))}
		c.members = append(c.members, m)
		m.store = openStore(tb, nil, dirs.TempDir())
		trans, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, benchPool, benchTimeout, hclog.NewNullLogger())
		must(tb, err)
		m.trans = trans
		conf.Servers = append(conf.Servers, raft.Server{ID: m.id, Address: trans.LocalAddr()})
	}
	// The forward servers' listeners, open before any node starts.
	fwdAddrs := map[raft.ServerAddress]string{}
	var lns []net.Listener
	if tables > 0 {
		for _, m := range c.members {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			must(tb, err)
			lns = append(lns, ln)
			fwdAddrs[m.trans.LocalAddr()] = ln.Addr().String()
		}
	}
	for i, m := range c.members {
		logs, err := raft.NewLogCache(512, m.store)
		must(tb, err)
		rc := testRaftConfig(m.id, benchRaft()...)
		if tables == 0 {
			m.fsm = newMemdbFSM(tb)
			m.raft, err = raft.NewRaft(rc, m.fsm, logs, m.store, raft.NewInmemSnapshotStore(), m.trans)
			must(tb, err)
		} else {
			m.db = strata.New()
			binds := make([]Binding, tables)
			for t := range tables {
				tbl, err := strata.NewTable(m.db, strata.TableName(fmt.Sprint("t", t)), benchObjByID)
				must(tb, err)
				m.tables = append(m.tables, tbl)
				binds[t] = Bind(tbl, persist.Binary[benchObj]())
			}
			m.fwd = NewNetForwarder(StaticResolver(fwdAddrs, nil))
			m.node, err = NewNode(Config{
				DB: m.db, Tables: binds, NodeNumber: uint16(i + 1), Raft: rc,
				LogStore: logs, StableStore: m.store, Snapshots: raft.NewInmemSnapshotStore(), Transport: m.trans,
				Forwarder: m.fwd,
			})
			must(tb, err)
			m.fwdSrv = ServeForward(m.node, lns[i])
		}
	}
	must(tb, c.members[0].raftNode().BootstrapCluster(conf).Error())
	c.leader()
	return c
}

// leader waits for a member to lead, and for its barrier (so that a
// Strata leader is ready for writes), and returns it.
func (c *benchCluster) leader() *benchMember {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if r := m.raftNode(); r.State() == raft.Leader {
				if err := r.Barrier(benchTimeout).Error(); err == nil {
					return m
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.b.Fatal("no leader")
	return nil
}

// close shuts every member down: raft (or the Node) first, then the
// transports' pooled connections (which ends the other side's connection
// handlers), the transports and the stores.
func (c *benchCluster) close() {
	for _, m := range c.members {
		if m.node != nil {
			must(c.b, m.node.Close())
			must(c.b, m.fwdSrv.Close())
			m.fwd.Close()
		} else {
			must(c.b, m.raft.Shutdown().Error())
		}
	}
	for _, m := range c.members {
		m.trans.CloseStreams()
		must(c.b, m.trans.Close())
	}
	for _, m := range c.members {
		closeStore(c.b, m.store)
	}
}

// memdbFSM is the raw probe's state machine: each entry is one go-memdb
// write transaction on one table, inserting the entry's objects (one, or
// up to 64 for the combining probe: a uvarint count, then the objects).
type memdbFSM struct {
	db *memdb.MemDB
}

const memdbTable = "objects"

func newMemdbFSM(tb testing.TB) *memdbFSM {
	db, err := memdb.NewMemDB(&memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		memdbTable: {Name: memdbTable, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.UintFieldIndex{Field: "ID"}},
		}},
	}})
	must(tb, err)
	return &memdbFSM{db: db}
}

// Apply inserts the entry's objects in one write transaction; it returns
// nil, or the error.
func (f *memdbFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	data := l.Data
	count, k := binary.Uvarint(data)
	if k <= 0 {
		return errBenchObj
	}
	data = data[k:]
	txn := f.db.Txn(true)
	for range count {
		o := new(benchObj)
		var err error
		if data, err = decodeBenchObj(o, data); err != nil {
			txn.Abort()
			return err
		}
		if err := txn.Insert(memdbTable, o); err != nil {
			txn.Abort()
			return err
		}
	}
	txn.Commit()
	return nil
}

// count returns the number of objects in the FSM's table.
func (f *memdbFSM) count(tb testing.TB) int {
	it, err := f.db.Txn(false).Get(memdbTable, "id")
	must(tb, err)
	n := 0
	for o := it.Next(); o != nil; o = it.Next() {
		n++
	}
	return n
}

var errNoSnapshots = errors.New("benchmark FSM: no snapshots")

func (f *memdbFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errNoSnapshots }

func (f *memdbFSM) Restore(rc io.ReadCloser) error {
	_ = rc.Close()
	return errNoSnapshots
}
