package replicate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// addNode starts one more node, as newRCluster starts its nodes, connected
// to every live node both ways, and not bootstrapped: it joins the cluster
// when the leader adds it.
func (c *rcluster) addNode() *rnode {
	t := c.t
	t.Helper()
	i := len(c.nodes)
	nd := &rnode{id: raft.ServerID(fmt.Sprint("n", i)), addr: raft.ServerAddress(fmt.Sprint("a", i)), num: uint16(i + 1), db: strata.New(), snaps: testSnapshots(t)}
	binds := nd.addTables(t)
	var err error
	nd.store = openStore(t, nil, filepath.Join(t.TempDir(), "log"))
	_, nd.trans = raft.NewInmemTransport(nd.addr)
	nd.node, err = NewNode(nd.config(binds, testRaftConfig(nd.id), withLeaderIndex(c.leaderIndexer(nd))))
	must(t, err)
	for _, o := range c.live() {
		o.trans.Connect(nd.addr, nd.trans)
		nd.trans.Connect(o.addr, o.trans)
	}
	c.nodes = append(c.nodes, nd)
	return nd
}

// newBareCluster starts n nodes connected to each other and bootstraps
// none.
func newBareCluster(t *testing.T, n int) *rcluster {
	t.Helper()
	c := &rcluster{t: t}
	t.Cleanup(c.close)
	for range n {
		c.addNode()
	}
	return c
}

// members returns nd's view of the cluster, failing the test on error.
func members(t *testing.T, nd *rnode) Membership {
	t.Helper()
	m, err := nd.node.Members()
	must(t, err)
	return m
}

