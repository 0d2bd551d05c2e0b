package persist

import (
	"runtime"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// bufferedKeys is how many objects BenchmarkBufferedCommit cycles
// through: few, so that the in-memory commit is small beside the batch
// and what persisting adds can be told from it.
const bufferedKeys = 16

// BenchmarkBufferedCommit measures what persisting adds to a commit of one
// object in Buffered mode, against a raw Pebble NoSync batch of the same
// key and value. Three sides run in rounds of 500 commits, in an order
// that rotates every round, so that all three see the same machine load:
//
//   - persisted: a write transaction, one Insert and Commit, on a table
//     registered with a store;
//   - memory: the same on a table that is not persisted;
//   - raw: what persisted writes to Pebble, written directly: the same
//     key and value (the store's encoding), SetDeferred into a reused
//     batch, one Commit with pebble.NoSync, synced the same way (by the
//     store's sync loop).
//
// The table has its primary index only. It reports each side's time per
// commit, persisted/raw, and added/raw, where added = persisted - memory
// is what persisting adds to the in-memory commit; both also in the
// process's CPU time (-cpu; Unix only), which a loaded machine disturbs
// less; and each side's allocations per commit (measured outside the
// timing).
func BenchmarkBufferedCommit(b *testing.B) {
	mode := Buffered{Interval: 100 * time.Millisecond}
	objs := make([]*item, bufferedKeys)
	pks := make([][]byte, bufferedKeys)
	for i := range objs {
		objs[i] = benchItem(uint64(i))
		pks[i] = index.Uint64(uint64(i))
	}
	// commits makes n commits of one object each to tbl, from object
	// *next on.
	commits := func(db *strata.DB, tbl strata.RWTable[*item], n int, next *int) {
		for range n {
			txn := db.WriteTxn(tbl)
			o := *objs[*next] // a copy: an inserted object may not be inserted again
			if _, _, err := tbl.Insert(txn, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
			*next = (*next + 1) % bufferedKeys
		}
	}

	ps := benchOpen(b, mode)
	pdb := strata.New()
	ptbl, _ := strata.NewTable(pdb, "items", itemByID)
	if err := Register(ps, pdb, ptbl, Binary[item]()); err != nil {
		b.Fatal(err)
	}
	mdb := strata.New()
	mtbl, _ := strata.NewTable(mdb, "items", itemByID)

	rs := benchOpen(b, mode)
	keys := makeTableKeys(1)
	codec := Binary[item]()
	batch := rs.db.NewBatch()
	var buf []byte
	var rev uint64
	raw := func(n int, next *int) {
		for range n {
			o := *objs[*next]
			rev++
			buf = appendValueHeader(buf[:0], 1, rev)
			buf, _ = codec.Append(buf, &o)
			pk := pks[*next]
			op := batch.SetDeferred(len(keys.prefix)+len(pk), len(buf))
			copy(op.Key[copy(op.Key, keys.prefix):], pk)
			copy(op.Value, buf)
			if err := op.Finish(); err != nil {
				b.Fatal(err)
			}
			if err := batch.Commit(rs.writeOpts); err != nil {
				b.Fatal(err)
			}
			rs.unsynced.Store(true)
			batch.Reset()
			*next = (*next + 1) % bufferedKeys
		}
	}

	const round = 500
	var took, cpu [3]time.Duration // persisted, memory, raw
	var allocs [3]uint64
	var next [3]int
	var before, after runtime.MemStats
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(round, b.N-done)
		for k := range 3 {
			side := (i + k) % 3
			runtime.ReadMemStats(&before)
			c, start := processCPU(), time.Now()
			switch side {
			case 0:
				commits(pdb, ptbl, n, &next[0])
			case 1:
				commits(mdb, mtbl, n, &next[1])
			case 2:
				raw(n, &next[2])
			}
			took[side] += time.Since(start)
			cpu[side] += processCPU() - c
			runtime.ReadMemStats(&after)
			allocs[side] += after.Mallocs - before.Mallocs
		}
		done += n
	}
	b.StopTimer()
	if got := ptbl.NumObjects(pdb.ReadTxn()); got != min(b.N, bufferedKeys) {
		b.Fatalf("persisted table holds %d objects", got)
	}
	if got := uint64(b.N); rev != got || ptbl.Revision(pdb.ReadTxn()) != got {
		b.Fatalf("%d raw batches, table revision %d, want %d", rev, ptbl.Revision(pdb.ReadTxn()), got)
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(took[0])/n, "persisted-ns/op")
	b.ReportMetric(float64(took[1])/n, "memory-ns/op")
	b.ReportMetric(float64(took[2])/n, "raw-ns/op")
	b.ReportMetric(float64(took[0])/float64(took[2]), "persisted/raw")
	b.ReportMetric(float64(took[0]-took[1])/float64(took[2]), "added/raw")
	b.ReportMetric(float64(allocs[0])/n, "persisted-allocs/op")
	b.ReportMetric(float64(allocs[1])/n, "memory-allocs/op")
	b.ReportMetric(float64(allocs[2])/n, "raw-allocs/op")
	if cpu[2] > 0 {
		b.ReportMetric(float64(cpu[0]-cpu[1])/float64(cpu[2]), "added/raw-cpu")
	}
}
