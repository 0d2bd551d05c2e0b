package replicate

// The interleaving test of a Node's goroutines (holds.go): committers,
// the proposer, the awaiter, raft's FSM goroutine and the leadership
// watcher, on every node of a three-node cluster that runs inside a
// testing/synctest bubble (raft, its in-memory transport and log stores
// too: their goroutines wait on channels and timers, which synctest sees
// as durably blocked, and fake time drives heartbeats and elections). A
// scheduler (internal/holdtest) holds every goroutine that reaches a hold
// point, and each writer of the test holds at "begin" before each
// transaction. The test, alone running once every other goroutine is held
// or durably blocked, picks with a seeded source what happens next: a
// held goroutine goes on, fake time passes, a node is cut off from the
// others or the cluster heals, or a reader checks every node. A seed is
// one order of the hand-offs the test holds (raft's own goroutines run
// between them as the Go scheduler lets them: a seed replays the test's
// choices, not always raft's).
//
// Each writer's transaction, through Node.Write on the node it takes for
// the leader, inserts an object of its own (a new key) and increments a
// counter object that every transaction writes, in one or two tables.
//
// What must hold, whatever the order:
//
//  1. Done only when done: a Write that returns nil returns the index of
//     an entry that a majority of the nodes' logs hold, its node applied
//     it, and a read on that node right after sees the object.
//  2. Nothing lost, nothing invented: at the end every acknowledged
//     object is on every node, and no object whose Write failed with a
//     definite error (not ErrAmbiguous) is on any node.
//  3. Nothing twice, no lost update: every node's counter equals the
//     number of objects it holds (each transaction's two writes applied
//     together, once, each on the state the one before it left).
//  4. Order kept: a writer's objects have growing revisions, in the order
//     it wrote them.
//  5. Every node ends with the same objects at the same revisions, and
//     none stopped applying.
//  6. Reads are monotonic: a node's published index, and what its reads
//     hold, never go back.
//  7. No goroutine is left behind: after Close of every node the bubble
//     ends empty (synctest fails otherwise).
//  8. Read your writes anywhere: with writes through any node, each
//     acknowledged write is read on another node with ReadAtLeast at its
//     index, which holds the object if it returns. In variant
//     idle-commits (raft's CommitTimeout an hour) those reads, the
//     writes through followers and the settling at the end complete
//     only through the commit notices (notice.go); without faults, each
//     such read and each Write must end within its 5 s.
//  9. A durable node's store holds its tables: in variant durable, each
//     node's persist store, opened again after the node closed, loads
//     exactly the objects, revisions and table revisions the node held.
//
// Running it: go test -run TestNodeInterleavings ./replicate runs
// -replicate.interleavings seeds per variant (default 12);
// -replicate.interleavings.seed=S -v runs seed S only, with its schedule on
// failure.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/holdtest"
	"github.com/strata-db/strata/persist"
)

var (
	nodeSeeds = flag.Int("replicate.interleavings", 60, "seeds of each variant of TestNodeInterleavings")
	nodeSeed  = flag.Int64("replicate.interleavings.seed", -1, "run TestNodeInterleavings with this seed only")
)

