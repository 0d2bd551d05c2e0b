package replicate

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The process tests: three example/cluster processes on loopback TCP
// (process_harness_test.go), killed with SIGKILL while clients write
// through every node, and restarted from their data directories.

var (
	procsLong      = flag.Bool("replicate.procs.long", false, "more kill cycles of the process tests (TestProcess...)")
	procsHeartbeat = flag.Duration("replicate.procs.heartbeat", procTimeout/2, "raft's heartbeat and leader-lease timeout in TestProcessLeaderKill")
)

// procTimeout is the raft election timeout the process tests give the
// program (-timeout; the heartbeat and leader-lease timeouts too, but in
// TestProcessLeaderKill): the failover figure is reported in units of
// it.
//
// TestProcessLeaderKill's heartbeat timeout is half of it
// (-replicate.procs.heartbeat): raft v1.7.2 refuses a vote while the
// voter knows a leader, so a new leader is elected only once the second
// survivor's heartbeat timer fired, between one and three heartbeat
// timeouts after the leader's last contact; with the heartbeat timeout
// at the election timeout, failover took 1.8–3.0 election timeouts
// (BENCH.md).
const procTimeout = 500 * time.Millisecond

// TestProcessLeaderKill kills the leader with SIGKILL while six clients
// write new keys through all three nodes, and a watch runs on each node.
// After each kill: writes are acknowledged again (the time from the kill
// to the first acknowledged write begun after it is logged, in election
// timeouts, and must stay under 8); the two survivors converge to the
// same digest at the same applied index and hold every acknowledged
// write, each applied once, and nothing that was not written; the
// watches on the survivors delivered every acknowledged write. Then the
// killed node restarts from its data directory and must converge with
// the others and hold the same. A cycle kills the leader of the moment,
// so the cycles kill different nodes.
func TestProcessLeaderKill(t *testing.T) {
	t.Parallel()
	cycles := 2
	if *procsLong {
		cycles = 12
	}
	heartbeat := *procsHeartbeat
	// -log info: for raft's events (eventTimeout, ...).
	c := startProcCluster(t, procTimeout, "-log", "info", "-heartbeat", heartbeat.String())
	t.Logf("raft timeouts: election %v, heartbeat and leader lease %v", procTimeout, heartbeat)
	var failovers []float64
	for cycle := range cycles {
		prefix := fmt.Sprintf("k%d", cycle)
		var watches []*procWatch
		for _, nd := range c.nodes {
			watches = append(watches, c.watch(nd))
		}
		w := c.startWriters(prefix, 6, 16)
		waitAcks(t, w, 100, 10*time.Second)
		leader := c.leader(10 * procTimeout)
		killed := time.Now()
		c.kill(leader)
		ackedAtKill := w.acks()

		var first time.Time
		for deadline := killed.Add(20 * procTimeout); ; time.Sleep(10 * time.Millisecond) {
			var ok bool
			if first, ok = w.firstAckAfter(killed); ok {
				break
			}
			if time.Now().After(deadline) {
				w.halt()
				t.Fatalf("cycle %d: no write acknowledged within %v of killing leader %s (%d failed, last: %v)",
					cycle, 20*procTimeout, leader.id, w.failed, w.lastErr)
			}
		}
		failover := first.Sub(killed)
		ratio := float64(failover) / float64(procTimeout)
		failovers = append(failovers, ratio)
		time.Sleep(500 * time.Millisecond) // writes go on under the new leader
		w.halt()
		var survivors []*procNode
		for _, nd := range c.nodes {
			if nd != leader {
				survivors = append(survivors, nd)
			}
		}
		t.Logf("cycle %d: killed leader %s; first write acknowledged %v later (%.2f× the %v election timeout; %s); "+
			"%d writes acknowledged (%d before the kill), %d failed",
			cycle, leader.id, failover.Round(time.Millisecond), ratio, procTimeout, electionSteps(survivors, killed),
			w.acks(), ackedAtKill, w.failed)
		if ratio > 8 {
			t.Errorf("cycle %d: failover took %.1f election timeouts", cycle, ratio)
		}

		st := c.waitConverged(survivors, 20*time.Second)
		for i, nd := range c.nodes {
			if nd == leader {
				continue
			}
			w.check(t, nd.id, c.list(nd), prefix)
			watches[i].waitDelivered(t, w, 10*time.Second)
		}

		c.start(leader)
		all := c.waitConverged(c.nodes, 30*time.Second)
		if all.Applied < st.Applied {
			t.Errorf("cycle %d: applied index went back from %d to %d", cycle, st.Applied, all.Applied)
		}
		w.check(t, leader.id, c.list(leader), prefix)
		t.Logf("cycle %d: %s restarted and converged: %d objects at index %d on every node", cycle, leader.id, all.Objects, all.Applied)
		if t.Failed() {
			return
		}
	}
	slices.Sort(failovers)
	t.Logf("failover in election timeouts over %d kills: min %.2f, median %.2f, max %.2f (goal: at most 2)",
		len(failovers), failovers[0], failovers[len(failovers)/2], failovers[len(failovers)-1])
}

