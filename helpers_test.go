package strata

// The helpers the root package's tests share: writes that fail the test
// on an error (so that no test passes because a write silently failed),
// and catching a panic. The test object and its tables are in
// testobj_test.go.

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// must fails the test if err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustCommit commits txn and returns the new snapshot, failing the test if
// the commit fails.
func mustCommit(t testing.TB, txn WriteTxn) ReadTxn {
	t.Helper()
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rtxn
}

// mustInsert inserts objects, failing the test on an error.
func mustInsert(t testing.TB, tbl RWTable[*testObject], txn WriteTxn, objs ...*testObject) {
	t.Helper()
	for _, o := range objs {
		if _, _, err := tbl.Insert(txn, o); err != nil {
			t.Fatalf("Insert(%d): %v", o.ID, err)
		}
	}
}

// catch runs f and returns what it panicked with, or nil.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// mustInsertAll inserts objs in a write transaction of their own and
// commits it, failing the test on an error.
func mustInsertAll(t testing.TB, db *DB, tbl RWTable[*testObject], objs ...*testObject) ReadTxn {
	t.Helper()
	wtxn := db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, objs...)
	return mustCommit(t, wtxn)
}

// concDuration returns how long a stress phase runs: short under -short.
func concDuration(short, long time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return long
}

// concSeed returns a random seed and logs it, so that a failure can be
// related to its run.
func concSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return seed
}

// concFailer reports the first error found by the test's goroutines and
// tells the others to stop. t.Errorf is safe from any goroutine.
type concFailer struct {
	t      *testing.T
	failed atomic.Bool
}

func (f *concFailer) errorf(format string, args ...any) {
	if f.failed.CompareAndSwap(false, true) {
		f.t.Helper()
		f.t.Errorf(format, args...)
	}
}

func (f *concFailer) stopped() bool { return f.failed.Load() }

// concGoroutineDump returns the stacks of every goroutine.
func concGoroutineDump() string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		b := make([]byte, 1<<20)
		return string(b[:runtime.Stack(b, true)])
	}
	return buf.String()
}

// concWait waits for wg and fails the test with a dump of every goroutine if
// progress stops advancing for stall before that: a deadlock (or a livelock
// that makes no progress) ends the test with the stacks that show it.
func concWait(t *testing.T, wg *sync.WaitGroup, progress *atomic.Uint64, stall time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := progress.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if p := progress.Load(); p != last {
				last, lastChange = p, time.Now()
				continue
			}
			if time.Since(lastChange) > stall {
				t.Fatalf("no progress for %v (progress stuck at %d): deadlock?\n%s", stall, last, concGoroutineDump())
			}
		}
	}
}

// seededRand returns a source of seed (from the flag named flag), or of a
// random seed if it is 0, on stream stream, and logs the seed with the
// flag that reruns it.
func seededRand(t *testing.T, seed uint64, flag string, stream uint64) *rand.Rand {
	t.Helper()
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -%s=%d)", seed, flag, seed)
	return rand.New(rand.NewPCG(seed, stream))
}
