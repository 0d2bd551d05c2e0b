package strata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkExpire expires 100k objects of a table of 1M (every tenth, by
// primary key; the table has a non-unique index beside the expiry index)
// with ExpireBefore in batches, alone or while one goroutine reads the
// table (Get of a random object that stays) and times each read. It
// reports the expired objects per second and, with the reader, the
// reader's p50 and p99 latency during the expiry and in an idle run of
// the same length without it; alone, also the objects per second of the
// process's CPU time (the collector's included), which a loaded machine
// disturbs less than the wall time:
//
//	go test -run '^$' -bench BenchmarkExpire -benchtime 5x -count 5 .
//
// The order of expiry matters, as it does to any delete of a radix tree
// with path copying: order=key, the objects expire in primary key order
// (sequential IDs with a fixed time to live), so that consecutive deletes
// share the nodes the batch copied; order=random, the expiries are
// unrelated to the keys (random IDs), so that nearly every delete copies
// nodes of its own, fewer per object the larger the batch.
//
// The table holds -strata.memobjects objects (1,000,000 by default), a
// tenth of them expired.
func BenchmarkExpire(b *testing.B) {
	size := *benchMemObjects
	expired := size / 10
	lat := make([]int64, 0, 4<<20)
	for _, order := range []string{"key", "random"} {
		db := New()
		tbl := newSessions(b, db, "s")
		due := time.Now().Add(time.Hour)
		dueObjs := fillExpiring(b, db, tbl, size, expired, due, order == "random")
		for _, c := range []struct {
			batch  int
			reader bool
		}{{1024, false}, {16384, false}, {1024, true}} {
			name := fmt.Sprintf("order=%s/batch=%d", order, c.batch)
			if c.reader {
				name += "/reader"
			}
			b.Run(name, func(b *testing.B) {
				var busy, idle []int64
				var elapsed, cpu time.Duration
				total := 0
				for range b.N {
					b.StopTimer()
					if tbl.NumObjects(db.ReadTxn()) != size {
						insertSessions(b, db, tbl, dueObjs...)
					}
					var r *benchReader
					if c.reader {
						r = startReader(db, tbl, size, lat)
					}
					b.StartTimer()
					t0, c0 := time.Now(), processCPU()
					n, err := ExpireBefore(db, due, c.batch)
					d := time.Since(t0)
					cpu += processCPU() - c0
					b.StopTimer()
					if err != nil || n != expired {
						b.Fatalf("expired %d, %v; want %d", n, err, expired)
					}
					elapsed += d
					total += n
					if c.reader {
						busy = append(busy, r.stop()...)
						// The idle run: the same reader, as long, with
						// no expiry.
						r = startReader(db, tbl, size, lat)
						time.Sleep(d)
						idle = append(idle, r.stop()...)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(total)/elapsed.Seconds(), "objects/s")
				if !c.reader {
					b.ReportMetric(float64(total)/cpu.Seconds(), "objects/cpu-s")
				}
				if c.reader {
					b.ReportMetric(percentile(busy, 50), "busy-p50-ns")
					b.ReportMetric(percentile(busy, 99), "busy-p99-ns")
					b.ReportMetric(percentile(idle, 50), "idle-p50-ns")
					b.ReportMetric(percentile(idle, 99), "idle-p99-ns")
				}
			})
		}
	}
}

// fillExpiring fills tbl with size objects, every size/expired'th due
// before due, in primary key order or in random order, the others an hour
// later, and returns the due ones.
func fillExpiring(b *testing.B, db *DB, tbl RWTable[*session], size, expired int, due time.Time, random bool) []*session {
	later := due.Add(time.Hour)
	dueObjs := make([]*session, 0, expired)
	rng := rand.New(rand.NewPCG(1, 2))
	txn := db.WriteTxn(tbl)
	for i := range size {
		s := &session{ID: uint64(i), Value: i % 1000, Expires: later.Add(time.Duration(i))}
		if i%(size/expired) == 0 {
			s.Expires = due.Add(-time.Duration(size - i))
			if random {
				s.Expires = due.Add(-time.Duration(1 + rng.IntN(size)))
			}
			dueObjs = append(dueObjs, s)
		}
		if _, _, err := tbl.Insert(txn, s); err != nil {
			b.Fatal(err)
		}
	}
	mustCommit(b, txn)
	return dueObjs
}

// benchReader reads a table in a goroutine of its own until stopped, and
// keeps the latency of each read, up to the capacity of lat: the reader
// allocates nothing, so that it makes no garbage for the collector to take
// from the expiry's time.
type benchReader struct {
	done atomic.Bool
	wg   sync.WaitGroup
	lat  []int64
}

// startReader starts a reader of objects of tbl that no expiry deletes
// (their ID is odd), keeping the latencies in buf.
func startReader(db *DB, tbl Table[*session], size int, buf []int64) *benchReader {
	r := &benchReader{lat: buf[:0]}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		x := uint64(1)
		for !r.done.Load() {
			x = x*6364136223846793005 + 1442695040888963407
			id := (x>>33)%uint64(size) | 1
			t0 := time.Now()
			_, _, found := tbl.Get(db.ReadTxn(), sessionByID.Query(id))
			d := time.Since(t0)
			if !found {
				panic(fmt.Sprintf("object %d not found", id))
			}
			if len(r.lat) < cap(r.lat) {
				r.lat = append(r.lat, int64(d))
			}
		}
	}()
	return r
}

func (r *benchReader) stop() []int64 {
	r.done.Store(true)
	r.wg.Wait()
	return r.lat
}

// percentile returns the p'th percentile of the latencies in ns.
func percentile(lat []int64, p int) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[(len(lat)-1)*p/100])
}
