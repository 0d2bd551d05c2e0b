package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
)

// blockingRead serves target in a goroutine; the returned function waits
// for the response.
func blockingRead(ctx context.Context, h *Handler, target string) func() response {
	done := make(chan response, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", target, nil))
		done <- response{rec.Code, rec.Header(), rec.Body.Bytes()}
	}()
	return func() response { return <-done }
}

// synctestFixture is a fixture without a server, for synctest bubbles.
func synctestFixture(t *testing.T, opts Options) *fixture {
	f := &fixture{db: strata.New()}
	f.hosts = strata.MustNewTable(f.db, "hosts", hostByName, hostByZone)
	f.points = strata.MustNewTable(f.db, "points", pointByXY)
	f.h = New(f.db, opts)
	t.Cleanup(func() { f.h.Close() })
	return f
}

// TestBlockingRead: a read with waitRev at the table's revision waits on
// its query's watch channel: a change elsewhere in the table does not end
// it, a change of its result does, and it returns the new result.
func TestBlockingRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{})
		rev := f.insert(t, sixHosts()...)

		// Not at the table's revision (older, or from another history):
		// at once.
		for _, r := range []strata.Revision{rev - 1, rev + 100} {
			res := blockingRead(t.Context(), f.h, "/v1/tables/hosts/object?key=a1&waitRev="+itoa(r))()
			if res.status != 200 || res.header.Get("Strata-Revision") != itoa(rev) {
				t.Fatalf("waitRev %d: %d %v", r, res.status, res.header)
			}
		}

		wait := blockingRead(t.Context(), f.h, "/v1/tables/hosts/object?key=a1&waitRev="+itoa(rev)+"&wait=1m")
		synctest.Wait()
		if n := f.h.waiting.Load(); n != 1 {
			t.Fatalf("%d blocked reads, want 1", n)
		}
		f.insert(t, &Host{Name: "b2", Zone: "us", Up: true}) // another object
		synctest.Wait()
		if n := f.h.waiting.Load(); n != 1 {
			t.Fatal("a change to another object ended the wait on a1")
		}
		changed := f.insert(t, &Host{Name: "a1", Zone: "eu", Up: true})
		res := wait()
		var obj ObjectResult
		res.decode(t, 200, &obj)
		if obj.Revision != changed || obj.Object.Revision != changed || string(obj.Object.Object) != `{"Name":"a1","Zone":"eu","Up":true}` {
			t.Fatalf("woken read: %+v %s", obj, obj.Object.Object)
		}

		// A prefix read wakes when an object joins the prefix, and a read
		// of a missing object when it appears.
		rev = changed
		wait = blockingRead(t.Context(), f.h, "/v1/tables/hosts/objects?prefix=c&waitRev="+itoa(rev))
		waitObj := blockingRead(t.Context(), f.h, "/v1/tables/hosts/object?key=c7&waitRev="+itoa(rev))
		synctest.Wait()
		f.insert(t, &Host{Name: "c7", Zone: "ap"})
		var p Page
		wait().decode(t, 200, &p)
		if !slices.Equal(pageKeys(p), []string{"c7"}) || p.Revision != rev+1 {
			t.Fatalf("woken prefix read: %+v", p)
		}
		waitObj().decode(t, 200, &obj)
		if obj.Key != "c7" {
			t.Fatalf("woken read of a new object: %+v", obj)
		}
		if n := f.h.waiting.Load(); n != 0 {
			t.Fatalf("%d reads still blocked", n)
		}
	})
}

// TestBlockingReadTimeout: a wait that runs out returns the same result;
// wait is cut to MaxWait; without wait, MaxWait applies.
func TestBlockingReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{MaxWait: time.Minute})
		rev := f.insert(t, sixHosts()...)
		for _, tc := range []struct {
			wait string
			want time.Duration
		}{{"&wait=30s", 30 * time.Second}, {"&wait=2", 2 * time.Second}, {"&wait=1h", time.Minute}, {"", time.Minute}, {"&wait=0s", 0}} {
			start := time.Now()
			res := blockingRead(t.Context(), f.h, "/v1/tables/hosts/objects?index=zone&key=eu&waitRev="+itoa(rev)+tc.wait)()
			var p Page
			res.decode(t, 200, &p)
			if got := time.Since(start); got != tc.want || p.Revision != rev || len(p.Objects) != 3 {
				t.Fatalf("wait %q: returned after %v with %+v, want after %v", tc.wait, got, p, tc.want)
			}
		}
	})
}

// TestBlockingReadGone: a blocked read whose client goes away, or whose
// handler closes, returns at once and leaves nothing blocked.
func TestBlockingReadGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{})
		rev := f.insert(t, sixHosts()...)
		ctx, cancel := context.WithCancel(t.Context())
		wait := blockingRead(ctx, f.h, "/v1/tables/hosts/objects?waitRev="+itoa(rev))
		synctest.Wait()
		cancel()
		wait()
		if n := f.h.waiting.Load(); n != 0 {
			t.Fatalf("%d reads blocked after their client left", n)
		}
		wait = blockingRead(t.Context(), f.h, "/v1/tables/hosts/objects?waitRev="+itoa(rev))
		synctest.Wait()
		f.h.Close()
		wait().problem(t, http.StatusServiceUnavailable, "httpapi.ErrShuttingDown")
		// After Close, every request is refused.
		serve(f.h, "GET", "/v1/").problem(t, http.StatusServiceUnavailable, "httpapi.ErrShuttingDown")
	})
}

func itoa(n strata.Revision) string {
	b, _ := json.Marshal(n)
	return string(b)
}
