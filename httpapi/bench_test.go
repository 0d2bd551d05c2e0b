package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
)

// benchKeys is the number of distinct objects the benchmarks' writer
// replaces in turn.
const benchKeys = 1000

// benchSubscriber reads a change stream over HTTP, counting its events
// and keeping the last revision, with as little work per event as it can
// (the server's cost is what is measured).
type benchSubscriber struct {
	events atomic.Int64
	rev    atomic.Uint64
	resp   *http.Response
	done   chan struct{}
}

var revField = []byte(`"rev":`)

func subscribe(b *testing.B, url string) *benchSubscriber {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b.Fatalf("stream: %s", resp.Status)
	}
	s := &benchSubscriber{resp: resp, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// Read in large chunks; count the events and parse only the
		// revision of the last whole event of each chunk.
		buf := make([]byte, 256<<10)
		var partial []byte
		for {
			n, err := resp.Body.Read(buf)
			chunk := buf[:n]
			s.events.Add(int64(bytes.Count(chunk, []byte{'\n'})))
			if end := bytes.LastIndexByte(chunk, '\n'); end >= 0 {
				line := chunk[:end]
				if start := bytes.LastIndexByte(line, '\n'); start >= 0 {
					line = line[start+1:]
				} else {
					line = append(partial, line...)
				}
				if i := bytes.Index(line, revField); i >= 0 {
					rest := line[i+len(revField):]
					if j := bytes.IndexAny(rest, ",}"); j >= 0 {
						if rev, err := strconv.ParseUint(string(rest[:j]), 10, 64); err == nil {
							s.rev.Store(rev)
						}
					}
				}
				partial = append(partial[:0], chunk[end+1:]...)
			} else {
				partial = append(partial, chunk...)
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// BenchmarkChangeStream: a writer commits one replace per transaction
// while subs clients follow the table's change stream over loopback HTTP.
// ns/op is the time per commit with them attached (compare subs=0, no
// stream at all), which on a small machine includes the waits for the
// CPUs that delivery holds; writer-cpu-ns/op is the writer's own CPU time
// per commit (Linux), the write path's cost; total-cpu-ns/op is the
// whole process's, the streams and their clients included, until each
// has the last change; delivery-cpu-ns/event is the process's CPU time
// less the writer's per event delivered to a subscriber; delivered/s
// counts the events every subscriber got, per second of the whole run,
// catch-up included. Each subscriber must reach the writer's last revision.
func BenchmarkChangeStream(b *testing.B) {
	for _, subs := range []int{0, 1, 100} {
		b.Run(fmt.Sprintf("subs=%d", subs), func(b *testing.B) {
			db := strata.New()
			hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
			wtxn := db.WriteTxn(hosts)
			for i := range benchKeys {
				if _, _, err := hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("host-%04d", i), Zone: "eu"}); err != nil {
					b.Fatal(err)
				}
			}
			mustCommit(b, wtxn)
			h := New(db, Options{MaxStreams: 1000, RingSize: 1 << 16, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			srv := httptest.NewServer(h)
			defer func() {
				srv.CloseClientConnections()
				h.Close()
				srv.Close()
			}()
			rev := hosts.Revision(db.ReadTxn())
			var ss []*benchSubscriber
			for range subs {
				s := subscribe(b, srv.URL+"/v1/tables/hosts/changes?from="+strconv.FormatUint(rev, 10))
				ss = append(ss, s)
			}
			names := make([]string, benchKeys)
			for i := range names {
				names[i] = fmt.Sprintf("host-%04d", i)
			}
			b.ReportAllocs()
			// The writer's own CPU time, on its locked thread, is the
			// write path's cost without the waits for a CPU that the
			// streams (and, here, their clients) hold.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0, cpuOK := threadCPU()
			proc0, procOK := processCPU()
			start := time.Now()
			n := 0
			for b.Loop() {
				wtxn := db.WriteTxn(hosts)
				if _, _, err := hosts.Insert(wtxn, &Host{Name: names[n%benchKeys], Zone: "us"}); err != nil {
					b.Fatal(err)
				}
				if _, err := wtxn.Commit(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.StopTimer()
			cpu1, ok := threadCPU()
			cpuOK = cpuOK && ok
			if cpuOK {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "writer-cpu-ns/op")
			}
			last := hosts.Revision(db.ReadTxn())
			if last != rev+uint64(n) {
				b.Fatalf("revision %d after %d commits from %d", last, n, rev)
			}
			var delivered int64
			for _, s := range ss {
				for s.rev.Load() < last {
					select {
					case <-s.done:
						b.Fatalf("a stream ended at revision %d of %d (dropped: %d)", s.rev.Load(), last, h.Stats().Dropped)
					default:
						runtime.Gosched()
					}
				}
				delivered += s.events.Load()
			}
			// Every stream has the last change: the CPU time of the whole
			// process (writer, hub, streams and clients) per commit.
			if proc1, ok := processCPU(); ok && procOK {
				b.ReportMetric(float64((proc1-proc0).Nanoseconds())/float64(n), "total-cpu-ns/op")
				if cpuOK && delivered > 0 {
					// What is not the writer's, per event delivered.
					b.ReportMetric(float64((proc1-proc0-(cpu1-cpu0)).Nanoseconds())/float64(delivered), "delivery-cpu-ns/event")
				}
			}
			if subs > 0 {
				b.ReportMetric(float64(delivered)/time.Since(start).Seconds(), "delivered/s")
			}
			if d := h.Stats().Dropped; d != 0 {
				b.Fatalf("%d streams dropped", d)
			}
		})
	}
}

// BenchmarkBlockingReadWakeup: a client blocked in a read of one object
// (waitRev at the table's revision) over loopback HTTP; a writer replaces
// the object. wake-ns is the time from the commit to the client holding
// the new result; ns/op includes the request's setup.
func BenchmarkBlockingReadWakeup(b *testing.B) {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		b.Fatal(err)
	}
	mustCommit(b, wtxn)
	h := New(db, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	defer func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	}()
	client := srv.Client()
	var total time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		rev := hosts.Revision(db.ReadTxn())
		var wg sync.WaitGroup
		var got time.Time
		var gotRev string
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(srv.URL + "/v1/tables/hosts/object?key=a1&wait=1m&waitRev=" + strconv.FormatUint(rev, 10))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Error(err)
			}
			resp.Body.Close()
			got, gotRev = time.Now(), resp.Header.Get("Strata-Revision")
		}()
		for h.waiting.Load() == 0 {
			runtime.Gosched()
		}
		wtxn := db.WriteTxn(hosts)
		if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1", Zone: "eu", Up: n%2 == 0}); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		mustCommit(b, wtxn)
		wg.Wait()
		if gotRev != strconv.FormatUint(rev+1, 10) {
			b.Fatalf("woke with revision %q, want %d", gotRev, rev+1)
		}
		total += got.Sub(committed)
		n++
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "wake-ns")
}
