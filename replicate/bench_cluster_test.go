package replicate

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
)

// benchClients lists the client counts BenchmarkClusterCommits runs.
var benchClients = flag.String("replicate.bench.clients", "1,16,64,256",
	"client counts of BenchmarkClusterCommits, comma-separated")

func clientCounts(tb testing.TB) []int {
	var ns []int
	for f := range strings.SplitSeq(*benchClients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("-replicate.bench.clients: bad count %q", f)
		}
		ns = append(ns, n)
	}
	return ns
}

// BenchmarkClusterCommits measures commits through a 3-node cluster in
// this process (bench_cluster_harness_test.go: loopback TCP, the fsynced
// LogStore behind raft's LogCache), each commit inserting one object of
// about 100 bytes, b.N commits in all split over the clients, which
// commit one after the other, each waiting for its commit. Peers, in the
// same run:
//
//   - raw: hashicorp/raft alone, what a user would write: each client
//     calls raft.Apply on the leader with its encoded object and waits for
//     the future; the FSM applies each entry as one go-memdb write
//     transaction on one table.
//   - raw-combined: the same, with the leader's queued requests combined
//     into one entry (up to 64) by one goroutine that submits entries
//     pipelined, without waiting for the previous one.
//   - strata: a replicate.Node on every member, one table bound with
//     persist.Binary, every client calling Node.Write on the leader to
//     insert its object into that one table.
//   - strata-own-table: the same with a table per client.
//
// It reports commits/s, the p50 and p99 latency of a commit in ms, commits
// per raft entry, and allocs/op (of the whole process: the three members
// and the clients). The cluster is started (and elects) before the timer,
// once per sub-benchmark run, shared by its b.N rounds.
func BenchmarkClusterCommits(b *testing.B) {
	for _, peer := range []string{"raw", "raw-combined", "strata", "strata-own-table"} {
		b.Run(peer, func(pb *testing.B) {
			for _, clients := range clientCounts(pb) {
				var c *benchCluster
				var next atomic.Uint64 // the objects' ids
				pb.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
					if c == nil {
						tables := 0
						switch peer {
						case "strata":
							tables = 1
						case "strata-own-table":
							tables = clients
						}
						c = newBenchCluster(b, pb, tables)
					}
					switch peer {
					case "raw":
						benchRaw(b, c, clients, &next, false)
					case "raw-combined":
						benchRaw(b, c, clients, &next, true)
					default:
						benchStrata(b, c, clients, &next, peer == "strata-own-table")
					}
				})
				if c != nil {
					c.close()
				}
			}
		})
	}
}

// runClients runs b.N commits split over clients goroutines, commit(c,
// i) being client c's i-th, and reports commits/s and the latencies.
func runClients(b *testing.B, clients int, commit func(c, i int) error) {
	runWorkers(b, clients, "commits/s", commit)
}