// nodeVariant is one shape of the test.
type nodeVariant struct {
	name    string
	writers int
	rounds  int // transactions per writer
	// twoTables: the counter is in table b, the objects in table a.
	twoTables bool
	// faults: the test cuts nodes off and heals them.
	faults bool
	// durable: each node keeps its tables in a persist store (Pebble on
	// an in-memory file system, inside the bubble; Config.Store), so the
	// FSM writes every entry to it, its own outside Node.mu (hold point
	// store); at the end each store, opened again, holds its node's
	// tables (invariant 9).
	durable bool
	// idleCommits: raft's CommitTimeout is an hour, so that a follower
	// learns a commit only from new entries: a wait for one (a Write
	// through a follower, ReadAtLeast) ends only through the commit
	// notices (notice.go).
	idleCommits bool
	// reelect: every fault cuts every node off from every other, and the
	// leader deposed so leads again (isolateAll, noteReelected).
	reelect bool
	// seedsX multiplies the seeds the variant runs (0: 1).
	seedsX int
	// forward: writes go through any node (Config.Forwarder, a
	// LocalForwarder per node that reaches the nodes its node reaches).
	forward bool
	// inFlight is Config.MaxInFlight.
	inFlight int
	// snapshots: raft snapshots every two entries and keeps the fewest
	// entries behind them that NewNode takes (MaxInFlight+4), so that a
	// node cut off is sent a snapshot (hold points snapshot, persist,
	// restore). Only followers are cut off, unless
	// -replicate.interleavings.raft697: a deposed leader whose log holds
	// entries past the snapshot the new leader sends it may install that
	// snapshot for ever (hashicorp/raft#697, open in raft v1.7.2;
	// docs/interleavings.md).
	snapshots bool
}

var raft697 = flag.Bool("replicate.interleavings.raft697", false,
	"TestNodeInterleavings/faults/snapshots cutting leaders off too, at NewNode's least TrailingLogs: reproduces hashicorp/raft#697, a snapshot install loop (fails)")

// maxRestores is how many snapshots one node may install in a seed before
// the test calls it an install loop.
const maxRestores = 50

var nodeVariants = []nodeVariant{
	{name: "steady", writers: 3, rounds: 4, inFlight: 2},
	{name: "steady/two-tables", writers: 3, rounds: 4, twoTables: true, inFlight: 4},
	{name: "faults", writers: 4, rounds: 4, faults: true, inFlight: 2},
	{name: "faults/two-tables/one-in-flight", writers: 4, rounds: 3, twoTables: true, faults: true, inFlight: 1},
	{name: "faults/forward", writers: 4, rounds: 4, faults: true, inFlight: 2, forward: true},
	{name: "steady/forward/idle-commits", writers: 3, rounds: 4, inFlight: 2, forward: true, idleCommits: true},
	{name: "faults/forward/idle-commits", writers: 3, rounds: 4, faults: true, inFlight: 2, forward: true, idleCommits: true},
	// The windows after a re-election are narrow: Enqueue's refusal
	// while failing is needed by about one seed in 150.
	{name: "re-elected", writers: 3, rounds: 8, faults: true, reelect: true, inFlight: 3, seedsX: 5},
	{name: "faults/snapshots", writers: 4, rounds: 5, faults: true, inFlight: 2, snapshots: true, seedsX: 2},
	{name: "faults/durable", writers: 4, rounds: 4, faults: true, inFlight: 2, durable: true},
	{name: "faults/snapshots/durable", writers: 4, rounds: 5, faults: true, inFlight: 2, snapshots: true, durable: true},
	{name: "re-elected/durable/two-tables", writers: 3, rounds: 6, faults: true, reelect: true, twoTables: true, inFlight: 3, durable: true},
}

// nodeCoverage counts the releases at each hold point, and the outcomes
// seen, over every seed of TestNodeInterleavings.
var nodeCoverage = &holdtest.Coverage{}