// suffrages returns the members of m as "id:suffrage" in ID order.
func suffrages(m Membership) []string {
	var s []string
	for _, mb := range m.Members {
		s = append(s, fmt.Sprintf("%s:%v", mb.ID, mb.Suffrage))
	}
	slices.Sort(s)
	return s
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLeading waits until one live node other than not (nil: any) leads
// and is ready, and returns it.
func (c *rcluster) waitLeading(not *rnode) *rnode {
	c.t.Helper()
	var ld *rnode
	waitFor(c.t, "a ready leader", func() bool {
		for _, nd := range c.live() {
			if ok, _ := nd.node.Leading(); ok && nd != not {
				ld = nd
				return true
			}
		}
		return false
	})
	return ld
}

// other returns a live node that is none of not.
func (c *rcluster) other(not ...*rnode) *rnode {
	for _, nd := range c.live() {
		if !slices.Contains(not, nd) {
			return nd
		}
	}
	c.t.Fatal("no other live node")
	return nil
}

// TestMembershipAddVoterNonvoter: a 4th voter and a non-voter (read
// replica) join a running 3-node cluster, receive the whole log and the
// writes after it; repeated adds change nothing; bad adds are refused with
// typed errors and leave the configuration as it was.
func TestMembershipAddVoterNonvoter(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.waitLeading(nil)
	for i := range 10 {
		_, err := put(context.Background(), ld, uint64(i), "before")
		must(t, err)
	}
	ctx := context.Background()
	voter, replica := c.addNode(), c.addNode()
	must(t, ld.node.AddVoter(ctx, voter.id, voter.addr))
	must(t, ld.node.AddNonvoter(ctx, replica.id, replica.addr))
	for i := range 10 {
		_, err := put(context.Background(), ld, uint64(100+i), "after")
		must(t, err)
	}
	c.converge()
	c.checkEqual(true)

	m := members(t, ld)
	want := []string{"n0:Voter", "n1:Voter", "n2:Voter", "n3:Voter", "n4:Nonvoter"}
	if got := suffrages(m); !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if !m.Leading || m.State != raft.Leader || m.Self != ld.id || m.LeaderID != ld.id {
		t.Errorf("the leader's view of itself: %+v", m)
	}
	if m.AppliedIndex < m.PublishedIndex || m.CommitIndex < m.AppliedIndex || m.LastIndex < m.CommitIndex {
		t.Errorf("indexes out of order: %+v", m)
	}
	for _, mb := range m.Members {
		if mb.Self != (mb.ID == ld.id) || mb.Leader != (mb.ID == ld.id) {
			t.Errorf("member %+v: Self or Leader wrong", mb)
		}
		if mb.Self == mb.Heartbeats.Replicating {
			t.Errorf("member %s: Replicating %v on the leader", mb.ID, mb.Heartbeats.Replicating)
		}
	}
	// The non-voter knows the leader, follows, and never leads.
	rm := members(t, replica)
	if rm.State != raft.Follower || rm.LeaderID != ld.id || rm.Leading {
		t.Errorf("the replica's view: state %v, leader %q, leading %v", rm.State, rm.LeaderID, rm.Leading)
	}
	for _, mb := range rm.Members {
		if mb.Heartbeats != (Heartbeats{}) {
			t.Errorf("a follower reports heartbeats of %s: %+v", mb.ID, mb.Heartbeats)
		}
	}

	// Adding again changes nothing; bad adds are refused.
	before := m.ConfigurationIndex
	must(t, ld.node.AddVoter(ctx, voter.id, voter.addr))
	must(t, ld.node.AddNonvoter(ctx, replica.id, replica.addr))
	refused := []struct {
		what string
		err  error
		want error
	}{
		{"voter at another address", ld.node.AddVoter(ctx, voter.id, "elsewhere"), ErrMemberConflict},
		{"another id at a member's address", ld.node.AddVoter(ctx, "n9", voter.addr), ErrMemberConflict},
		{"a voter as non-voter", ld.node.AddNonvoter(ctx, voter.id, voter.addr), ErrMemberConflict},
		{"an empty id", ld.node.AddVoter(ctx, "", "a9"), ErrInvalidMembership},
		{"an empty address", ld.node.AddNonvoter(ctx, "n9", ""), ErrInvalidMembership},
		{"removing a stranger", ld.node.RemoveServer(ctx, "n9"), ErrNotMember},
	}
	for _, r := range refused {
		if !errors.Is(r.err, r.want) {
			t.Errorf("%s: %v, want %v", r.what, r.err, r.want)
		}
	}
	if got := members(t, ld).ConfigurationIndex; got != before {
		t.Errorf("the configuration moved from %d to %d", before, got)
	}
	// A follower refuses, naming the leader.
	var nl *NotLeaderError
	if err := voter.node.AddVoter(ctx, "n9", "a9"); !errors.As(err, &nl) || nl.Leader != ld.addr {
		t.Errorf("AddVoter on a follower: %v, want a *NotLeaderError naming %s", err, ld.addr)
	}

	// The replica is promoted: AddVoter of a non-voter.
	must(t, ld.node.AddVoter(ctx, replica.id, replica.addr))
	want[4] = "n4:Voter"
	if got := suffrages(members(t, ld)); !slices.Equal(got, want) {
		t.Fatalf("after the promotion: %v, want %v", got, want)
	}
	_, err := put(context.Background(), ld, 1000, "promoted")
	must(t, err)
	c.converge()
	c.checkEqual(true)
}

// TestMembershipNonvoterDoesNotCount: a cluster of one voter and two
// non-voters commits with the voter alone, and the non-voters, with the
// voter gone, never elect a leader among themselves.
func TestMembershipNonvoterDoesNotCount(t *testing.T) {
	t.Parallel()
	c := newBareCluster(t, 3)
	must(t, c.nodes[0].node.BootstrapSelf())
	ld := c.waitLeading(nil)
	ctx := context.Background()
	must(t, ld.node.AddNonvoter(ctx, c.nodes[1].id, c.nodes[1].addr))
	must(t, ld.node.AddNonvoter(ctx, c.nodes[2].id, c.nodes[2].addr))
	_, err := put(ctx, ld, 1, "x")
	must(t, err)
	c.converge()
	c.checkEqual(true)
	if err := ld.node.TransferLeadership(ctx, ""); !errors.Is(err, ErrNoTransferTarget) {
		t.Errorf("TransferLeadership with no other voter: %v", err)
	}
	if err := ld.node.TransferLeadership(ctx, c.nodes[1].id); !errors.Is(err, ErrNoTransferTarget) {
		t.Errorf("TransferLeadership to a non-voter: %v", err)
	}
	if err := ld.node.RemoveServer(ctx, ld.id); !errors.Is(err, ErrInvalidMembership) {
		t.Errorf("RemoveServer of the last voter: %v", err)
	}
	c.stop(ld)
	// Four heartbeat timeouts: long enough for a voter to have been
	// elected, were the non-voters to vote.
	time.Sleep(4 * testRaftConfig("").HeartbeatTimeout)
	for _, nd := range c.live() {
		if s := nd.node.Raft().State(); s != raft.Follower {
			t.Errorf("non-voter %s is a %v", nd.id, s)
		}
	}
}

// TestMembershipBootstrap: Bootstrap refuses bad configurations with
// ErrInvalidMembership and changes nothing (the node bootstraps after);
// a bootstrapped node refuses a second bootstrap with
// ErrAlreadyBootstrapped; voters added to a one-node cluster replicate.
func TestMembershipBootstrap(t *testing.T) {
	t.Parallel()
	c := newBareCluster(t, 3)
	n0 := c.nodes[0]
	self := raft.Server{ID: n0.id, Address: n0.addr, Suffrage: raft.Voter}
	bad := map[string][]raft.Server{
		"none":             nil,
		"empty id":         {self, {ID: "", Address: "a9"}},
		"empty address":    {self, {ID: "n9", Address: ""}},
		"id twice":         {self, {ID: n0.id, Address: "a9"}},
		"address twice":    {self, {ID: "n9", Address: n0.addr}},
		"no voter":         {{ID: n0.id, Address: n0.addr, Suffrage: raft.Nonvoter}},
		"staging":          {self, {ID: "n9", Address: "a9", Suffrage: raft.Staging}},
		"without self":     {{ID: "n9", Address: "a9"}},
		"self elsewhere":   {{ID: n0.id, Address: "a9"}},
		"unknown suffrage": {self, {ID: "n9", Address: "a9", Suffrage: 7}},
	}
	for what, servers := range bad {
		if err := n0.node.Bootstrap(servers); !errors.Is(err, ErrInvalidMembership) {
			t.Errorf("Bootstrap, %s: %v, want ErrInvalidMembership", what, err)
		}
	}
	if last := n0.node.Raft().LastIndex(); last != 0 {
		t.Fatalf("refused bootstraps left a log up to %d", last)
	}
	must(t, n0.node.BootstrapSelf())
	if err := n0.node.BootstrapSelf(); !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Errorf("a second Bootstrap: %v, want ErrAlreadyBootstrapped", err)
	}
	ld := c.waitLeading(nil)
	if ld != n0 {
		t.Fatalf("%s leads, not the bootstrapped %s", ld.id, n0.id)
	}
	ctx := context.Background()
	_, err := put(ctx, ld, 1, "alone")
	must(t, err)
	for _, nd := range c.nodes[1:] {
		must(t, ld.node.AddVoter(ctx, nd.id, nd.addr))
	}
	_, err = put(ctx, ld, 2, "three")
	must(t, err)
	c.converge()
	c.checkEqual(true)
	if got := suffrages(members(t, c.nodes[2])); !slices.Equal(got, []string{"n0:Voter", "n1:Voter", "n2:Voter"}) {
		t.Errorf("members %v", got)
	}
}

