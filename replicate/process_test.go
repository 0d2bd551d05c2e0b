package replicate

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The process tests: three example/cluster processes on loopback TCP
// (process_harness_test.go), killed with SIGKILL while clients write
// through every node, and restarted from their data directories.

// TestProcess runs the process tests, in parallel with each other but
// not with the package's other tests: TestProcess is not parallel, so it
// runs, with its parallel subtests, before the parallel tests begin. Six
// processes and their clients beside the in-process clusters cost those
// their leaders (a 250 ms lease) on a busy two-core machine: under -race
// and a load average of 10, six of them failed in one run with the
// process tests beside them, two to four in runs without.
func TestProcess(t *testing.T) {
	t.Run("LeaderKill", func(t *testing.T) { testProcessLeaderKill(t) })
	// The same with every node's tables in a persist store (-durable): a
	// killed node starts again from its store and the log after it.
	t.Run("LeaderKillDurable", func(t *testing.T) { testProcessLeaderKill(t, "-durable") })
	t.Run("SnapshotInstallKill", testProcessSnapshotInstallKill)
}

var (
	procsLong      = flag.Bool("replicate.procs.long", false, "more kill cycles of the process tests (TestProcess)")
	procsHeartbeat = flag.Duration("replicate.procs.heartbeat", procTimeout/2, "raft's heartbeat and leader-lease timeout in TestProcess/LeaderKill")
)

// procTimeout is the raft election timeout the process tests give the
// program (-timeout; the heartbeat and leader-lease timeouts too, but in
// TestProcess/LeaderKill): the failover figure is reported in units of
// it.
//
// TestProcess/LeaderKill's heartbeat timeout is half of it
// (-replicate.procs.heartbeat): raft v1.7.2 refuses a vote while the
// voter knows a leader, so a new leader is elected only once the second
// survivor's heartbeat timer fired, between one and three heartbeat
// timeouts after the leader's last contact; with the heartbeat timeout
// at the election timeout, failover took 1.5–3.0 election timeouts
// (BENCH.md).
const procTimeout = 500 * time.Millisecond

// testProcessLeaderKill kills the leader with SIGKILL while six clients
// write new keys through all three nodes, and a watch runs on each node.
// After each kill: writes are acknowledged again (the time from the kill
// to the first acknowledged write begun after it is logged, in election
// timeouts, and must stay under 8); the two survivors converge to the
// same digest at the same applied index and hold every acknowledged
// write, each applied once, and nothing that was not written; the
// watches on the survivors delivered every acknowledged write; a
// linearizable read on each returns the last. Then the killed node
// restarts from its data directory: a read there at least at the last
// acknowledged index returns it, and the node must converge with the
// others and hold the same. A cycle kills the leader of the moment,
// so the cycles kill different nodes.
func testProcessLeaderKill(t *testing.T, flags ...string) {
	t.Parallel()
	cycles := 2
	if *procsLong {
		cycles = 12
	}
	heartbeat := *procsHeartbeat
	// -log info: for raft's events (eventTimeout, ...).
	c := startProcCluster(t, procTimeout, append([]string{"-log", "info", "-heartbeat", heartbeat.String()}, flags...)...)
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
			c.checkRead(t, w, nd, "read=linearizable")
		}

		c.start(leader)
		// Read your writes on the restarted node, as soon as it answers:
		// it waits until it published the index.
		_, last := w.lastAck()
		c.waitAPI(leader, 10*time.Second)
		c.checkRead(t, w, leader, fmt.Sprint("index=", last.index))
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

