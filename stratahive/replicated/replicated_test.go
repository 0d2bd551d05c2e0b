package replicated_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/replicate"
)

// insert writes h to m's hosts table through m's node (forwarded to the
// leader from a follower), and returns the index it committed at.
func (m *member) insert(t *testing.T, h *Host) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	index, err := m.node().Write(ctx, []strata.TableMeta{m.hosts}, func(txn strata.WriteTxn) error {
		_, _, err := m.hosts.Insert(txn, h)
		return err
	})
	must(t, err)
	return index
}

// TestWritesReplicate: three hives form a cluster; a write on the leader
// and one through a follower reach every hive's table, and a plain commit
// on a follower is refused with nothing written.
func TestWritesReplicate(t *testing.T) {
	c := newCluster(t, 3)
	ld := c.leader()
	var fl *member
	for _, m := range c.members {
		if m != ld {
			fl = m
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The follower writes once it has the leader's write: a write on a
	// state behind the leader's is a conflict (replicate.ErrConflict).
	must(t, fl.node().WaitApplied(ctx, ld.insert(t, &Host{Name: "a1", Zone: "eu"})))
	index := fl.insert(t, &Host{Name: "b1", Zone: "us"})
	if index == 0 {
		t.Fatal("the follower's write committed at index 0")
	}
	for _, m := range c.members {
		must(t, m.node().WaitApplied(ctx, index))
		waitFor(t, m.id+" holding both hosts", func() bool {
			return slices.Equal(m.hostNames(), []string{"a1@eu", "b1@us"})
		})
	}

	// A plain commit on a follower: refused, naming the leader.
	wtxn := fl.db.WriteTxn(fl.hosts)
	_, _, err := fl.hosts.Insert(wtxn, &Host{Name: "c1"})
	must(t, err)
	_, err = wtxn.Commit()
	var nl *replicate.NotLeaderError
	if !errors.As(err, &nl) || !errors.Is(err, replicate.ErrNotLeader) {
		t.Fatalf("commit on follower %s: %v, want a *replicate.NotLeaderError", fl.id, err)
	}
	if got := fl.hostNames(); !slices.Equal(got, []string{"a1@eu", "b1@us"}) {
		t.Fatalf("after a refused commit, %s holds %v", fl.id, got)
	}
}

// TestLeaderJob: the leader-only job runs on exactly one hive, the
// leader's; after a leadership transfer it runs on the new leader only,
// and after the leader's hive stops (a graceful shutdown, which hands the
// leadership over), on the next; never on two at once.
func TestLeaderJob(t *testing.T) {
	c := newCluster(t, 3)

	// waitRunsOn waits until the job runs on exactly one live member,
	// other than not, and that member leads; it returns it.
	waitRunsOn := func(not *member) *member {
		t.Helper()
		var on *member
		waitFor(t, "the leader-only job on one leader", func() bool {
			running, _, _, _ := c.jobs.state()
			if len(running) != 1 {
				return false
			}
			for _, m := range c.live() {
				if m.id == running[0] && m != not {
					leading, _ := m.node().Leading()
					on = m
					return leading
				}
			}
			return false
		})
		return on
	}
	first := waitRunsOn(nil)
	if ld := c.leader(); ld != first {
		t.Fatalf("the job runs on %s, the leader is %s", first.id, ld.id)
	}
	if h := first.healthOf("job-leader-work"); !strings.HasPrefix(h, "level=OK message=leading in term ") {
		t.Errorf("the leader's job health: %q", h)
	}
	for _, m := range c.members {
		if m != first {
			if h := m.healthOf("job-leader-work"); h != "level=OK message=standby" {
				t.Errorf("%s's job health: %q, want standby", m.id, h)
			}
		}
	}
	// It stays there: a while later it still ran only once.
	time.Sleep(300 * time.Millisecond)
	if running, runs, _, _ := c.jobs.state(); len(runs) != 1 || !slices.Equal(running, []string{first.id}) {
		t.Fatalf("with a stable leader: running %v, runs %v", running, runs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(t, first.node().TransferLeadership(ctx, ""))
	second := waitRunsOn(first)

	c.stop(second)
	third := waitRunsOn(second)
	if third == second {
		t.Fatalf("after the shutdown of %s the job runs on %s", second.id, third.id)
	}
	_, runs, overlap, _ := c.jobs.state()
	if overlap != "" {
		t.Fatalf("two runs at once: %s", overlap)
	}
	if want := []string{first.id, second.id, third.id}; !slices.Equal(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
}

// TestHealth: the node's health is in the hive's health tree, scope
// strata-raft: OK as leader on one hive, OK as follower of it on the
// others; Stopped once the hive stops; Degraded on the last hive of the
// three, which has no quorum to elect a leader with.
func TestHealth(t *testing.T) {
	c := newCluster(t, 3)
	ld := c.leader()
	for _, m := range c.members {
		want := "level=OK message=follower of " + ld.id + ", term "
		if m == ld {
			want = "level=OK message=leader, term "
		}
		waitFor(t, m.id+"'s health "+want, func() bool {
			return strings.HasPrefix(m.healthOf("strata-raft"), want)
		})
	}
	c.stop(ld)
	if h := ld.healthOf("strata-raft"); h != "level=Stopped message=node closed" {
		t.Fatalf("after stop: %q", h)
	}
	live := c.live()
	c.stop(live[0])
	last := live[1]
	waitFor(t, last.id+" degraded without a leader", func() bool {
		h := last.healthOf("strata-raft")
		return strings.HasPrefix(h, "level=Degraded message=") && strings.Contains(h, ", no leader, term ") &&
			strings.HasSuffix(h, "error="+(&replicate.StaleError{NoLeader: true, Max: 10 * time.Second}).Error())
	})
}