func TestNodeInterleavings(t *testing.T) {
	t.Parallel()
	nodeCoverage.Reset()
	ran := 0
	defer func() {
		if t.Failed() || *nodeSeed >= 0 || ran < len(nodeVariants) {
			return
		}
		want := []string{"begin"}
		for p := range numHoldPoints {
			if p == holdFence {
				continue // no disk stalls here: TestFenceHoldStallEnds holds it
			}
			want = append(want, p.String())
		}
		want = append(want, "acked", "ambiguous", "refused", "overtaken", "cut", "isolated", "re-elected", "read-own", "store-checked")
		t.Logf("coverage: %s", nodeCoverage)
		least := 5
		if testing.Short() {
			least = 1
		}
		if missing := nodeCoverage.Missing(want, least); len(missing) > 0 {
			t.Errorf("reached fewer than %d times over every seed: %v (all: %s)", least, missing, nodeCoverage)
		}
	}()
	for _, v := range nodeVariants {
		t.Run(v.name, func(t *testing.T) {
			ran++
			seeds := *nodeSeeds * max(1, v.seedsX)
			if testing.Short() {
				seeds = max(2, seeds/4)
			}
			for _, seed := range holdtest.Seeds(seeds, *nodeSeed) {
				// synctest.Test ends the test at once if the bubble's test
				// failed: the seed and the schedule are reported inside.
				synctest.Test(t, func(t *testing.T) {
					defer func() {
						if t.Failed() {
							t.Logf("seed %d (replay: -replicate.interleavings.seed=%d -run 'TestNodeInterleavings/%s')", seed, seed, v.name)
						}
					}()
					if report := runNodeModel(t, v, seed); report != "" {
						t.Errorf("the schedule's end:\n%s", report)
					}
				})
			}
		})
	}
}

// nodeRig is one seed's cluster, writers and record.
type nodeRig struct {
	t     *testing.T
	v     nodeVariant
	rng   *rand.Rand
	sched *holdtest.Scheduler[string]
	nodes []*mnode

	mu sync.Mutex
	// outcome of each writer's transactions, by object id.
	acked     map[uint64]uint64 // id → index
	ambiguous map[uint64]bool
	refused   map[uint64]error
	done      int // writers that returned
	writers   int // writers started
	wg        sync.WaitGroup
	cut       int // the node cut off, or -1 (allCut: every node)
	cuts      int // how many times a node was cut off
	healAt    time.Time
	// awaiter, if not -1, is a node cut off (and maybe healed since)
	// whose awaiter the test does not release until the node applied
	// awaiterIndex, or until awaiterUntil (mayRelease).
	awaiter      int
	awaiterIndex uint64
	awaiterUntil time.Time
	// deposed, if not -1, is the node that led when every node was cut
	// off, and deposedTerm its term then: noteReelected counts it when
	// it leads again in a later term.
	deposed     int
	deposedTerm uint64
	// transfer, once started, is closed when the hand-over of the
	// leadership back to deposed returned; deposedUntil ends the wait
	// for its re-election.
	transfer     chan struct{}
	deposedUntil time.Time
	failed       bool
	restores     [3]int // snapshots each node installed
	// quarantined nodes stay cut off (an install loop): under r.mu.
	quarantined [3]bool
}

// quarantine cuts node i off from the others for the rest of the seed.
func (r *nodeRig) quarantine(i int) {
	r.mu.Lock()
	r.quarantined[i] = true
	r.mu.Unlock()
	for _, o := range r.nodes {
		if o.i != i {
			r.disconnect(o, r.nodes[i])
		}
	}
}

// allCut is nodeRig.cut while every node is cut off from every other.
const allCut = 3

// mnode is a node of the rig.
type mnode struct {
	i     int
	id    raft.ServerID
	addr  raft.ServerAddress
	db    *strata.DB
	objs  strata.RWTable[*item]
	count strata.RWTable[*item] // objs itself, or table b
	metas []strata.TableMeta
	logs  *raft.InmemStore
	trans *raft.InmemTransport
	fwd   *LocalForwarder // variant forward: the nodes this node reaches
	node  *Node
	// state and fs: variant durable's store, and the file system it is on.
	state *persist.Store
	fs    vfs.FS
	// seen is the highest published index a reader saw, and the objects
	// it held then.
	seen     uint64
	seenObjs int
}

const counterID = 0

// objectID is writer w's object of round k.
func objectID(w, k int) uint64 { return uint64(1000*(w+1) + k) }

