package replicate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Membership, leadership and health (docs/replication.md, "Membership").
//
// Raft decides who leads; this file gives the node's users what they need
// to act on it: typed membership changes that refuse bad input before raft
// sees it, a view of the members, a leadership watch that many
// subscribers share (raft has one LeaderCh, which the node consumes), a
// helper that runs a leader-only job on one node at a time, a graceful
// shutdown, and a health summary for probes.

// The errors of membership changes. Each is returned, wrapped with what
// was wrong, with nothing changed.
var (
	// ErrInvalidMembership is returned for a membership that cannot be:
	// an empty server ID or address, two servers with one ID or one
	// address, a suffrage other than raft.Voter or raft.Nonvoter, no
	// voter, a Bootstrap that leaves out the local node, or a
	// RemoveServer of the last voter.
	ErrInvalidMembership = errors.New("replicate: invalid membership")

	// ErrMemberConflict is returned by AddVoter and AddNonvoter for a
	// server whose ID is a member's with another address, whose address
	// is another member's, or (AddNonvoter) that is a voter: raft would
	// quietly change the member rather than add one.
	ErrMemberConflict = errors.New("replicate: conflicts with a member")

	// ErrNotMember is returned by RemoveServer and TransferLeadership for
	// a server that is not a member (TransferLeadership: not a voter, or
	// the leader itself).
	ErrNotMember = errors.New("replicate: not a member")

	// ErrNoTransferTarget is returned by TransferLeadership on a leader
	// that is the only voter.
	ErrNoTransferTarget = errors.New("replicate: no other voter to lead")

	// ErrAlreadyBootstrapped is returned by Bootstrap on a node that has
	// state already (raft.ErrCantBootstrap): a restarted node, or one
	// that joined a cluster. It is safe to ignore on restart.
	ErrAlreadyBootstrapped = errors.New("replicate: already bootstrapped")
)

// membership is the node's state for this file: the leadership watch and
// what raft's observations tell a leader of its followers. It has locks of
// its own, leaves: none is held while another lock is taken.
type membership struct {
	localID   raft.ServerID
	localAddr raft.ServerAddress
	// commitIndex is raft's CommitIndex, which observe reads (an atomic
	// load: safe in raft's goroutines).
	commitIndex func() uint64
	// handover is how long RunWhileLeader waits after the node became
	// ready as leader: twice raft's LeaderLeaseTimeout, which bounds how
	// long a deposed leader goes on believing it leads.
	handover time.Duration

	mu sync.Mutex
	// leading: the node leads and its barrier of term applied
	// (journalState.ready), since then; changed is closed and replaced
	// when that changes, and closed for good once the node closes.
	leading bool
	term    uint64
	since   time.Time
	changed chan struct{}
	closed  bool

	peerMu sync.Mutex
	// leaderSince is when raft last made this node leader (its RaftState
	// observation); peers is what this node heard of each follower's
	// heartbeats since.
	leaderSince time.Time
	peers       map[raft.ServerID]*peerState
}

type peerState struct {
	replicating  bool
	failures     uint64
	failingSince time.Time
	// failingCommit is the leader's commit index when the first of the
	// failures was seen.
	failingCommit uint64
	lastContact   time.Time
}

// init sets m up for the node of cfg, whose raft is r: an observer of r
// whose filter records what it is told and passes nothing on, so that no
// channel, and no goroutine to drain one, is needed.
func (m *membership) init(cfg Config, r *raft.Raft) {
	m.localID = cfg.Raft.LocalID
	if cfg.Transport != nil {
		m.localAddr = cfg.Transport.LocalAddr()
	}
	m.commitIndex = r.CommitIndex
	m.handover = 2 * cfg.Raft.LeaderLeaseTimeout
	m.changed = make(chan struct{})
	m.peers = make(map[raft.ServerID]*peerState)
	r.RegisterObserver(raft.NewObserver(nil, false, m.observe))
}

