package httpapi

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/holdtest"
	"go.uber.org/goleak"
)

// The change hub's interleaving test (docs/interleavings.md): the
// handler's goroutines (hubs, streams, Close) stop at every hold point
// (hold.go); a seeded scheduler releases them one at a time, and between
// releases commits writes, opens, stalls and cancels streams, and lets
// fake time pass, all in a synctest bubble. Then it checks what the
// change streams promise.

var (
	interleavingSeeds = flag.Int("interleavings", 200, "how many seeds TestHubInterleavings runs")
	interleavingSeed  = flag.Int64("interleavings.seed", -1, "run TestHubInterleavings with this seed only")
)

// scheduler holds the goroutines that pass the handler's hold points, and
// releases them one at a time; who is the number of a stream (its
// Test-Sub header), -1 for the hubs and Close.
type scheduler = holdtest.Scheduler[hold]

// hook is the handler's hook: it holds the calling goroutine until the
// scheduler releases it.
func hookOf(s *scheduler) func(hold, *http.Request) {
	return func(p hold, r *http.Request) {
		who := -1
		if r != nil {
			who, _ = strconv.Atoi(r.Header.Get("Test-Sub"))
		}
		s.Hold(p, who)
	}
}

// explored counts, over the seeds run, the releases at each hold point
// and the outcomes of the streams, so that the test can tell it explored
// them all.
var explored = &holdtest.Coverage{}

// write is one committed change of the model: one object per commit.
type write struct {
	key string
	del bool
	obj Host // as written, or as it was (a delete)
}

// interleaving is one seed's run.
type interleaving struct {
	t     *testing.T
	rng   *rand.Rand
	sched *scheduler
	db    *strata.DB
	hosts strata.RWTable[*Host]
	h     *Handler
	// states is the table at each of its revisions; writes the change
	// committed at each revision after the first.
	states map[strata.Revision]map[string]Host
	writes map[strata.Revision]write
	revs   []strata.Revision
	subs   []*ilSub
	step   int
}

// ilSub is one change stream and its client.
type ilSub struct {
	id        int
	from      strata.Revision
	sse       bool
	s         *fakeStream
	cancel    context.CancelFunc
	done      chan struct{}
	cancelled bool
	stalled   bool
}

func (il *interleaving) last() strata.Revision { return il.revs[len(il.revs)-1] }

// commit writes one object: an upsert of one of a few hosts, or a delete
// of one that is there.
func (il *interleaving) commit() {
	names := []string{"a", "b", "c", "d", "e"}
	name := names[il.rng.IntN(len(names))]
	state := maps.Clone(il.states[il.last()])
	wtxn := il.db.WriteTxn(il.hosts)
	var w write
	if old, ok := state[name]; ok && il.rng.IntN(3) == 0 {
		if _, _, err := il.hosts.Delete(wtxn, &Host{Name: name}); err != nil {
			il.t.Fatal(err)
		}
		w = write{key: name, del: true, obj: old}
		delete(state, name)
	} else {
		obj := Host{Name: name, Zone: []string{"eu", "us", "ap"}[il.rng.IntN(3)], Up: il.rng.IntN(2) == 0, Note: strconv.Itoa(il.step)}
		if _, _, err := il.hosts.Insert(wtxn, &obj); err != nil {
			il.t.Fatal(err)
		}
		w = write{key: name, obj: obj}
		state[name] = obj
	}
	txn := mustCommit(il.t, wtxn)
	rev := il.hosts.Revision(txn)
	il.states[rev], il.writes[rev] = state, w
	il.revs = append(il.revs, rev)
	il.sched.Note("commit %d %+v", rev, w)
}

