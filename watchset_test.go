package strata

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/index"
)

// The TestMain of the package (testobj_test.go) runs goleak: these tests
// also check that Wait leaves no goroutine behind.

func wsMakeChans(n int) []chan struct{} {
	chs := make([]chan struct{}, n)
	for i := range chs {
		chs[i] = make(chan struct{})
	}
	return chs
}

func wsRecv(chs []chan struct{}) []<-chan struct{} {
	out := make([]<-chan struct{}, len(chs))
	for i, ch := range chs {
		out[i] = ch
	}
	return out
}

// wsWaitBlocked waits until a Wait on ws is blocked in its select.
func wsWaitBlocked(t testing.TB, ws *WatchSet) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ws.mu.Lock()
		w := ws.waiting
		ws.mu.Unlock()
		if w {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("Wait did not block")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

type wsResult struct {
	chans []<-chan struct{}
	err   error
}

// wsWaitAsync runs Wait in a goroutine and returns its result channel once
// the Wait is blocked.
func wsWaitAsync(t testing.TB, ws *WatchSet, ctx context.Context, settle time.Duration) <-chan wsResult {
	t.Helper()
	res := make(chan wsResult, 1)
	go func() {
		chans, err := ws.Wait(ctx, settle)
		res <- wsResult{chans, err}
	}()
	wsWaitBlocked(t, ws)
	return res
}

// wsCheckIndex checks the invariants of ws's fields: chans, cases and the
// index agree, and every channel is found where it is.
func wsCheckIndex(t testing.TB, ws *WatchSet) {
	t.Helper()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.cases) == 0 && len(ws.chans) == 0 {
		return
	}
	if len(ws.cases) != wsCaseFirst+len(ws.chans) {
		t.Fatalf("%d cases for %d channels", len(ws.cases), len(ws.chans))
	}
	used := 0
	for _, s := range ws.pos.slots {
		if s != 0 {
			used++
		}
	}
	if used != len(ws.chans) || 2*used > len(ws.pos.slots) {
		t.Fatalf("%d of %d slots used for %d channels", used, len(ws.pos.slots), len(ws.chans))
	}
	for i, ch := range ws.chans {
		slot, ok := ws.pos.find(ws.chans, ch)
		if !ok || ws.pos.slots[slot] != int32(i)+1 {
			t.Fatalf("channel %d: find = %d, %v", i, slot, ok)
		}
		if c := ws.cases[wsCaseFirst+i]; c.Dir != reflect.SelectRecv || c.Chan.Interface() != any(ch) {
			t.Fatalf("case %d does not receive from channel %d", wsCaseFirst+i, i)
		}
	}
}

// wsCheck fails unless got holds exactly the channels of want, each once.
func wsCheck(t testing.TB, got []<-chan struct{}, want ...<-chan struct{}) {
	t.Helper()
	w := make(map[<-chan struct{}]bool, len(want))
	for _, ch := range want {
		w[ch] = true
	}
	seen := make(map[<-chan struct{}]bool, len(got))
	for _, ch := range got {
		if !w[ch] {
			t.Fatalf("Wait returned a channel it should not have (got %d, want %d)", len(got), len(want))
		}
		if seen[ch] {
			t.Fatalf("Wait returned a channel twice")
		}
		seen[ch] = true
	}
	if len(seen) != len(w) {
		t.Fatalf("Wait returned %d channels, want %d", len(seen), len(w))
	}
}

// TestWatchSet_Sizes closes the channels of sets of several sizes in a
// random order, one at a time or in bursts, before Wait or while it blocks,
// and checks that every Wait returns exactly the channels closed since the
// previous one and that the others stay in the set.
func TestWatchSet_Sizes(t *testing.T) {
	for _, n := range []int{1, 32, 1000, 10_000} {
		for _, mode := range []string{"one", "burst", "blocked"} {
			t.Run(fmt.Sprintf("n=%d/%s", n, mode), func(t *testing.T) {
				t.Parallel()
				testWatchSetSize(t, n, mode)
			})
		}
	}
}

