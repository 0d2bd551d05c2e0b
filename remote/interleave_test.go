package remote

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/internal/holdtest"
	"go.uber.org/goleak"
)

// The mirror's interleaving test (docs/interleavings.md): the mirror's
// goroutine stops at every hold point (hold.go); a seeded scheduler
// releases it step by step, and between steps commits writes on the
// server, restarts it, refuses requests (503), cuts connections and lets
// fake time pass, in a synctest bubble where the client reaches the
// server's handler through pipes. Then it checks that the mirror ends
// equal to the server's table.

var (
	mirrorSeeds = flag.Int("interleavings", 200, "how many seeds TestMirrorInterleavings runs")
	mirrorSeed  = flag.Int64("interleavings.seed", -1, "run TestMirrorInterleavings with this seed only")
)

// pipeTransport serves a client's requests with the current handler,
// through pipes rather than sockets, so that a synctest bubble holds both
// ends. It can refuse every request (gated), and cut the responses open.
type pipeTransport struct {
	mu    sync.Mutex
	h     http.Handler
	gated bool
	open  map[*io.PipeWriter]context.CancelFunc
}

func (p *pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	h, gated := p.h, p.gated
	p.mu.Unlock()
	if gated {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader("gated")), Request: req}, nil
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq := httptest.NewRequestWithContext(ctx, req.Method, req.URL.RequestURI(), req.Body)
	sreq.Header = req.Header.Clone()
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	p.mu.Lock()
	p.open[pw] = cancel
	p.mu.Unlock()
	go func() {
		defer cancel()
		h.ServeHTTP(w, sreq)
		w.WriteHeader(http.StatusOK)
		p.mu.Lock()
		delete(p.open, pw)
		p.mu.Unlock()
		pw.Close()
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.Close()
		cancel()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: w.status, Status: strconv.Itoa(w.status), Header: w.sent, Body: &pipeBody{pr, cancel}, Request: req}, nil
}

// cut breaks every response open, as a connection reset would.
func (p *pipeTransport) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pw, cancel := range p.open {
		pw.CloseWithError(errors.New("connection cut"))
		cancel()
		delete(p.open, pw)
	}
}

// pipeWriter is the handler's side of a pipeTransport's response.
type pipeWriter struct {
	header, sent http.Header
	status       int
	pw           *io.PipeWriter
	ready        chan struct{}
	once         sync.Once
}

func (w *pipeWriter) Header() http.Header { return w.header }
func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}
func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}
func (w *pipeWriter) Flush() {}

// pipeBody is the client's side: closing it ends the handler's request.
type pipeBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// mirrorRun is one seed's run.
type mirrorRun struct {
	t   *testing.T
	rng *rand.Rand
	tr  *pipeTransport
	// The server: its database and handler, replaced by a restart.
	db       *strata.DB
	hosts    strata.RWTable[*Host]
	h        *httpapi.Handler
	opts     httpapi.Options
	restarts int
	step     int
	// The mirror.
	local  *strata.DB
	lhosts strata.RWTable[*Host]
	m      *Mirror[*Host]
	// held is the mirror's goroutine held at a hold point, if it is.
	mu       sync.Mutex
	held     chan struct{}
	heldAt   hold
	free     bool
	listings int
	trace    []string
}

func (r *mirrorRun) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
}

// hook holds the mirror's goroutine, after checking what must hold at
// the point: the local table is initialized exactly from the first
// listing on, and changes are applied only after it.
func (r *mirrorRun) hook(p hold) {
	init, _ := r.lhosts.Initialized(r.local.ReadTxn())
	r.mu.Lock()
	switch p {
	case holdMirrorListing:
		if init != (r.listings > 0) {
			r.t.Errorf("listing %d: the local table's initialized is %v", r.listings+1, init)
		}
		r.listings++
	case holdMirrorCommit:
		if !init || r.listings == 0 {
			r.t.Errorf("changes applied before the first listing (initialized %v)", init)
		}
	}
	if r.free {
		r.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	r.held, r.heldAt = ch, p
	r.mu.Unlock()
	<-ch
}

// release lets the held goroutine go, and reports whether one was held.
func (r *mirrorRun) release() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		return false
	}
	r.trace = append(r.trace, r.heldAt.String())
	mirrorExplored.Add(r.heldAt.String())
	close(r.held)
	r.held = nil
	return true
}

// freeAll releases the goroutine and holds it no more.
func (r *mirrorRun) freeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.free = true
	if r.held != nil {
		close(r.held)
		r.held = nil
	}
}

// start makes the server's database, holding contents, and handler.
func (r *mirrorRun) start(contents map[string]Host) {
	r.db = strata.New()
	r.hosts = strata.MustNewTable(r.db, "hosts", hostByName, hostByZone)
	if len(contents) > 0 {
		wtxn := r.db.WriteTxn(r.hosts)
		for _, h := range contents {
			if _, _, err := r.hosts.Insert(wtxn, &h); err != nil {
				r.t.Fatal(err)
			}
		}
		mustCommit(r.t, wtxn)
	}
	r.h = httpapi.New(r.db, r.opts)
	r.tr.mu.Lock()
	r.tr.h = r.h
	r.tr.mu.Unlock()
}

func (r *mirrorRun) contents(db *strata.DB, t strata.RWTable[*Host]) map[string]Host {
	m := map[string]Host{}
	for h := range t.All(db.ReadTxn()) {
		m[h.Name] = *h
	}
	return m
}

