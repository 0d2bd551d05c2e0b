package replicate

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
)

// TestConcurrentReads: readers read entries between FirstIndex and
// LastIndex while a writer appends, truncates heads and tails and
// overwrites suffixes, as raft's replication goroutines read while its main
// loop writes. A reader may find an entry gone (raft.ErrLogNotFound: the
// writer deleted it since), but never missing from inside the range it
// read (a *CorruptLogError), and every entry it finds is whole.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	defer closeStore(t, st)
	ops := 200
	if testing.Short() {
		ops = 50
	}
	var stop atomic.Bool
	var reads, gone atomic.Int64
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for !stop.Load() {
				first, err1 := st.FirstIndex()
				last, err2 := st.LastIndex()
				if err := errors.Join(err1, err2); err != nil {
					t.Error(err)
					return
				}
				if last == 0 || first > last {
					continue
				}
				i := first + rng.Uint64N(last-first+1)
				var l raft.Log
				switch err := st.GetLog(i, &l); {
				case err == raft.ErrLogNotFound:
					gone.Add(1)
				case err != nil:
					t.Errorf("GetLog(%d) in %d..%d: %v", i, first, last, err)
					return
				case !sameEntry(&l, entryFor(i, l.Term)):
					t.Errorf("GetLog(%d): not whole: %+v", i, l)
					return
				}
				reads.Add(1)
			}
		})
	}
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	var m logModel
	term := uint64(1)
	for range ops {
		op := nextOp(rng, m, &term, true)
		must(t, op.run(st))
		m.apply(op)
	}
	stop.Store(true)
	wg.Wait()
	got, err := readModel(st)
	must(t, err)
	if !got.equal(m) {
		t.Fatalf("log %v, want %v", got, m)
	}
	t.Logf("%d operations, %d reads, %d found their entry gone", ops, reads.Load(), gone.Load())
}