func testWatchSetSize(t *testing.T, n int, mode string) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(mode))))
	chs := wsMakeChans(n)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs)...)
	ws.Add(wsRecv(chs[:n/2+1])...) // duplicates are stored once
	if got := ws.Len(); got != n {
		t.Fatalf("Len = %d after adding %d channels", got, n)
	}
	closed := make([]bool, n)
	returned := 0
	order := rng.Perm(n)
	for round := 0; len(order) > 0; round++ {
		// Blocking rounds select over the whole set: do a bounded number,
		// then close the rest in bursts. Likewise for one-at-a-time rounds
		// on the largest set.
		k := 1
		switch {
		case mode == "burst", mode == "blocked" && round >= 50, mode == "one" && round >= 2000:
			k = 1 + rng.IntN(min(len(order), 1+n/8))
		}
		burst := make([]<-chan struct{}, k)
		for i, j := range order[:k] {
			burst[i] = chs[j]
			closed[j] = true
		}
		var got []<-chan struct{}
		if k == 1 && mode == "blocked" {
			res := wsWaitAsync(t, ws, context.Background(), 0)
			close(chs[order[0]])
			r := <-res
			if r.err != nil {
				t.Fatal(r.err)
			}
			got = r.chans
		} else {
			for _, j := range order[:k] {
				close(chs[j])
			}
			var err error
			if got, err = ws.Wait(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
		}
		order = order[k:]
		wsCheck(t, got, burst...)
		returned += len(got)
		if ws.HasAny(got) {
			t.Fatal("a returned channel is still in the set")
		}
		if ws.Len() != n-returned {
			t.Fatalf("Len = %d, want %d", ws.Len(), n-returned)
		}
		if n <= 1000 || round%100 == 0 {
			wsCheckIndex(t, ws)
		}
		// The open channels stay: check a few at random.
		for range 4 {
			if j := rng.IntN(n); !closed[j] && !ws.Has(chs[j]) {
				t.Fatal("an open channel left the set")
			}
		}
	}
	wsCheckIndex(t, ws)
	if returned != n || ws.Len() != 0 {
		t.Fatalf("returned %d of %d channels, %d left", returned, n, ws.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := ws.Wait(ctx, 0); got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on the emptied set = %v, %v", got, err)
	}
}

// TestWatchSet_Churn adds and removes channels of a small set in random
// steps, so that the index wraps around and shifts entries back on
// removal, and checks the set after each step.
func TestWatchSet_Churn(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	ws := NewWatchSet()
	var open []chan struct{}
	for step := range 3000 {
		for range rng.IntN(6) {
			ch := make(chan struct{})
			open = append(open, ch)
			ws.Add(ch)
		}
		if len(open) > 0 {
			ws.Add(open[rng.IntN(len(open))]) // a duplicate
		}
		var closed []<-chan struct{}
		for k := rng.IntN(4); k > 0 && len(open) > 0; k-- {
			j := rng.IntN(len(open))
			close(open[j])
			closed = append(closed, open[j])
			open[j] = open[len(open)-1]
			open = open[:len(open)-1]
		}
		if len(closed) > 0 {
			got, err := ws.Wait(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			wsCheck(t, got, closed...)
		}
		if ws.Len() != len(open) {
			t.Fatalf("step %d: Len = %d, want %d", step, ws.Len(), len(open))
		}
		wsCheckIndex(t, ws)
		if step%500 == 499 {
			ws.Clear()
			open = open[:0]
		}
	}
}

// TestWatchSet_Settle runs in a synctest bubble: the closes come at the
// fake times the test says, inside or outside the settle time, however
// slow the machine.
func TestWatchSet_Settle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testWatchSetSettle)
}

