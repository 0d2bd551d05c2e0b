package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestCount: the count of every kind of query equals the number of
// objects /objects lists for it, with the index counted in and the
// table's revision; a count has no pages; a blocking count returns once a
// write changed it.
func TestCount(t *testing.T) {
	f := newFixture(t, Options{})
	rev := f.insert(t, sixHosts()...)
	raw := base64.RawURLEncoding.EncodeToString([]byte("b"))
	for _, tc := range []struct {
		query, index string
		want         int
	}{
		{"", "name", 6},
		{"?key=b2", "name", 1},
		{"?key=zz", "name", 0},
		{"?prefix=a", "name", 3},
		{"?lowerbound=a3", "name", 4},
		{"?from=a2&to=b2", "name", 3},
		{"?index=zone&key=us", "zone", 3},
		{"?index=zone&prefix=e", "zone", 3},
		{"?index=zone&from=eu&to=us", "zone", 3},
		{"?raw=1&prefix=" + raw, "name", 3},
	} {
		var c CountResult
		f.get(t, "/v1/tables/hosts/count"+tc.query).decode(t, http.StatusOK, &c)
		if c.Count != tc.want || c.Table != "hosts" || c.Index != tc.index || c.Revision != rev {
			t.Errorf("%s: %+v, want %d objects in index %q at revision %d", tc.query, c, tc.want, tc.index, rev)
		}
		var p Page
		f.get(t, "/v1/tables/hosts/objects"+tc.query).decode(t, http.StatusOK, &p)
		if len(p.Objects) != c.Count {
			t.Errorf("%s: counted %d, /objects lists %d", tc.query, c.Count, len(p.Objects))
		}
	}
	for _, q := range []string{"?limit=1", "?after=YQ", "?prefix=a&key=a1", "?from=a"} {
		f.get(t, "/v1/tables/hosts/count"+q).problem(t, http.StatusBadRequest, "httpapi.ErrBadRequest")
	}
	f.get(t, "/v1/tables/hosts/count?index=nope").problem(t, http.StatusNotFound, "strata.ErrIndexNotFound")
	f.get(t, "/v1/tables/nope/count").problem(t, http.StatusNotFound, "strata.ErrTableNotFound")

	// Blocking: the count of prefix a waits at rev, and returns the
	// count after a4 is inserted.
	done := make(chan CountResult, 1)
	go func() {
		var c CountResult
		resp, err := http.Get(f.srv.URL + fmt.Sprintf("/v1/tables/hosts/count?prefix=a&waitRev=%d&wait=10s", rev))
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				_ = json.NewDecoder(resp.Body).Decode(&c)
			}
			_ = resp.Body.Close()
		}
		done <- c
	}()
	select {
	case c := <-done:
		t.Fatalf("a blocking count returned before any write: %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
	rev2 := f.insert(t, &Host{Name: "a4", Zone: "eu"})
	select {
	case c := <-done:
		if c.Count != 4 || c.Revision != rev2 {
			t.Fatalf("the blocking count returned %+v, want 4 at revision %d", c, rev2)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocking count did not return after the write")
	}
}
