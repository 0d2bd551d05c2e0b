package httpapi

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Tagged has an index in which an object may have several keys, which
// cannot count prefixes (strata.ErrCannotCount) once one has.
type Tagged struct {
	ID   string
	Tags []string
}

var (
	taggedByID = strata.Index[*Tagged, string]{
		Name:       "id",
		FromObject: func(o *Tagged) index.KeySet { return index.NewKeySet(index.String(o.ID)) },
		FromKey:    index.String,
		Unique:     true,
	}
	taggedByTag = strata.Index[*Tagged, string]{
		Name: "tag",
		FromObject: func(o *Tagged) index.KeySet {
			keys := make([]index.Key, len(o.Tags))
			for i, tag := range o.Tags {
				keys[i] = index.String(tag)
			}
			return index.NewKeySet(keys...)
		},
		FromKey: index.String,
	}
)

// tablePageView is what a table page shows: its header cells, its rows'
// cells (the key first), the count and the problem, as text.
type tablePageView struct {
	status   int
	header   []string
	rows     [][]string
	matching string
	problem  string // the problem's error name and detail, "" if none
	form     bool   // the filter form is on the page
	jsonRows int    // rows of JSON, hidden until a row is clicked
}

var (
	reTHead    = regexp.MustCompile(`(?s)<thead>(.*?)</thead>`)
	reTH       = regexp.MustCompile(`(?s)<th[^>]*>(.*?)</th>`)
	reObjRow   = regexp.MustCompile(`(?s)<tr data-key="[^"]*" class="obj"[^>]*>(.*?)</tr>`)
	reTD       = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	reTag      = regexp.MustCompile(`<[^>]*>`)
	reMatching = regexp.MustCompile(`<span id="matching" class="mono">([^<]*)</span>`)
	reProblem  = regexp.MustCompile(`(?s)<div class="problem" id="problem".*?id="problem-error"[^>]*>([^<]*)</span></div>\s*<div id="problem-detail"[^>]*>([^<]*)</div>`)
)

func text(s string) string {
	return html.UnescapeString(strings.TrimSpace(reTag.ReplaceAllString(s, "")))
}

// viewTable reads a table page and takes it apart.
func viewTable(t *testing.T, f *fixture, path string) tablePageView {
	t.Helper()
	r := f.get(t, path)
	body := string(r.body)
	v := tablePageView{status: r.status, form: strings.Contains(body, `<form class="query" id="filter"`)}
	if m := reTHead.FindStringSubmatch(body); m != nil {
		for _, th := range reTH.FindAllStringSubmatch(m[1], -1) {
			v.header = append(v.header, text(th[1]))
		}
	}
	for _, tr := range reObjRow.FindAllStringSubmatch(body, -1) {
		var cells []string
		for _, td := range reTD.FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, text(td[1]))
		}
		v.rows = append(v.rows, cells)
	}
	if m := reMatching.FindStringSubmatch(body); m != nil {
		v.matching = m[1]
	}
	if m := reProblem.FindStringSubmatch(body); m != nil {
		v.problem = html.UnescapeString(m[1] + ": " + m[2])
	}
	v.jsonRows = strings.Count(body, `<tr class="json" hidden>`)
	return v
}

func rowKeys(rows [][]string) []string {
	var keys []string
	for _, r := range rows {
		keys = append(keys, r[0])
	}
	return keys
}