// TestMembershipRemove: a follower removed stops receiving entries while
// the others go on; then the leader removes itself, steps down, and the
// remaining two elect a leader and take writes.
func TestMembershipRemove(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 4)
	ld := c.waitLeading(nil)
	ctx := context.Background()
	f := c.other(ld)
	must(t, ld.node.RemoveServer(ctx, f.id))
	if got := suffrages(members(t, ld)); slices.Contains(got, string(f.id)+":Voter") || len(got) != 3 {
		t.Fatalf("members after removing %s: %v", f.id, got)
	}
	if err := ld.node.RemoveServer(ctx, f.id); !errors.Is(err, ErrNotMember) {
		t.Errorf("removing %s again: %v, want ErrNotMember", f.id, err)
	}
	removedAt := f.node.AppliedIndex()
	c.stop(f) // raft leaves a removed follower running; it is done
	index, err := put(ctx, ld, 1, "without "+string(f.id))
	must(t, err)
	if index <= removedAt {
		t.Fatalf("write at %d, the removed node applied %d", index, removedAt)
	}
	c.converge()
	c.checkEqual(true)

	// The leader removes itself.
	_, changed := ld.node.Leading()
	must(t, ld.node.RemoveServer(ctx, ld.id))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the removed leader's Leading channel did not close")
	}
	c.stop(ld)
	nl := c.waitLeading(ld)
	_, err = put(ctx, nl, 2, "after the leader left")
	must(t, err)
	c.converge()
	c.checkEqual(true)
	if got := suffrages(members(t, nl)); len(got) != 2 {
		t.Errorf("members %v, want the two left", got)
	}
}