// open opens a change stream: from 0 (listing), from the table's
// revision, or from an older one (which the ring may no longer cover).
func (il *interleaving) open() {
	sub := &ilSub{id: len(il.subs), sse: il.rng.IntN(2) == 0, s: newFakeStream(), done: make(chan struct{})}
	switch il.rng.IntN(3) {
	case 0:
	case 1:
		sub.from = il.last()
	case 2:
		sub.from = il.revs[il.rng.IntN(len(il.revs))]
	}
	ctx, cancel := context.WithCancel(context.Background())
	sub.cancel = cancel
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/tables/hosts/changes?from="+itoa(sub.from), nil)
	req.Header.Set("Test-Sub", strconv.Itoa(sub.id))
	if sub.sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	il.subs = append(il.subs, sub)
	il.sched.Note("open %d from %d sse %v", sub.id, sub.from, sub.sse)
	go func() {
		defer close(sub.done)
		il.h.ServeHTTP(sub.s, req)
	}()
}

// drain releases held goroutines until none is held once every goroutine
// of the bubble is blocked.
func (il *interleaving) drain() {
	for {
		synctest.Wait()
		if !il.sched.Release(il.rng) {
			return
		}
	}
}

// run is one seed: a random schedule, then quiet time for every stream
// to catch up and bookmark, then Close; then the checks.
func (il *interleaving) run() {
	t := il.t
	il.revs = []strata.Revision{il.hosts.Revision(il.db.ReadTxn())}
	il.states[il.revs[0]] = map[string]Host{}
	for range 3 {
		il.commit()
	}
	steps := 40 + il.rng.IntN(60)
	for il.step = 0; il.step < steps; il.step++ {
		synctest.Wait()
		switch n := il.rng.IntN(100); {
		case n < 45:
			il.sched.Release(il.rng)
		case n < 65:
			il.commit()
		case n < 73:
			if len(il.subs) < 6 {
				il.open()
			}
		case n < 76:
			if len(il.subs) > 0 {
				sub := il.subs[il.rng.IntN(len(il.subs))]
				sub.cancelled = true
				sub.cancel()
				il.sched.Note("cancel %d", sub.id)
			}
		case n < 82:
			if len(il.subs) > 0 {
				sub := il.subs[il.rng.IntN(len(il.subs))]
				sub.stalled = !sub.stalled
				sub.s.setStalled(sub.stalled)
				il.sched.Note("stall %d %v", sub.id, sub.stalled)
			}
		default:
			d := []time.Duration{time.Millisecond, il.h.opts.StreamInterval, il.h.opts.RingRetention, il.h.opts.BookmarkInterval}[il.rng.IntN(4)]
			il.sched.Note("sleep %v", d)
			time.Sleep(d)
		}
	}

	// Quiet: the consumers take what they are sent, nothing is
	// committed, time passes; every stream still open catches up and
	// bookmarks the table's revision.
	for _, sub := range il.subs {
		sub.s.setStalled(false)
	}
	il.sched.Note("quiet")
	for range 4 {
		il.drain()
		time.Sleep(il.h.opts.BookmarkInterval)
	}
	il.drain()

	// Close ends every stream, and returns when the hubs are gone.
	il.sched.Note("close")
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		il.h.Close()
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		il.drain()
		select {
		case <-closed:
		default:
			if time.Now().After(deadline) {
				t.Fatalf("Close has not returned after a minute")
			}
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}
	il.h.mu.Lock()
	hubs := len(il.h.hubs)
	il.h.mu.Unlock()
	if feeds := (strata.AnyTable{Meta: il.hosts}).FeedStats(il.db.ReadTxn()).Feeds; hubs != 0 || feeds != 0 {
		t.Errorf("Close returned with %d hubs and %d change feeds left", hubs, feeds)
	}
	for _, sub := range il.subs {
		for {
			il.drain()
			select {
			case <-sub.done:
			default:
				if time.Now().After(deadline) {
					t.Fatalf("stream %d still open a minute after Close", sub.id)
				}
				time.Sleep(time.Millisecond)
				continue
			}
			break
		}
	}
	slow := 0
	for _, sub := range il.subs {
		if il.check(sub) {
			slow++
		}
	}
	if st := il.h.Stats(); st.Active != 0 || st.Dropped != uint64(slow) {
		t.Errorf("stats %+v after Close; %d streams were told they fell behind", st, slow)
	}
}

