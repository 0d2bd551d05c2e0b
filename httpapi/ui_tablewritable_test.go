package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Route implements strata.TableWritable: its columns are not its JSON
// fields. A Route whose Dst is "bad" gives a row of the wrong width.
type Route struct {
	ID  int    `json:"id"`
	Dst string `json:"dst"`
	Via string `json:"via"`
}

func (*Route) TableHeader() []string { return []string{"Destination", "Next hop"} }

func (r *Route) TableRow() []string {
	if r.Dst == "bad" {
		return []string{"bad"}
	}
	return []string{r.Dst, "via " + r.Via}
}

func newRoutes(t *testing.T, db *strata.DB, routes ...*Route) strata.RWTable[*Route] {
	t.Helper()
	tbl := strata.MustNewTable(db, "routes", strata.Index[*Route, int]{
		Name:       "id",
		FromObject: func(r *Route) index.KeySet { return index.KeySetOf(index.Int(r.ID)) },
		FromKey:    index.Int,
		Unique:     true,
	})
	wtxn := db.WriteTxn(tbl)
	for _, r := range routes {
		if _, _, err := tbl.Insert(wtxn, r); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, wtxn)
	return tbl
}

// TestUITableTableWritable: a table page of objects that implement
// strata.TableWritable shows their TableHeader as its columns and each
// object's TableRow as its cells (statedb's convention, which the db/...
// script commands follow too), not their JSON fields; a TableRow of
// another width shows as a note; the change stream's events carry the
// row, which live mode shows.
func TestUITableTableWritable(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	f.insert(t, sixHosts()...)
	newRoutes(t, f.db, &Route{ID: 1, Dst: "10.0.0.0/8", Via: "r1"}, &Route{ID: 2, Dst: "bad"})
	v := viewTable(t, f, "/ui/table?table=routes")
	if want := []string{"key", "revision", "Destination", "Next hop"}; v.status != 200 || !slices.Equal(v.header, want) {
		t.Fatalf("status %d, header %q, want %q", v.status, v.header, want)
	}
	if len(v.rows) != 2 || v.jsonRows != 2 {
		t.Fatalf("rows %q, %d JSON rows", v.rows, v.jsonRows)
	}
	if got := v.rows[0][2:]; !slices.Equal(got, []string{"10.0.0.0/8", "via r1"}) {
		t.Errorf("row 1: %q, want its TableRow", got)
	}
	if got := v.rows[1][2:]; !slices.Equal(got, []string{"(TableRow returned 1 columns, want 2 from TableHeader)", ""}) {
		t.Errorf("row 2: %q, want the note", got)
	}
	// Objects without TableWritable keep the derived columns.
	if v := viewTable(t, f, "/ui/table?table=hosts"); len(v.header) < 3 || v.header[2] != "Name" {
		t.Errorf("hosts: header %q, want the JSON fields", v.header)
	}
}

// TestChangesRow: a change stream's event of a TableWritable object has
// its row; others have none.
func TestChangesRow(t *testing.T) {
	db := strata.New()
	newRoutes(t, db, &Route{ID: 1, Dst: "10.0.0.0/8", Via: "r1"})
	other := strata.MustNewTable(db, "words", strata.Index[string, string]{
		Name: "w", FromObject: func(s string) index.KeySet { return index.KeySetOf(index.String(s)) }, FromKey: index.String, Unique: true,
	})
	wtxn := db.WriteTxn(other)
	if _, _, err := other.Insert(wtxn, "hello"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	h := New(db, Options{})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.CloseClientConnections()
	for table, want := range map[string][]string{"routes": {"10.0.0.0/8", "via r1"}, "words": nil} {
		resp, err := http.Get(srv.URL + "/v1/tables/" + table + "/changes")
		if err != nil {
			t.Fatal(err)
		}
		er := newEventReader(t, resp.Body, false)
		ev, ok := er.next()
		if !ok || ev.Kind != EventUpsert || !slices.Equal(ev.Row, want) {
			t.Errorf("%s: first event %+v, want an upsert with row %q", table, ev, want)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A change, not only the listing, carries it (the hub's encoding).
	resp, err := http.Get(srv.URL + "/v1/tables/routes/changes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	routes, err := db.AnyTable("routes")
	if err != nil {
		t.Fatal(err)
	}
	er := newEventReader(t, resp.Body, false)
	er.until(EventBookmark, routes.Revision(db.ReadTxn()))
	wtxn = db.WriteTxn(routes.Meta)
	if _, _, err := routes.Insert(wtxn, &Route{ID: 2, Dst: "10.1.0.0/16", Via: "r2"}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	ev, ok := er.next()
	if !ok || ev.Key != "2" || !slices.Equal(ev.Row, []string{"10.1.0.0/16", "via r2"}) {
		t.Errorf("change %+v, want its row", ev)
	}
}
