package replicate

// The harness of the fault tests (faults_test.go): one-way links between
// the members of an in-process cluster, a Forwarder that obeys them, a
// record of elections and of snapshot installs, and the writers.
//
// raft's InmemTransport cannot lose one direction of a link: an RPC is a
// request on the target's channel and a response on a channel of the
// caller's, so a connected link delivers both, and Disconnect only stops
// the requests the disconnecting side starts. faultTransport wraps it:
// every link is one way (from, to), and an RPC from A to B is delivered
// only while A→B is up, its response only while B→A is up. A request
// whose link is down fails at once, as a refused connection does; a
// response whose link is down is dropped after the target handled the
// request, and the caller gets an error, as a connection reset after the
// request arrived (raft's NetworkTransport would wait for its timeout
// first: raft treats both as a failed RPC).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

var (
	faultsLong = flag.Bool("replicate.faults.long", false,
		"the fault tests' measurement runs (TestFault*): more trials, a minute of flapping, longer outages")
	faultsTrials = flag.Int("replicate.faults.trials", 0,
		"trials of each TestFaultProgress scenario (default 1, 20 with -replicate.faults.long)")
	faultsHeartbeat = flag.Duration("replicate.faults.heartbeat", 0,
		"raft's heartbeat and leader-lease timeouts in TestFaultProgress and TestFaultFlapping (default: half the election timeout, as replicate.RaftConfig; the election timeout for raft's own shape)")
	faultsFlap = flag.Duration("replicate.faults.flap", 0,
		"how long TestFaultFlapping flaps a follower (default 4s, 1m with -replicate.faults.long)")
	faultsDown = flag.Duration("replicate.faults.down", 0,
		"how long TestFaultCatchUp keeps a follower stopped (default 1.5s, 10s with -replicate.faults.long)")
	faultsWatch = flag.Bool("replicate.faults.watch", false,
		"TestFaultProgress records when each object is first published on each member (for the diagnosis of a divergence; it changes the timing)")
	faultsDiverge = flag.Int("replicate.faults.diverge", 0,
		"trials of TestFaultOldLeaderDiverges, the stress test of a bug of raft v1.7.2 that commitclamp.go works around (0: it does not run)")
	faultsTrace = flag.Bool("replicate.faults.trace", false,
		"TestFaultProgress and TestFaultOldLeaderDiverges record every member's hold points (holds.go), logged for the diagnosis of a divergence")
	faultsRate = flag.Int("replicate.faults.rate", 5000,
		"commits per second TestFaultCatchUp's writers aim at")
)

// faultElection is the election timeout of the fault tests, the unit of
// their figures: testRaftConfig's.
const faultElection = 250 * time.Millisecond

// errLinkDown is a faultTransport's or faultForwarder's error for a
// request or a response whose link is down.
var errLinkDown = errors.New("fault: link down")

// link is one direction between two members.
type link struct{ from, to raft.ServerAddress }

// faultNet is the state of every one-way link of a cluster, and what its
// transports counted. Links are up unless cut.
type faultNet struct {
	mu   sync.Mutex
	down map[link]bool
	// installs and installed count, by target, the InstallSnapshot RPCs
	// sent and those the target accepted.
	installs, installed map[raft.ServerAddress]int
	// installErrs are the errors of the installs that failed, by target.
	installErrs map[raft.ServerAddress][]string
}

func newFaultNet() *faultNet {
	return &faultNet{down: map[link]bool{}, installs: map[raft.ServerAddress]int{}, installed: map[raft.ServerAddress]int{},
		installErrs: map[raft.ServerAddress][]string{}}
}

// cut stops the messages from `from` to `to`; restore lets them through.
func (n *faultNet) cut(from, to raft.ServerAddress) {
	n.mu.Lock()
	n.down[link{from, to}] = true
	n.mu.Unlock()
}

func (n *faultNet) restore(from, to raft.ServerAddress) {
	n.mu.Lock()
	delete(n.down, link{from, to})
	n.mu.Unlock()
}

// healAll brings every link up.
func (n *faultNet) healAll() {
	n.mu.Lock()
	clear(n.down)
	n.mu.Unlock()
}

// up reports whether messages from `from` reach `to`.
func (n *faultNet) up(from, to raft.ServerAddress) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.down[link{from, to}]
}