// observe records an observation of raft's: it runs in raft's goroutines
// (the main loop, the heartbeat goroutines), so it only takes peerMu.
func (m *membership) observe(o *raft.Observation) bool {
	now := time.Now()
	m.peerMu.Lock()
	defer m.peerMu.Unlock()
	switch d := o.Data.(type) {
	case raft.RaftState:
		if d == raft.Leader {
			// A new leadership: what the last one heard is void.
			m.leaderSince = now
			clear(m.peers)
		}
	case raft.PeerObservation:
		if d.Removed {
			delete(m.peers, d.Peer.ID)
		} else {
			m.peers[d.Peer.ID] = &peerState{replicating: true}
		}
	case raft.FailedHeartbeatObservation:
		// A heartbeat goroutine of an earlier leadership may report a
		// failure late; its last contact predates this leadership (a new
		// replication starts with its last contact at its start).
		p := m.peers[d.PeerID]
		if p == nil || d.LastContact.Before(m.leaderSince) {
			break
		}
		if p.failures == 0 {
			p.failingSince, p.failingCommit = now, m.commitIndex()
		}
		p.failures++
		p.lastContact = d.LastContact
	case raft.ResumedHeartbeatObservation:
		if p := m.peers[d.PeerID]; p != nil {
			p.failures, p.failingSince, p.failingCommit, p.lastContact = 0, time.Time{}, 0, time.Time{}
		}
	}
	return false
}