// runNodeModel runs one seed of variant v and returns, if it failed, the
// end of its schedule.
func runNodeModel(t *testing.T, v nodeVariant, seed int64) string {
	r := &nodeRig{
		t: t, v: v,
		rng:       rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		sched:     &holdtest.Scheduler[string]{},
		acked:     map[uint64]uint64{},
		ambiguous: map[uint64]bool{},
		refused:   map[uint64]error{},
		cut:       -1,
		awaiter:   -1,
		deposed:   -1,
	}
	// The hooks hold nothing until armed is closed.
	armed := make(chan struct{})
	for i := range 3 {
		r.nodes = append(r.nodes, r.newNode(i, func(p holdPoint, who int) {
			if p == holdRestore {
				r.mu.Lock()
				r.restores[i]++
				loop := r.restores[i] == maxRestores
				r.mu.Unlock()
				if loop {
					r.fail("%s installed %d snapshots: an install loop (hashicorp/raft#697?)", fmt.Sprint("n", i), maxRestores)
					// The loop keeps the bubble busy, so fake time
					// stands still: cut the node off for good, so that
					// the seed ends and reports.
					r.quarantine(i)
				}
			}
			select {
			case <-armed:
				nodeCoverage.Add(p.String())
				r.sched.Hold(fmt.Sprintf("%s@%d", p, i), who)
			default:
			}
		}))
	}
	r.connectAll()
	var conf raft.Configuration
	for _, nd := range r.nodes {
		conf.Servers = append(conf.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	must(t, r.nodes[0].node.Raft().BootstrapCluster(conf).Error())
	// Until a node leads and is ready the hooks hold nothing: the seeds
	// explore the writes, not the first election.
	for r.readyLeader() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	close(armed)

	r.writers = v.writers
	for w := range v.writers {
		r.wg.Go(func() { r.writer(w, seed) })
	}
	for steps := 0; ; steps++ {
		synctest.Wait()
		if r.allDone() {
			break
		}
		if steps == 20_000 || r.hasFailed() {
			r.sched.FreeAll()
			r.fail("the writers never finished (%d steps)", steps)
			break
		}
		switch x := r.rng.IntN(40); {
		case x < 28:
			if !r.sched.ReleaseWhere(r.rng, r.mayRelease) {
				// Everyone waits for raft: let time pass.
				time.Sleep(time.Duration(1+r.rng.IntN(20)) * time.Millisecond)
			}
		case x < 33:
			// While a node is cut off, long enough for its lease to
			// lapse and an election to run.
			d := time.Duration(1+r.rng.IntN(50)) * time.Millisecond
			if r.cut >= 0 {
				d = time.Duration(50+r.rng.IntN(400)) * time.Millisecond
			}
			time.Sleep(d)
		case x < 36:
			r.read()
		case x < 38 && v.faults:
			// Mostly the leader, with whatever it has in flight; now and
			// then every node from every other, so that the leader steps
			// down and, holding the longest log, mostly wins again.
			if v.reelect || r.rng.IntN(6) == 0 && (!v.snapshots || *raft697) {
				r.isolateAll()
				break
			}
			i := r.rng.IntN(3)
			ld := r.readyLeader()
			if ld != nil && r.rng.IntN(3) > 0 {
				i = ld.i
			}
			if v.snapshots && !*raft697 && (ld == nil || i == ld.i) {
				if ld == nil {
					break
				}
				i = (ld.i + 1 + r.rng.IntN(2)) % 3 // a follower
			}
			r.cutOff(i)
		case v.faults && time.Now().After(r.healAt):
			r.heal()
		}
		r.noteReelected()
	}
	r.heal()
	r.sched.FreeAll()
	returned := make(chan struct{})
	go func() { r.wg.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		// A commit that never settles: its writer is stuck, and so is
		// the bubble (synctest reports the goroutines left when the
		// seed's function returns). Report the schedule now.
		r.fail("the writers never returned, a minute after every goroutine was let go:\n%s", r.sched.History())
		return ""
	}
	r.settle()
	r.check()
	for _, nd := range r.nodes {
		if err := nd.node.Close(); err != nil {
			r.fail("%s: Close: %v", nd.id, err)
		}
		nd.trans.DisconnectAll()
		must(t, nd.trans.Close())
		if nd.state != nil {
			r.checkStore(nd)
		}
	}
	if r.hasFailed() {
		return r.sched.History()
	}
	return ""
}

func (r *nodeRig) newNode(i int, hold func(holdPoint, int)) *mnode {
	t := r.t
	nd := &mnode{i: i, id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), db: strata.New()}
	a, err := strata.NewTable(nd.db, "a", itemByID, itemByTag, strata.RevisionIndex[*item]())
	must(t, err)
	nd.objs, nd.count = a, a
	nd.metas = []strata.TableMeta{a}
	binds := []Binding{Bind(a, persist.JSON[*item]())}
	if r.v.twoTables {
		b, err := strata.NewTable(nd.db, "b", itemByID, itemByTag)
		must(t, err)
		nd.count = b
		nd.metas = append(nd.metas, b)
		binds = append(binds, Bind(b, persist.JSON[*item]()))
	}
	nd.logs = raft.NewInmemStore()
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	conf := testRaftConfig(nd.id)
	if r.v.idleCommits {
		conf.CommitTimeout = time.Hour
	}
	if r.v.snapshots {
		conf.SnapshotThreshold, conf.TrailingLogs, conf.SnapshotInterval = 2, uint64(r.v.inFlight)+4, 20*time.Millisecond

	}
	cfg := Config{
		DB: nd.db, Tables: binds, NodeNumber: uint16(i + 1), Raft: conf,
		LogStore: nd.logs, StableStore: nd.logs, Snapshots: testSnapshots(r.t), Transport: nd.trans,
		MaxInFlight: r.v.inFlight, hold: hold,
	}
	if r.v.forward {
		nd.fwd = NewLocalForwarder()
		cfg.Forwarder = nd.fwd
	}
	if r.v.durable {
		nd.fs = vfs.NewMem()
		nd.state, err = persist.Open("state", persist.Options{FS: nd.fs, Logger: slog.New(slog.DiscardHandler)})
		must(t, err)
		cfg.Store = nd.state
	}
	nd.node, err = NewNode(cfg)
	must(t, err)
	return nd
}

// readyLeader returns the node that leads and may propose, or nil.
func (r *nodeRig) readyLeader() *mnode {
	for _, nd := range r.nodes {
		nd.node.mu.Lock()
		ready := nd.node.st.ready
		nd.node.mu.Unlock()
		if ready && nd.node.Raft().State() == raft.Leader {
			return nd
		}
	}
	return nil
}

func (r *nodeRig) fail(format string, args ...any) {
	r.t.Helper()
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	r.t.Errorf(format, args...)
}

func (r *nodeRig) hasFailed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *nodeRig) allDone() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done == r.writers
}

