package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// TestSummary: the summary and the table descriptions say what the
// database holds: counts, revisions, indexes, initializers, feeds,
// graveyard, last writer.
func TestSummary(t *testing.T) {
	f := newFixture(t, Options{})
	rev := f.insert(t, sixHosts()...)
	wtxn := f.db.NewHandle("loader").WriteTxn(f.points)
	f.points.RegisterInitializer(wtxn, "points-loader")
	if _, _, err := f.points.Insert(wtxn, &Point{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}

	var s Summary
	f.get(t, "/v1/").decode(t, http.StatusOK, &s)
	if s.Instance != f.h.Instance() || s.Commits != 2 || len(s.Tables) != 2 {
		t.Fatalf("summary %+v", s)
	}
	hosts, points := s.Tables[0], s.Tables[1]
	if hosts.Name != "hosts" || hosts.Objects != 6 || hosts.Revision != rev || !hosts.Initialized ||
		hosts.LastWriter != "db" || hosts.ObjectType != "*httpapi.Host" {
		t.Fatalf("hosts %+v", hosts)
	}
	wantIx := []IndexInfo{{Name: "name", Primary: true, Unique: true, KeyType: "string", Text: true}, {Name: "zone", KeyType: "string", Text: true}}
	if !slices.Equal(hosts.Indexes, wantIx) {
		t.Fatalf("hosts indexes %+v", hosts.Indexes)
	}
	if points.Initialized || !slices.Equal(points.PendingInitializers, []string{"points-loader"}) ||
		points.LastWriter != "loader" || points.Indexes[0].Text {
		t.Fatalf("points %+v", points)
	}

	var tables []TableInfo
	f.get(t, "/v1/tables").decode(t, http.StatusOK, &tables)
	if len(tables) != 2 || tables[0].Name != "hosts" {
		t.Fatalf("tables %+v", tables)
	}
	var one TableInfo
	r := f.get(t, "/v1/tables/points")
	r.decode(t, http.StatusOK, &one)
	if one.Name != "points" || r.header.Get("Strata-Revision") != "1" || r.header.Get("Strata-Instance") != f.h.Instance() {
		t.Fatalf("points %+v, headers %v", one, r.header)
	}

	// An open change stream shows as the table's feed.
	er, _ := f.stream(t, "", false)
	er.until(EventBookmark, rev)
	f.get(t, "/v1/tables/hosts").decode(t, http.StatusOK, &one)
	if one.ChangeFeeds != 1 {
		t.Fatalf("hosts with a stream open: %d feeds", one.ChangeFeeds)
	}
	f.get(t, "/v1/").decode(t, http.StatusOK, &s)
	if s.Streams.Active != 1 || s.Streams.Served != 1 {
		t.Fatalf("streams %+v", s.Streams)
	}
}

// TestObjects: every query op on the primary and a secondary index, with
// text and raw keys, in key order.
func TestObjects(t *testing.T) {
	f := newFixture(t, Options{})
	rev := f.insert(t, sixHosts()...)
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"a1", "a2", "a3", "b1", "b2", "b3"}},
		{"?key=b2", []string{"b2"}},
		{"?key=zz", []string{}},
		{"?prefix=a", []string{"a1", "a2", "a3"}},
		{"?lowerbound=a3", []string{"a3", "b1", "b2", "b3"}},
		{"?from=a2&to=b2", []string{"a2", "a3", "b1"}},
		{"?index=name&key=a1", []string{"a1"}},
		{"?index=zone&key=us", []string{"b1", "b2", "b3"}},
		{"?index=zone&prefix=e", []string{"a1", "a2", "a3"}},
		{"?index=zone&lowerbound=f", []string{"b1", "b2", "b3"}},
		{"?index=zone&from=eu&to=us", []string{"a1", "a2", "a3"}},
		{"?index=zone", []string{"a1", "a2", "a3", "b1", "b2", "b3"}},
		{"?raw=1&key=" + raw("b3"), []string{"b3"}},
		{"?raw=true&prefix=" + raw("b"), []string{"b1", "b2", "b3"}},
		{"?raw=1&index=zone&key=" + raw("eu") + "==", []string{"a1", "a2", "a3"}}, // padding is accepted
		{"?raw=1&from=" + raw("a") + "&to=" + raw("b"), []string{"a1", "a2", "a3"}},
	} {
		var p Page
		r := f.get(t, "/v1/tables/hosts/objects"+tc.query)
		r.decode(t, http.StatusOK, &p)
		if got := pageKeys(p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys %v, want %v", tc.query, got, tc.want)
		}
		if p.Table != "hosts" || p.Revision != rev || p.Next != "" || r.header.Get("Strata-Revision") != "6" {
			t.Errorf("%s: page %+v, revision header %q", tc.query, p, r.header.Get("Strata-Revision"))
		}
		for _, o := range p.Objects {
			var h Host
			if err := json.Unmarshal(o.Object, &h); err != nil || h.Name != o.Key || o.Revision == 0 {
				t.Errorf("%s: object %+v: %v", tc.query, o, err)
			}
		}
	}

	// A table whose primary index takes raw keys only.
	wtxn := f.db.WriteTxn(f.points)
	for _, p := range []*Point{{1, 2}, {-1, 5}, {3, 0}} {
		if _, _, err := f.points.Insert(wtxn, p); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, wtxn)
	var p Page
	f.get(t, "/v1/tables/points/objects?raw=1&lowerbound="+base64.RawURLEncoding.EncodeToString(pointByXY.FromKey(pointKey{1, 0}))).decode(t, http.StatusOK, &p)
	var xs []int32
	for _, o := range p.Objects {
		var pt Point
		if err := json.Unmarshal(o.Object, &pt); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, pt.X)
	}
	if !slices.Equal(xs, []int32{1, 3}) {
		t.Fatalf("points from (1, 0): %v", xs)
	}
}