// TestUITableColumns: a table page shows one row per object and a column
// per field of the objects' JSON (package columns' rule), a field that
// only some objects have included; each row's JSON is on the page,
// hidden; a table of values that are no JSON object has one column.
func TestUITableColumns(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	f.insert(t, sixHosts()...)
	rev2 := f.insert(t, &Host{Name: "c1", Zone: "ap", Up: true, Note: "tab\there"})
	v := viewTable(t, f, "/ui/table?table=hosts")
	if want := []string{"key", "revision", "Name", "Zone", "Up", "Note"}; v.status != 200 || !slices.Equal(v.header, want) {
		t.Fatalf("status %d, header %q, want %q", v.status, v.header, want)
	}
	if len(v.rows) != 7 || v.jsonRows != 7 {
		t.Fatalf("%d rows, %d JSON rows: %q", len(v.rows), v.jsonRows, v.rows)
	}
	var a1 ObjectResult
	f.get(t, "/v1/tables/hosts/object?key=a1").decode(t, 200, &a1)
	if want := []string{"a1", fmt.Sprint(a1.Object.Revision), "a1", "eu", "false", ""}; !slices.Equal(v.rows[0], want) {
		t.Errorf("row a1: %q, want %q", v.rows[0], want)
	}
	if want := []string{"c1", fmt.Sprint(rev2), "c1", "ap", "true", `tab\there`}; !slices.Equal(v.rows[6], want) {
		t.Errorf("row c1: %q, want %q", v.rows[6], want)
	}
	if v.matching != "7" {
		t.Errorf("matching %q, want 7", v.matching)
	}

	// Points encode as objects too; a table of strings has one column.
	wtxn := f.db.WriteTxn(f.points)
	if _, _, err := f.points.Insert(wtxn, &Point{X: 1, Y: -2}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	v = viewTable(t, f, "/ui/table?table=points")
	if want := []string{"key", "revision", "X", "Y"}; !slices.Equal(v.header, want) || len(v.rows) != 1 || v.rows[0][2] != "1" || v.rows[0][3] != "-2" {
		t.Fatalf("points: header %q, rows %q", v.header, v.rows)
	}
	words := strata.MustNewTable(f.db, "words", strata.Index[string, string]{
		Name:       "word",
		FromObject: func(s string) index.KeySet { return index.NewKeySet(index.String(s)) },
		FromKey:    index.String,
		Unique:     true,
	})
	wtxn = f.db.WriteTxn(words)
	if _, _, err := words.Insert(wtxn, "hello"); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	v = viewTable(t, f, "/ui/table?table=words")
	if want := []string{"key", "revision", "object"}; !slices.Equal(v.header, want) || len(v.rows) != 1 || v.rows[0][2] != "hello" {
		t.Fatalf("words: header %q, rows %q", v.header, v.rows)
	}
}

// TestUITableFilter: the filter reads any index by exact key, prefix or
// range with keys typed as text; what the API refuses is shown in the
// page, with the form, under the problem's status.
func TestUITableFilter(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	f.insert(t, sixHosts()...)
	for _, tc := range []struct {
		query string
		keys  []string
	}{
		{"op=prefix&key=b", []string{"b1", "b2", "b3"}},
		{"op=key&key=a2", []string{"a2"}},
		{"index=zone&op=key&key=eu", []string{"a1", "a2", "a3"}},
		{"index=zone&op=prefix&key=u", []string{"b1", "b2", "b3"}},
		{"op=range&key=a3&to=b2", []string{"a3", "b1"}},
		{"op=lowerbound&key=b3", []string{"b3"}},
		{"op=prefix&key=z", nil},
	} {
		v := viewTable(t, f, "/ui/table?table=hosts&"+tc.query)
		if v.status != 200 || !v.form || v.problem != "" || !slices.Equal(rowKeys(v.rows), tc.keys) {
			t.Errorf("%s: status %d, problem %q, keys %q, want %q", tc.query, v.status, v.problem, rowKeys(v.rows), tc.keys)
		}
		if want := len(tc.keys); v.matching != string(rune('0'+want)) {
			t.Errorf("%s: matching %q, want %d", tc.query, v.matching, want)
		}
	}
	for _, tc := range []struct {
		path    string
		status  int
		problem string
	}{
		{"/ui/table?table=points&op=key&key=1", 400, "strata.ErrNoFromString · 400: "},
		{"/ui/table?table=hosts&index=nope&op=key&key=a", 404, "strata.ErrIndexNotFound · 404: "},
		{"/ui/table?table=hosts&op=key&raw=1&key=!", 400, "httpapi.ErrBadRequest · 400: "},
		{"/ui/table?table=hosts&op=what", 400, "httpapi.ErrBadRequest · 400: "},
		{"/ui/table?table=hosts&limit=0", 400, "httpapi.ErrBadRequest · 400: "},
	} {
		v := viewTable(t, f, tc.path)
		if v.status != tc.status || !v.form || !strings.HasPrefix(v.problem, tc.problem) || len(v.rows) != 0 || v.header != nil {
			t.Errorf("%s: status %d, form %v, problem %q, rows %q, want %d and %q", tc.path, v.status, v.form, v.problem, v.rows, tc.status, tc.problem)
		}
	}
	// The problem's detail is the API's, word for word.
	v := viewTable(t, f, "/ui/table?table=points&op=prefix&key=1")
	api := f.get(t, "/v1/tables/points/objects?prefix=1").problem(t, 400, "strata.ErrNoFromString")
	if !strings.HasSuffix(v.problem, ": "+api.Detail) {
		t.Errorf("page problem %q, API detail %q", v.problem, api.Detail)
	}
}

// TestUITableCount: the page counts what the filter matches, all of it
// whatever the page's limit, and says "cannot count" where the index
// cannot, as the count endpoint does.
func TestUITableCount(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	f.insert(t, sixHosts()...)
	v := viewTable(t, f, "/ui/table?table=hosts&index=zone&op=key&key=us&limit=2")
	if len(v.rows) != 2 || v.matching != "3" {
		t.Fatalf("zone us, 2 a page: %d rows, matching %q", len(v.rows), v.matching)
	}
	tagged := strata.MustNewTable(f.db, "tagged", taggedByID, taggedByTag)
	wtxn := f.db.WriteTxn(tagged)
	for _, o := range []*Tagged{{ID: "x", Tags: []string{"red", "round"}}, {ID: "y", Tags: []string{"red"}}} {
		if _, _, err := tagged.Insert(wtxn, o); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, wtxn)
	v = viewTable(t, f, "/ui/table?table=tagged&index=tag&op=key&key=red")
	if !slices.Equal(rowKeys(v.rows), []string{"x", "y"}) || v.matching != "2" {
		t.Fatalf("tag red: keys %q, matching %q", rowKeys(v.rows), v.matching)
	}
	v = viewTable(t, f, "/ui/table?table=tagged&index=tag&op=prefix&key=r")
	f.get(t, "/v1/tables/tagged/count?index=tag&prefix=r").problem(t, 400, "strata.ErrCannotCount")
	if v.status != 200 || !slices.Equal(rowKeys(v.rows), []string{"x", "y"}) || v.matching != "cannot count" {
		t.Fatalf("tag prefix r: status %d, keys %q, matching %q", v.status, rowKeys(v.rows), v.matching)
	}
}

// insertMany commits n hosts, h000000 up, in ten zones z0 to z9.
func insertMany(t testing.TB, f *fixture, n int) {
	t.Helper()
	wtxn := f.db.WriteTxn(f.hosts)
	for i := range n {
		if _, _, err := f.hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("h%06d", i), Zone: fmt.Sprintf("z%d", i%10)}); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, wtxn)
}