func testWatchSetSettle(t *testing.T) {
	chs := wsMakeChans(10)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs)...)

	// Channels closed shortly after the first are collected.
	const settle = 300 * time.Millisecond
	t0 := time.Now()
	res := wsWaitAsync(t, ws, context.Background(), settle)
	close(chs[0])
	time.Sleep(20 * time.Millisecond)
	close(chs[1])
	close(chs[2])
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	wsCheck(t, r.chans, chs[0], chs[1], chs[2])
	if d := time.Since(t0); d < settle {
		t.Fatalf("Wait returned after %v, before the settle time %v", d, settle)
	}

	// Without settle time, only what is closed.
	close(chs[3])
	got, err := ws.Wait(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wsCheck(t, got, chs[3])

	// The settle time is waited even if the first channel was closed
	// before Wait, and channels added meanwhile count too.
	close(chs[4])
	late := make(chan struct{})
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(chs[5])
		close(late)
		ws.Add(late)
	}()
	t0 = time.Now()
	got, err = ws.Wait(context.Background(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wsCheck(t, got, chs[4], chs[5], late)
	if d := time.Since(t0); d != 100*time.Millisecond {
		t.Fatalf("Wait returned after %v, not at the end of the settle time", d)
	}

	// ctx ending during the settle time: what was collected, and ctx.Err().
	close(chs[6])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	got, err = ws.Wait(ctx, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	wsCheck(t, got, chs[6])
	if d := time.Since(t0); d != 30*time.Millisecond {
		t.Fatalf("Wait returned %v after it began, not when ctx ended (30ms)", d)
	}
	if ws.Len() != 3 {
		t.Fatalf("Len = %d, want 3", ws.Len())
	}
}

func TestWatchSet_Context(t *testing.T) {
	t.Parallel()
	// An empty set waits for ctx.
	var ws WatchSet  // the zero value works
	t0 := time.Now() // before the deadline is set, so it is at least 30ms after t0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	got, err := ws.Wait(ctx, time.Second)
	if got != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an empty set = %v, %v", got, err)
	}
	if d := time.Since(t0); d < 30*time.Millisecond {
		t.Fatalf("Wait on an empty set returned after %v, before ctx ended", d)
	}

	// A cancelled ctx, with open channels.
	chs := wsMakeChans(3)
	ws.Add(wsRecv(chs)...)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if got, err := ws.Wait(ctx, time.Second); got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled ctx = %v, %v", got, err)
	}

	// ctx cancelled while Wait blocks.
	ctx, cancel = context.WithCancel(context.Background())
	res := wsWaitAsync(t, &ws, ctx, 0)
	cancel()
	if r := <-res; r.chans != nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait cancelled while blocked = %v, %v", r.chans, r.err)
	}
	if ws.Len() != 3 {
		t.Fatalf("Len = %d after a cancelled Wait, want 3", ws.Len())
	}

	// With settle time zero, a closed channel is reported even if ctx is
	// done.
	close(chs[1])
	got, err = ws.Wait(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	wsCheck(t, got, chs[1])
}

func TestWatchSet_SetOps(t *testing.T) {
	t.Parallel()
	bidi := wsMakeChans(6)
	chs := wsRecv(bidi)
	a, b := NewWatchSet(), NewWatchSet()
	a.Add(chs[0], chs[1], chs[2], chs[0])
	b.Add(chs[2], chs[3])
	if a.Len() != 3 || b.Len() != 2 {
		t.Fatalf("Len = %d, %d; want 3, 2", a.Len(), b.Len())
	}
	if !a.Has(chs[1]) || a.Has(chs[3]) {
		t.Fatal("Has is wrong")
	}
	if a.HasAny(chs[3:]) || !a.HasAny(chs[2:4]) || a.HasAny(nil) {
		t.Fatal("HasAny is wrong")
	}
	a.Merge(b)
	a.Merge(a)
	a.Merge(nil)
	if a.Len() != 4 || !a.Has(chs[3]) || b.Len() != 2 {
		t.Fatalf("after Merge: Len = %d, %d; want 4, 2", a.Len(), b.Len())
	}
	var zero WatchSet
	zero.Merge(a)
	if zero.Len() != 4 {
		t.Fatalf("Merge into the zero value: Len = %d, want 4", zero.Len())
	}
	a.Clear()
	if a.Len() != 0 || a.HasAny(chs) {
		t.Fatal("Clear left channels")
	}
	// A cleared set is reused.
	a.Add(chs[4], chs[5])
	close(bidi[5])
	got, err := a.Wait(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wsCheck(t, got, chs[5])
	if !a.Has(chs[4]) || a.Len() != 1 {
		t.Fatal("the open channel left the set")
	}
}

// wsChans returns the channels of ws in the set's order.
func wsChans(ws *WatchSet) []<-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]<-chan struct{}(nil), ws.chans...)
}

