package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// keysOf returns the kinds and keys of events, as "upsert a1".
func keysOf(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Kind)+" "+ev.Key)
	}
	return out
}

// TestChangesFromZero: a stream from 0 lists the objects in key order,
// bookmarks the snapshot's revision, then sends each change, in NDJSON
// and in SSE with revisions as ids.
func TestChangesFromZero(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprint("sse=", sse), func(t *testing.T) {
			f := newFixture(t, Options{})
			rev := f.insert(t, sixHosts()...)
			er, resp := f.stream(t, "", sse)
			wantType := map[bool]string{false: "application/x-ndjson", true: "text/event-stream"}[sse]
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != wantType || resp.Header.Get("Strata-Revision") != itoa(rev) {
				t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
			}
			listed := er.until(EventBookmark, rev)
			if want := []string{"upsert a1", "upsert a2", "upsert a3", "upsert b1", "upsert b2", "upsert b3"}; !slices.Equal(keysOf(listed), want) {
				t.Fatalf("listed %v", keysOf(listed))
			}
			if sse && er.id != itoa(rev) {
				t.Fatalf("the bookmark's id is %q", er.id)
			}
			for _, ev := range listed {
				var h Host
				if err := json.Unmarshal(ev.Object, &h); err != nil || h.Name != ev.Key || ev.Revision == 0 {
					t.Fatalf("listed %+v: %v", ev, err)
				}
			}
			upd := f.insert(t, &Host{Name: "a2", Zone: "eu", Up: true}, &Host{Name: "c1", Zone: "ap"})
			del := f.remove(t, "b1")
			var got []Event
			for len(got) < 3 {
				ev, ok := er.next()
				if !ok {
					t.Fatalf("stream ended after %+v", got)
				}
				if ev.Kind != EventBookmark {
					got = append(got, ev)
				}
			}
			if want := []string{"upsert a2", "upsert c1", "delete b1"}; !slices.Equal(keysOf(got), want) {
				t.Fatalf("changes %v", keysOf(got))
			}
			if got[0].Revision != upd-1 || got[1].Revision != upd || got[2].Revision != del || string(got[0].Object) != `{"Name":"a2","Zone":"eu","Up":true}` {
				t.Fatalf("changes %+v", got)
			}
			if sse && er.id != itoa(del) {
				t.Fatalf("the last id is %q, want %d", er.id, del)
			}
		})
	}
}

// TestChangesResume: a stream from a revision the ring covers sends the
// changes after it, each object in its newest state last; Last-Event-ID
// takes the place of from, as a browser's reconnect sends it.
func TestChangesResume(t *testing.T) {
	f := newFixture(t, Options{})
	rev := f.insert(t, sixHosts()...)
	er, resp := f.stream(t, "", false)
	er.until(EventBookmark, rev)
	f.insert(t, &Host{Name: "a1", Zone: "eu", Up: true})
	mid := f.insert(t, &Host{Name: "a2", Zone: "eu", Up: true})
	er.until(EventUpsert, mid)
	resp.Body.Close()
	eventually(t, "the stream to end", func() bool { return f.h.Stats().Active == 0 })

	// Changes while no stream is open: the ring (kept for
	// RingRetention) still gets them.
	f.insert(t, &Host{Name: "a2", Zone: "eu", Note: "again"})
	f.remove(t, "b3")
	last := f.insert(t, &Host{Name: "c1", Zone: "ap"})

	for _, tc := range []struct {
		query  string
		sse    bool
		header []string
	}{
		{"?from=" + itoa(mid), false, nil},
		{"?from=0", true, []string{"Last-Event-ID", itoa(mid)}},
		{"?from=" + itoa(mid) + "&instance=" + f.h.Instance(), false, nil},
	} {
		er, _ := f.stream(t, tc.query, tc.sse, tc.header...)
		evs := er.until(EventBookmark, last)
		if want := []string{"upsert a2", "delete b3", "upsert c1"}; !slices.Equal(keysOf(evs), want) {
			t.Fatalf("%s %v: resumed with %v", tc.query, tc.header, keysOf(evs))
		}
		if !strings.Contains(string(evs[0].Object), "again") {
			t.Fatalf("a2 is not in its newest state: %s", evs[0].Object)
		}
	}
	// From the table's own revision: nothing to send but a bookmark
	// when something changes.
	er, _ = f.stream(t, "?from="+itoa(last), false)
	newer := f.insert(t, &Host{Name: "c2", Zone: "ap"})
	if evs := er.until(EventUpsert, newer); len(evs) != 0 {
		t.Fatalf("from the head: %v before c2", keysOf(evs))
	}
}

