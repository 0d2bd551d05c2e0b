package reconciler_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/reconciler"
)

var convergenceSeeds = flag.Int("reconciler.seeds", 0, "seeds per configuration of TestConvergence (default 6, 2 with -short)")

// TestConvergence is the convergence property: for random sequences of
// inserts, updates and deletes, under random faults of the outside world
// (failures, panics, delays past the operation timeout, blocked
// operations, drift, strangers, the whole world failing every operation
// and prune for a while, failed and blocked prunes), with 1, 4 and 16
// workers, with and
// without batch operations, once the faults stop and enough fake time
// passes, the outside world equals the table and every status is Done;
// and at no point did two operations run at once on one object, or a
// prune run beside an operation.
func TestConvergence(t *testing.T) {
	seeds := *convergenceSeeds
	if seeds == 0 {
		seeds = 6
		if testing.Short() {
			seeds = 2
		}
	}
	for _, workers := range []int{1, 4, 16} {
		for _, batch := range []bool{false, true} {
			for seed := range seeds {
				t.Run(fmt.Sprintf("workers=%d/batch=%v/seed=%d", workers, batch, seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) { convergence(t, workers, batch, uint64(seed)) })
				})
			}
		}
	}
}

func convergence(t *testing.T, workers int, batch bool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(workers)<<8|map[bool]uint64{false: 0, true: 1}[batch]))
	f := newFixture(t, fixtureConfig{batch: batch, init: true},
		reconciler.WithWorkers(workers),
		reconciler.WithRetry(10*time.Millisecond, 500*time.Millisecond),
		reconciler.WithJitter(0.2, rand.New(rand.NewPCG(seed, 7))),
		reconciler.WithOpTimeout(2*time.Second),
		reconciler.WithPruning(time.Duration(1+rng.IntN(5))*time.Second),
		reconciler.WithRefresh(10*time.Second, 1000),
		reconciler.WithRoundSize(1+rng.IntN(20)),
	)
	f.start()
	defer f.stop()

	const keys = 30
	var (
		present  = map[uint64]bool{}
		releases []func()
		faulted  = map[string]bool{}
		initDone bool
		faulty   bool
	)
	key := func() uint64 { return uint64(rng.IntN(keys)) }
	for step := range 300 {
		switch op := rng.IntN(23); {
		case op < 8: // upsert a few objects in one transaction
			var objs []*testObj
			for range 1 + rng.IntN(5) {
				id := key()
				objs = append(objs, pending(id, fmt.Sprintf("s%d", step)))
				present[id] = true
			}
			f.upsert(objs...)
		case op < 11: // delete one
			for id := range present {
				f.remove(id)
				delete(present, id)
				break
			}
		case op == 11:
			k := fmt.Sprint(key())
			f.world.FailNext(k, 1+rng.IntN(3), nil)
			faulted[k] = true
		case op == 12:
			k := fmt.Sprint(key())
			f.world.FailAlways(k, errors.New("down"))
			faulted[k] = true
		case op == 13:
			k := fmt.Sprint(key())
			f.world.Delay(k, time.Duration(rng.IntN(3000))*time.Millisecond) // sometimes past the timeout
			faulted[k] = true
		case op == 14:
			k := fmt.Sprint(key())
			releases = append(releases, f.world.Block(k))
			faulted[k] = true
		case op == 15:
			k := fmt.Sprint(key())
			f.world.PanicNext(k, 1)
			faulted[k] = true
		case op == 16: // drift: a wrong value, a stranger, or a lost object
			switch k := key(); rng.IntN(3) {
			case 0:
				f.world.Drift(fmt.Sprint(k), &testObj{ID: k, Value: "drifted"})
			case 1:
				f.world.Drift(fmt.Sprintf("stranger-%d", step), &testObj{ID: 1000 + uint64(step)})
			default:
				f.world.DriftDelete(fmt.Sprint(k))
			}
		case op == 17:
			f.r.Prune()
		case op == 18 && !initDone:
			f.initDone()
			initDone = true
		case op == 19: // the whole world fails every operation, or recovers
			if faulty {
				f.world.SetFaulty(nil)
			} else {
				f.world.SetFaulty(errors.New("the world is down"))
			}
			faulty = !faulty
		case op == 20:
			f.world.FailNextPrunes(1+rng.IntN(3), nil)
		case op == 21:
			releases = append(releases, f.world.BlockPrunes())
		default:
			if len(releases) > 0 && rng.IntN(2) == 0 {
				releases[0]()
				releases = releases[1:]
			}
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	}

	// The faults stop.
	for k := range faulted {
		f.world.Heal(k)
	}
	f.world.SetFaulty(nil)
	f.world.FailNextPrunes(0, nil)
	for _, release := range releases {
		release()
	}
	if !initDone {
		f.initDone()
	}
	var err error
	for range 120 {
		settle(time.Second)
		if err = f.converged(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("not converged two minutes after the faults stopped: %v\nstats %+v", err, f.r.Stats())
	}
	if c := f.world.MaxConcurrentPerKey(); c > 1 {
		t.Errorf("%d operations ran at once on one object", c)
	}
	if f.world.PruneOverlapped() {
		t.Error("a prune ran beside an operation")
	}
	if testing.Verbose() {
		u, d, p := f.world.Counts()
		failedPrunes := 0
		for _, op := range f.world.Ops() {
			if strings.HasPrefix(op, "prune(") && strings.HasSuffix(op, " fail") {
				failedPrunes++
			}
		}
		t.Logf("%d updates, %d deletes, %d prunes (%d failed); %d ops logged", u, d, p, failedPrunes, len(f.world.Ops()))
	}
	// Refreshes come and go (every 10s); nothing may stay stuck.
	for i := 0; ; i++ {
		s := f.r.Stats()
		if s.Failing == 0 && s.InFlight == 0 && s.Lag == 0 {
			break
		}
		if i == 30 {
			t.Fatalf("stats 30s after convergence %+v", s)
		}
		settle(time.Second)
	}
}