// TestWatchSet_ChangeDuringWait checks Add, Merge and Clear while a Wait
// blocks: they do not wait for it, and it watches what they leave.
func TestWatchSet_ChangeDuringWait(t *testing.T) {
	t.Parallel()
	a, b := make(chan struct{}), make(chan struct{})
	ws := NewWatchSet()
	ws.Add(a)

	// A channel added during Wait is watched.
	res := wsWaitAsync(t, ws, context.Background(), 0)
	ws.Add(b)
	wsWaitBlocked(t, ws) // blocked again, now on a and b
	close(b)
	r := <-res
	wsCheck(t, r.chans, b)

	// An already closed channel added during Wait ends it.
	res = wsWaitAsync(t, ws, context.Background(), 0)
	c := make(chan struct{})
	close(c)
	other := NewWatchSet()
	other.Add(c)
	ws.Merge(other)
	r = <-res
	wsCheck(t, r.chans, c)

	// After Clear during Wait, the cleared channels no longer count.
	res = wsWaitAsync(t, ws, context.Background(), 0)
	ws.Clear()
	close(a)
	d := make(chan struct{})
	ws.Add(d)
	wsWaitBlocked(t, ws)
	close(d)
	r = <-res
	wsCheck(t, r.chans, d)
	if ws.Len() != 0 {
		t.Fatalf("Len = %d, want 0", ws.Len())
	}

	// An empty set waiting for ctx wakes for a channel added and closed.
	res = wsWaitAsync(t, ws, context.Background(), 0)
	e := make(chan struct{})
	ws.Add(e)
	close(e)
	r = <-res
	wsCheck(t, r.chans, e)
}

// TestWatchSet_ConcurrentWaits runs two Waits on one set: they take turns
// and between them return every closed channel exactly once.
func TestWatchSet_ConcurrentWaits(t *testing.T) {
	t.Parallel()
	const n = 200
	chs := wsMakeChans(n)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs)...)
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan []<-chan struct{}, n)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				got, err := ws.Wait(ctx, 0)
				if err != nil {
					return
				}
				results <- got
			}
		})
	}
	go func() {
		for i, j := range rand.Perm(n) {
			close(chs[j])
			if i%16 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var all []<-chan struct{}
	for len(all) < n {
		all = append(all, <-results...)
	}
	cancel()
	wg.Wait()
	wsCheck(t, all, wsRecv(chs)...)

	// A Wait queued behind another still sees its own ctx end.
	ws.Add(make(chan struct{}))
	res := wsWaitAsync(t, ws, context.Background(), 0)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if got, err := ws.Wait(ctx2, 0); got != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued Wait = %v, %v", got, err)
	}
	closed := make(chan struct{})
	close(closed)
	ws.Add(closed)
	wsCheck(t, (<-res).chans, closed)
}