// electionSteps says when, after the kill, the survivors' election timers
// fired (raft's eventTimeout lines) and one of them became leader, and
// how many votes were refused because the voter still knew the dead
// leader (raft v1.7.2 refuses a vote, and a pre-vote, while it knows a
// leader, until its own heartbeat timeout fires).
func electionSteps(survivors []*procNode, killed time.Time) string {
	var parts []string
	for _, nd := range survivors {
		if at, ok := nd.firstEvent(eventTimeout, killed); ok {
			parts = append(parts, fmt.Sprintf("%s's timer fired at +%v", nd.id, at.Sub(killed).Round(time.Millisecond)))
		}
	}
	refused := 0
	for _, nd := range survivors {
		if at, ok := nd.firstEvent(eventLeader, killed); ok {
			parts = append(parts, fmt.Sprintf("%s led at +%v", nd.id, at.Sub(killed).Round(time.Millisecond)))
		}
		refused += nd.countEvents(eventRefusal, killed)
	}
	return strings.Join(append(parts, fmt.Sprintf("%d votes refused", refused)), ", ")
}

// waitAcks waits until w has n acknowledged writes.
func waitAcks(t *testing.T, w *procWriters, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for w.acks() < n {
		if time.Now().After(deadline) {
			w.halt()
			t.Fatalf("%d writes acknowledged within %v, want %d (%d failed, last: %v)", w.acks(), within, n, w.failed, w.lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The lines of raft's log (at info level) around a follower's install of
// a snapshot: the snapshot is in the follower's snapshot store, then the
// state machine restored it and raft removed the old log.
const (
	snapshotCopied    = "copied to local snapshot"
	snapshotInstalled = "Installed remote snapshot"
)

// TestProcessSnapshotInstallKill makes a follower catch up by snapshot and
// kills it with SIGKILL while it installs it: the leader compacts its log
// every 64 entries keeping 32; a follower is killed, clients write until
// the leader's log begins after the follower's last index, and the
// follower restarts. When raft logs that the snapshot is in its store,
// the test kills it, before the state machine's restore and the removal
// of the old log end (the window is hit if raft did not log the install's
// end; a miss falls behind again and retries, up to 5 times; the test
// logs which; -replicate.procs.long wants 5 hits in 20). Then it
// restarts on what the kill left and must converge with the others,
// holding every acknowledged write once.
func TestProcessSnapshotInstallKill(t *testing.T) {
	t.Parallel()
	// Kills that hit the window, and attempts at most.
	want, attempts := 1, 5
	if *procsLong {
		want, attempts = 5, 20
	}
	c := startProcCluster(t, procTimeout, "-log", "info",
		"-snapshot-threshold", "64", "-trailing-logs", "32", "-snapshot-interval", "100ms")
	// Values of 2 KiB: the snapshot (every object) is a MB or more, so
	// that its restore takes a while.
	const prefix = "s"
	w := c.startWriters(prefix, 8, 2048)
	defer func() {
		select {
		case <-w.stop:
		default:
			w.halt()
		}
	}()
	waitAcks(t, w, 600, 30*time.Second)

	leader := c.leader(10 * procTimeout)
	var f *procNode
	for _, nd := range c.nodes {
		if nd != leader {
			f = nd
			break
		}
	}
	hits, misses := 0, 0
	for attempt := 0; attempt < attempts && hits < want; attempt++ {
		// Behind the leader's log: f is down while the leader compacts
		// past the last index f can have.
		s, err := c.status(leader)
		must(t, err)
		c.kill(f)
		behind(t, c, leader, s.Applied+1, 30*time.Second)

		var copied, installed atomic.Bool
		f.mu.Lock()
		f.onLine = func(line string) {
			switch {
			case strings.Contains(line, snapshotCopied) && !copied.Swap(true):
				// In the restore, or the removal of the old log. Not
				// c.kill: it waits for this reader of stderr.
				f.signalKill()
			case strings.Contains(line, snapshotInstalled):
				installed.Store(true)
			}
		}
		f.mu.Unlock()
		c.start(f)
		select {
		case <-f.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("attempt %d: %s did not receive a snapshot within 30s", attempt, f.id)
		}
		f.mu.Lock()
		f.onLine = nil
		f.mu.Unlock()
		switch {
		case !copied.Load():
			t.Fatalf("attempt %d: %s exited (%s) before it received a snapshot", attempt, f.id, f.exit)
		case installed.Load():
			misses++
			t.Logf("attempt %d: the kill came after %s installed the snapshot: again", attempt, f.id)
		default:
			hits++
			t.Logf("attempt %d: %s killed while it installed the snapshot (received, not yet restored and its old log removed)", attempt, f.id)
		}
	}
	t.Logf("snapshot install window: %d hits, %d misses", hits, misses)
	if hits < want {
		t.Errorf("killed %s during a snapshot install %d times in %d attempts, want %d", f.id, hits, attempts, want)
	}

	c.start(f)
	time.Sleep(time.Second) // the writes go on while f catches up
	w.halt()
	st := c.waitConverged(c.nodes, 30*time.Second)
	for _, nd := range c.nodes {
		w.check(t, nd.id, c.list(nd), prefix)
	}
	t.Logf("%d writes acknowledged, %d failed; %d objects at index %d on every node", w.acks(), w.failed, st.Objects, st.Applied)
}

// behind waits until the leader's log begins after index, writing
// meanwhile (the writers run).
func behind(t *testing.T, c *procCluster, leader *procNode, index uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s, err := c.status(leader)
		if err == nil && s.LogFirst > index {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's log did not move past index %d within %v: %+v (%v)", index, within, s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
