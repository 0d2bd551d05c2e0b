package replicate

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/crashchild"
)

var (
	crashCycles = flag.Int("replicate.crash.cycles", 0, "kill cycles of each crash test (default 30, 8 with -short)")
	crashSeed   = flag.Uint64("replicate.crash.seed", 0, "seed of the crash and power-loss tests (default: the time)")
)

func crashCycleCount() int {
	switch {
	case *crashCycles > 0:
		return *crashCycles
	case testing.Short():
		return 8
	}
	return 30
}

// testSeed returns the seed a test runs with, and logs it so that a
// failure can be replayed with -replicate.crash.seed.
func testSeed(t *testing.T) uint64 {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-replicate.crash.seed=%d replays it)", seed, seed)
	return seed
}

// runChild is the crash tests' child: it opens the store in dir, reads
// its log, and runs the workload's operations after it, forever,
// printing each operation ("op ...") before it starts and "ack" after it
// returns. The parent kills it.
func runChild(mode, dir, seedText string) {
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		fail(err)
	}
	s, err := Open(dir, Options{Logger: quiet, VerifyOnOpen: true})
	if err != nil {
		fail(err)
	}
	m, err := readModel(s)
	if err != nil {
		fail(err)
	}
	term := uint64(1)
	if len(m.terms) > 0 {
		term = m.terms[len(m.terms)-1] + 1
	}
	say("ready " + m.String() + "\n")
	rng := rand.New(rand.NewPCG(seed, 7))
	for {
		op := nextOp(rng, m, &term, mode == "truncate")
		// One write per line: a pipe takes it whole.
		say(op.String() + "\n")
		if err := op.run(s); err != nil {
			fail(err)
		}
		m.apply(op)
		say("ack\n")
	}
}

// TestCrashAppend kills a process appending to the log with SIGKILL at
// random moments; after each kill the reopened log must hold every
// acknowledged entry, whole, with no hole, and of the batch in flight
// all entries or none.
func TestCrashAppend(t *testing.T) { testCrash(t, "append") }

// TestCrashTruncate is TestCrashAppend with truncations among the
// appends: head deletions (compaction), tail deletions (conflicts),
// overwritten suffixes, a new log after a gap, deletion of all. After
// each kill the log must be the one the acknowledged operations left, or
// the one the operation in flight would have left; never a mix.
func TestCrashTruncate(t *testing.T) { testCrash(t, "truncate") }

func testCrash(t *testing.T, mode string) {
	t.Parallel()
	if testing.Short() && raceEnabled {
		t.Log("fewer cycles under the race detector")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	var (
		model      logModel // the log after the last cycle, as recovered
		acks       int      // operations acknowledged, checked after their kill
		inFlight   int      // cycles whose operation in flight survived whole
		noAck      int      // cycles killed before their first ack
		violations int
		start      = time.Now()
		cycles     = crashCycleCount()
	)
	for cycle := range cycles {
		lines, err := crashCycle(dir, mode, rng)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		acked := model.clone()
		var pending *logOp
		for _, line := range lines {
			if op, ok := parseOp(line); ok {
				pending = &op
			} else if line == "ack" && pending != nil {
				acked.apply(*pending)
				pending = nil
				acks++
			} else if strings.HasPrefix(line, "ready ") && line != "ready "+model.String() {
				t.Fatalf("cycle %d: child read %q, parent recovered %v", cycle, line, model)
			}
		}
		if acked.equal(model) && pending == nil {
			noAck++
		}
		st := openStore(t, nil, dir)
		got, err := readModel(st)
		closeStore(t, st)
		switch {
		case err != nil:
			violations++
			t.Errorf("cycle %d: %v", cycle, err)
		case got.equal(acked):
		case pending != nil && got.equal(applied(acked, *pending)):
			inFlight++
		default:
			violations++
			t.Errorf("cycle %d: recovered log %v, acknowledged %v, in flight %v", cycle, got, acked, pending)
		}
		model = got
	}
	t.Logf("%d kill cycles in %v (%d with nothing acknowledged): %d acknowledged operations checked after their kill, "+
		"%d in-flight ones survived whole; final log %v; %d violations",
		cycles, time.Since(start).Round(time.Millisecond), noAck, acks, inFlight, model, violations)
}

func applied(m logModel, op logOp) logModel {
	m = m.clone()
	m.apply(op)
	return m
}

// crashCycle runs the child on dir, kills it with SIGKILL at a random
// moment, and returns the lines it printed.
func crashCycle(dir, mode string, rng *rand.Rand) ([]string, error) {
	env := []string{childEnv + "=" + mode, childDirEnv + "=" + dir,
		childSeedEnv + "=" + strconv.FormatUint(rng.Uint64(), 10)}
	// One kill in ten comes within 40ms of the start, which may fall in
	// Open; the others within 30ms of the first ack.
	r, err := crashchild.Run(crashchild.Options{
		Env:   env,
		IsAck: func(line string) bool { return line == "ack" },
		Kill:  crashchild.RandomKill(rng, 40*time.Millisecond, 30*time.Millisecond),
	})
	return r.Lines, err
}

// say writes one line of the child's protocol. A child that cannot tell
// the parent what it does stops: the parent would misread what it killed.
func say(line string) {
	if _, err := os.Stdout.WriteString(line); err != nil {
		fail(err)
	}
}

// fail ends the child with the error, which the parent reads.
func fail(err error) {
	fmt.Printf("error %v\n", err)
	os.Exit(1)
}
