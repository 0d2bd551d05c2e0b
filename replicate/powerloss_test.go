package replicate

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestPowerLoss runs the truncating workload on Pebble's crashable
// in-memory file system while crash clones of it are taken at random
// moments: each clone is the file system a power loss at that moment could
// leave, with everything synced and a random share of what was not. Each
// clone's log must be the one the operations acknowledged before the
// clone left, or the one an operation in flight during the clone would
// have left: acknowledged entries all there, the tail whole or absent.
func TestPowerLoss(t *testing.T) {
	t.Parallel()
	fs := vfs.NewCrashableMem()
	st := openStore(t, fs, "/db")
	defer closeStore(t, st)
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))

	// history[k] is the log after k operations; the writer appends the
	// next one before it starts the operation, and counts it in acked
	// after it returns.
	var (
		mu      sync.Mutex
		history = []logModel{{}}
		acked   int
		stop    = make(chan struct{})
		werr    error
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		wrng := rand.New(rand.NewPCG(seed, 3))
		var m logModel
		term := uint64(1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			op := nextOp(wrng, m, &term, true)
			m.apply(op)
			mu.Lock()
			history = append(history, m.clone())
			mu.Unlock()
			if err := op.run(st); err != nil {
				werr = err
				return
			}
			mu.Lock()
			acked++
			mu.Unlock()
		}
	})

	clones, violations, inFlight := 100, 0, 0
	if testing.Short() {
		clones = 30
	}
	for range clones {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		mu.Lock()
		before := acked
		mu.Unlock()
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		mu.Lock()
		after := acked
		candidates := history[before:min(after+2, len(history))]
		mu.Unlock()
		got, err := readClone(t, clone)
		if err == nil {
			err = fmt.Errorf("log %v, none of the %d possible ones (acknowledged %d operations before the clone, %d after)",
				got, len(candidates), before, after)
			for i, m := range candidates {
				if got.equal(m) {
					err = nil
					if before+i > after {
						inFlight++
					}
				}
			}
		}
		if err != nil {
			violations++
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	must(t, werr)
	t.Logf("%d crash clones over %d operations: %d held an operation in flight; %d violations", clones, acked, inFlight, violations)
}

// readClone opens the store in a crash clone and reads its log.
func readClone(t *testing.T, fs vfs.FS) (logModel, error) {
	st, err := Open("/db", Options{FS: fs, Logger: quiet, VerifyOnOpen: true})
	if err != nil {
		return logModel{}, err
	}
	defer closeStore(t, st)
	return readModel(st)
}