func (n *faultNet) installCounts(to raft.ServerAddress) (sent, accepted int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.installs[to], n.installed[to]
}

// faultTransport is a member's raft transport: its InmemTransport, with
// every RPC it starts subject to the links of net (the package comment
// above). Connect, Disconnect, Consumer and Close are the
// InmemTransport's.
type faultTransport struct {
	*raft.InmemTransport
	net *faultNet
}

var _ raft.WithPreVote = (*faultTransport)(nil) // else raft turns pre-vote off

// call runs rpc, an RPC to target, if the request's link is up, and fails
// it if the response's is down once it returned.
func (t *faultTransport) call(target raft.ServerAddress, rpc func() error) error {
	from := t.LocalAddr()
	if !t.net.up(from, target) {
		return fmt.Errorf("%w: %s to %s", errLinkDown, from, target)
	}
	if err := rpc(); err != nil {
		return err
	}
	if !t.net.up(target, from) {
		return fmt.Errorf("%w: %s to %s (the response)", errLinkDown, target, from)
	}
	return nil
}

func (t *faultTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return t.call(target, func() error { return t.InmemTransport.AppendEntries(id, target, args, resp) })
}

func (t *faultTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(target, func() error { return t.InmemTransport.RequestVote(id, target, args, resp) })
}

func (t *faultTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(target, func() error { return t.InmemTransport.RequestPreVote(id, target, args, resp) })
}

func (t *faultTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(target, func() error { return t.InmemTransport.TimeoutNow(id, target, args, resp) })
}

// InstallSnapshot counts the snapshots sent to target and accepted by it.
func (t *faultTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.net.mu.Lock()
	t.net.installs[target]++
	t.net.mu.Unlock()
	err := t.call(target, func() error { return t.InmemTransport.InstallSnapshot(id, target, args, resp, data) })
	t.net.mu.Lock()
	switch {
	case err == nil && resp.Success:
		t.net.installed[target]++
	case err != nil:
		t.net.installErrs[target] = append(t.net.installErrs[target], err.Error())
	default:
		t.net.installErrs[target] = append(t.net.installErrs[target], "refused")
	}
	t.net.mu.Unlock()
	return err
}