// TestMembershipTransferLeadership: leadership moves to the voter asked
// for (and then to any), the old leader's Leading channel closes, writes go
// on through the new leader, and the old one refuses them naming it.
func TestMembershipTransferLeadership(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ctx := context.Background()
	old := c.waitLeading(nil)
	_, err := put(ctx, old, 1, "first")
	must(t, err)
	target := c.other(old)
	f := c.other(old, target)
	if err := old.node.TransferLeadership(ctx, old.id); !errors.Is(err, ErrNotMember) {
		t.Errorf("transfer to itself: %v, want ErrNotMember", err)
	}
	if err := old.node.TransferLeadership(ctx, "n9"); !errors.Is(err, ErrNotMember) {
		t.Errorf("transfer to a stranger: %v, want ErrNotMember", err)
	}
	var nle *NotLeaderError
	if err := f.node.TransferLeadership(ctx, ""); !errors.As(err, &nle) || nle.Leader != old.addr {
		t.Errorf("transfer on a follower: %v, want a *NotLeaderError naming %s", err, old.addr)
	}
	leading, changed := old.node.Leading()
	if !leading {
		t.Fatal("the leader does not report Leading")
	}
	must(t, old.node.TransferLeadership(ctx, target.id))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Leading's channel did not close on the transfer")
	}
	if ld := c.waitLeading(nil); ld != target {
		t.Fatalf("%s leads, the transfer was to %s", ld.id, target.id)
	}
	if ok, _ := old.node.Leading(); ok {
		t.Error("the old leader still reports Leading")
	}
	_, err = put(ctx, target, 2, "second")
	must(t, err)
	waitFor(t, "the old leader to learn the new one", func() bool {
		addr, _ := old.node.Raft().LeaderWithID()
		return addr == target.addr
	})
	_, err = put(ctx, old, 3, "refused")
	if !errors.As(err, &nle) || nle.Leader != target.addr {
		t.Errorf("write on the old leader: %v, want a *NotLeaderError naming %s", err, target.addr)
	}
	// Anywhere.
	must(t, target.node.TransferLeadership(ctx, ""))
	third := c.waitLeading(target)
	_, err = put(ctx, third, 4, "third")
	must(t, err)
	c.converge()
	c.checkEqual(true)
}

// TestLeadingMeansReady: whenever a node reports Leading, its journal is
// ready in raft's current term (its barrier applied), and only one node
// reports it once the cluster settled.
func TestLeadingMeansReady(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.waitLeading(nil)
	for range 3 {
		waitFor(t, "one node leading", func() bool {
			k := 0
			for _, nd := range c.live() {
				if ok, _ := nd.node.Leading(); ok {
					k++
				}
			}
			return k == 1
		})
		for _, nd := range c.live() {
			leading, _ := nd.node.Leading()
			_, term, _, _, _ := nd.node.lead.state()
			nd.node.mu.Lock()
			ready, readyTerm := nd.node.st.ready, nd.node.st.readyTerm
			nd.node.mu.Unlock()
			if leading != (nd == ld) {
				t.Errorf("%s: Leading %v, the leader is %s", nd.id, leading, ld.id)
			}
			if leading && (!ready || readyTerm != term || term != nd.node.Raft().CurrentTerm()) {
				t.Errorf("%s: Leading in term %d, journal ready %v in term %d, raft's term %d",
					nd.id, term, ready, readyTerm, nd.node.Raft().CurrentTerm())
			}
		}
		must(t, ld.node.TransferLeadership(context.Background(), ""))
		ld = c.waitLeading(ld)
	}
}