// TestChangesGone: 410 for a revision older than the ring, newer than the
// table, or of another instance of the handler.
func TestChangesGone(t *testing.T) {
	f := newFixture(t, Options{RingSize: 4})
	rev := f.insert(t, sixHosts()...)
	er, resp := f.stream(t, "", false)
	er.until(EventBookmark, rev)
	resp.Body.Close()
	// The ring outlives the stream, and takes the changes.
	var last strata.Revision
	for i := range 10 {
		last = f.insert(t, &Host{Name: fmt.Sprint("c", i)})
	}
	eventually(t, "the ring to take the changes", func() bool { return f.ringHead("hosts") == last })
	// The ring keeps the last 4 changes: resumes from the revision
	// before them are served, older ones are gone.
	er, _ = f.stream(t, "?from="+itoa(last-4), false)
	if evs := er.until(EventBookmark, last); len(evs) != 4 {
		t.Fatalf("from %d: %v", last-4, keysOf(evs))
	}
	for _, from := range []strata.Revision{last - 5, rev, 1, last + 1} {
		r := f.get(t, "/v1/tables/hosts/changes?from="+itoa(from))
		r.problem(t, http.StatusGone, "httpapi.ErrRevisionGone")
	}
	p := f.get(t, "/v1/tables/hosts/changes?instance=0123&from="+itoa(last)).problem(t, http.StatusGone, "httpapi.ErrRevisionGone")
	if !strings.Contains(p.Detail, "restarted") {
		t.Fatalf("problem %+v", p)
	}
	// From 0, another instance's name does not matter: it lists.
	if _, resp := f.stream(t, "?instance=0123", false); resp.StatusCode != 200 {
		t.Fatalf("from 0 with another instance: %d", resp.StatusCode)
	}
}

