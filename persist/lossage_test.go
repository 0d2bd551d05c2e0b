package persist

import (
	"errors"
	"flag"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/crashchild"
)

var lossAgeCycles = flag.Int("persist.lossage", 0, "kill cycles of TestBufferedLossAge (default 4, 2 with -short)")

// lossAgeInterval is the Buffered interval TestBufferedLossAge measures.
const lossAgeInterval = 20 * time.Millisecond

// TestBufferedLossAge kills a Buffered writer (20ms interval) with SIGKILL
// after it has run a while, and measures how old the acknowledged commits
// it lost were: the age, at the kill, of the oldest lost commit's
// acknowledgement. It checks the bound the README states: every commit
// lost was acknowledged after the start of the last periodic sync that
// had completed before the kill (a commit acknowledged before a sync
// started is in the log that sync wrote and synced). So a kill loses the
// commits of the last Interval plus the time the sync in progress takes:
// Pebble's log writer writes nothing to the operating system while it
// syncs. It logs the ages (maximum, 99th percentile, median), and how long
// the sync in progress at the kill had run.
//
// -persist.lossage=N runs N cycles (the README's figures: 300).
func TestBufferedLossAge(t *testing.T) {
	cycles := 4
	if testing.Short() {
		cycles = 2
	}
	if *lossAgeCycles > 0 {
		cycles = *lossAgeCycles
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var ages, gaps, open []time.Duration // per cycle that lost commits
	var lostCycles, lost, violations int
	for cycle := range cycles {
		r, err := lossAgeCycle(dir, rng)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		got, _, err := recoverCrashed(t, dir, cycle)
		if err != nil {
			violations++
			t.Errorf("%v", err)
		}
		var oldest *ack
		for i := range r.acks {
			if a := &r.acks[i]; a.seq > got.seq {
				lost++
				if oldest == nil {
					oldest = a
				}
				if a.at < r.lastSyncStart {
					violations++
					t.Errorf("cycle %d: transaction %d, acknowledged %v before the start of a sync that completed before the kill, was lost",
						cycle, a.seq, time.Duration(r.lastSyncStart-a.at))
				}
			}
		}
		if oldest == nil {
			continue
		}
		lostCycles++
		ages = append(ages, time.Duration(r.kill-oldest.at))
		if r.lastSyncStart == 0 {
			// No sync completed: the first one ran at the kill.
			gaps = append(gaps, 0)
		} else {
			gaps = append(gaps, time.Duration(r.kill-r.lastSyncStart))
		}
		if r.openSyncStart > 0 {
			open = append(open, time.Duration(r.kill-r.openSyncStart))
		} else {
			open = append(open, 0)
		}
	}
	q := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond)
	}
	over := 0 // cycles that lost commits older than 2 intervals
	for i, a := range ages {
		if a > 2*lossAgeInterval {
			over++
			t.Logf("lost commits %v old; the kill came %v after the start of the last completed sync (0: none); a sync had run %v at the kill",
				a.Round(time.Millisecond), gaps[i].Round(time.Millisecond), open[i].Round(time.Millisecond))
		}
	}
	t.Logf("Buffered{%v}: %d kill cycles, %d lost acknowledged commits, in %d cycles; age of the oldest lost commit: max %v, p99 %v, p50 %v; "+
		"kill after the start of the last completed sync: max %v, p99 %v; sync in progress at the kill: max %v; %d cycles lost commits older than %v; %d violations",
		lossAgeInterval, cycles, lost, lostCycles, q(ages, 1), q(ages, 0.99), q(ages, 0.5),
		q(gaps, 1), q(gaps, 0.99), q(open, 1), over, 2*lossAgeInterval, violations)
}

// lossAgeRun is what the parent saw of one loss-age child: its acks, when
// it killed it, and the start of the last sync the child reported
// complete and of one it reported started and not complete (0 if none).
type lossAgeRun struct {
	acks                         []ack
	kill                         int64
	lastSyncStart, openSyncStart int64
}

// lossAgeCycle runs the loss-age child on dir and kills it 100 to 500ms
// after its first acknowledgement.
func lossAgeCycle(dir string, rng *rand.Rand) (lossAgeRun, error) {
	c, err := crashchild.Run(crashchild.Options{
		Env:   []string{childEnv + "=loss-age", childDirEnv + "=" + dir},
		IsAck: isAck,
		Kill:  crashchild.Kill{After: 100*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond)))},
	})
	r := lossAgeRun{kill: c.Killed.UnixNano()}
	if err != nil {
		return r, err
	}
	started := map[int64]bool{} // syncs started and not reported complete
	for _, line := range c.Lines {
		if a, ok := parseAck(line); ok {
			r.acks = append(r.acks, a)
			continue
		}
		if f := strings.Fields(line); len(f) == 3 && f[0] == "sync" {
			start, err1 := strconv.ParseInt(f[1], 10, 64)
			end, err2 := strconv.ParseInt(f[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return r, err
			}
			if end == 0 {
				started[start] = true
			} else {
				delete(started, start)
				r.lastSyncStart = max(r.lastSyncStart, start)
			}
		}
	}
	for start := range started {
		r.openSyncStart = max(r.openSyncStart, start)
	}
	if r.openSyncStart < r.lastSyncStart {
		r.openSyncStart = 0
	}
	return r, nil
}