// check checks what sub received, and reports whether it was told it fell
// behind.
func (il *interleaving) check(sub *ilSub) (slow bool) {
	t := il.t
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("stream %d (from %d, sse %v, cancelled %v): %s\nreceived:\n%s", sub.id, sub.from, sub.sse, sub.cancelled, fmt.Sprintf(format, args...), sub.s.buf.String())
	}
	sub.s.mu.Lock()
	body := sub.s.buf.String()
	sub.s.mu.Unlock()
	if sub.s.header.Get("Content-Type") == "application/problem+json" {
		// Refused: only a start the ring does not cover may be.
		var p Problem
		if err := json.Unmarshal([]byte(body), &p); err != nil || p.Error != "httpapi.ErrRevisionGone" || sub.from == 0 {
			fail("refused: %s", body)
		}
		explored.Add("refused: revision gone")
		return false
	}
	var evs []Event
	er := newEventReader(t, strings.NewReader(body), sub.sse)
	for {
		ev, ok := er.next()
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	decode := func(ev Event) Host {
		var h Host
		if err := json.Unmarshal(ev.Object, &h); err != nil {
			fail("event %+v: %v", ev, err)
		}
		return h
	}
	replica := map[string]Host{}
	last := sub.from
	i := 0
	if sub.from == 0 {
		for ; i < len(evs) && evs[i].Kind == EventUpsert; i++ {
			replica[evs[i].Key] = decode(evs[i])
		}
		if i == len(evs) || evs[i].Kind != EventBookmark {
			fail("a listing not ended by a bookmark: %+v", evs)
			return false
		}
		last = evs[i].Revision
		if want := il.states[last]; !maps.Equal(replica, want) {
			fail("listing at %d: %v, want %v", last, replica, want)
		}
		i++
	} else {
		replica = maps.Clone(il.states[sub.from])
	}
	bookmarked := last
	var problem *Problem
	for ; i < len(evs); i++ {
		ev := evs[i]
		if problem != nil {
			fail("event %+v after the problem %s", ev, problem.Error)
			return false
		}
		switch ev.Kind {
		case EventUpsert, EventDelete:
			if ev.Revision <= last {
				fail("change at %d after %d: out of order, or twice", ev.Revision, last)
			}
			w, ok := il.writes[ev.Revision]
			if !ok || w.key != ev.Key || w.del != (ev.Kind == EventDelete) || decode(ev) != w.obj {
				fail("event %+v (%s), but revision %d wrote %+v", ev, ev.Object, ev.Revision, w)
			}
			if w.del {
				delete(replica, w.key)
			} else {
				replica[w.key] = w.obj
			}
			last = ev.Revision
		case EventBookmark:
			if ev.Revision < last {
				fail("bookmark at %d after %d", ev.Revision, last)
			}
			if want := il.states[ev.Revision]; !maps.Equal(replica, want) {
				fail("at the bookmark %d: %v, want %v (a change lost)", ev.Revision, replica, want)
			}
			last, bookmarked = ev.Revision, ev.Revision
		case EventProblem:
			problem = ev.Problem
		default:
			fail("event of kind %q", ev.Kind)
		}
	}
	switch {
	case problem == nil && !sub.cancelled:
		fail("ended without a problem event, its client still there")
	case problem == nil:
	case problem.Error == "httpapi.ErrSlowConsumer":
		explored.Add("ended: slow consumer")
		return true
	case problem.Error != "httpapi.ErrShuttingDown":
		fail("ended with %+v", problem)
	case !sub.cancelled && bookmarked != il.last():
		// Open through the quiet time before Close: it caught up.
		fail("last bookmark at %d before Close, the table at %d", bookmarked, il.last())
	default:
		explored.Add("ended: shutting down")
	}
	if sub.cancelled {
		explored.Add("ended: client gone")
	}
	return false
}