// jobLog records the runs of a leader-only job across a cluster: how many
// run at once (never more than one), and each run.
type jobLog struct {
	mu      sync.Mutex
	running int
	overlap []string
	runs    []jobRun
}

type jobRun struct {
	node       raft.ServerID
	term       uint64
	start, end time.Time
	ended      bool
	// sinceReady is how long the node had led (ready) when the run
	// started.
	sinceReady time.Duration
}

// job is the function RunWhileLeader runs on nd: it records its run and
// holds until its context is cancelled.
func (l *jobLog) job(nd *rnode) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		term, ok := LeaderTerm(ctx)
		if !ok {
			return errors.New("no leader term in the job's context")
		}
		_, _, since, _, _ := nd.node.lead.state()
		l.mu.Lock()
		l.running++
		if l.running > 1 {
			l.overlap = append(l.overlap, fmt.Sprintf("%s started in term %d while %d ran", nd.id, term, l.running-1))
		}
		l.runs = append(l.runs, jobRun{node: nd.id, term: term, start: time.Now(), sinceReady: time.Since(since)})
		k := len(l.runs) - 1
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		l.running--
		l.runs[k].end, l.runs[k].ended = time.Now(), true
		l.mu.Unlock()
		return ctx.Err()
	}
}

// byID returns the node id.
func (c *rcluster) byID(id raft.ServerID) *rnode {
	for _, nd := range c.nodes {
		if nd.id == id {
			return nd
		}
	}
	c.t.Fatalf("no node %s", id)
	return nil
}

// waitNewRun waits until a run later than the first after ones is
// running on a node that leads in the run's term, and returns the count of
// runs and that run.
func (l *jobLog) waitNewRun(c *rcluster, after int, how string) (int, jobRun) {
	c.t.Helper()
	var r jobRun
	var n int
	waitFor(c.t, "a run of the job after "+how, func() bool {
		l.mu.Lock()
		n = len(l.runs)
		if n > 0 {
			r = l.runs[n-1]
		}
		l.mu.Unlock()
		if n <= after || r.ended {
			return false
		}
		leading, term, _, _, _ := c.byID(r.node).node.lead.state()
		return leading && term == r.term
	})
	c.t.Logf("after %s: %s runs the job in term %d (run %d)", how, r.node, r.term, n)
	return n, r
}