// AppendEntriesPipeline refuses a pipeline over a link that is down
// either way (raft then replicates RPC by RPC, through AppendEntries).
func (t *faultTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	from := t.LocalAddr()
	if !t.net.up(from, target) || !t.net.up(target, from) {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	p, err := t.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &faultPipeline{AppendPipeline: p, t: t, target: target}, nil
}

// faultPipeline fails a pipelined append once the link is down either way:
// raft ends the pipeline at the first error and goes back to
// AppendEntries. (The appends already in flight when a link goes down
// still deliver their responses: a window of one round trip.)
type faultPipeline struct {
	raft.AppendPipeline
	t      *faultTransport
	target raft.ServerAddress
}

func (p *faultPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	from := p.t.LocalAddr()
	if !p.t.net.up(from, p.target) || !p.t.net.up(p.target, from) {
		return nil, fmt.Errorf("%w: pipeline %s to %s", errLinkDown, from, p.target)
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}

// faultForwarder is a member's Forwarder: the cluster's LocalForwarder,
// over the same links as raft's messages (forwarding shares the network).
type faultForwarder struct {
	from  raft.ServerAddress
	net   *faultNet
	local *LocalForwarder
}

// Forward is an *UnreachableError when the request's link is down (it
// never reached the leader), an *AmbiguousError when the response's is
// (the leader may have committed it).
func (f *faultForwarder) Forward(ctx context.Context, leader raft.ServerAddress, changes []byte) (uint64, error) {
	if !f.net.up(f.from, leader) {
		return 0, &UnreachableError{Leader: leader, Err: errLinkDown}
	}
	index, err := f.local.Forward(ctx, leader, changes)
	if !f.net.up(leader, f.from) {
		// What the leader answered, for the diagnosis (acks.outcome).
		return 0, &AmbiguousError{Err: fmt.Errorf("%w (the leader answered %d, %v)", errLinkDown, index, err)}
	}
	return index, err
}

// AppliedIndex fails with an *UnreachableError when either link is down.
func (f *faultForwarder) AppliedIndex(ctx context.Context, member raft.ServerAddress) (uint64, error) {
	if !f.net.up(f.from, member) || !f.net.up(member, f.from) {
		return 0, &UnreachableError{Leader: member, Err: errLinkDown}
	}
	return f.local.AppliedIndex(ctx, member)
}

// NoticeCommit fails with an *UnreachableError when either link is down.
func (f *faultForwarder) NoticeCommit(ctx context.Context, leader raft.ServerAddress, index uint64) error {
	if !f.net.up(f.from, leader) {
		return &UnreachableError{Leader: leader, Err: errLinkDown}
	}
	err := f.local.NoticeCommit(ctx, leader, index)
	if !f.net.up(leader, f.from) {
		return &UnreachableError{Leader: leader, Err: errLinkDown}
	}
	return err
}

// ReadIndex fails with an *UnreachableError when either link is down: a
// read index asked for again changes nothing.
func (f *faultForwarder) ReadIndex(ctx context.Context, leader raft.ServerAddress) (uint64, error) {
	if !f.net.up(f.from, leader) {
		return 0, &UnreachableError{Leader: leader, Err: errLinkDown}
	}
	index, err := f.local.ReadIndex(ctx, leader)
	if !f.net.up(leader, f.from) {
		return 0, &UnreachableError{Leader: leader, Err: errLinkDown}
	}
	return index, err
}

// fcluster is an rcluster whose members talk through faultTransports
// and write from any node through faultForwarders.
type fcluster struct {
	*rcluster
	net      *faultNet
	local    *LocalForwarder
	elect    *elections
	storeOps storeOps
	trace    *holdTrace // with -replicate.faults.trace
	// hold, if not nil, gives each member's hook at the hold points
	// (Config.hold), unless trace does.
	hold func(nd *rnode) func(holdPoint, int)
}

// newFaultCluster starts n members as newRClusterWith does, each on a
// faultTransport with a faultForwarder, records their elections, and
// bootstraps them.
func newFaultCluster(t *testing.T, n int, conf func(*raft.Config)) *fcluster {
	t.Helper()
	return newFaultClusterOf(t, n, conf, faultOpts{})
}

// faultOpts are newFaultClusterOf's options.
type faultOpts struct {
	// durable: members with a persist store each, whose writes
	// storeOps.stallState stalls.
	durable bool
	// hold is fcluster.hold.
	hold func(nd *rnode) func(holdPoint, int)
}

// newFaultClusterOf is newFaultCluster with opts.
func newFaultClusterOf(t *testing.T, n int, conf func(*raft.Config), opts faultOpts) *fcluster {
	t.Helper()
	c := &fcluster{rcluster: &rcluster{t: t, conf: conf, durable: opts.durable}, net: newFaultNet(), local: NewLocalForwarder(), elect: &elections{}, hold: opts.hold}
	if *faultsTrace {
		c.trace = &holdTrace{}
	}
	for i := range n {
		nd := &rnode{
			id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), num: uint16(i + 1),
			dir: filepath.Join(t.TempDir(), "log"), snaps: testSnapshots(t),
			stateDir: filepath.Join(t.TempDir(), "state"),
		}
		c.startNode(nd)
		c.nodes = append(c.nodes, nd)
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	var cfg raft.Configuration
	for _, nd := range c.nodes {
		cfg.Servers = append(cfg.Servers, raft.Server{ID: nd.id, Address: nd.addr})
	}
	must(t, c.nodes[0].node.Raft().BootstrapCluster(cfg).Error())
	t.Cleanup(c.close)
	return c
}

// startNode is rcluster.start with nd's transport and forwarder subject
// to the cluster's links.
func (c *fcluster) startNode(nd *rnode) {
	t := c.t
	t.Helper()
	nd.tables, nd.metas, nd.feeds, nd.closed = nil, nil, nil, false
	nd.db = strata.New()
	binds := nd.addTables(t)
	var err error
	nd.store = openStore(t, nil, nd.dir)
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	conf := testRaftConfig(nd.id)
	if c.conf != nil {
		c.conf(conf)
	}
	logs := c.storeOps.wrap(nd)
	cfg := nd.config(binds, conf, withLogStore(logs),
		withTransport(&faultTransport{InmemTransport: nd.trans, net: c.net}),
		withForwarder(&faultForwarder{from: nd.addr, net: c.net, local: c.local}))
	if c.durable {
		nd.state, err = persist.Open(nd.stateDir, c.storeOps.stateOptions(nd.id))
		must(t, err)
		cfg.Store = nd.state
	}
	var self atomic.Pointer[Node]
	switch {
	case c.trace != nil:
		cfg.hold = c.trace.hook(nd, &self)
	case c.hold != nil:
		cfg.hold = c.hold(nd)
	}
	nd.node, err = NewNode(cfg)
	must(t, err)
	self.Store(nd.node)
	c.local.Register(nd.addr, nd.node)
	c.elect.watch(nd)
}

// stopNode stops nd (rcluster.stop) and makes it unreachable to
// forwarders.
func (c *fcluster) stopNode(nd *rnode) {
	c.local.Unregister(nd.addr)
	c.stop(nd)
}

// restartNode starts nd again, stopped, on its log and snapshot stores
// and a new in-memory database, and connects it.
func (c *fcluster) restartNode(nd *rnode) {
	c.startNode(nd)
	c.connect(nd)
}

// settleAll is rcluster.settle, again with a new leader when the
// leader's barrier fails (on a loaded machine the leader may lose its
// lease meanwhile): it waits until every live member applied and
// published the leader's last entry, and returns its index.
func (c *fcluster) settleAll() uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var target uint64
	for attempt := 1; ; attempt++ {
		ld := c.committingLeader()
		err := ld.node.Raft().Barrier(10 * time.Second).Error()
		if err == nil {
			target = ld.node.AppliedIndex()
			break
		}
		if attempt == 5 {
			c.t.Fatalf("the leader's barrier failed %d times, the last: %v", attempt, err)
		}
	}
	for _, nd := range c.live() {
		if err := nd.node.waitIndex(ctx, &nd.node.published, target); err != nil {
			c.t.Fatalf("%s: applied %d, published %d, waiting for %d: %v", nd.id, nd.node.AppliedIndex(), nd.node.PublishedIndex(), target, err)
		}
		if got := nd.node.AppliedIndex(); got != target {
			c.t.Fatalf("%s: applied %d, the leader %d", nd.id, got, target)
		}
	}
	return target
}

// isolate cuts both directions between nd and every other member;
// rejoin restores them.
func (c *fcluster) isolate(nd *rnode) {
	for _, o := range c.nodes {
		if o != nd {
			c.net.cut(nd.addr, o.addr)
			c.net.cut(o.addr, nd.addr)
		}
	}
}

func (c *fcluster) rejoin(nd *rnode) {
	for _, o := range c.nodes {
		if o != nd {
			c.net.restore(nd.addr, o.addr)
			c.net.restore(o.addr, nd.addr)
		}
	}
}

// transition is a member's raft entering a state.
type transition struct {
	at    time.Time
	id    raft.ServerID
	state raft.RaftState
	term  uint64
}

func (tr transition) String() string {
	return fmt.Sprintf("%s %v in term %d", tr.id, tr.state, tr.term)
}

// elections records every member's raft state transitions, elections
// won among them: an observer on each member's raft whose filter, which
// raft calls on its own goroutine as the state changes, records it (and
// lets nothing through, so that no goroutine needs to read a channel).
type elections struct {
	mu  sync.Mutex
	all []transition
}

func (e *elections) watch(nd *rnode) {
	r, id := nd.node.Raft(), nd.id
	r.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if s, ok := o.Data.(raft.RaftState); ok {
			e.mu.Lock()
			e.all = append(e.all, transition{at: time.Now(), id: id, state: s, term: o.Raft.CurrentTerm()})
			e.mu.Unlock()
		}
		return false
	}))
}