// ringHead returns the head of the ring of the table, 0 if none.
func (f *fixture) ringHead(table string) strata.Revision {
	f.h.mu.Lock()
	hb := f.h.hubs[table]
	f.h.mu.Unlock()
	if hb == nil {
		return 0
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.head
}

// TestChangesMaxStreams: streams beyond MaxStreams are refused with 503.
func TestChangesMaxStreams(t *testing.T) {
	f := newFixture(t, Options{MaxStreams: 1})
	rev := f.insert(t, sixHosts()...)
	er, _ := f.stream(t, "", false)
	er.until(EventBookmark, rev)
	r := f.get(t, "/v1/tables/hosts/changes")
	r.problem(t, http.StatusServiceUnavailable, "httpapi.ErrTooManyStreams")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
}

// TestChangesEncodeError: an object encoding/json refuses is an event
// with the error instead of the object.
func TestChangesEncodeError(t *testing.T) {
	db := strata.New()
	type bad struct {
		ID int
		J  failingJSON
	}
	tbl := strata.MustNewTable(db, "bad", strata.Index[*bad, int]{
		Name: "id", FromObject: func(b *bad) index.KeySet { return index.NewKeySet(index.Int(b.ID)) }, FromKey: index.Int, Unique: true,
	})
	h := New(db, Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.CloseClientConnections()
	resp, err := http.Get(srv.URL + "/v1/tables/bad/changes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	er := newEventReader(t, resp.Body, false)
	er.until(EventBookmark, 0)
	wtxn := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(wtxn, &bad{ID: 1, J: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Insert(wtxn, &bad{ID: 2}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	ev, _ := er.next()
	ev2, _ := er.next()
	if ev.Key != "1" || ev.Error == "" || string(ev.Object) != "null" || ev2.Key != "2" || ev2.Error != "" {
		t.Fatalf("events %+v, %+v", ev, ev2)
	}
}

// failingJSON fails to encode when true.
type failingJSON bool

func (j failingJSON) MarshalJSON() ([]byte, error) {
	if j {
		return nil, errors.New("refused")
	}
	return []byte("false"), nil
}

// fakeStream is a ResponseWriter for streams served in a synctest bubble.
// Writes block while it is stalled.
type fakeStream struct {
	header http.Header
	mu     sync.Mutex
	buf    bytes.Buffer
	stall  chan struct{} // nil: not stalled
}

func newFakeStream() *fakeStream { return &fakeStream{header: http.Header{}} }

func (s *fakeStream) Header() http.Header { return s.header }
func (s *fakeStream) WriteHeader(int)     {}
func (s *fakeStream) Flush()              {}
func (s *fakeStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	stall := s.stall
	s.mu.Unlock()
	if stall != nil {
		<-stall
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// setStalled stalls or releases the writer.
func (s *fakeStream) setStalled(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on && s.stall == nil {
		s.stall = make(chan struct{})
	} else if !on && s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
}

// events returns the events written so far.
func (s *fakeStream) events(t testing.TB) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []Event
	for line := range strings.SplitSeq(strings.TrimSpace(s.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// serveStream serves a stream of target into a fakeStream in a
// goroutine; the returned function waits for it to end.
func serveStream(ctx context.Context, h *Handler, target string) (*fakeStream, func()) {
	s := newFakeStream()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(s, httptest.NewRequestWithContext(ctx, "GET", target, nil))
	}()
	return s, func() { <-done }
}

// TestChangesBookmarks: a stream bookmarks its catch-up, then every
// BookmarkInterval, at the table's revision, even when its table does not
// change.
func TestChangesBookmarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{BookmarkInterval: 10 * time.Second})
		rev := f.insert(t, sixHosts()...)
		s, wait := serveStream(t.Context(), f.h, "/v1/tables/hosts/changes?from="+itoa(rev))
		synctest.Wait()
		start := time.Now()
		if evs := s.events(t); len(evs) != 0 {
			t.Fatalf("from the head: %+v before any change", evs)
		}
		time.Sleep(25 * time.Second)
		synctest.Wait()
		evs := s.events(t)
		if len(evs) != 2 || evs[0].Kind != EventBookmark || evs[0].Revision != rev || evs[1].Kind != EventBookmark || evs[1].Revision != rev {
			t.Fatalf("after %v: %+v", time.Since(start), evs)
		}
		next := f.insert(t, &Host{Name: "a1", Up: true})
		synctest.Wait()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		evs = s.events(t)
		if len(evs) != 4 || evs[2].Kind != EventUpsert || evs[3].Kind != EventBookmark || evs[3].Revision != next {
			t.Fatalf("after a change: %+v", evs)
		}
		f.h.Close()
		wait()
		if evs := s.events(t); evs[len(evs)-1].Kind != EventProblem || evs[len(evs)-1].Problem.Error != "httpapi.ErrShuttingDown" {
			t.Fatalf("a stream ended by Close: %+v", evs[len(evs)-1])
		}
	})
}

// TestChangesSlowConsumer: a stream that falls behind the ring (its writes
// stalled while more changes than the ring holds are committed) is ended
// with ErrSlowConsumer and counted; its client resumes or lists again.
func TestChangesSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{RingSize: 8})
		rev := f.insert(t, sixHosts()...)
		s, wait := serveStream(t.Context(), f.h, "/v1/tables/hosts/changes")
		synctest.Wait()
		if evs := s.events(t); len(evs) != 7 || evs[6].Kind != EventBookmark || evs[6].Revision != rev {
			t.Fatalf("listing: %+v", evs)
		}
		s.setStalled(true)
		f.insert(t, &Host{Name: "c0"})
		time.Sleep(3 * DefaultStreamInterval) // the hub's and the stream's pauses
		synctest.Wait()                       // the stream is stuck writing c0
		for i := range 20 {
			f.insert(t, &Host{Name: fmt.Sprint("d", i)})
		}
		time.Sleep(3 * DefaultStreamInterval)
		synctest.Wait()
		s.setStalled(false)
		wait()
		evs := s.events(t)
		last := evs[len(evs)-1]
		if last.Kind != EventProblem || last.Problem.Error != "httpapi.ErrSlowConsumer" || !slices.Contains(keysOf(evs), "upsert c0") {
			t.Fatalf("a stream that fell behind ended with %v", keysOf(evs[6:]))
		}
		if st := f.h.Stats(); st.Dropped != 1 || st.Active != 0 || st.Served != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestChangesWriteTimeout: a consumer that stops reading is dropped when
// a write blocks for WriteTimeout, and counted.
func TestChangesWriteTimeout(t *testing.T) {
	f := newFixture(t, Options{WriteTimeout: 100 * time.Millisecond})
	rev := f.insert(t, sixHosts()...)
	er, _ := f.stream(t, "", false)
	er.until(EventBookmark, rev) // then read nothing more
	// Objects of 64 KiB, kept in the ring until the stream has read
	// them, which it never does once the socket's buffers are full.
	note := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; f.h.Stats().Dropped == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d MiB later, the stream is still not dropped", i/16)
		}
		f.insert(t, &Host{Name: fmt.Sprint("n", i%128), Note: note})
		time.Sleep(100 * time.Microsecond)
	}
	eventually(t, "the dropped stream to end", func() bool { return f.h.Stats().Active == 0 })
}

// TestChangesClientGone: a client that goes away mid-stream ends the
// stream; the table's ring and its change feed go after RingRetention;
// nothing leaks.
func TestChangesClientGone(t *testing.T) {
	f := newFixture(t, Options{RingRetention: 20 * time.Millisecond})
	rev := f.insert(t, sixHosts()...)
	feeds := func() int { return strata.AnyTable{Meta: f.hosts}.FeedStats(f.db.ReadTxn()).Feeds }
	for range 3 {
		er, resp := f.stream(t, "", true)
		er.until(EventBookmark, rev)
		if feeds() != 1 {
			t.Fatalf("%d feeds with a stream open", feeds())
		}
		resp.Body.Close()
		eventually(t, "the stream to end", func() bool { return f.h.Stats().Active == 0 })
		eventually(t, "the ring to go", func() bool { return feeds() == 0 })
		f.h.mu.Lock()
		n := len(f.h.hubs)
		f.h.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d hubs after their retention", n)
		}
	}
	f.srv.CloseClientConnections()
	f.srv.Close()
	f.h.Close()
	goleak.VerifyNone(t)
}