// TestWatchSet_Stress runs Wait against concurrent Add, Merge, Clear, Has,
// HasAny and Len and closes, for the race detector.
func TestWatchSet_Stress(t *testing.T) {
	t.Parallel()
	ws := NewWatchSet()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { // the waiter
		for ctx.Err() == nil {
			wctx, wcancel := context.WithTimeout(ctx, time.Millisecond)
			got, _ := ws.Wait(wctx, time.Duration(rand.IntN(2))*time.Microsecond)
			wcancel()
			for _, ch := range got {
				select {
				case <-ch:
				default:
					t.Error("Wait returned an open channel")
					return
				}
			}
		}
	})
	for w := range 2 {
		wg.Go(func() { // adders and closers
			other := NewWatchSet()
			for i := 0; ctx.Err() == nil; i++ {
				chs := wsMakeChans(1 + rand.IntN(40))
				if i%2 == 0 {
					ws.Add(wsRecv(chs)...)
				} else {
					other.Clear()
					other.Add(wsRecv(chs)...)
					ws.Merge(other)
				}
				_ = ws.Has(chs[0]) && ws.HasAny(wsRecv(chs)) && ws.Len() > 0
				for _, j := range rand.Perm(len(chs))[:len(chs)/2] {
					close(chs[j])
				}
				if w == 1 && i%50 == 49 {
					ws.Clear()
				}
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	wsCheckIndex(t, ws)
}

// TestWatchSet_NoGoroutinePerChannel checks that a Wait on 10,000 open
// channels runs no goroutine but its own.
func TestWatchSet_NoGoroutinePerChannel(t *testing.T) {
	const n = 10_000
	chs := wsMakeChans(n)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs)...)
	before := runtime.NumGoroutine()
	res := wsWaitAsync(t, ws, context.Background(), 0)
	during := runtime.NumGoroutine()
	close(chs[n/2])
	wsCheck(t, (<-res).chans, chs[n/2])
	if grew := during - before; grew > 3 {
		t.Fatalf("a Wait on %d channels grew the goroutines by %d", n, grew)
	}
}

// TestWatchSet_Large waits on a set larger than one reflect.Select can
// take: one helper goroutine watches the second chunk.
func TestWatchSet_Large(t *testing.T) {
	const n = wsMaxSelectCases + 4000
	chs := wsMakeChans(n)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs)...)
	bidi := make(map[<-chan struct{}]chan struct{}, n)
	for _, ch := range chs {
		bidi[ch] = ch
	}
	in := wsChans(ws) // in the set's order, which decides the chunks
	if len(in) != n {
		t.Fatalf("Len = %d, want %d", len(in), n)
	}

	before := runtime.NumGoroutine()
	for _, pos := range []int{n - 1, wsMaxSelectCases - wsCaseFirst, 7, wsMaxSelectCases - wsCaseFirst - 1} {
		res := wsWaitAsync(t, ws, context.Background(), 0)
		if grew := runtime.NumGoroutine() - before; grew > 4 {
			t.Fatalf("a Wait on %d channels grew the goroutines by %d", n, grew)
		}
		ch := wsChans(ws)[pos]
		close(bidi[ch])
		wsCheck(t, (<-res).chans, ch)
	}

	// A burst, found without blocking.
	var burst []<-chan struct{}
	for _, j := range rand.Perm(len(in))[:500] {
		select {
		case <-in[j]:
		default:
			close(bidi[in[j]])
			burst = append(burst, in[j])
		}
	}
	got, err := ws.Wait(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wsCheck(t, got, burst...)

	// Cancelling stops the helper too.
	ctx, cancel := context.WithCancel(context.Background())
	res := wsWaitAsync(t, ws, ctx, 0)
	cancel()
	if r := <-res; !errors.Is(r.err, context.Canceled) || r.chans != nil {
		t.Fatalf("cancelled Wait = %v, %v", r.chans, r.err)
	}
	if want := n - 4 - len(burst); ws.Len() != want {
		t.Fatalf("Len = %d, want %d", ws.Len(), want)
	}
}

