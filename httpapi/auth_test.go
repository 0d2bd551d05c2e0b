package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-db/strata"
)

// TestDefaultAuthorize: without Authorize, reads and watches are served,
// snapshots and writes refused, and a refused request changes nothing.
func TestDefaultAuthorize(t *testing.T) {
	f := newFixture(t, Options{Snapshot: func(w io.Writer, txn strata.ReadTxn) error {
		t.Error("the snapshot ran without authorization")
		return nil
	}})
	rev := f.insert(t, sixHosts()...)
	for _, path := range []string{"/v1/", "/v1/tables", "/v1/tables/hosts/objects", "/v1/tables/hosts/object?key=a1",
		"/v1/tables/hosts/objects?waitRev=1&wait=1s", "/v1/dump"} {
		if r := f.get(t, path); r.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	f.get(t, "/v1/snapshot").problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
	f.do(t, "POST", "/v1/tables/hosts/objects", strings.NewReader(`{"Name":"x"}`)).problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
	f.do(t, "DELETE", "/v1/tables/hosts/object?key=a1", nil).problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
	if got := f.hosts.Revision(f.db.ReadTxn()); got != rev {
		t.Fatalf("refused writes moved the table to revision %d", got)
	}
}

// TestAuthorize: the hook is asked for each request's access, with the
// request, and decides alone; Allow allows what it is given.
func TestAuthorize(t *testing.T) {
	var asked []Access
	f := newFixture(t, Options{
		Authorize: func(r *http.Request, a Access) error {
			asked = append(asked, a)
			if r.Header.Get("Authorization") != "Bearer ok" {
				return errors.New("no token")
			}
			return nil
		},
		Snapshot: func(w io.Writer, txn strata.ReadTxn) error { _, err := io.WriteString(w, "SNAP"); return err },
	})
	f.insert(t, sixHosts()...)
	p := f.get(t, "/v1/tables").problem(t, http.StatusForbidden, "httpapi.ErrForbidden")
	if !strings.Contains(p.Detail, "no token") {
		t.Fatalf("the hook's error is not in the detail: %+v", p)
	}
	auth := []string{"Authorization", "Bearer ok"}
	for _, tc := range []struct {
		method, path string
		body         string
		want         Access
	}{
		{"GET", "/v1/tables", "", AccessRead},
		{"GET", "/v1/tables/hosts/objects?waitRev=1", "", AccessWatch},
		{"GET", "/v1/tables/hosts/object?key=a1&waitRev=1", "", AccessWatch},
		{"GET", "/v1/snapshot", "", AccessSnapshot},
		{"POST", "/v1/tables/hosts/objects", `{"Name":"c1"}`, AccessWrite},
		{"DELETE", "/v1/tables/hosts/object?key=c1", "", AccessWrite},
	} {
		asked = nil
		r := f.do(t, tc.method, tc.path, strings.NewReader(tc.body), auth...)
		if r.status != http.StatusOK || len(asked) != 1 || asked[0] != tc.want {
			t.Errorf("%s %s: status %d (%s), asked %v, want %v", tc.method, tc.path, r.status, r.body, asked, tc.want)
		}
	}
	if r := f.get(t, "/v1/snapshot", auth...); string(r.body) != "SNAP" {
		t.Fatalf("snapshot body %q", r.body)
	}

	allow := Allow(AccessRead, AccessSnapshot)
	for a, want := range map[Access]bool{AccessRead: true, AccessSnapshot: true, AccessWatch: false, AccessWrite: false} {
		err := allow(nil, a)
		if (err == nil) != want || err != nil && !errors.Is(err, ErrForbidden) {
			t.Errorf("Allow(read, snapshot)(%v) = %v", a, err)
		}
	}
	if AccessWatch.String() != "watch" || Access(9).String() != "Access(9)" {
		t.Fatal("Access.String")
	}
}