// runWorkers runs b.N calls of op split over workers goroutines, op(w, i)
// being worker w's i-th, and reports the rate in unit and the latencies.
func runWorkers(b *testing.B, workers int, unit string, op func(w, i int) error) {
	lats := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ReportAllocs()
	b.ResetTimer()
	lo := 0
	for w := range workers {
		k := b.N / workers
		if w < b.N%workers {
			k++
		}
		mine := lats[lo : lo+k]
		lo += k
		wg.Go(func() {
			for i := range mine {
				start := time.Now()
				if err := op(w, i); err != nil {
					errs <- err
					return
				}
				mine[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
	reportLatencies(b, lats)
}

// benchRaw runs the raw probe: raft.Apply of one object per commit, or
// through a combiner.
func benchRaw(b *testing.B, c *benchCluster, clients int, next *atomic.Uint64, combined bool) {
	ld := c.leader()
	before := ld.fsm.count(b)
	var entries atomic.Uint64
	commit := func(_, _ int) error {
		o := benchObj{ID: next.Add(1), Val: benchVal}
		data, _ := o.AppendBinary(binary.AppendUvarint(make([]byte, 0, 128), 1))
		entries.Add(1)
		return applyFuture(ld.raft.Apply(data, benchTimeout))
	}
	var cb *combiner
	if combined {
		cb = newCombiner(ld.raft, clients, &entries)
		commit = func(c, _ int) error {
			return cb.commit(c, benchObj{ID: next.Add(1), Val: benchVal})
		}
	}
	runClients(b, clients, commit)
	if cb != nil {
		cb.close()
	}
	if got := ld.fsm.count(b); got != before+b.N {
		b.Fatalf("the leader holds %d objects, want %d", got, before+b.N)
	}
	b.ReportMetric(float64(b.N)/float64(entries.Load()), "commits/entry")
}

// applyFuture waits for f: its error, or the FSM's.
func applyFuture(f raft.ApplyFuture) error {
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// combiner is the combining raw probe: clients queue their objects, one
// goroutine takes whatever is queued (up to 64) into one entry and
// submits it without waiting for the previous ones, another waits for
// the entries' futures in order and answers their clients.
type combiner struct {
	reqs    chan combReq
	flights chan combFlight
	done    []chan error // per client
	wg      sync.WaitGroup
}

type combReq struct {
	client int
	obj    benchObj
}

type combFlight struct {
	f       raft.ApplyFuture
	clients []int
}

const combineMax = 64

func newCombiner(r *raft.Raft, clients int, entries *atomic.Uint64) *combiner {
	cb := &combiner{
		reqs:    make(chan combReq, clients),
		flights: make(chan combFlight, clients),
		done:    make([]chan error, clients),
	}
	for i := range cb.done {
		cb.done[i] = make(chan error, 1)
	}
	cb.wg.Go(func() {
		defer close(cb.flights)
		for req := range cb.reqs {
			batch := []combReq{req}
		more:
			for len(batch) < combineMax {
				select {
				case req, ok := <-cb.reqs:
					if !ok {
						break more
					}
					batch = append(batch, req)
				default:
					break more
				}
			}
			data := binary.AppendUvarint(make([]byte, 0, 8+len(batch)*112), uint64(len(batch)))
			ids := make([]int, len(batch))
			for i := range batch {
				data, _ = batch[i].obj.AppendBinary(data)
				ids[i] = batch[i].client
			}
			entries.Add(1)
			cb.flights <- combFlight{f: r.Apply(data, benchTimeout), clients: ids}
		}
	})
	cb.wg.Go(func() {
		for fl := range cb.flights {
			err := applyFuture(fl.f)
			for _, c := range fl.clients {
				cb.done[c] <- err
			}
		}
	})
	return cb
}

// commit queues client c's object and waits for its entry.
func (cb *combiner) commit(c int, o benchObj) error {
	cb.reqs <- combReq{client: c, obj: o}
	return <-cb.done[c]
}

func (cb *combiner) close() {
	close(cb.reqs)
	cb.wg.Wait()
}

// benchStrata runs Node.Write of one object per commit, on one table or a
// table per client.
func benchStrata(b *testing.B, c *benchCluster, clients int, next *atomic.Uint64, ownTable bool) {
	ld := c.leader()
	count := func() int {
		txn := ld.db.ReadTxn()
		n := 0
		for _, tbl := range ld.tables {
			n += tbl.NumObjects(txn)
		}
		return n
	}
	before := count()
	entriesBefore, _ := ld.node.Entries()
	tbls := make([]strata.RWTable[*benchObj], clients)
	metas := make([][]strata.TableMeta, clients)
	for i := range tbls {
		tbls[i] = ld.tables[0]
		if ownTable {
			tbls[i] = ld.tables[i]
		}
		metas[i] = []strata.TableMeta{tbls[i]}
	}
	ctx := context.Background()
	runClients(b, clients, func(c, _ int) error {
		tbl := tbls[c]
		o := &benchObj{ID: next.Add(1), Val: benchVal}
		index, err := ld.node.Write(ctx, metas[c], func(txn strata.WriteTxn) error {
			_, _, err := tbl.Insert(txn, o)
			return err
		})
		if err == nil && index == 0 {
			err = fmt.Errorf("object %d: committed at index 0", o.ID)
		}
		return err
	})
	if got := count(); got != before+b.N {
		b.Fatalf("the leader holds %d objects, want %d", got, before+b.N)
	}
	entries, _ := ld.node.Entries()
	b.ReportMetric(float64(b.N)/float64(entries-entriesBefore), "commits/entry")
}