// since returns the elections won at or after t.
func (e *elections) since(t time.Time) []transition {
	var won []transition
	for _, tr := range e.transitions(t) {
		if tr.state == raft.Leader {
			won = append(won, tr)
		}
	}
	return won
}

// transitions returns the transitions at or after t.
func (e *elections) transitions(t time.Time) []transition {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []transition
	for _, tr := range e.all {
		if !tr.at.Before(t) {
			out = append(out, tr)
		}
	}
	return out
}

// timeline is what happened from start: each transition with its time
// after start.
func timeline(trs []transition, start time.Time) string {
	var b strings.Builder
	for i, tr := range trs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "+%v %v", tr.at.Sub(start).Round(time.Millisecond), tr)
	}
	return b.String()
}

// acks records the writes of a test: the ids of those acknowledged
// (committed: Write returned an index), and a count of each outcome.
type acks struct {
	next     atomic.Uint64 // the last id given
	mu       sync.Mutex
	ids      []uint64
	at       []time.Time // when each write of ids was acknowledged
	outcomes map[string]int
	// outcome is each write's: through which member, and what Write
	// returned, for the diagnosis of a divergence (diverged).
	outcome map[uint64]string
}

func newAcks() *acks { return &acks{outcomes: map[string]int{}, outcome: map[uint64]string{}} }

