package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
)

// TestMalformedQuery: a query whose pair has a malformed percent-escape
// is a 400 problem
// naming the parameter, at every endpoint and for every parameter the
// endpoint reads; not a request served as if the parameter were absent
// (a read of the whole table, a cursor back at page 1, a stream from
// revision 0, an insert). Nothing changes: the table's revision and
// objects are as before.
func TestMalformedQuery(t *testing.T) {
	f := newFixture(t, Options{Authorize: Allow(AccessRead, AccessWatch, AccessWrite, AccessSnapshot),
		MaxWait: 200 * time.Millisecond, Snapshot: func(io.Writer, strata.ReadTxn) error { return nil }})
	rev := f.insert(t, sixHosts()...)
	revText := itoa(rev)

	type endpoint struct {
		name, method, path string
		header             []string
		body               string
		// params are the parameters the endpoint reads, each with a
		// well-formed value; others holds parameters that go with them
		// (waitRev with wait, from with to).
		params map[string]string
		others map[string]string
	}
	reads := map[string]string{
		"index": "zone", "key": "h0", "prefix": "a", "lowerbound": "a", "from": "a", "to": "b",
		"raw": "0", "limit": "2", "after": "YTE", "waitRev": revText, "wait": "1s",
	}
	endpoints := []endpoint{
		{name: "objects", method: "GET", path: "/v1/tables/hosts/objects", params: reads},
		{name: "object", method: "GET", path: "/v1/tables/hosts/object",
			params: map[string]string{"index": "zone", "key": "a1", "raw": "0", "waitRev": revText, "wait": "1s"},
			others: map[string]string{"key": "a1"}},
		{name: "waitRev", method: "GET", path: "/v1/tables/hosts/objects",
			params: map[string]string{"waitRev": revText, "wait": "30s"},
			others: map[string]string{"waitRev": revText}},
		{name: "write", method: "POST", path: "/v1/tables/hosts/objects", body: `{"Name":"z9","Zone":"zz"}`,
			params: map[string]string{"key": "z9", "table": "hosts"}},
		{name: "delete", method: "DELETE", path: "/v1/tables/hosts/object",
			params: map[string]string{"key": "a1", "raw": "0"}, others: map[string]string{"key": "a1"}},
		{name: "ndjson", method: "GET", path: "/v1/tables/hosts/changes", header: []string{"Accept", "application/x-ndjson"},
			params: map[string]string{"from": revText, "instance": f.h.Instance(), "format": "ndjson"}},
		{name: "sse", method: "GET", path: "/v1/tables/hosts/changes", header: []string{"Accept", "text/event-stream"},
			params: map[string]string{"from": revText, "instance": f.h.Instance(), "format": "sse"}},
		{name: "dump", method: "GET", path: "/v1/dump", params: map[string]string{"table": "hosts"}},
		// Endpoints that read no parameter refuse a malformed one too.
		{name: "snapshot", method: "GET", path: "/v1/snapshot", params: map[string]string{"x": "1"}},
		{name: "table", method: "GET", path: "/v1/tables/hosts", params: map[string]string{"x": "1"}},
		{name: "summary", method: "GET", path: "/v1/", params: map[string]string{"x": "1"}},
	}
	// Each way of mangling a parameter: the name it must be reported
	// under, and the query.
	mangles := []struct {
		name   string
		mangle func(param, value string) (query, named string)
	}{
		{"value %zz", func(p, v string) (string, string) { return p + "=" + v + "%zz", p }},
		{"value %%", func(p, v string) (string, string) { return p + "=" + v + "%%", p }},
		{"value trailing %", func(p, v string) (string, string) { return p + "=" + v + "%", p }},
		{"name %zz", func(p, v string) (string, string) { return p + "%zz=" + v, p + "%zz" }},
	}
	dump := func() string {
		var b bytes.Buffer
		for h := range f.hosts.All(f.db.ReadTxn()) {
			b.WriteString(h.Name + "/" + h.Zone + "\n")
		}
		return b.String()
	}

	for _, e := range endpoints {
		for param, value := range e.params {
			for _, m := range mangles {
				t.Run(e.name+"/"+param+"/"+m.name, func(t *testing.T) {
					rev, before := f.hosts.Revision(f.db.ReadTxn()), dump()
					unchanged := func() {
						t.Helper()
						if got := f.hosts.Revision(f.db.ReadTxn()); got != rev {
							t.Errorf("table revision %d after the request, want %d", got, rev)
						}
						if got := dump(); got != before {
							t.Errorf("table after the request:\n%s\nwant:\n%s", got, before)
						}
					}
					query, named := m.mangle(param, value)
					for p, v := range e.others {
						if p != param {
							query = p + "=" + v + "&" + query
						}
					}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					var body io.Reader
					if e.body != "" {
						body = strings.NewReader(e.body)
					}
					req, err := http.NewRequestWithContext(ctx, e.method, f.srv.URL+e.path+"?"+query, body)
					if err != nil {
						t.Fatal(err)
					}
					for i := 0; i+1 < len(e.header); i += 2 {
						req.Header.Set(e.header[i], e.header[i+1])
					}
					resp, err := f.srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if resp.StatusCode != http.StatusBadRequest {
						// A stream served anyway does not end: read
						// nothing more of it.
						unchanged()
						t.Fatalf("%s %s?%s: status %d, want 400 (Content-Type %q)", e.method, e.path, query, resp.StatusCode, resp.Header.Get("Content-Type"))
					}
					data, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					p := response{resp.StatusCode, resp.Header, data}.problem(t, http.StatusBadRequest, "httpapi.ErrBadRequest")
					if !strings.Contains(p.Detail, `query parameter "`+named+`"`) {
						t.Errorf("%s %s?%s: detail %q does not name parameter %q", e.method, e.path, query, p.Detail, named)
					}
					unchanged()
				})
			}
		}
	}
}

// TestParseQuery: well-formed queries parse as url.ParseQuery parses
// them, values in order; each malformed one is refused naming its
// parameter.
func TestParseQuery(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string // url.Values printed, or the error's parameter
		bad  bool
	}{
		{"", "map[]", false},
		{"a=1&b=2&a=3", "map[a:[1 3] b:[2]]", false},
		{"a&b=&&c=%20x+y", "map[a:[] b:[] c:[ x y]]", false},
		{"k%3D=v%26w", "map[k=:[v&w]]", false},
		{"a=1&key=h0%zz", `"key"`, true},
		{"after=garbage%%&limit=2", `"after"`, true},
		{"limit=2&after=x%", `"after"`, true},
		{"x%zz=1", `"x%zz"`, true},
		{"a=1;b=2", `"a"`, true},
		{"a%3b=1", "map[a;:[1]]", false},
	} {
		vals, err := parseQuery(c.raw)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "query parameter "+c.want) {
				t.Errorf("parseQuery(%q): %v, %v; want an error naming %s", c.raw, vals, err, c.want)
			}
			continue
		}
		if err != nil || fmt.Sprint(vals) != c.want {
			t.Errorf("parseQuery(%q): %v, %v; want %s", c.raw, fmt.Sprint(vals), err, c.want)
		}
	}
}