// TestObjectsPages: limit cuts a result into pages that after= reads one
// by one, also on a non-unique index and across a write in between.
func TestObjectsPages(t *testing.T) {
	f := newFixture(t, Options{})
	f.insert(t, sixHosts()...)
	for _, tc := range []struct {
		query string
		limit int
		want  []string
	}{
		{"", 4, []string{"a1", "a2", "a3", "b1", "b2", "b3"}},
		{"?index=zone", 2, []string{"a1", "a2", "a3", "b1", "b2", "b3"}},
		{"?index=zone&key=us", 1, []string{"b1", "b2", "b3"}},
		{"?prefix=b", 3, []string{"b1", "b2", "b3"}},
	} {
		var got []string
		pages := 0
		after := ""
		for {
			q := tc.query
			if q == "" {
				q = "?"
			} else {
				q += "&"
			}
			q += "limit=" + strconv.Itoa(tc.limit)
			if after != "" {
				q += "&after=" + after
			}
			var p Page
			f.get(t, "/v1/tables/hosts/objects"+q).decode(t, http.StatusOK, &p)
			pages++
			if len(p.Objects) > tc.limit {
				t.Fatalf("%s: %d objects on a page of %d", q, len(p.Objects), tc.limit)
			}
			got = append(got, pageKeys(p)...)
			if pages == 1 {
				// A write between pages, before the cursor: the pages
				// after go on where the first stopped.
				f.insert(t, &Host{Name: "a0", Zone: "eu"})
			}
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s by %d: %v, want %v", tc.query, tc.limit, got, tc.want)
		}
		if want := (len(tc.want) + tc.limit - 1) / tc.limit; pages != want && pages != want+1 {
			t.Errorf("%s by %d: %d pages", tc.query, tc.limit, pages)
		}
		f.remove(t, "a0")
	}
}

// TestObject: one object by a key of any index, and ErrObjectNotFound.
func TestObject(t *testing.T) {
	f := newFixture(t, Options{})
	rev := f.insert(t, sixHosts()...)
	var res ObjectResult
	f.get(t, "/v1/tables/hosts/object?key=a2").decode(t, http.StatusOK, &res)
	if res.Table != "hosts" || res.Revision != rev || res.Key != "a2" || res.Object.Revision != 2 {
		t.Fatalf("a2: %+v", res)
	}
	f.get(t, "/v1/tables/hosts/object?index=zone&key=us").decode(t, http.StatusOK, &res)
	if res.Key != "b1" {
		t.Fatalf("first of zone us: %+v", res)
	}
	f.get(t, "/v1/tables/hosts/object?raw=1&key="+base64.RawURLEncoding.EncodeToString([]byte("b3"))).decode(t, http.StatusOK, &res)
	if res.Key != "b3" {
		t.Fatalf("raw b3: %+v", res)
	}
	r := f.get(t, "/v1/tables/hosts/object?key=zz")
	r.problem(t, http.StatusNotFound, "strata.ErrObjectNotFound")
	if r.header.Get("Strata-Revision") != "6" {
		t.Fatalf("a miss names no revision: %v", r.header)
	}
}