// writer runs writer w's transactions, each through the node it takes for
// the leader: the one a NotLeaderError named, or a random one.
func (r *nodeRig) writer(w int, seed int64) {
	defer r.writerDone()
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
	target := r.nodes[rng.IntN(len(r.nodes))]
	retries := 0
	for k := 0; k < r.v.rounds; k++ {
		nodeCoverage.Add("begin")
		r.sched.Hold("begin", 10_000+w)
		err := r.transact(target, w, k)
		var nle *NotLeaderError
		switch {
		case r.v.forward:
			// Any node takes the write: mostly stay, sometimes move.
			if rng.IntN(3) == 0 {
				target = r.nodes[rng.IntN(len(r.nodes))]
			}
		case errors.As(err, &nle) && nle.Leader != "":
			for _, o := range r.nodes {
				if o.addr == nle.Leader {
					target = o
				}
			}
		case err != nil || rng.IntN(3) == 0:
			target = r.nodes[rng.IntN(len(r.nodes))]
		}
		if err != nil && !errors.Is(err, ErrAmbiguous) {
			// Refused: back off as a client would, so that writers
			// outlast an election rather than spend their rounds on it.
			time.Sleep(time.Duration(1+rng.IntN(100)) * time.Millisecond)
			// A refused write committed nothing: in variant reelect the
			// writer tries its round again, so that writes go on through
			// the elections.
			if r.v.reelect && retries < 20 {
				retries++
				k--
			}
		}
	}
}