// TestWatchSet_Results checks that the results of successive Waits are
// independent slices, and that a Wait that finds a closed channel does not
// allocate.
func TestWatchSet_Results(t *testing.T) {
	chs := wsMakeChans(1024 + 400)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs[:1024])...)
	close(chs[0])
	r1, _ := ws.Wait(context.Background(), 0)
	close(chs[1])
	close(chs[2])
	r2, _ := ws.Wait(context.Background(), 0)
	if cap(r1) != len(r1) || cap(r2) != len(r2) {
		t.Fatal("a result's capacity exceeds its length")
	}
	wsCheck(t, r1, chs[0])
	wsCheck(t, r2, chs[1], chs[2])

	next := 3
	allocs := testing.AllocsPerRun(300, func() {
		close(chs[next])
		got, err := ws.Wait(context.Background(), 0)
		if err != nil || len(got) != 1 {
			t.Fatal("Wait did not return the closed channel")
		}
		ws.Add(chs[1024+next])
		next++
	})
	if allocs != 0 {
		t.Fatalf("Wait and Add allocated %v times per run", allocs)
	}
}

type wsHost struct {
	Name string
	Up   bool
}

var wsHostByName = Index[*wsHost, string]{
	Name:       "name",
	FromObject: func(h *wsHost) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// ExampleWatchSet shows a controller loop: read with a Watch method, put the
// channels in a WatchSet, wait, and re-read what the closed channels guard.
func ExampleWatchSet() {
	db := New()
	hosts := MustNewTable(db, "hosts", wsHostByName)
	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &wsHost{Name: "a"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(wtxn, &wsHost{Name: "b"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}

	// The controller reads the hosts, and watches them.
	ws := NewWatchSet()
	watching := map[<-chan struct{}]string{} // which host each channel guards
	read := func(name string) (up bool) {
		h, _, watch, _ := hosts.GetWatch(db.ReadTxn(), wsHostByName.Query(name))
		fmt.Printf("%s up: %v\n", name, h.Up)
		ws.Add(watch)
		watching[watch] = name
		return h.Up
	}
	down := 0
	for _, name := range []string{"a", "b"} {
		if !read(name) {
			down++
		}
	}

	// Somewhere else, the hosts come up, one after the other.
	go func() {
		for _, name := range []string{"a", "b"} {
			wtxn := db.WriteTxn(hosts)
			if _, _, err := hosts.Insert(wtxn, &wsHost{Name: name, Up: true}); err != nil {
				panic(err)
			}
			if _, err := wtxn.Commit(); err != nil {
				panic(err)
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for down > 0 {
		closed, err := ws.Wait(ctx, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		// One Wait may return the channels of both hosts, or of one:
		// re-read them in name order.
		var names []string
		for _, ch := range closed {
			names = append(names, watching[ch])
			delete(watching, ch)
		}
		slices.Sort(names)
		for _, name := range names {
			if read(name) {
				down--
			}
		}
	}
	// Output:
	// a up: false
	// b up: false
	// a up: true
	// b up: true
}

// BenchmarkWatchSet_Wait_1024 measures Wait on a set of 1024 channels with
// one of them closed, and the Add that keeps the size at 1024. The channels
// are made before the timer starts. bench/compare has the same benchmark for
// cilium/statedb's WatchSet.
func BenchmarkWatchSet_Wait_1024(b *testing.B) {
	const size = 1024
	chs := wsMakeChans(size + b.N)
	ws := NewWatchSet()
	ws.Add(wsRecv(chs[:size])...)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		close(chs[i])
		closed, err := ws.Wait(ctx, 0)
		if err != nil || len(closed) != 1 {
			b.Fatalf("Wait = %d channels, %v", len(closed), err)
		}
		ws.Add(chs[size+i])
	}
}

// BenchmarkWatchSet_Add_1024 measures Clear and Add of 1024 channels, in
// one call, to a set that held as many before. bench/compare has the same
// benchmark for cilium/statedb's WatchSet.
func BenchmarkWatchSet_Add_1024(b *testing.B) {
	chs := wsRecv(wsMakeChans(1024))
	ws := NewWatchSet()
	ws.Add(chs...) // grow the set once, outside the timed loop
	b.ReportAllocs()
	for b.Loop() {
		ws.Clear()
		ws.Add(chs...)
	}
}
