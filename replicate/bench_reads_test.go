package replicate

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strata-db/strata"
)

// BenchmarkClusterReads measures the read modes on the cluster of
// BenchmarkClusterCommits (three members on loopback TCP, fsynced logs),
// one table holding 1000 objects, against the goals:
//
//   - local: a stale read on the leader (Node.ReadTxn and one Get), the
//     base the others are compared with;
//   - verify-leader: raft's VerifyLeader alone, one round to a quorum,
//     the most a linearizable read may add to a local one;
//   - linearizable/readers=N: Node.ReadLinearizable and one Get on the
//     leader by N concurrent readers. One reader pays a round per read;
//     concurrent readers share rounds (goal: 64 readers ≥ 10× the rate of
//     one round per read, i.e. of readers=1);
//   - read-own-write/follower: a write on the leader, then
//     Node.ReadAtLeast of its index on a follower (goal: p50 ≤ 2 ms): the
//     time for the follower to learn the commit and apply it;
//   - write/follower: Node.Write on a follower, forwarded to the leader
//     over TCP, until the follower published it.
//
// Each reports reads/s and the p50 and p99 latency of one read.
func BenchmarkClusterReads(b *testing.B) {
	c := newBenchCluster(b, b, 1)
	defer c.close()
	ld := c.leader()
	tbl := ld.tables[0]
	ctx := context.Background()
	var index uint64
	for i := range uint64(1000) {
		var err error
		index, err = ld.node.Write(ctx, []strata.TableMeta{tbl}, func(txn strata.WriteTxn) error {
			_, _, err := tbl.Insert(txn, &benchObj{ID: i, Val: benchVal})
			return err
		})
		must(b, err)
	}
	var follower *benchMember
	for _, m := range c.members {
		if m != ld {
			follower = m
			must(b, m.node.WaitApplied(ctx, index))
		}
	}
	get := func(txn strata.ReadTxn, i int) error {
		if _, _, found := tbl.Get(txn, benchObjByID.Query(uint64(i%1000))); !found {
			return fmt.Errorf("object %d not found", i%1000)
		}
		return nil
	}
	b.Run("local", func(b *testing.B) {
		runReaders(b, 1, func(i int) error {
			txn, err := ld.node.ReadTxn(ctx)
			if err != nil {
				return err
			}
			return get(txn, i)
		})
	})
	b.Run("verify-leader", func(b *testing.B) {
		runReaders(b, 1, func(int) error { return ld.node.Raft().VerifyLeader().Error() })
	})
	for _, readers := range []int{1, 64} {
		b.Run(fmt.Sprint("linearizable/readers=", readers), func(b *testing.B) {
			runReaders(b, readers, func(i int) error {
				txn, err := ld.node.ReadLinearizable(ctx)
				if err != nil {
					return err
				}
				return get(txn, i)
			})
		})
	}
	ftbl := follower.tables[0]
	b.Run("read-own-write/follower", func(b *testing.B) {
		timeEach(b, 1<<32, func(id uint64) time.Duration {
			b.StopTimer()
			index, err := ld.node.Write(ctx, []strata.TableMeta{tbl}, func(txn strata.WriteTxn) error {
				_, _, err := tbl.Insert(txn, &benchObj{ID: id, Val: benchVal})
				return err
			})
			must(b, err)
			b.StartTimer()
			start := time.Now()
			txn, err := follower.node.ReadAtLeast(ctx, index)
			must(b, err)
			lat := time.Since(start)
			if _, _, found := ftbl.Get(txn, benchObjByID.Query(id)); !found {
				b.Fatalf("the follower's read at least %d lacks object %d", index, id)
			}
			return lat
		})
	})
	b.Run("write/follower", func(b *testing.B) {
		timeEach(b, 1<<33, func(id uint64) time.Duration {
			start := time.Now()
			_, err := follower.node.Write(ctx, []strata.TableMeta{ftbl}, func(txn strata.WriteTxn) error {
				_, _, err := ftbl.Insert(txn, &benchObj{ID: id, Val: benchVal})
				return err
			}, ObjectConflicts())
			must(b, err)
			return time.Since(start)
		})
	})
}

// timeEach runs op b.N times, with the ids from first on, and reports the
// p50 and p99 of the latencies it returns.
func timeEach(b *testing.B, first uint64, op func(id uint64) time.Duration) {
	lats := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range uint64(b.N) {
		lats = append(lats, op(first+i))
	}
	b.StopTimer()
	reportLatencies(b, lats)
}

// runReaders runs b.N reads split over readers goroutines, read(i)
// with i growing per reader from a distinct start, and reports reads/s
// and the latencies.
func runReaders(b *testing.B, readers int, read func(i int) error) {
	runWorkers(b, readers, "reads/s", func(w, i int) error { return read(w*1_000_003 + i) })
}

// reportLatencies sorts lats and reports their p50 and p99.
func reportLatencies(b *testing.B, lats []time.Duration) {
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lats[len(lats)*99/100])/1e6, "p99-ms")
}
