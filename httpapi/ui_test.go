package httpapi

import (
	"io/fs"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
)

// TestUIPages: the inspector's pages render what the database holds, each
// with the CSP; a table pages through links; errors are pages too.
func TestUIPages(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	f.insert(t, sixHosts()...)
	page := func(path string, status int) string {
		t.Helper()
		r := f.get(t, path)
		if r.status != status || r.header.Get("Content-Type") != "text/html; charset=utf-8" ||
			r.header.Get("Content-Security-Policy") != contentSecurityPolicy || r.header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("GET %s: %d %v\n%s", path, r.status, r.header, r.body)
		}
		return string(r.body)
	}
	body := page("/ui/", 200)
	for _, want := range []string{`data-table="hosts"`, `data-field="objects">6<`, `href="table?table=points"`, `id="plot-commits"`, f.h.Instance()} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if r := f.get(t, "/ui"); r.status != 200 || !strings.Contains(string(r.body), "plot-objects") {
		t.Errorf("/ui does not lead to the overview: %d", r.status)
	}

	// Two pages of four and two, by the link the first gives.
	body = page("/ui/table?table=hosts&limit=4", 200)
	if n := strings.Count(body, "<tr data-key="); n != 4 {
		t.Fatalf("first page: %d rows", n)
	}
	m := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link to the next page")
	}
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	body = page("/ui/"+next, 200)
	if !strings.Contains(body, `data-key="b2"`) || !strings.Contains(body, `data-key="b3"`) || strings.Contains(body, `data-key="a1"`) || strings.Contains(body, `id="next"`) {
		t.Fatalf("second page:\n%s", body)
	}
	body = page("/ui/table?table=hosts&index=zone&op=key&key=us", 200)
	if strings.Count(body, "<tr data-key=") != 3 || !strings.Contains(body, `data-all="false"`) || !strings.Contains(body, `<option value="zone" data-key-type="string" data-text="true" selected>`) {
		t.Fatalf("zone us:\n%s", body)
	}
	body = page("/ui/table?table=hosts&op=range&key=a2&to=b1", 200)
	if strings.Count(body, "<tr data-key=") != 2 {
		t.Fatalf("range a2 to b1:\n%s", body)
	}

	body = page("/ui/object?table=hosts&key=a2", 200)
	if !strings.Contains(body, "&#34;Zone&#34;: &#34;eu&#34;") || !strings.Contains(body, `data-query="key=a2"`) {
		t.Fatalf("object a2:\n%s", body)
	}
	page("/ui/object?table=hosts&raw=1&key="+encodeBase64([]byte("b1")), 200)
	page("/ui/object?table=hosts&key=zz", 404)
	for path, status := range map[string]int{
		"/ui/table?table=nope":                     404,
		"/ui/table?table=hosts&index=nope":         404,
		"/ui/table?table=hosts&op=what":            400,
		"/ui/table?table=hosts&limit=0":            400,
		"/ui/table?table=points&op=key&key=1":      400,
		"/ui/object?table=hosts":                   400,
		"/ui/object?table=nope&key=a1":             404,
		"/ui/table?table=hosts&op=key&raw=1&key=!": 400,
	} {
		if body := page(path, status); !strings.Contains(body, `class="problem"`) {
			t.Errorf("%s: no problem shown:\n%s", path, body)
		}
	}
}

// TestUIText: object contents, keys and table contents reach the page as
// text only; the pages carry no inline script, and the script inserts no
// HTML.
func TestUIText(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	evil := `<script>alert(1)</script>`
	f.insert(t, &Host{Name: evil, Zone: `"><img src=x onerror=alert(2)>`, Note: "</pre><script>alert(3)</script>"})
	for _, path := range []string{"/ui/table?table=hosts", "/ui/object?table=hosts&key=" + url.QueryEscape(evil), "/ui/table?table=hosts&op=key&key=" + url.QueryEscape(evil)} {
		r := f.get(t, path)
		body := string(r.body)
		if r.status != 200 || strings.Contains(body, "<script>alert") || strings.Contains(body, "<img") || !strings.Contains(body, "&lt;script&gt;alert(1)") {
			t.Fatalf("%s: %d\n%s", path, r.status, body)
		}
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
			if !strings.Contains(tag, `src="static/app.js"`) {
				t.Fatalf("%s: an inline script: %s", path, tag)
			}
		}
		// Every tag is one of the page's own (text is escaped, so an
		// object's "<img" is no tag): none has an event handler.
		for _, tag := range regexp.MustCompile(`<[a-zA-Z][^>]*>`).FindAllString(body, -1) {
			if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(tag) {
				t.Fatalf("%s: an event handler attribute: %s", path, tag)
			}
		}
	}
	js, err := fs.ReadFile(uiFiles, "ui/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
}

// TestUIStatic: the script, the styles and the icon are served with their
// types; unknown files are not found.
func TestUIStatic(t *testing.T) {
	f := newFixture(t, Options{UI: true})
	for path, ctype := range map[string]string{
		"/ui/static/app.js":      "text/javascript; charset=utf-8",
		"/ui/static/style.css":   "text/css; charset=utf-8",
		"/ui/static/favicon.svg": "image/svg+xml",
		"/favicon.ico":           "image/svg+xml",
	} {
		r := f.get(t, path)
		if r.status != 200 || r.header.Get("Content-Type") != ctype || len(r.body) == 0 || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q", path, r.status, r.header.Get("Content-Type"))
		}
	}
	f.get(t, "/ui/static/nope.js").problem(t, 404, "httpapi.ErrNotFound")
	f.get(t, "/ui/static/..%2fui.go").problem(t, 404, "httpapi.ErrNotFound")
}

// TestSampler: the sampler records commits per second and each table's
// objects, keeps SampleHistory samples, and shows a table registered late
// with zeros before it.
func TestSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{UI: true, SampleInterval: time.Second, SampleHistory: 4})
		synctest.Wait() // the first sample, at 0
		for i := range 3 {
			f.insert(t, &Host{Name: string(rune('a' + i))})
		}
		time.Sleep(time.Second)
		synctest.Wait()
		late := strata.MustNewTable(f.db, "late", hostByName)
		wtxn := f.db.WriteTxn(late)
		if _, _, err := late.Insert(wtxn, &Host{Name: "x"}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, wtxn)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		var s Samples
		serve(f.h, "GET", "/v1/samples").decode(t, 200, &s)
		if len(s.Times) != 4 || s.IntervalMillis != 1000 || s.Times[1]-s.Times[0] != 1000 {
			t.Fatalf("samples %+v", s)
		}
		if want := []float64{0, 3, 1, 0}; !equalFloats(s.CommitsPerSec, want) {
			t.Fatalf("commits/s %v, want %v", s.CommitsPerSec, want)
		}
		if want := []int{0, 3, 3, 3}; !equalInts(s.Objects["hosts"], want) {
			t.Fatalf("hosts %v, want %v", s.Objects["hosts"], want)
		}
		if want := []int{0, 0, 1, 1}; !equalInts(s.Objects["late"], want) {
			t.Fatalf("late %v, want %v", s.Objects["late"], want)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		serve(f.h, "GET", "/v1/samples").decode(t, 200, &s)
		if len(s.Times) != 4 || !equalInts(s.Objects["hosts"], []int{3, 3, 3, 3}) {
			t.Fatalf("after 3 more samples: %+v", s)
		}
	})
}

func equalInts(a, b []int) bool       { return slices.Equal(a, b) }
func equalFloats(a, b []float64) bool { return slices.Equal(a, b) }