// set publishes that the node leads (ready) in term, or not: a change
// closes the watch channel. The node's leadership goroutine calls it.
func (m *membership) set(leading bool, term uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || (m.leading == leading && (!leading || m.term == term)) {
		return
	}
	m.leading, m.term = leading, term
	if leading {
		m.since = time.Now()
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// close publishes that the node closed: not leading, and a watch channel
// that stays closed.
func (m *membership) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed, m.leading = true, false
	close(m.changed)
}

// state returns the leadership as published.
func (m *membership) state() (leading bool, term uint64, since time.Time, changed <-chan struct{}, closed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leading, m.term, m.since, m.changed, m.closed
}

// WaitLeader waits until the node knows a leader (itself or another
// member) and returns its address and ID; or ctx's error, or ErrShutdown
// once the node is closed. A program that writes as soon as its node
// started waits for the cluster's first election with it: a Write before
// any leader is known fails with a *NotLeaderError once Config's
// ForwardHold is over.
func (n *Node) WaitLeader(ctx context.Context) (raft.ServerAddress, raft.ServerID, error) {
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if n.closed.Load() {
			return "", "", ErrShutdown
		}
		if addr, id := n.raft.LeaderWithID(); addr != "" {
			return addr, id, nil
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
}

// Leading reports whether the node leads and is ready to take writes in
// its term (the barrier of the term applied: every entry of earlier terms
// is applied), and returns a channel that is closed when that changes:
// when the node stops leading, or leads in another term. Any number of
// callers may watch: raft's LeaderCh, which the node consumes, is not
// taken from anyone.
//
// The watch follows raft's leadership notifications, so it trails raft by
// the moment the node takes to learn of a change, and a deposed leader
// that does not know it yet still reports that it leads (RunWhileLeader
// says for how long). After Close, Leading reports false with a closed
// channel.
func (n *Node) Leading() (bool, <-chan struct{}) {
	leading, _, _, changed, _ := n.lead.state()
	return leading, changed
}

type leaderTermKey struct{}

// LeaderTerm returns the raft term of the leadership that ctx, a context
// RunWhileLeader gave its function, belongs to. Terms only grow: a job
// that acts outside the database can hand it to what it acts on as a
// fencing token, refusing a smaller term than it has seen.
func LeaderTerm(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(leaderTermKey{}).(uint64)
	return t, ok
}

// RunWhileLeader runs fn each time the node becomes the leader, with a
// context that is cancelled when the node stops leading (or leads in
// another term), when ctx is done, or when the node closes; fn must
// return soon after. It runs fn at most once per term, and never two at
// once on this node. It returns ctx's error when ctx is done, ErrShutdown
// once the node closes, and fn's error when fn fails while the node still
// leads (an error fn returns after its context was cancelled is ignored).
//
// Run on every node, it runs a leader-only job on one node at a time,
// within the bound raft allows. Raft cannot promise that two nodes never
// believe they lead at once: a deposed leader cut off from the others
// steps down only once it has not heard from a quorum for
// LeaderLeaseTimeout (raft checks at that deadline, then every 10 ms).
// Every quorum shares a voter with the quorum that elected the new
// leader, and that voter stopped answering the old leader as its follower
// when it voted, before the new leader was elected: so the old leader
// steps down at most LeaderLeaseTimeout and 10 ms after the new one was
// elected. RunWhileLeader starts fn on a new leader only twice
// LeaderLeaseTimeout after the node became ready as leader: the old
// leader's fn is cancelled at least LeaderLeaseTimeout less 10 ms before,
// and has that long to return. The promise needs that every node has the
// same LeaderLeaseTimeout, that fn returns within that time once
// cancelled, and that the old leader's process runs: one stalled
// (paused, swapping) past its lease check does not step down in time, and
// no lease can notice. Writes through the node need no such care: a
// deposed leader's commits are refused or never commit. For effects
// outside the database, LeaderTerm gives a fencing token.
func (n *Node) RunWhileLeader(ctx context.Context, fn func(ctx context.Context) error) error {
	for {
		leading, term, since, changed, closed := n.lead.state()
		if closed {
			return ErrShutdown
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !leading {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if wait := time.Until(since.Add(n.lead.handover)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-changed:
			case <-ctx.Done():
			}
			t.Stop()
			continue // look again: the leadership may have changed
		}
		// raft's own view, in case the node has not learned of a change
		// yet.
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if err := runLeading(ctx, term, changed, fn); err != nil {
			return err
		}
		// fn is done for this term: wait for the next.
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}

// runLeading runs fn with a context cancelled when changed closes or ctx
// ends, and returns fn's error unless the context was cancelled.
func runLeading(ctx context.Context, term uint64, changed <-chan struct{}, fn func(context.Context) error) error {
	jobCtx, cancel := context.WithCancel(context.WithValue(ctx, leaderTermKey{}, term))
	defer cancel()
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-changed:
			cancel()
		case <-done:
		}
	}()
	// Deferred, so that the goroutine ends if fn panics too.
	defer func() {
		close(done)
		<-watched
	}()
	err := fn(jobCtx)
	if jobCtx.Err() != nil {
		return nil
	}
	return err
}

// Member is one server of the cluster's configuration, as Members sees it.
type Member struct {
	ID       raft.ServerID
	Address  raft.ServerAddress
	Suffrage raft.ServerSuffrage // raft.Voter or raft.Nonvoter
	// Leader reports that the node Members asked takes this member for
	// the leader (raft's LeaderWithID); Self that it is that node.
	Leader, Self bool
	// Heartbeats is what the node knows of the member's heartbeats when
	// it leads; the zero value otherwise, and for itself.
	Heartbeats Heartbeats
}

// Heartbeats is what a leader knows of a follower's replication. raft
// v1.7.2 keeps a follower's progress (its next and matched indexes, its
// last contact) to itself: what it tells is a PeerObservation when it
// starts or stops replicating to a server, a FailedHeartbeatObservation
// for each heartbeat that fails (with the last time the follower
// answered), and a ResumedHeartbeatObservation when one succeeds after
// failures. So a leader knows whether a follower answers its heartbeats,
// not how far its log is: a follower that answers and lags shows as
// healthy. Of a follower whose heartbeats fail it knows what it committed
// since (FailingCommitIndex): entries the follower cannot have if it
// heard nothing since, as in a partition.
type Heartbeats struct {
	// Replicating reports that raft replicates to the member from this
	// node: it leads and the member is in its configuration.
	Replicating bool
	// Failures counts the heartbeats that failed in a row, 0 once one
	// succeeds; FailingSince is when the first of them failed, and
	// LastContact the last time the member answered before (raft's).
	Failures     uint64
	FailingSince time.Time
	LastContact  time.Time
	// FailingCommitIndex is the leader's commit index when the first of
	// the failures was seen (0 while none fails). A member that heard
	// nothing from the leader since knows of no commit beyond it, so the
	// leader's commit index less it is a lower bound of how far a cut-off
	// member trails. (A heartbeat may fail while replication still goes
	// through, on a link that drops some requests: such a member may be
	// further on.)
	FailingCommitIndex uint64
}

// Membership is the cluster as one node sees it, with the node's state.
type Membership struct {
	// Members are the servers of the latest configuration (which may
	// not be committed yet), in its order; ConfigurationIndex is the
	// index of its entry.
	Members            []Member
	ConfigurationIndex uint64
	// Self is the node's ID; State its raft state and Term its term.
	Self  raft.ServerID
	State raft.RaftState
	Term  uint64
	// Leading reports that the node leads and is ready (Leading).
	Leading bool
	// LeaderID and LeaderAddress are the leader's as the node knows it
	// ("" when it knows none).
	LeaderID      raft.ServerID
	LeaderAddress raft.ServerAddress
	// CommitIndex and LastIndex are raft's; AppliedIndex and
	// PublishedIndex the node's (Node.AppliedIndex, PublishedIndex).
	CommitIndex, LastIndex, AppliedIndex, PublishedIndex uint64
}

// Members returns the cluster's latest configuration as this node knows
// it, and the node's state. It fails with ErrShutdown once the node
// closed.
func (n *Node) Members() (Membership, error) {
	if n.closed.Load() {
		return Membership{}, ErrShutdown
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return Membership{}, n.membershipErr(err)
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	leading, _ := n.Leading()
	m := Membership{
		ConfigurationIndex: f.Index(),
		Self:               n.lead.localID,
		State:              n.raft.State(),
		Term:               n.raft.CurrentTerm(),
		Leading:            leading,
		LeaderID:           leaderID,
		LeaderAddress:      leaderAddr,
		CommitIndex:        n.raft.CommitIndex(),
		LastIndex:          n.raft.LastIndex(),
		AppliedIndex:       n.AppliedIndex(),
		PublishedIndex:     n.PublishedIndex(),
	}
	isLeader := m.State == raft.Leader
	n.lead.peerMu.Lock()
	for _, s := range f.Configuration().Servers {
		mb := Member{ID: s.ID, Address: s.Address, Suffrage: s.Suffrage,
			Leader: s.ID == leaderID && leaderID != "", Self: s.ID == m.Self}
		if p := n.lead.peers[s.ID]; isLeader && !mb.Self && p != nil {
			mb.Heartbeats = Heartbeats{Replicating: p.replicating, Failures: p.failures,
				FailingSince: p.failingSince, LastContact: p.lastContact, FailingCommitIndex: p.failingCommit}
		}
		m.Members = append(m.Members, mb)
	}
	n.lead.peerMu.Unlock()
	return m, nil
}

// checkServer refuses a server whose ID or address is empty.
func checkServer(id raft.ServerID, addr raft.ServerAddress) error {
	if id == "" || addr == "" {
		return fmt.Errorf("%w: server %q at %q: empty ID or address", ErrInvalidMembership, id, addr)
	}
	return nil
}

// Bootstrap makes servers the first configuration of a new cluster. Every
// node that starts the cluster may call it with the same servers (raft
// keeps one), or one node only; the others then join as they are
// contacted. servers must include this node, at its transport's address.
// It fails with ErrInvalidMembership (see there), or
// ErrAlreadyBootstrapped for a node that has state already.
func (n *Node) Bootstrap(servers []raft.Server) error {
	if n.closed.Load() {
		return ErrShutdown
	}
	ids := make(map[raft.ServerID]bool, len(servers))
	addrs := make(map[raft.ServerAddress]bool, len(servers))
	voters, self := 0, false
	for _, s := range servers {
		if err := checkServer(s.ID, s.Address); err != nil {
			return err
		}
		if ids[s.ID] || addrs[s.Address] {
			return fmt.Errorf("%w: server %q at %q: ID or address given twice", ErrInvalidMembership, s.ID, s.Address)
		}
		ids[s.ID], addrs[s.Address] = true, true
		switch s.Suffrage {
		case raft.Voter:
			voters++
		case raft.Nonvoter:
		default:
			return fmt.Errorf("%w: server %q: suffrage %v", ErrInvalidMembership, s.ID, s.Suffrage)
		}
		if s.ID == n.lead.localID {
			if s.Address != n.lead.localAddr {
				return fmt.Errorf("%w: this node %q is at %q, not %q", ErrInvalidMembership, s.ID, n.lead.localAddr, s.Address)
			}
			self = true
		}
	}
	if voters == 0 {
		return fmt.Errorf("%w: no voter", ErrInvalidMembership)
	}
	if !self {
		return fmt.Errorf("%w: this node %q is not among the servers", ErrInvalidMembership, n.lead.localID)
	}
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("%w: %w", ErrAlreadyBootstrapped, err)
	}
	return n.membershipErr(err)
}

// BootstrapSelf bootstraps a cluster of this node alone, a voter: others
// join it with AddVoter and AddNonvoter.
func (n *Node) BootstrapSelf() error {
	return n.Bootstrap([]raft.Server{{ID: n.lead.localID, Address: n.lead.localAddr, Suffrage: raft.Voter}})
}

// AddVoter adds the server id at addr as a voter, or makes a non-voter
// with that ID and address one; a voter already is left as it is. It must
// be called on the leader, and returns once the new configuration is
// committed; raft then brings the server's log up to date.
//
// It fails with: ErrInvalidMembership (an empty ID or address);
// ErrMemberConflict (the ID is a member's at another address, or the
// address another member's); a *NotLeaderError on a node that does not
// lead, naming the leader; an *AmbiguousError if the leader lost the lead
// after it proposed the change (it may or may not be committed: look with
// Members); ErrShutdown. ctx bounds the wait for raft to take the change:
// once it did, the call returns when the change committed or the
// leadership was lost (raft's lease bounds that).
func (n *Node) AddVoter(ctx context.Context, id raft.ServerID, addr raft.ServerAddress) error {
	if err := checkServer(id, addr); err != nil {
		return err
	}
	return n.changeMembership(ctx, func(c raft.Configuration) (bool, error) {
		s, err := findServer(c, id, addr)
		if err != nil || s == nil {
			return false, err
		}
		return s.Suffrage == raft.Voter, nil
	}, func(prev uint64, timeout time.Duration) raft.IndexFuture {
		return n.raft.AddVoter(id, addr, prev, timeout)
	})
}

// AddNonvoter adds the server id at addr as a non-voter: a read replica,
// which raft replicates to but which neither votes nor counts for a
// quorum; a non-voter already is left as it is. It fails as AddVoter
// does, and with ErrMemberConflict for a voter (raft would leave it a
// voter).
func (n *Node) AddNonvoter(ctx context.Context, id raft.ServerID, addr raft.ServerAddress) error {
	if err := checkServer(id, addr); err != nil {
		return err
	}
	return n.changeMembership(ctx, func(c raft.Configuration) (bool, error) {
		s, err := findServer(c, id, addr)
		if err != nil || s == nil {
			return false, err
		}
		if s.Suffrage != raft.Nonvoter {
			return false, fmt.Errorf("%w: %q is a voter", ErrMemberConflict, id)
		}
		return true, nil
	}, func(prev uint64, timeout time.Duration) raft.IndexFuture {
		return n.raft.AddNonvoter(id, addr, prev, timeout)
	})
}

// RemoveServer removes the server id from the cluster. It must be called
// on the leader; removing the leader itself is allowed: it steps down once
// the change commits. It fails as AddVoter does, with ErrNotMember for a
// server that is not a member, and with ErrInvalidMembership for the last
// voter.
func (n *Node) RemoveServer(ctx context.Context, id raft.ServerID) error {
	return n.changeMembership(ctx, func(c raft.Configuration) (bool, error) {
		found, voters := false, 0
		for _, s := range c.Servers {
			if s.ID == id {
				found = true
			} else if s.Suffrage == raft.Voter {
				voters++
			}
		}
		if !found {
			return false, fmt.Errorf("%w: %q", ErrNotMember, id)
		}
		if voters == 0 {
			return false, fmt.Errorf("%w: %q is the last voter", ErrInvalidMembership, id)
		}
		return false, nil
	}, func(prev uint64, timeout time.Duration) raft.IndexFuture {
		return n.raft.RemoveServer(id, prev, timeout)
	})
}

// findServer returns the member with id, nil if none, or an
// ErrMemberConflict if id or addr is a member's with the other not.
func findServer(c raft.Configuration, id raft.ServerID, addr raft.ServerAddress) (*raft.Server, error) {
	var found *raft.Server
	for i, s := range c.Servers {
		switch {
		case s.ID == id && s.Address != addr:
			return nil, fmt.Errorf("%w: %q is a member at %q", ErrMemberConflict, id, s.Address)
		case s.ID != id && s.Address == addr:
			return nil, fmt.Errorf("%w: %q is member %q's address", ErrMemberConflict, addr, s.ID)
		case s.ID == id:
			found = &c.Servers[i]
		}
	}
	return found, nil
}

// changeMembership checks a configuration change against the latest
// configuration (check reports an error, or that there is nothing to do)
// and proposes it (apply) conditional on that configuration's index, so
// that the check and the change are one: a change that raced with another
// is checked again.
func (n *Node) changeMembership(ctx context.Context, check func(raft.Configuration) (bool, error), apply func(prev uint64, timeout time.Duration) raft.IndexFuture) error {
	for {
		f, err := n.leaderConfiguration(ctx)
		if err != nil {
			return err
		}
		done, err := check(f.Configuration())
		if err != nil || done {
			return err
		}
		var timeout time.Duration
		if d, ok := ctx.Deadline(); ok {
			if timeout = time.Until(d); timeout <= 0 {
				return context.DeadlineExceeded
			}
		}
		err = apply(f.Index(), timeout).Error()
		// raft has no error value for it (configuration.go,
		// nextConfiguration): only its text.
		if err != nil && strings.HasPrefix(err.Error(), "configuration changed since") {
			continue
		}
		return n.membershipErr(err)
	}
}

// leaderConfiguration returns the latest configuration, on a node that is
// open and leads, within ctx: what every change of the membership starts
// from.
func (n *Node) leaderConfiguration(ctx context.Context) (raft.ConfigurationFuture, error) {
	if n.closed.Load() {
		return nil, ErrShutdown
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.raft.State() != raft.Leader {
		return nil, n.notLeader(nil)
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, n.membershipErr(err)
	}
	return f, nil
}

// TransferLeadership hands the leadership from this node to the voter id,
// or to the most up-to-date voter if id is "". It returns once this node
// stepped down (the new leader is elected next; Leading's channel closes
// here); raft refuses new commits while it transfers (they fail with a
// *NotLeaderError). It fails with a *NotLeaderError on a node that does
// not lead, ErrNotMember if id is not another voter, ErrNoTransferTarget
// if there is no other voter, or raft's error if the transfer did not
// happen within its election timeout (this node then still leads).
func (n *Node) TransferLeadership(ctx context.Context, id raft.ServerID) error {
	f, err := n.leaderConfiguration(ctx)
	if err != nil {
		return err
	}
	var target *raft.Server
	others := 0
	servers := f.Configuration().Servers
	for i, s := range servers {
		if s.ID == n.lead.localID || s.Suffrage != raft.Voter {
			continue
		}
		others++
		if s.ID == id {
			target = &servers[i]
		}
	}
	switch {
	case others == 0:
		return ErrNoTransferTarget
	case id != "" && target == nil:
		return fmt.Errorf("%w: %q is not another voter", ErrNotMember, id)
	}
	var tf raft.Future
	if target != nil {
		tf = n.raft.LeadershipTransferToServer(target.ID, target.Address)
	} else {
		tf = n.raft.LeadershipTransfer()
	}
	return n.membershipErr(tf.Error())
}

// Shutdown closes the node gracefully: if it leads, it first waits for
// the entries it proposed to apply (a barrier) and transfers the
// leadership to the most up-to-date voter, so that the cluster does not
// wait an election timeout for a new leader and its leader-only jobs
// (RunWhileLeader) move at once; then it closes the node (Close). Commits
// proposed between the barrier and the transfer may end ambiguous, as on
// any loss of leadership. The node is closed in every case; the error
// reports a barrier or transfer that failed, and Close's.
func (n *Node) Shutdown(ctx context.Context) error {
	var herr error
	if !n.closed.Load() && n.raft.State() == raft.Leader {
		var timeout time.Duration
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), time.Nanosecond)
		}
		if err := n.raft.Barrier(timeout).Error(); err != nil {
			herr = n.membershipErr(err)
		} else if err := n.TransferLeadership(ctx, ""); !errors.Is(err, ErrNoTransferTarget) {
			herr = err
		}
	}
	return errors.Join(herr, n.Close())
}

// membershipErr maps raft's errors to the node's: not leading, a change
// whose outcome is unknown, shutdown.
func (n *Node) membershipErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader(err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return &AmbiguousError{Err: err}
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrShutdown, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}