// commit writes one host on the server: an upsert, or a delete of one
// that is there.
func (r *mirrorRun) commit() {
	name := []string{"a", "b", "c", "d", "e"}[r.rng.IntN(5)]
	wtxn := r.db.WriteTxn(r.hosts)
	if _, _, found := r.hosts.Get(wtxn, hostByName.Query(name)); found && r.rng.IntN(3) == 0 {
		if _, _, err := r.hosts.Delete(wtxn, &Host{Name: name}); err != nil {
			r.t.Fatal(err)
		}
		r.note("delete %s", name)
	} else {
		h := &Host{Name: name, Zone: []string{"eu", "us", "ap"}[r.rng.IntN(3)], Up: r.rng.IntN(2) == 0}
		if _, _, err := r.hosts.Insert(wtxn, h); err != nil {
			r.t.Fatal(err)
		}
		r.note("upsert %+v", *h)
	}
	mustCommit(r.t, wtxn)
}

// drain releases the mirror's goroutine until it is not held once every
// goroutine of the bubble is blocked.
func (r *mirrorRun) drain() {
	for {
		synctest.Wait()
		if !r.release() {
			return
		}
	}
}

func (r *mirrorRun) run() {
	t := r.t
	r.start(nil)
	for range 3 {
		r.commit()
	}
	c, err := New("http://strata", WithHTTPClient(&http.Client{Transport: r.tr}), WithLogger(quiet), WithBackoff(time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	c.hook = r.hook
	r.local = strata.New()
	r.lhosts = strata.MustNewTable(r.local, "hosts", hostByName, localUp)
	if r.m, err = NewMirror(NewTable[*Host](c, "hosts"), r.local, r.lhosts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- r.m.Run(ctx) }()

	steps := 40 + r.rng.IntN(60)
	for r.step = 0; r.step < steps; r.step++ {
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("Run returned early: %v", err)
		default:
		}
		switch n := r.rng.IntN(100); {
		case n < 45:
			r.release()
		case n < 70:
			r.commit()
		case n < 73:
			// A restart: a new instance, with the same objects at new
			// revisions; the connections to the old one break.
			r.restarts++
			r.note("restart")
			old := r.h
			r.start(r.contents(r.db, r.hosts))
			old.Close()
			r.tr.cut()
		case n < 78:
			r.tr.mu.Lock()
			r.tr.gated = !r.tr.gated
			r.note("gated %v", r.tr.gated)
			r.tr.mu.Unlock()
		case n < 83:
			r.note("cut")
			r.tr.cut()
		default:
			d := []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}[r.rng.IntN(4)]
			r.note("sleep %v", d)
			time.Sleep(d)
		}
	}

	// Quiet: the server serves, nothing is committed, time passes; the
	// mirror catches up, bookmarks and commits.
	r.tr.mu.Lock()
	r.tr.gated = false
	r.tr.mu.Unlock()
	r.note("quiet")
	for range 6 {
		r.drain()
		time.Sleep(r.opts.BookmarkInterval)
	}
	r.drain()
	want, got := r.contents(r.db, r.hosts), r.contents(r.local, r.lhosts)
	if !maps.Equal(got, want) {
		t.Errorf("the mirror holds %v, the server %v", got, want)
	}
	if rev, want := r.m.Revision(), r.hosts.Revision(r.db.ReadTxn()); rev != want {
		t.Errorf("the mirror is at revision %d, the server's table at %d", rev, want)
	}
	if init, _ := r.lhosts.Initialized(r.local.ReadTxn()); !init {
		t.Errorf("the local table is not initialized")
	}

	// Run returns nil when its context ends, held or not.
	cancel()
	r.freeAll()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v", err)
	}
	r.h.Close()
	c.CloseIdleConnections()
}

// TestMirrorInterleavings drives the mirror's hand-offs (hold.go) in many
// seeded orders, with writes, server restarts, refused requests, cut
// connections and a ring small enough to move past the mirror; and checks
// that the local table is initialized by the first listing and not
// before, that changes are applied only after it, that after a quiet time
// the mirror holds exactly the server's objects at the server's
// revision, that Run returns nil when its context ends, and that nothing
// leaks. -interleavings=N runs more seeds; -interleavings.seed=S one.
func TestMirrorInterleavings(t *testing.T) {
	seeds := holdtest.Seeds(*mirrorSeeds, *mirrorSeed)
	mirrorExplored.Reset()
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runMirror(t, seed) })
	}
	goleak.VerifyNone(t)
	t.Logf("%d seeds explored: %s", len(seeds), mirrorExplored)
	if len(seeds) < 50 {
		return
	}
	for p := holdConnect; p <= holdMirrorListing; p++ {
		if mirrorExplored.Count(p.String()) == 0 {
			t.Errorf("%d seeds never reached %v", len(seeds), p)
		}
	}
}

// mirrorExplored counts the releases at each hold point over the seeds.
var mirrorExplored = &holdtest.Coverage{}

func runMirror(t *testing.T, seed int64) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		r := &mirrorRun{t: t, rng: rng, tr: &pipeTransport{open: map[*io.PipeWriter]context.CancelFunc{}},
			opts: httpapi.Options{
				RingSize:         2 + rng.IntN(5),
				RingRetention:    20 * time.Millisecond,
				BookmarkInterval: 50 * time.Millisecond,
				StreamInterval:   5 * time.Millisecond,
				Logger:           quiet,
			}}
		defer func() {
			r.freeAll()
			r.tr.cut()
			if r.h != nil {
				r.h.Close()
			}
			if t.Failed() {
				r.mu.Lock()
				tr := r.trace
				r.mu.Unlock()
				t.Logf("seed %d, ring %d; schedule (last 80):\n%s", seed, r.opts.RingSize, strings.Join(tr[max(0, len(tr)-80):], "\n"))
			}
		}()
		r.run()
	})
}
