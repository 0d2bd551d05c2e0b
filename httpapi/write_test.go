package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// TestWrites: inserts of one object or many (NDJSON) in one transaction,
// through the handler's own database handle; a bad object, or one that
// breaks a constraint, writes nothing; deletes by primary key.
func TestWrites(t *testing.T) {
	f := newFixture(t, Options{Authorize: Allow(AccessRead, AccessWrite), MaxBodyBytes: 1 << 20})
	f.insert(t, sixHosts()...)
	var res WriteResult
	f.do(t, "POST", "/v1/tables/hosts/objects", strings.NewReader(`{"Name":"c1","Zone":"ap"}`)).decode(t, http.StatusOK, &res)
	if res.Inserted != 1 || res.Revision != 7 {
		t.Fatalf("insert: %+v", res)
	}
	f.do(t, "POST", "/v1/tables/hosts/objects", strings.NewReader("{\"Name\":\"c2\",\"Zone\":\"ap\"}\n{\"Name\":\"c3\",\"Zone\":\"ap\"}\n")).decode(t, http.StatusOK, &res)
	if res.Inserted != 2 || res.Revision != 9 {
		t.Fatalf("insert of two: %+v", res)
	}
	txn := f.db.ReadTxn()
	if h, _, found := f.hosts.Get(txn, hostByName.Query("c3")); !found || h.Zone != "ap" {
		t.Fatalf("c3 not written: %+v", h)
	}
	if w := f.hosts.LastWriter(txn); w != "httpapi" {
		t.Fatalf("LastWriter %q", w)
	}

	for _, tc := range []struct {
		body   string
		status int
		name   string
	}{
		{`{"Name":"d1"}` + "\n" + `{"Name":`, 400, "httpapi.ErrBadRequest"},
		{`{"Name":"d1"}` + "\n" + `{"Name":7}`, 400, "httpapi.ErrBadRequest"},
		{`[]`, 400, "httpapi.ErrBadRequest"},
		{``, 400, "httpapi.ErrBadRequest"},
		{strings.Repeat(" ", 2<<20), 400, "httpapi.ErrBadRequest"},
	} {
		f.do(t, "POST", "/v1/tables/hosts/objects", strings.NewReader(tc.body)).problem(t, tc.status, tc.name)
	}
	f.do(t, "POST", "/v1/tables/nope/objects", strings.NewReader(`{}`)).problem(t, 404, "strata.ErrTableNotFound")
	f.do(t, "POST", "/v1/tables/hosts/objects?x=1", strings.NewReader(`{}`)).problem(t, 400, "httpapi.ErrBadRequest")
	if n := f.hosts.NumObjects(f.db.ReadTxn()); n != 9 {
		t.Fatalf("refused inserts wrote: %d objects", n)
	}

	f.do(t, "DELETE", "/v1/tables/hosts/object?key=c2", nil).decode(t, http.StatusOK, &res)
	if res.Deleted != 1 || res.Revision != 10 {
		t.Fatalf("delete: %+v", res)
	}
	f.do(t, "DELETE", "/v1/tables/hosts/object?key=c2", nil).problem(t, 404, "strata.ErrObjectNotFound")
	f.do(t, "DELETE", "/v1/tables/hosts/object?index=zone&key=ap", nil).problem(t, 400, "httpapi.ErrBadRequest")
	f.do(t, "DELETE", "/v1/tables/hosts/object", nil).problem(t, 400, "httpapi.ErrBadRequest")
	if _, _, found := f.hosts.Get(f.db.ReadTxn(), hostByName.Query("c2")); found {
		t.Fatal("c2 not deleted")
	}
}

// TestWriteUniqueConstraint: an insert that breaks a unique index is 409
// naming strata.ErrUniqueConstraint, and the batch it was in writes
// nothing.
func TestWriteUniqueConstraint(t *testing.T) {
	db := strata.New()
	// Hosts by zone, with the name unique as a secondary index.
	byZone := strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
		Unique:     true,
	}
	byName := hostByName
	byName.Name = "hostname"
	tbl := strata.MustNewTable(db, "zones", byZone, byName)
	h := New(db, Options{Authorize: Allow(AccessWrite)})
	defer h.Close()
	body := `{"Name":"a","Zone":"eu"}` + "\n" + `{"Name":"b","Zone":"us"}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tables/zones/objects", strings.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("insert: %d %s", rec.Code, rec.Body)
	}
	body = `{"Name":"c","Zone":"ap"}` + "\n" + `{"Name":"a","Zone":"sa"}`
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/tables/zones/objects", strings.NewReader(body)))
	response{rec.Code, rec.Header(), rec.Body.Bytes()}.problem(t, http.StatusConflict, "strata.ErrUniqueConstraint")
	if n := tbl.NumObjects(db.ReadTxn()); n != 2 {
		t.Fatalf("a refused batch wrote: %d objects", n)
	}
}