// TestUITableLarge: a table of 100,000 objects is shown a page at a
// time: a page holds the limit's rows and the link to the next, which
// starts where it ended; the counts are of the whole query.
func TestUITableLarge(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	insertMany(t, f, 100_000)
	r := f.get(t, "/ui/table?table=hosts")
	v := viewTable(t, f, "/ui/table?table=hosts")
	if len(v.rows) != defaultPageRows || v.rows[99][0] != "h000099" || v.matching != "100000" || len(r.body) > 150<<10 {
		t.Fatalf("first page: %d rows, last %q, matching %q, %d bytes", len(v.rows), v.rows[len(v.rows)-1], v.matching, len(r.body))
	}
	m := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(string(r.body))
	if m == nil {
		t.Fatal("no link to the next page")
	}
	v = viewTable(t, f, "/ui/"+html.UnescapeString(m[1]))
	if len(v.rows) != defaultPageRows || v.rows[0][0] != "h000100" {
		t.Fatalf("second page: %d rows, first %q", len(v.rows), v.rows[0])
	}
	v = viewTable(t, f, "/ui/table?table=hosts&index=zone&op=key&key=z3&limit=20")
	if len(v.rows) != 20 || v.rows[0][0] != "h000003" || v.rows[1][0] != "h000013" || v.matching != "10000" {
		t.Fatalf("zone z3: %d rows, first two %q, matching %q", len(v.rows), rowKeys(v.rows[:2]), v.matching)
	}
	v = viewTable(t, f, "/ui/table?table=hosts&op=prefix&key=h0999")
	if len(v.rows) != 100 || v.rows[0][0] != "h099900" || v.matching != "100" {
		t.Fatalf("prefix h0999: %d rows, first %q, matching %q", len(v.rows), v.rows[0], v.matching)
	}
}

// BenchmarkUITablePage: a table page of 100 rows, columns and count of
// a table of 100,000 objects, rendered.
func BenchmarkUITablePage(b *testing.B) {
	f := newFixture(b, Options{UI: true})
	insertMany(b, f, 100_000)
	for _, q := range []string{"&op=all", "&op=prefix&key=h05", "&index=zone&op=key&key=z3"} {
		b.Run(strings.TrimPrefix(q, "&"), func(b *testing.B) {
			for b.Loop() {
				if r := serve(f.h, "GET", "/ui/table?table=hosts"+q); r.status != 200 {
					b.Fatalf("%d", r.status)
				}
			}
		})
	}
}
