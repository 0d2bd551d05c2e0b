package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// TestDump: the dump is strata.WriteJSON of one snapshot, of every table
// or those named; an object that cannot be encoded aborts the response.
func TestDump(t *testing.T) {
	f := newFixture(t, Options{})
	f.insert(t, sixHosts()...)
	var all map[string][]json.RawMessage
	r := f.get(t, "/v1/dump")
	r.decode(t, http.StatusOK, &all)
	if len(all) != 2 || len(all["hosts"]) != 6 || len(all["points"]) != 0 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("dump: %s", r.body)
	}
	var some map[string][]Host
	f.get(t, "/v1/dump?table=hosts").decode(t, http.StatusOK, &some)
	if len(some) != 1 || some["hosts"][5].Name != "b3" {
		t.Fatalf("dump of hosts: %+v", some)
	}

	// A table of objects encoding/json refuses, after one it takes.
	type bad struct {
		ID int
		F  func() `json:"f"`
	}
	tbl := strata.MustNewTable(f.db, "bad", strata.Index[*bad, int]{
		Name: "id", FromObject: func(b *bad) index.KeySet { return index.NewKeySet(index.Int(b.ID)) }, FromKey: index.Int, Unique: true,
	})
	wtxn := f.db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(wtxn, &bad{ID: 1, F: func() {}}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	p := f.get(t, "/v1/dump?table=bad").problem(t, 500, "httpapi.ErrInternal")
	if !strings.Contains(p.Detail, "unsupported type") {
		t.Fatalf("problem %+v", p)
	}
	// After more than a buffer's worth of good objects, the response has
	// begun: it is cut short.
	wtxn = f.db.WriteTxn(f.hosts)
	for i := range 2000 {
		if _, _, err := f.hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("host-%04d", i), Zone: "eu", Note: strings.Repeat("n", 20)}); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, wtxn)
	resp, err := f.srv.Client().Get(f.srv.URL + "/v1/dump")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil || json.Valid(body) {
		t.Fatalf("a failed dump looks complete: %v, %q", err, body)
	}
}

// TestSnapshot: the download is what Options.Snapshot writes, of one
// snapshot, when allowed; without the option it is ErrNotConfigured; a
// failure before anything is written is a problem, and after, an aborted
// response.
func TestSnapshot(t *testing.T) {
	var fail error
	var failAfter bool
	f := newFixture(t, Options{
		Authorize: Allow(AccessSnapshot),
		Snapshot: func(w io.Writer, txn strata.ReadTxn) error {
			if fail != nil && !failAfter {
				return fail
			}
			if _, err := io.WriteString(w, strings.Repeat("S", 100<<10)); err != nil {
				return err
			}
			return fail
		},
	})
	r := f.get(t, "/v1/snapshot")
	if r.status != 200 || len(r.body) != 100<<10 || r.header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=\"strata-") {
		t.Fatalf("snapshot: %d, %d bytes, %v", r.status, len(r.body), r.header)
	}
	f.get(t, "/v1/snapshot?tables=x").problem(t, 400, "httpapi.ErrBadRequest")

	fail = errors.New("disk on fire")
	p := f.get(t, "/v1/snapshot").problem(t, 500, "httpapi.ErrInternal")
	if !strings.Contains(p.Detail, "disk on fire") {
		t.Fatalf("problem %+v", p)
	}
	failAfter = true
	resp, err := f.srv.Client().Get(f.srv.URL + "/v1/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a snapshot that failed half-way was served as complete")
	}

	g := newFixture(t, Options{Authorize: Allow(AccessSnapshot)})
	g.get(t, "/v1/snapshot").problem(t, 501, "httpapi.ErrNotConfigured")
}