// TestBadRequests: every malformed request is a problem document naming
// the error, and reads nothing.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, Options{})
	f.insert(t, sixHosts()...)
	for _, tc := range []struct {
		method, path string
		status       int
		name         string
	}{
		{"GET", "/v1/tables/nope", 404, "strata.ErrTableNotFound"},
		{"GET", "/v1/tables/nope/objects", 404, "strata.ErrTableNotFound"},
		{"GET", "/v1/tables/nope/object?key=a", 404, "strata.ErrTableNotFound"},
		{"GET", "/v1/tables/nope/changes", 404, "strata.ErrTableNotFound"},
		{"GET", "/v1/dump?table=nope", 404, "strata.ErrTableNotFound"},
		{"GET", "/v1/tables/hosts/objects?index=nope", 404, "strata.ErrIndexNotFound"},
		{"GET", "/v1/tables/hosts/objects?index=nope&key=a", 404, "strata.ErrIndexNotFound"},
		{"GET", "/v1/tables/points/objects?key=1", 400, "strata.ErrNoFromString"},
		{"GET", "/v1/tables/hosts/objects?raw=1&key=%21%21", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?raw=maybe&key=a", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?key=a&prefix=b", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?from=a", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?to=a", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?limit=0", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?limit=x", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?after=%21", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?lowerBound=a", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?key=a&key=b", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?waitRev=x", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?waitRev=1&wait=soon", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/objects?wait=1s", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/object", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/object?prefix=a", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/changes?from=x", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/changes?from=-1", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/changes?format=xml", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/changes?since=1", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/tables/hosts/changes?from=7", 410, "httpapi.ErrRevisionGone"},
		{"GET", "/v1/tables/hosts/changes?from=99999", 410, "httpapi.ErrRevisionGone"},
		{"GET", "/v1/dump?tables=hosts", 400, "httpapi.ErrBadRequest"},
		{"GET", "/v1/nope", 404, "httpapi.ErrNotFound"},
		{"GET", "/v2/", 404, "httpapi.ErrNotFound"},
		{"GET", "/ui/", 404, "httpapi.ErrNotFound"}, // no UI without Options.UI
		{"PUT", "/v1/tables/hosts/objects", 405, "httpapi.ErrMethodNotAllowed"},
		{"POST", "/v1/", 405, "httpapi.ErrMethodNotAllowed"},
		{"DELETE", "/v1/tables/hosts", 405, "httpapi.ErrMethodNotAllowed"},
	} {
		r := f.do(t, tc.method, tc.path, nil)
		p := r.problem(t, tc.status, tc.name)
		if got := ErrorByName(p.Error); got == nil {
			t.Errorf("%s %s: ErrorByName(%q) is nil", tc.method, tc.path, p.Error)
		}
	}
	// A key that does not parse: index.ErrParseKey.
	db := strata.New()
	strata.MustNewTable(db, "nums", strata.Index[*Point, int32]{
		Name: "x", FromObject: func(p *Point) index.KeySet { return index.NewKeySet(index.Int32(p.X)) }, FromKey: index.Int32, Unique: true,
	})
	h := New(db, Options{})
	defer h.Close()
	for _, q := range []string{"key=ten", "key=99999999999", "from=1&to=x"} {
		serve(h, "GET", "/v1/tables/nums/objects?"+q).problem(t, http.StatusBadRequest, "index.ErrParseKey")
	}
	if n := f.hosts.NumObjects(f.db.ReadTxn()); n != 6 {
		t.Fatalf("bad requests changed the table: %d objects", n)
	}
}

// TestProblemOf: every error value the API serves has its own name and
// status, found back by ErrorByName, and wrapped errors keep them.
func TestProblemOf(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range knownErrors {
		if seen[k.name] {
			t.Fatalf("%s named twice", k.name)
		}
		seen[k.name] = true
		p := ProblemOf(wrap(k.err))
		if p.Error != k.name || p.Status != k.status || p.Title != k.err.Error() || !strings.Contains(p.Detail, "context") {
			t.Errorf("%v: %+v", k.err, p)
		}
		if ErrorByName(k.name) != k.err {
			t.Errorf("ErrorByName(%q)", k.name)
		}
		if _, err := url.Parse(p.Type); err != nil || !strings.HasSuffix(p.Type, "#"+strings.SplitN(k.name, ".", 2)[1]) {
			t.Errorf("%s: type %q", k.name, p.Type)
		}
	}
	if p := ProblemOf(errString("boom")); p.Error != "httpapi.ErrInternal" || p.Status != 500 || p.Detail != "boom" {
		t.Fatalf("an unknown error: %+v", p)
	}
	if ErrorByName("strata.ErrNope") != nil {
		t.Fatal("ErrorByName of an unknown name")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func wrap(err error) error { return &wrapped{err} }

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "context: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