// put writes a new object through nd, records the outcome, and returns
// whether it was acknowledged.
func (a *acks) put(ctx context.Context, t *testing.T, nd *rnode, val string) bool {
	id := a.next.Add(1)
	// A new object: with ObjectConflicts a forwarded write conflicts
	// only if the object exists, or if the follower applied a write of
	// the table between its read and the forward (forward.go,
	// objectPreconditions): then it is refused, as the API allows.
	index, err := putWith(ctx, nd, id, val, ObjectConflicts())
	committed := err == nil || (index > 0 && errors.Is(err, ErrNotPublished))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.outcome[id] = fmt.Sprintf("%s through %s: index %d, %v", val, nd.id, index, err)
	if committed {
		a.ids = append(a.ids, id)
		a.at = append(a.at, time.Now())
	}
	var nl *NotLeaderError
	switch {
	case err == nil:
		a.outcomes["ok"]++
	case committed:
		a.outcomes["not published"]++
	case errors.Is(err, ErrAmbiguous):
		a.outcomes["ambiguous"]++
	case errors.As(err, &nl):
		a.outcomes["not leader"]++
	case errors.Is(err, ErrShutdown):
		a.outcomes["shut down"]++
	case errors.Is(err, strata.ErrEarlierCommitFailed) && errors.Is(err, ErrNotReady):
		// Queued behind a commit whose proposal failed, not proposed:
		// Write returns it as Commit did.
		a.outcomes["earlier commit failed"]++
	case errors.Is(err, ErrConflict):
		a.outcomes["conflict"]++
	case ctx.Err() != nil:
		a.outcomes["cancelled"]++
	default:
		t.Errorf("write through %s: %v", nd.id, err)
	}
	return err == nil
}

func (a *acks) acked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

// maxGap is the longest time between start and end without an
// acknowledgement.
func (a *acks) maxGap(start, end time.Time) time.Duration {
	a.mu.Lock()
	at := slices.Clone(a.at)
	a.mu.Unlock()
	slices.SortFunc(at, time.Time.Compare)
	var gap time.Duration
	last := start
	for _, t := range at {
		if t.After(start) && t.Before(end) {
			gap = max(gap, t.Sub(last))
			last = t
		}
	}
	return max(gap, end.Sub(last))
}

func (a *acks) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range a.outcomes {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, a.outcomes[k])
	}
	return strings.TrimSpace(b.String())
}

// check fails the test unless every live member holds every acknowledged
// write.
func (a *acks) check(c *rcluster) {
	c.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, nd := range c.live() {
		txn := nd.db.ReadTxn()
		lost := 0
		for _, id := range a.ids {
			if _, _, found := nd.tables[0].Get(txn, itemByID.Query(id)); !found {
				if lost++; lost <= 5 {
					c.t.Errorf("%s: acknowledged write %d lost", nd.id, id)
				}
			}
		}
		if lost > 0 {
			c.t.Fatalf("%s: %d of %d acknowledged writes lost", nd.id, lost, len(a.ids))
		}
	}
}