// TestHubInterleavings drives the change hub's hand-offs (hold.go) in
// many seeded orders, with writes, streams opened (listing, from the
// head, from an older revision), stalled, cancelled, hubs retiring and
// restarting, and Close; and checks that every stream receives every
// change after its start exactly once, in order (each bookmark finds its
// replica equal to the table at that revision), or is told it fell
// behind; that a stream open through the quiet time before Close
// bookmarks the table's last revision; that Close returns only when the
// hubs and their feeds are gone and ends every stream, telling it why;
// and that nothing leaks. -interleavings=N runs more seeds;
// -interleavings.seed=S one.
func TestHubInterleavings(t *testing.T) {
	seeds := holdtest.Seeds(*interleavingSeeds, *interleavingSeed)
	explored.Reset()
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runInterleaving(t, seed) })
	}
	goleak.VerifyNone(t)
	t.Logf("%d seeds explored: %s", len(seeds), explored)
	if len(seeds) < 50 {
		return
	}
	// Many seeds reach every hold point and every way a stream ends.
	want := []string{"refused: revision gone", "ended: slow consumer", "ended: shutting down", "ended: client gone"}
	for p := holdAttach; p <= holdCloseWait; p++ {
		want = append(want, p.String())
	}
	for _, w := range explored.Missing(want, 1) {
		t.Errorf("%d seeds never explored %q", len(seeds), w)
	}
}

// TestHubInterleavingsRegressions runs the seeds that found bugs, with
// the schedules TestHubInterleavings gives them:
//
//   - 10: a round that read the rest of a feed's batch raised the ring's
//     head to the revision of its own, newer snapshot, while the changes
//     after the batch were still to come: a stream bookmarked a revision
//     whose changes it did not have (and would have skipped any that
//     came later at or below it).
//   - 0: a round that stopped inside a batch raised head to its last
//     entry's revision, and a stream bookmarked max(head, its last
//     revision), while the rest of the batch held a newer change of an
//     object changed before (a delete at 7 that came as the delete at 12):
//     the bookmark at 8 was not the table at 8.
//   - 23: a fix that kept a round's extra change for the next round took
//     the next round for the rest of the batch when the batch had ended
//     with that change: head stayed below the streams' last change, and
//     they stopped bookmarking.
func TestHubInterleavingsRegressions(t *testing.T) {
	for _, seed := range []int64{10, 0, 23} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runInterleaving(t, seed) })
	}
}

// runInterleaving runs one seed in a synctest bubble.
func runInterleaving(t *testing.T, seed int64) {
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		opts := Options{
			RingSize:         2 + rng.IntN(7),
			RingRetention:    20 * time.Millisecond,
			BookmarkInterval: 50 * time.Millisecond,
			StreamInterval:   5 * time.Millisecond,
			Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		il := &interleaving{t: t, rng: rng, sched: &scheduler{Coverage: explored}, db: strata.New(),
			states: map[strata.Revision]map[string]Host{}, writes: map[strata.Revision]write{}}
		il.hosts = strata.MustNewTable(il.db, "hosts", hostByName, hostByZone)
		il.h = New(il.db, opts)
		il.h.hook = hookOf(il.sched)
		defer func() {
			// A run that failed half-way lets everything go, so that the
			// bubble ends and the next seed runs.
			il.sched.FreeAll()
			for _, sub := range il.subs {
				sub.cancel()
				sub.s.setStalled(false)
			}
			il.h.Close()
			for _, sub := range il.subs {
				<-sub.done
			}
			if t.Failed() {
				tr := strings.Split(il.sched.History(), "\n")
				t.Logf("seed %d, ring %d; schedule (last 80):\n%s", seed, opts.RingSize, strings.Join(tr[max(0, len(tr)-80):], "\n"))
			}
		}()
		il.run()
	})
}
