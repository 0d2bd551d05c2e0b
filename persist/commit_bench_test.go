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
// key and value. Four sides run in rounds of 500 commits, in an order
// that rotates every round, so that all see the same machine load:
//
//   - persisted: a write transaction, one Insert and Commit, on a table
//     registered with a store;
//   - memory: the same on a table that is not persisted;
//   - raw: what persisted writes to Pebble, written directly: the same
//     key and value (the store's encoding), SetDeferred into a reused
//     batch, one Commit with pebble.NoSync, synced the same way (by the
//     store's sync loop);
//   - both: memory's commit, then raw's batch, on a table and a store of
//     their own: what persisted would cost if persisting added nothing
//     but the batch.
//
// The table has its primary index only. It reports each side's time per
// commit; persisted/raw; added/raw, where added = persisted - memory is
// what persisting adds to the in-memory commit; persisted/both, the
// layer's own cost; and raw-after-memory/raw = (both - memory) / raw, how
// much slower the same batch is right after an in-memory commit than in a
// loop of batches alone (the two paths' code does not fit in the L1
// instruction cache together: README, BenchmarkCommitSide), which bounds
// added/raw from below. Also in the process's CPU time (-cpu; Unix only),
// which a loaded machine disturbs less; and each side's allocations per
// commit (measured outside the timing).
func BenchmarkBufferedCommit(b *testing.B) {
	benchCommitSides(b, Buffered{Interval: 100 * time.Millisecond}, 500)
}

// BenchmarkSyncCommit is BenchmarkBufferedCommit in Sync mode (raw
// commits with pebble.Sync), in rounds of 50 commits: each commit waits
// for its log sync, whose latency on a shared disk moves more from one
// second to the next than the layer costs.
func BenchmarkSyncCommit(b *testing.B) {
	benchCommitSides(b, Sync{}, 50)
}

// benchCommitSides runs BenchmarkBufferedCommit's four sides in mode, in
// rounds of round commits.
func benchCommitSides(b *testing.B, mode SyncMode, round int) {
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
			rs.unsynced.Store(rs.buffered)
			batch.Reset()
			*next = (*next + 1) % bufferedKeys
		}
	}

	// both: an in-memory commit and a raw batch, one after the other, on
	// a table and a store of their own.
	bdb := strata.New()
	btbl, _ := strata.NewTable(bdb, "items", itemByID)
	bs := benchOpen(b, mode)
	bbatch := bs.db.NewBatch()
	var brev uint64
	both := func(n int, next *int) {
		for range n {
			txn := bdb.WriteTxn(btbl)
			o := *objs[*next]
			if _, _, err := btbl.Insert(txn, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
			o = *objs[*next]
			brev++
			buf = appendValueHeader(buf[:0], 1, brev)
			buf, _ = codec.Append(buf, &o)
			pk := pks[*next]
			op := bbatch.SetDeferred(len(keys.prefix)+len(pk), len(buf))
			copy(op.Key[copy(op.Key, keys.prefix):], pk)
			copy(op.Value, buf)
			if err := op.Finish(); err != nil {
				b.Fatal(err)
			}
			if err := bbatch.Commit(bs.writeOpts); err != nil {
				b.Fatal(err)
			}
			bs.unsynced.Store(bs.buffered)
			bbatch.Reset()
			*next = (*next + 1) % bufferedKeys
		}
	}

	const sides = 4
	var took, cpu [sides]time.Duration // persisted, memory, raw, both
	var allocs [sides]uint64
	var next [sides]int
	var before, after runtime.MemStats
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(round, b.N-done)
		for k := range sides {
			side := (i + k) % sides
			runtime.ReadMemStats(&before)
			c, start := processCPU(), time.Now()
			switch side {
			case 0:
				commits(pdb, ptbl, n, &next[0])
			case 1:
				commits(mdb, mtbl, n, &next[1])
			case 2:
				raw(n, &next[2])
			case 3:
				both(n, &next[3])
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
	b.ReportMetric(float64(took[3])/n, "both-ns/op")
	b.ReportMetric(float64(took[0])/float64(took[3]), "persisted/both")
	b.ReportMetric(float64(took[3]-took[1])/float64(took[2]), "raw-after-memory/raw")
	b.ReportMetric(float64(allocs[0])/n, "persisted-allocs/op")
	b.ReportMetric(float64(allocs[1])/n, "memory-allocs/op")
	b.ReportMetric(float64(allocs[2])/n, "raw-allocs/op")
	if cpu[2] > 0 {
		b.ReportMetric(float64(cpu[0]-cpu[1])/float64(cpu[2]), "added/raw-cpu")
		b.ReportMetric(float64(cpu[0])/float64(cpu[3]), "persisted/both-cpu")
	}
}

// BenchmarkCommitSide runs one of BenchmarkBufferedCommit's sides alone,
// for a profiler or a cache simulator, which cannot tell interleaved
// sides apart: memory, raw, both or persisted, each on a table and a
// store of its own, in Buffered mode. It is how the README's instruction
// cache figures were made (cachegrind; the difference of two runs of
// different lengths leaves the per-commit cost).
func BenchmarkCommitSide(b *testing.B) {
	for _, side := range []string{"memory", "raw", "both", "persisted"} {
		b.Run(side, func(b *testing.B) { benchCommitSide(b, side) })
	}
}

func benchCommitSide(b *testing.B, side string) {
	objs := make([]*item, bufferedKeys)
	pks := make([][]byte, bufferedKeys)
	for i := range objs {
		objs[i] = benchItem(uint64(i))
		pks[i] = index.Uint64(uint64(i))
	}
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID)
	s := benchOpen(b, Buffered{Interval: 100 * time.Millisecond})
	if side == "persisted" {
		if err := Register(s, db, tbl, Binary[item]()); err != nil {
			b.Fatal(err)
		}
	}
	keys := makeTableKeys(1)
	codec := Binary[item]()
	batch := s.db.NewBatch()
	var buf []byte
	var rev uint64
	next := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if side != "raw" {
			txn := db.WriteTxn(tbl)
			o := *objs[next] // a copy: an inserted object may not be inserted again
			if _, _, err := tbl.Insert(txn, &o); err != nil {
				b.Fatal(err)
			}
			if _, err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		if side == "raw" || side == "both" {
			o := *objs[next]
			rev++
			buf = appendValueHeader(buf[:0], 1, rev)
			buf, _ = codec.Append(buf, &o)
			pk := pks[next]
			op := batch.SetDeferred(len(keys.prefix)+len(pk), len(buf))
			copy(op.Key[copy(op.Key, keys.prefix):], pk)
			copy(op.Value, buf)
			if err := op.Finish(); err != nil {
				b.Fatal(err)
			}
			if err := batch.Commit(s.writeOpts); err != nil {
				b.Fatal(err)
			}
			s.unsynced.Store(s.buffered)
			batch.Reset()
		}
		next = (next + 1) % bufferedKeys
	}
	b.StopTimer()
	if side == "persisted" {
		if got := tbl.Revision(db.ReadTxn()); got != uint64(b.N) {
			b.Fatalf("table revision %d after %d commits", got, b.N)
		}
	}
}