// outsider writes once, as writer w, through a leader other than the node
// cut off: while an old leader is cut off with commits pending (their
// writers wait for them), it makes the entries the old leader meets at the
// heal.
func (r *nodeRig) outsider(w, cut int) {
	defer r.writerDone()
	nodeCoverage.Add("begin")
	r.sched.Hold("begin", 10_000+w)
	for range 100 {
		for _, nd := range r.nodes {
			if nd.i != cut && nd.node.Raft().State() == raft.Leader {
				_ = r.transact(nd, w, 0)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *nodeRig) writerDone() {
	r.mu.Lock()
	r.done++
	r.mu.Unlock()
}

// transact writes, as writer w in its round k, through nd: an object of
// its own and the counter, incremented. It records the outcome and
// returns the error.
func (r *nodeRig) transact(nd *mnode, w, k int) error {
	id := objectID(w, k)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	index, err := nd.node.Write(ctx, nd.metas, func(txn strata.WriteTxn) error {
		n := 0
		if c, _, ok := nd.count.Get(txn, itemByID.Query(counterID)); ok {
			n, _ = strconv.Atoi(c.Val)
		}
		if _, _, err := nd.objs.Insert(txn, &item{ID: id, Val: fmt.Sprint(w, "/", k), Tag: fmt.Sprint("w", w)}); err != nil {
			return err
		}
		_, _, err := nd.count.Insert(txn, &item{ID: counterID, Val: strconv.Itoa(n + 1), Tag: "counter"})
		return err
	})
	if errors.Is(err, errOvertaken) {
		// An entry this node did not wait for was applied while the
		// commit was pending: the FSM failed it.
		nodeCoverage.Add("overtaken")
	}
	switch {
	case err == nil:
		r.ackCheck(nd, id, index)
	case errors.Is(err, ErrNotPublished):
		// Committed, not yet visible on its node: acknowledged for
		// invariants 2 to 5, without the local reads of invariant 1.
		nodeCoverage.Add("not-published")
		if !r.v.faults {
			r.fail("8: the Write of object %d through %s was not published there within its 5 s: %v", id, nd.id, err)
		}
		if index == 0 {
			r.fail("1: the Write of object %d returned ErrNotPublished without an index", id)
		}
		r.mu.Lock()
		r.acked[id] = index
		r.mu.Unlock()
	case errors.Is(err, ErrAmbiguous):
		nodeCoverage.Add("ambiguous")
		r.mu.Lock()
		r.ambiguous[id] = true
		r.mu.Unlock()
	default:
		nodeCoverage.Add("refused")
		r.mu.Lock()
		r.refused[id] = err
		r.mu.Unlock()
	}
	return err
}

// ackCheck checks invariant 1 for the object id, acknowledged by nd at
// index.
func (r *nodeRig) ackCheck(nd *mnode, id, index uint64) {
	nodeCoverage.Add("acked")
	r.mu.Lock()
	r.acked[id] = index
	r.mu.Unlock()
	if index == 0 {
		r.fail("1: the Write of object %d returned index 0", id)
		return
	}
	if got := nd.node.AppliedIndex(); got < index {
		r.fail("1: the Write of object %d returned index %d, its node applied %d", id, index, got)
	}
	if _, _, ok := nd.objs.Get(nd.db.ReadTxn(), itemByID.Query(id)); !ok {
		r.fail("1: the Write of object %d returned, a read on its node does not hold it", id)
	}
	if r.v.forward {
		r.readOwn(nd, id, index)
	}
	var own raft.Log
	if err := nd.logs.GetLog(index, &own); err != nil {
		if first, _ := nd.logs.FirstIndex(); first > index {
			// Compacted behind a snapshot (variant snapshots): the
			// entry was applied, so committed; a node holds it if it
			// applied it or compacted it too.
			holders := 0
			for _, o := range r.nodes {
				if first, _ := o.logs.FirstIndex(); first > index || o.node.AppliedIndex() >= index {
					holders++
				}
			}
			if holders < 2 {
				r.fail("1: the Write of object %d returned index %d, which %d of 3 nodes applied or compacted", id, index, holders)
			}
			return
		}
		r.fail("1: the Write of object %d returned index %d, its node's log lacks it: %v", id, index, err)
		return
	}
	holders := 0
	for _, o := range r.nodes {
		var l raft.Log
		if o.logs.GetLog(index, &l) == nil && l.Term == own.Term && bytes.Equal(l.Data, own.Data) {
			holders++
		} else if first, _ := o.logs.FirstIndex(); first > index {
			holders++ // compacted: it applied the committed entry
		}
	}
	if holders < 2 {
		r.fail("1: the Write of object %d returned index %d, which %d of 3 logs hold", id, index, holders)
	}
}

// readOwn checks invariant 8: the object id, acknowledged by nd at
// index, is read on the next node with ReadAtLeast. A node cut off from
// the leader may not get there within the wait: only a read that returns
// is checked.
func (r *nodeRig) readOwn(nd *mnode, id, index uint64) {
	o := r.nodes[(nd.i+1)%len(r.nodes)]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	txn, err := o.node.ReadAtLeast(ctx, index)
	if err != nil {
		if !r.v.faults {
			// Every node is reachable: 5 s is ample, but for a
			// commit that no notice announced (idle-commits).
			r.fail("8: %s's ReadAtLeast(%d) of object %d, acknowledged by %s: %v", o.id, index, id, nd.id, err)
		}
		return
	}
	nodeCoverage.Add("read-own")
	if _, _, ok := o.objs.Get(txn, itemByID.Query(id)); !ok {
		r.fail("8: %s's ReadAtLeast(%d) does not hold object %d, acknowledged by %s at that index", o.id, index, id, nd.id)
	}
}

// checkStore checks invariant 9 on nd, closed: its store, closed and
// opened again as a restart would, loads the tables nd holds, object for
// object and revision for revision.
func (r *nodeRig) checkStore(nd *mnode) {
	if err := nd.state.Close(); err != nil {
		r.fail("9: %s: closing the store: %v", nd.id, err)
		return
	}
	state, err := persist.Open("state", persist.Options{FS: nd.fs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		r.fail("9: %s: opening the store again: %v", nd.id, err)
		return
	}
	defer state.Close()
	db := strata.New()
	var pbs []persist.TableBinding
	var loaded, held []strata.RWTable[*item]
	for _, m := range nd.metas {
		tbl, err := strata.NewTable(db, m.Name(), itemByID, itemByTag)
		must(r.t, err)
		pbs = append(pbs, persist.Table(tbl, persist.JSON[*item]()))
		loaded, held = append(loaded, tbl), append(held, m.(strata.RWTable[*item]))
	}
	a, err := state.LoadApplied(pbs...)
	if err != nil {
		r.fail("9: %s: loading the store: %v", nd.id, err)
		return
	}
	if got, want := dumpItems(db, loaded, false), dumpItems(nd.db, held, false); got != want {
		r.fail("9: %s: its store (at index %d) holds\n%s\nthe node held\n%s", nd.id, a.Position(), got, want)
	}
	nodeCoverage.Add("store-checked")
}

// read checks invariant 6 on every node.
func (r *nodeRig) read() {
	for _, nd := range r.nodes {
		// The published index first: a ReadTxn taken after holds at
		// least what it says.
		pub := nd.node.PublishedIndex()
		txn := nd.db.ReadTxn()
		objs := nd.objs.NumObjects(txn)
		if nd.count != nd.objs {
			objs++
		}
		if pub < nd.seen {
			r.fail("6: %s: published index went back from %d to %d", nd.id, nd.seen, pub)
		}
		if objs < nd.seenObjs {
			r.fail("6: %s: a read holds %d objects, an earlier one %d", nd.id, objs, nd.seenObjs)
		}
		nd.seen, nd.seenObjs = max(nd.seen, pub), max(nd.seenObjs, objs)
	}
}

// settle waits, in fake time, until a node leads and every node applied
// its last entry.
func (r *nodeRig) settle() {
	for range 1000 {
		if r.hasFailed() {
			return
		}
		if ld := r.readyLeader(); ld != nil {
			if err := ld.node.Raft().Barrier(time.Second).Error(); err == nil {
				target := ld.node.AppliedIndex()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				ok := true
				for _, nd := range r.nodes {
					// ReadAtLeast, not WaitApplied: a follower that
					// waits asks for a commit notice (variant
					// idle-commits).
					if _, err := nd.node.ReadAtLeast(ctx, target); err != nil {
						ok = false
					}
				}
				cancel()
				if ok {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.fail("the cluster never settled")
}

// check checks invariants 2 to 5 at the end.
func (r *nodeRig) check() {
	var dumps []string
	for _, nd := range r.nodes {
		if err := nd.node.Stopped(); err != nil {
			r.fail("5: %s stopped: %v", nd.id, err)
		}
		txn := nd.db.ReadTxn()
		var b strings.Builder
		objs := 0
		lastRev := map[int]strata.Revision{}
		lastRound := map[int]int{}
		for o, rev := range nd.objs.All(txn) {
			fmt.Fprintf(&b, " %d=%s@%d", o.ID, o.Val, rev)
			if o.ID == counterID {
				continue
			}
			objs++
			_, acked := r.acked[o.ID]
			if !acked && !r.ambiguous[o.ID] {
				r.fail("2: %s holds object %d, whose Write failed: %v", nd.id, o.ID, r.refused[o.ID])
			}
			w, k := int(o.ID/1000)-1, int(o.ID%1000)
			if prev, ok := lastRev[w]; ok && rev <= prev {
				r.fail("4: %s: writer %d's object of round %d at revision %d, of round %d at %d", nd.id, w, k, rev, lastRound[w], prev)
			}
			lastRev[w], lastRound[w] = rev, k
			if o.ID != 0 && r.ambiguous[o.ID] {
				nodeCoverage.Add("ambiguous-committed")
			}
		}
		for id := range r.acked {
			if _, _, ok := nd.objs.Get(txn, itemByID.Query(id)); !ok {
				r.fail("2: %s lacks object %d, acknowledged at index %d", nd.id, id, r.acked[id])
			}
		}
		c, crev, ok := nd.count.Get(txn, itemByID.Query(counterID))
		n := 0
		if ok {
			n, _ = strconv.Atoi(c.Val)
		}
		if n != objs {
			r.fail("3: %s holds %d objects and a counter of %d", nd.id, objs, n)
		}
		if nd.count != nd.objs {
			fmt.Fprintf(&b, " | counter=%d@%d", n, crev)
		}
		for _, m := range nd.metas {
			fmt.Fprintf(&b, " | %s@%d", m.Name(), m.Revision(txn))
		}
		dumps = append(dumps, b.String())
	}
	for i := 1; i < len(dumps); i++ {
		if dumps[i] != dumps[0] {
			r.fail("5: nodes differ at index %d:\n n0:%s\n n%d:%s", r.nodes[0].node.AppliedIndex(), dumps[0], i, dumps[i])
		}
	}
}