// TestRunWhileLeader: every node runs the same job with RunWhileLeader;
// across a leadership transfer, two partitions of the leader, and a graceful
// Shutdown of the leader, the job runs again on the new leader, and at no
// moment do two nodes run it: each run starts in a newer term than the
// one before, after the one before ended (on the partitioned leader too),
// and at least twice the lease after its node became ready (the bound
// RunWhileLeader documents).
func TestRunWhileLeader(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	handover := 2 * testRaftConfig("").LeaderLeaseTimeout
	var log jobLog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	results := make([]error, len(c.nodes))
	for i, nd := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = nd.node.RunWhileLeader(ctx, log.job(nd))
		}()
	}

	runs, r := log.waitNewRun(c, 0, "the election")
	must(t, c.byID(r.node).node.TransferLeadership(ctx, ""))
	runs, r = log.waitNewRun(c, runs, "a transfer")

	// The leader is cut off, twice: its run goes on until it learns that
	// it no longer leads; the others elect a leader, which runs the job
	// only after the old run ended.
	for range 2 {
		old := c.byID(r.node)
		cut := time.Now()
		c.partition(old)
		runs, r = log.waitNewRun(c, runs, "a partition of the leader")
		if r.node == old.id {
			t.Fatalf("the partitioned leader %s runs the job again", old.id)
		}
		log.mu.Lock()
		prev := log.runs[runs-2]
		log.mu.Unlock()
		t.Logf("the partitioned leader ran the job for %v after it was cut off; the new run started %v after the cut",
			prev.end.Sub(cut), r.start.Sub(cut))
		c.heal(old)
		c.converge()
	}

	// A graceful shutdown hands the job over.
	ld := c.byID(r.node)
	must(t, ld.node.Shutdown(ctx))
	c.stop(ld)
	log.waitNewRun(c, runs, "a graceful shutdown")

	cancel()
	wg.Wait()
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.overlap) > 0 {
		t.Errorf("the job ran on two nodes at once: %v", log.overlap)
	}
	if log.running != 0 {
		t.Errorf("%d runs still running", log.running)
	}
	for i, r := range log.runs {
		if !r.ended {
			t.Errorf("run %d on %s did not end", i+1, r.node)
		}
		if r.sinceReady < handover {
			t.Errorf("run %d on %s started %v after its node became ready, before twice the lease, %v", i+1, r.node, r.sinceReady, handover)
		}
		if i == 0 {
			continue
		}
		prev := log.runs[i-1]
		if r.term <= prev.term {
			t.Errorf("run %d on %s in term %d, after a run in term %d", i+1, r.node, r.term, prev.term)
		}
		if !prev.end.Before(r.start) {
			t.Errorf("run %d on %s started before run %d on %s ended", i+1, r.node, i, prev.node)
		} else {
			t.Logf("run %d on %s started %v after run %d on %s ended", i+1, r.node, r.start.Sub(prev.end), i, prev.node)
		}
	}
	for i, nd := range c.nodes {
		want := context.Canceled
		if nd.closed {
			want = ErrShutdown
		}
		if !errors.Is(results[i], want) {
			t.Errorf("%s: RunWhileLeader returned %v, want %v", nd.id, results[i], want)
		}
	}
}

// TestRunWhileLeaderFnError: an error fn returns while the node leads is
// RunWhileLeader's; one returned after its context was cancelled is not.
// A job that returns nil runs again only in a new term.
func TestRunWhileLeaderFnError(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 1)
	ld := c.waitLeading(nil)
	boom := errors.New("boom")
	err := ld.node.RunWhileLeader(context.Background(), func(ctx context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("RunWhileLeader: %v, want fn's error", err)
	}
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ld.node.RunWhileLeader(ctx, func(ctx context.Context) error {
			calls.Add(1)
			return nil
		})
	}()
	waitFor(t, "the job's first run", func() bool { return calls.Load() == 1 })
	// Still leading in the same term: the job is not run again; give
	// RunWhileLeader time to misbehave, then end it.
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RunWhileLeader after cancel: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the job ran %d times in one term", n)
	}
}

// TestMembersHeartbeats: the leader reports a follower cut off from it as
// failing its heartbeats, with the last time it answered, and as healthy
// again once it is back; the cut-off follower's Health turns stale.
func TestMembersHeartbeats(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.waitLeading(nil)
	f := c.other(ld)
	heartbeats := func() Heartbeats {
		for _, mb := range members(t, ld).Members {
			if mb.ID == f.id {
				return mb.Heartbeats
			}
		}
		t.Fatalf("%s not a member", f.id)
		return Heartbeats{}
	}
	waitFor(t, "a connected follower replicating", func() bool {
		hb := heartbeats()
		return hb.Replicating && hb.Failures == 0
	})
	// The leader may lead before the follower heard from it.
	waitFor(t, "a connected follower's health", func() bool { return f.node.Health().Err(time.Minute) == nil })
	cut := time.Now()
	c.partition(f)
	waitFor(t, "failed heartbeats", func() bool { return heartbeats().Failures > 0 })
	hb := heartbeats()
	if hb.LastContact.IsZero() || hb.LastContact.After(hb.FailingSince) || hb.FailingSince.Before(cut) {
		t.Errorf("failing follower: %+v, cut at %v", hb, cut)
	}
	const maxContact = 300 * time.Millisecond
	waitFor(t, "the cut-off follower's health to turn stale", func() bool {
		return errors.Is(f.node.Health().Err(maxContact), ErrTooStale)
	})
	if err := ld.node.Health().Err(maxContact); err != nil {
		t.Errorf("the leader's health: %v", err)
	}
	c.heal(f)
	waitFor(t, "resumed heartbeats", func() bool { return heartbeats().Failures == 0 })
	waitFor(t, "the follower's health", func() bool { return f.node.Health().Err(maxContact) == nil })
	if hb := heartbeats(); !hb.LastContact.IsZero() || !hb.FailingSince.IsZero() {
		t.Errorf("resumed follower: %+v", hb)
	}
}