// testProcessSnapshotInstallKill makes a follower catch up by snapshot and
// kills it with SIGKILL while it installs it: the leader compacts its log
// every 64 entries keeping 32; a follower is killed, clients write until
// the leader's log begins after the follower's last index, and the
// follower restarts and is killed in one of two windows of the install
// (installWindow): while raft copies the snapshot into its store, or
// after, while the state machine restores it. A kill that misses its
// window (the test logs which) is tried again, up to 6 attempts for one
// hit of each (-replicate.procs.long: 5 of each in 30). Each restart
// begins on what the previous kill left, and at the end the follower
// restarts for good and must converge with the others, holding every
// acknowledged write once and nothing that was not written.
func testProcessSnapshotInstallKill(t *testing.T) {
	t.Parallel()
	// Kills that hit the window, and attempts at most.
	want, attempts := 1, 6
	if *procsLong {
		want, attempts = 5, 30
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

	var f *procNode
	for _, nd := range c.nodes {
		if nd != c.leader(10*procTimeout) {
			f = nd
			break
		}
	}
	// Each attempt aims at one of the windows in turn; want of each.
	windows := []installWindow{windowCopy, windowRestore}
	hits := map[installWindow]int{}
	for attempt := 0; attempt < attempts; attempt++ {
		window := windows[attempt%len(windows)]
		if hits[window] >= want {
			if hits[windowCopy] >= want && hits[windowRestore] >= want {
				break
			}
			continue
		}
		// Behind the leader's log: f is down while the leader compacts
		// past the last index f can have, the leader's last when f died.
		c.kill(f)
		leader := c.leader(10 * procTimeout)
		s, err := c.status(leader)
		must(t, err)
		compactedPast(t, c, leader, s.LogLast, 30*time.Second)
		hit, what := installKill(t, c, f, window)
		if hit {
			hits[window]++
		}
		t.Logf("attempt %d, %s window: %s", attempt, window, what)
	}
	t.Logf("snapshot install windows hit: %d in the copy, %d in the restore", hits[windowCopy], hits[windowRestore])
	for _, window := range windows {
		if hits[window] < want {
			t.Errorf("killed %s in the %s window of a snapshot install %d times in %d attempts, want %d", f.id, window, hits[window], attempts, want)
		}
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

// installWindow is a moment of a follower's install of a snapshot that
// TestProcess/SnapshotInstallKill kills it in.
type installWindow string

const (
	// windowCopy: while raft copies the snapshot the leader sends into
	// the follower's snapshot store (the store's temporary directory
	// exists, raft did not log snapshotCopied).
	windowCopy installWindow = "copy"
	// windowRestore: once the snapshot is in the store, while the state
	// machine restores it and raft removes the old log (snapshotCopied
	// logged, snapshotInstalled not).
	windowRestore installWindow = "restore"
)

// installKill starts f, which must be behind the leader's log, and kills
// it with SIGKILL in window of the snapshot install that follows. It
// returns whether the kill fell in the window, and what happened.
func installKill(t *testing.T, c *procCluster, f *procNode, window installWindow) (bool, string) {
	t.Helper()
	tmp := filepath.Join(f.dir, "snapshots", "*.tmp")
	before, _ := filepath.Glob(tmp) // left by earlier kills in the copy
	var copied, installed, copying atomic.Bool
	f.mu.Lock()
	f.onLine = func(line string) {
		switch {
		case strings.Contains(line, snapshotCopied) && !copied.Swap(true):
			if window == windowRestore {
				// Not c.kill: it waits for this reader of stderr.
				f.signalKill()
			}
		case strings.Contains(line, snapshotInstalled):
			installed.Store(true)
		}
	}
	f.mu.Unlock()
	c.start(f)
	if window == windowCopy {
		// The file snapshot store creates the snapshot's directory, with
		// a .tmp suffix until it is whole, when the install begins.
		deadline := time.Now().Add(30 * time.Second)
		for !copying.Load() && f.running() {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not begin to receive a snapshot within 30s", f.id)
			}
			if now, _ := filepath.Glob(tmp); len(now) > len(before) {
				copying.Store(true)
				f.signalKill()
			}
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not receive a snapshot within 30s", f.id)
	}
	f.mu.Lock()
	f.onLine = nil
	f.mu.Unlock()
	switch {
	case window == windowCopy && !copying.Load():
		t.Fatalf("%s exited (%s) before it received a snapshot", f.id, f.exit)
	case window == windowCopy && copied.Load():
		return false, "killed once the copy had ended"
	case window == windowCopy:
		return true, "killed while the snapshot was copied into its store"
	case !copied.Load():
		t.Fatalf("%s exited (%s) before it received a snapshot", f.id, f.exit)
	case installed.Load():
		return false, "killed once the install had ended"
	}
	return true, "killed after the copy, while the state machine restored it and raft removed the old log"
}

// compactedPast waits until the leader's log begins after index+1, so that a
// node whose log ends at index must be sent a snapshot; the writers run
// meanwhile.
func compactedPast(t *testing.T, c *procCluster, leader *procNode, index uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s, err := c.status(leader)
		if err == nil && s.LogFirst > index+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader's log did not move past index %d within %v: %+v (%v)", index, within, s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