// diverged logs, if the live members' tables differ, the outcome of
// each write some member holds and another does not, and returns whether
// they differ (checkEqual then says how).
func (a *acks) diverged(c *rcluster, seen map[raft.ServerID]map[uint64]sighting, start time.Time) bool {
	c.t.Helper()
	live := c.live()
	holds := make([]map[uint64]uint64, len(live)) // id -> revision, table a
	for i, nd := range live {
		holds[i] = map[uint64]uint64{}
		for o, rev := range nd.tables[0].All(nd.db.ReadTxn()) {
			holds[i][o.ID] = uint64(rev)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	diff := false
	for i, nd := range live {
		for id, rev := range holds[i] {
			for j, o := range live {
				if r, ok := holds[j][id]; !ok || r != rev {
					diff = true
					c.t.Logf("%s holds %d at revision %d, %s does not (%d); the write: %s", nd.id, id, rev, o.id, r, a.outcome[id])
					if s, ok := seen[nd.id][id]; ok {
						c.t.Logf("  first published on %s at +%v, applied index %d, %v in term %d", nd.id, s.at.Sub(start).Round(time.Millisecond), s.applied, s.state, s.term)
					}
				}
			}
		}
	}
	if diff {
		for _, nd := range live {
			c.t.Logf("%s: applied %d, published %d, last index %d, term %d", nd.id, nd.node.AppliedIndex(), nd.node.PublishedIndex(), nd.node.Raft().LastIndex(), nd.node.Raft().CurrentTerm())
		}
	}
	return diff
}

// sighting is when a member's published tables first held an object.
type sighting struct {
	at      time.Time
	applied uint64
	state   raft.RaftState
	term    uint64
}

// watchPublished starts, with -replicate.faults.watch, a watchPublished
// of every member; the function it returns stops them (once) and
// returns what they saw, by member (nil without the flag).
func (c *fcluster) watchPublished(ctx context.Context) func() map[raft.ServerID]map[uint64]sighting {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		seen = map[raft.ServerID]map[uint64]sighting{}
		wg   sync.WaitGroup
	)
	for _, nd := range c.nodes {
		if !*faultsWatch {
			break
		}
		wg.Go(func() {
			s := watchPublished(ctx, nd)
			mu.Lock()
			seen[nd.id] = s
			mu.Unlock()
		})
	}
	return func() map[raft.ServerID]map[uint64]sighting {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// watchPublished records, until ctx ends, when each object of table a
// first appears in nd's published state, with nd's applied index and
// raft state then: the diagnosis of a divergence (diverged) tells from
// it whether a write that never committed was published by its own
// commit, or later by an apply.
func watchPublished(ctx context.Context, nd *rnode) map[uint64]sighting {
	seen := map[uint64]sighting{}
	for ctx.Err() == nil {
		applied, state, term := nd.node.AppliedIndex(), nd.node.Raft().State(), nd.node.Raft().CurrentTerm()
		for o := range nd.tables[0].All(nd.db.ReadTxn()) {
			if _, ok := seen[o.ID]; !ok {
				seen[o.ID] = sighting{time.Now(), applied, state, term}
			}
		}
		time.Sleep(time.Millisecond)
	}
	return seen
}

// writeEverywhere starts a writer on every member (writeLoop, in bg,
// pausing pause after each write) and returns once 30 writes are
// acknowledged, before what the test does next (before names it).
func (c *fcluster) writeEverywhere(ctx context.Context, a *acks, bg *sync.WaitGroup, pause time.Duration, before string) {
	t := c.t
	t.Helper()
	for _, nd := range c.nodes {
		bg.Go(func() { a.writeLoop(ctx, t, nd, pause) })
	}
	for deadline := time.Now().Add(10 * time.Second); a.acked() < 30; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("30 writes not acknowledged in 10s before %s: %s", before, a)
		}
	}
}

// writeLoop writes through nd until ctx ends, pausing pause between
// writes (none if 0).
func (a *acks) writeLoop(ctx context.Context, t *testing.T, nd *rnode, pause time.Duration) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if !a.put(wctx, t, nd, "bg") {
			pause := max(pause, 2*time.Millisecond) // not spinning on a refusal
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
		} else if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
			}
		}
		cancel()
	}
}

// figures summarises durations in units of unit: min, median, max, and
// how many are at most limit units.
func figures(ds []time.Duration, unit time.Duration, limit float64) string {
	if len(ds) == 0 {
		return "no trials"
	}
	xs := make([]float64, len(ds))
	within := 0
	for i, d := range ds {
		xs[i] = float64(d) / float64(unit)
		if xs[i] <= limit {
			within++
		}
	}
	sort.Float64s(xs)
	med := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return fmt.Sprintf("%d trials: min %.2f× median %.2f× max %.2f×, %d of %d ≤ %g×",
		len(xs), xs[0], med, xs[len(xs)-1], within, len(xs), limit)
}