// TestHealth: a leader's and a follower's health, a stopped node's, and a
// closed one's.
func TestHealth(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ld := c.waitLeading(nil)
	_, err := put(context.Background(), ld, 1, "x")
	must(t, err)
	c.converge()
	h := ld.node.Health()
	if h.State != raft.Leader || !h.Leading || h.LeaderID != ld.id || h.LastContact != 0 || h.Err(time.Second) != nil {
		t.Errorf("leader's health: %+v", h)
	}
	if h.AppliedIndex == 0 || h.CommitIndex < h.AppliedIndex || h.AppliedIndex < h.PublishedIndex {
		t.Errorf("leader's indexes: %+v", h)
	}
	f := c.other(ld)
	h = f.node.Health()
	if h.State != raft.Follower || h.Leading || h.LeaderAddress != ld.addr || h.NeverContacted || h.Err(time.Minute) != nil {
		t.Errorf("follower's health: %+v (%v)", h, h.Err(time.Minute))
	}
	// A corrupt entry stops every node.
	proposeRaw(t, ld, []byte{EntryVersion, byte(KindChanges), 5, 1})
	waitFor(t, "the follower to stop", func() bool { return f.node.Health().Stopped != nil })
	if err := f.node.Health().Err(0); !errors.Is(err, ErrStopped) {
		t.Errorf("stopped node's health: %v, want ErrStopped", err)
	}
	c.stop(f)
	if h := f.node.Health(); !h.Closed || !errors.Is(h.Err(0), ErrShutdown) {
		t.Errorf("closed node's health: %+v", h)
	}
	if _, err := f.node.Members(); !errors.Is(err, ErrShutdown) {
		t.Errorf("Members of a closed node: %v", err)
	}
	if ok, ch := f.node.Leading(); ok {
		t.Error("a closed node leads")
	} else {
		select {
		case <-ch:
		default:
			t.Error("a closed node's Leading channel is open")
		}
	}
	if err := f.node.RunWhileLeader(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, ErrShutdown) {
		t.Errorf("RunWhileLeader on a closed node: %v", err)
	}
}

// TestShutdownTransfers: Shutdown of the leader hands the leadership over
// (its transfer succeeded: Shutdown reports nil), closes the node, and the
// others take writes; Shutdown of a follower only closes it.
func TestShutdownTransfers(t *testing.T) {
	t.Parallel()
	c := newRCluster(t, 3)
	ctx := context.Background()
	ld := c.waitLeading(nil)
	term := ld.node.Raft().CurrentTerm()
	_, err := put(ctx, ld, 1, "before")
	must(t, err)
	must(t, ld.node.Shutdown(ctx))
	if !ld.node.Health().Closed {
		t.Error("Shutdown left the node open")
	}
	c.stop(ld)
	nl := c.waitLeading(nil)
	if got := nl.node.Raft().CurrentTerm(); got <= term {
		t.Errorf("new leader in term %d, the old one led in %d", got, term)
	}
	_, err = put(ctx, nl, 2, "after")
	must(t, err)
	c.converge()
	c.checkEqual(true)
	f := c.other(nl)
	must(t, f.node.Shutdown(ctx))
	if !f.node.Health().Closed {
		t.Error("Shutdown left the follower open")
	}
}
