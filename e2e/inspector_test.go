package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type Host struct {
	Name string
	Zone string
	Load int
}

type Job struct {
	ID   uint64
	Host string
}

// Label has several keys in its tags index, which therefore cannot count
// a prefix (strata.ErrCannotCount).
type Label struct {
	Name string
	Tags []string
}

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
	jobByID = strata.Index[*Job, uint64]{
		Name:       "id",
		FromObject: func(j *Job) index.KeySet { return index.KeySetOf(index.Uint64(j.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	labelByName = strata.Index[*Label, string]{
		Name:       "name",
		FromObject: func(l *Label) index.KeySet { return index.NewKeySet(index.String(l.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	labelByTag = strata.Index[*Label, string]{
		Name: "tags",
		FromObject: func(l *Label) index.KeySet {
			keys := make([]index.Key, len(l.Tags))
			for i, tag := range l.Tags {
				keys[i] = index.String(tag)
			}
			return index.NewKeySet(keys...)
		},
		FromKey: index.String,
	}
)

// world is a database served with the inspector, and a writer that
// commits every 40ms: it raises the load of the hosts h00 to h11 in
// turn, and adds a job. Three labels do not change.
type world struct {
	db     *strata.DB
	hosts  strata.RWTable[*Host]
	jobs   strata.RWTable[*Job]
	labels strata.RWTable[*Label]
	url    string
}

func newWorld(t *testing.T) *world {
	w := &world{db: strata.New()}
	w.hosts = strata.MustNewTable(w.db, "hosts", hostByName, hostByZone)
	w.jobs = strata.MustNewTable(w.db, "jobs", jobByID)
	w.labels = strata.MustNewTable(w.db, "labels", labelByName, labelByTag)
	wtxn := w.db.WriteTxn(w.hosts, w.labels)
	for _, l := range []*Label{{"l1", []string{"red", "round"}}, {"l2", []string{"red"}}, {"l3", []string{"blue"}}} {
		if _, _, err := w.labels.Insert(wtxn, l); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		// A name that would run as HTML if the page inserted it as such.
		if _, _, err := w.hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("h%02d", i), Zone: []string{"eu", "us", "ap"}[i%3]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := w.hosts.Insert(wtxn, &Host{Name: "<img src=x onerror=alert(1)>", Zone: "<b>zone</b>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(w.db, httpapi.Options{
		UI:             true,
		SampleInterval: 200 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(h)
	w.url = srv.URL

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(40 * time.Millisecond)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return
			}
			wtxn := w.db.WriteTxn(w.hosts, w.jobs)
			if _, _, err := w.hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("h%02d", i%12), Zone: []string{"eu", "us", "ap"}[i%12%3], Load: i}); err != nil {
				t.Error(err)
				return
			}
			if _, _, err := w.jobs.Insert(wtxn, &Job{ID: uint64(i), Host: fmt.Sprintf("h%02d", i%12)}); err != nil {
				t.Error(err)
				return
			}
			if _, err := wtxn.Commit(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		wg.Wait()
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	return w
}

// browser starts headless Chromium and returns a tab's context, and the
// console messages of the tab, read until the test ends.
func browser(t *testing.T) (context.Context, func() []chromedp.ConsoleMessage) {
	execPath := os.Getenv("STRATA_CHROMIUM")
	if execPath == "" {
		execPath = "/usr/bin/chromium"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.NoSandbox, // as root in a container
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	// Start the browser now, so that the console is read from the first
	// page on.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting %s: %v", execPath, err)
	}
	var mu sync.Mutex
	var msgs []chromedp.ConsoleMessage
	console := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		<-done
	})
	return ctx, func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]chromedp.ConsoleMessage(nil), msgs...)
	}
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS polls a JavaScript expression until it is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// screenshot captures the tab's viewport, saves it (see package doc) and
// returns it decoded.
func screenshot(t *testing.T, ctx context.Context, name string) image.Image {
	t.Helper()
	data := run(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	dirs := []string{t.TempDir()}
	if d := os.Getenv("STRATA_E2E_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	return img
}

// TestInspector drives the inspector in Chromium while the writer
// commits: the overview's counts and plots move, a table's live rows
// flash and strike deleted objects through, an object's view follows the
// object, untrusted contents stay text, and the console stays clean.
func TestInspector(t *testing.T) {
	w := newWorld(t)
	ctx, console := browser(t)

	// The overview: counts rise, and the plots draw the sampler's
	// history, which grows.
	do(t, ctx, "overview", chromedp.Navigate(w.url+"/ui/"))
	waitJS(t, ctx, "the plots", `document.querySelectorAll("#plot-commits polyline").length === 1 && document.querySelectorAll("#plot-objects polyline").length === 3`)
	jobs := `Number(document.querySelector('tr[data-table="jobs"] [data-field="objects"]').textContent)`
	first := run(t, ctx, "jobs count", chromedp.Evaluate[int](jobs))
	waitJS(t, ctx, "the jobs count to rise", jobs+` >= `+strconv.Itoa(first+5))
	samples := `Number(document.getElementById("plot-commits").dataset.samples)`
	n := run(t, ctx, "samples", chromedp.Evaluate[int](samples))
	points := run(t, ctx, "points", chromedp.Evaluate[string](`document.querySelector("#plot-commits polyline").getAttribute("points")`))
	waitJS(t, ctx, "the plot to grow", samples+` >= `+strconv.Itoa(n+3))
	waitJS(t, ctx, "the plot to change", `document.querySelector("#plot-commits polyline").getAttribute("points") !== `+strconv.Quote(points))
	// The writer commits 25 times a second: the last rate is well above 0.
	waitJS(t, ctx, "commits per second above 10", `Number(document.getElementById("plot-commits").dataset.last) > 10`)
	legend := run(t, ctx, "legend", chromedp.Evaluate[string](`document.getElementById("legend-objects").textContent`))
	if legend != "hostsjobslabels" {
		t.Fatalf("legend %q", legend)
	}
	screenshot(t, ctx, "overview")

	// A table, live: rows the writer replaces flash with their new
	// revision, a deleted row is struck through, and the evil name is
	// shown as text.
	do(t, ctx, "table", chromedp.Navigate(w.url+"/ui/table?table=hosts"))
	waitJS(t, ctx, "the rows", `document.querySelectorAll("#rows tbody tr.obj").length === 13`)
	if img := run(t, ctx, "img count", chromedp.Evaluate[int](`document.querySelectorAll("main img").length`)); img != 0 {
		t.Fatalf("an object's contents made %d img elements", img)
	}
	evil := run(t, ctx, "evil row", chromedp.Evaluate[string](`document.querySelector('#rows tbody tr:first-child td a').textContent`))
	if evil != "<img src=x onerror=alert(1)>" {
		t.Fatalf("the first row's key reads %q", evil)
	}
	do(t, ctx, "live", chromedp.Click(chromedp.ID("live")))
	waitJS(t, ctx, "live mode", `document.getElementById("live-state").textContent === "live"`)
	rev := `Number(document.querySelector('tr[data-key="h05"] [data-field="rev"]').textContent)`
	before := run(t, ctx, "h05 revision", chromedp.Evaluate[int](rev))
	waitJS(t, ctx, "h05 to flash", `Number(document.querySelector('tr[data-key="h05"]').dataset.flashes || 0) >= 1`)
	waitJS(t, ctx, "h05's revision to rise", rev+` > `+strconv.Itoa(before))
	// The row's JSON and its Load column follow, and agree.
	waitJS(t, ctx, "h05's JSON to follow", `JSON.parse(document.querySelector('tr[data-key="h05"] + tr.json pre').textContent).Load > 0`)
	waitJS(t, ctx, "h05's Load cell to follow", `Number(document.querySelector('tr[data-key="h05"]').cells[4].textContent) > 0`)
	wtxn := w.db.WriteTxn(w.hosts)
	if _, _, err := w.hosts.Delete(wtxn, &Host{Name: "<img src=x onerror=alert(1)>"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the deleted row to be struck through", `document.querySelector('#rows tbody tr:first-child').classList.contains("deleted")`)
	decoration := run(t, ctx, "decoration", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#rows tbody tr.deleted td')).textDecorationLine`))
	if decoration != "line-through" {
		t.Fatalf("a deleted row's decoration is %q", decoration)
	}
	waitJS(t, ctx, "the count to follow", `document.getElementById("count").textContent === "12"`)
	// The filter's count (every object) follows too, read from /count.
	waitJS(t, ctx, "the filter's count to follow", `document.getElementById("matching").textContent === "12"`)
	screenshot(t, ctx, "table-live")

	// An object, watched: blocking reads bring its new state.
	do(t, ctx, "object", chromedp.Navigate(w.url+"/ui/object?table=hosts&key=h07"))
	objRev := `Number(document.getElementById("object-rev").textContent)`
	before = run(t, ctx, "h07 revision", chromedp.Evaluate[int](objRev))
	do(t, ctx, "watch", chromedp.Click(chromedp.ID("watch")))
	waitJS(t, ctx, "h07 to change", objRev+` > `+strconv.Itoa(before)+` && Number(document.getElementById("object").dataset.flashes || 0) >= 1`)
	screenshot(t, ctx, "object")

	checkConsole(t, console)
}

// checkConsole fails the test if the tab's console logged an error, an
// exception or a warning, but for the browser's note of each page the
// test had refused (a URL in refused, whose status was 4xx).
func checkConsole(t *testing.T, console func() []chromedp.ConsoleMessage, refused ...string) {
	t.Helper()
	var problems []string
	for _, m := range console() {
		if slices.Contains(refused, m.URL) && strings.HasPrefix(m.Text, "Failed to load resource: the server responded with a status of 4") {
			refused = slices.DeleteFunc(refused, func(u string) bool { return u == m.URL })
			continue
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning {
			problems = append(problems, m.String())
		}
	}
	if len(refused) > 0 {
		problems = append(problems, fmt.Sprintf("(no note of the refused pages %q)", refused))
	}
	if len(problems) > 0 {
		t.Fatalf("the console logged:\n%s", strings.Join(problems, "\n"))
	}
}

// rectOf returns the viewport rectangle of the first element that sel
// matches, in CSS pixels (the screenshots' pixels: the scale is 1).
func rectOf(t *testing.T, ctx context.Context, sel string) image.Rectangle {
	t.Helper()
	r := run(t, ctx, "the rectangle of "+sel, chromedp.Evaluate[[]float64](
		`(() => { const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })()`))
	return image.Rect(int(r[0]), int(r[1]), int(r[2]), int(r[3]))
}

// share returns the share of the pixels of img within r that match.
func share(img image.Image, r image.Rectangle, match func(r, g, b uint32) bool) float64 {
	r = r.Intersect(img.Bounds())
	if r.Empty() {
		return 0
	}
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if match(cr>>8, cg>>8, cb>>8) {
				n++
			}
		}
	}
	return float64(n) / float64(r.Dx()*r.Dy())
}

// ink: a pixel of text (dark), not of a background or a rule.
func ink(r, g, b uint32) bool { return r*299+g*587+b*114 < 140*1000 }

// near returns a match of pixels within 6 of the colour c (0xRRGGBB).
func near(c uint32) func(r, g, b uint32) bool {
	d := func(a, b uint32) bool { return a+6 >= b && b+6 >= a }
	return func(r, g, b uint32) bool { return d(r, c>>16) && d(g, c>>8&0xff) && d(b, c&0xff) }
}

// checkShot checks a screenshot of the 1280×800 viewport: its size, and
// that the regions given (selectors) hold text, as they do in the DOM.
func checkShot(t *testing.T, ctx context.Context, img image.Image, name string, inked ...string) {
	t.Helper()
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Fatalf("screenshot %s is %v, want 1280×800", name, b)
	}
	for _, sel := range inked {
		r := rectOf(t, ctx, sel)
		if s := share(img, r, ink); r.Dy() < 10 || s < 0.003 {
			t.Errorf("screenshot %s: %s at %v has %.2f%% ink: blank", name, sel, r, 100*s)
		}
	}
}

// keys returns the keys of the table page's rows, in order.
func keys(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return run(t, ctx, "the rows' keys", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rows tr.obj")].map((tr) => tr.dataset.key)`))
}

// filter fills the table page's filter form (index "" keeps the one
// chosen) and types key, then to (for a range), ending with Enter, and
// waits for the page the form reads.
func filter(t *testing.T, ctx context.Context, index, op, key, to string) {
	t.Helper()
	var acts []chromedp.Action[chromedp.Void]
	for id, v := range map[string]string{"f-index": index, "f-op": op} {
		if v == "" {
			continue
		}
		if v == "(primary)" {
			v = ""
		}
		acts = append(acts, chromedp.SetValue(chromedp.ID(id), v),
			script(`document.getElementById("`+id+`").dispatchEvent(new Event("change"))`))
	}
	acts = append(acts, chromedp.Clear(chromedp.ID("f-key")), chromedp.SendKeys(chromedp.ID("f-key"), key))
	if op == "range" {
		acts = append(acts, chromedp.Clear(chromedp.ID("f-to")), chromedp.SendKeys(chromedp.ID("f-to"), to))
	}
	acts = append(acts, script(`window.strataBefore = document.body`),
		chromedp.SendKeys(chromedp.ID("f-key"), kb.Enter))
	do(t, ctx, "filter "+op+" "+key, acts...)
	// The page is another once the mark set on the old one is gone; the
	// poll fails while the tab navigates, and is asked again.
	cond := `window.strataBefore === undefined && document.readyState === "complete" && new URLSearchParams(location.search).get("key") === ` + strconv.Quote(key)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond)); err == nil && ok {
			return
		} else if time.Since(start) > 15*time.Second {
			t.Fatalf("waiting for the page of filter %s %s: %v", op, key, err)
		}
	}
}

// script runs a JavaScript statement, whose value it drops.
func script(stmt string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(() => { `+stmt+`; return true; })()`)(ctx, t)
		return chromedp.Void{}, err
	}
}

// TestInspectorTable drives a table page in Chromium at 1280×800 while
// the writer commits: the objects' fields are columns, a row opens on
// its JSON, the filter reads any index by exact key, prefix or range
// from keys typed as text, a key the index cannot parse shows the API's
// problem in the page, the count follows the filter (or says the index
// cannot count), and a screen holds at least 25 rows. Its screenshots
// are checked where the DOM says the columns, the rows, the JSON and the
// problem are.
func TestInspectorTable(t *testing.T) {
	w := newWorld(t)
	ctx, console := browser(t)
	do(t, ctx, "viewport", chromedp.EmulateViewport(1280, 800))

	// Columns: the header names the key, the revision and the fields of
	// Host; a row's cells are its object's fields, which its JSON holds.
	do(t, ctx, "hosts", chromedp.Navigate(w.url+"/ui/table?table=hosts"))
	header := run(t, ctx, "header", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rows thead th")].map((th) => th.textContent)`))
	if want := []string{"key", "revision", "Name", "Zone", "Load"}; !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	cells := run(t, ctx, "h03's cells", chromedp.Evaluate[[]string](`[...document.querySelector('tr[data-key="h03"]').cells].map((td) => td.textContent)`))
	if len(cells) != 5 || cells[0] != "h03" || cells[2] != "h03" || cells[3] != "eu" {
		t.Fatalf("h03's cells %q", cells)
	}
	if _, err := strconv.Atoi(cells[4]); err != nil {
		t.Fatalf("h03's Load cell %q: %v", cells[4], err)
	}
	mismatch := run(t, ctx, "cells and JSON", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rows tr.obj")].flatMap((tr) => {
		const o = JSON.parse(tr.nextElementSibling.querySelector("pre").textContent);
		const got = [...tr.cells].slice(2).map((td) => td.textContent).join("|");
		const want = [o.Name, o.Zone, String(o.Load)].join("|");
		return got === want ? [] : [tr.dataset.key + ": " + got + " != " + want];
	})`))
	if len(mismatch) > 0 || len(keys(t, ctx)) != 13 {
		t.Fatalf("rows whose cells are not their JSON's fields: %q (of %d rows)", mismatch, len(keys(t, ctx)))
	}
	if open := run(t, ctx, "open rows", chromedp.Evaluate[int](`[...document.querySelectorAll("#rows tr.json")].filter((tr) => !tr.hidden).length`)); open != 0 {
		t.Fatalf("%d rows show their JSON before a click", open)
	}
	// A click on a row shows its JSON below it; another hides it.
	do(t, ctx, "open h03", chromedp.Click(chromedp.CSS(`tr[data-key="h03"] td:nth-child(4)`)))
	waitJS(t, ctx, "h03's JSON", `(() => { const tr = document.querySelector('tr[data-key="h03"]');
		return !tr.nextElementSibling.hidden && tr.getAttribute("aria-expanded") === "true" &&
			JSON.parse(tr.nextElementSibling.querySelector("pre").textContent).Name === "h03" &&
			tr.nextElementSibling.getBoundingClientRect().height > 60; })()`)
	img := screenshot(t, ctx, "table-columns")
	checkShot(t, ctx, img, "table-columns", "#rows thead", `tr[data-key="h00"]`, `tr[data-key="h03"] + tr.json pre`, "#filter")
	do(t, ctx, "close h03", chromedp.Click(chromedp.CSS(`tr[data-key="h03"] td:nth-child(3)`)))
	waitJS(t, ctx, "h03's JSON to hide", `document.querySelector('tr[data-key="h03"] + tr.json').hidden`)
	// From the keyboard: Enter on a focused row opens it.
	do(t, ctx, "open h04 with Enter", chromedp.Focus(chromedp.CSS(`tr[data-key="h04"]`)), chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "h04's JSON", `!document.querySelector('tr[data-key="h04"] + tr.json').hidden`)

	// The filter: a prefix typed as text narrows the rows to exactly the
	// hosts it names, and the count says how many match.
	filter(t, ctx, "", "prefix", "h0", "")
	want := []string{"h00", "h01", "h02", "h03", "h04", "h05", "h06", "h07", "h08", "h09"}
	if got := keys(t, ctx); !slices.Equal(got, want) {
		t.Fatalf("prefix h0: rows %q, want %q", got, want)
	}
	if m := run(t, ctx, "matching", chromedp.TextContent(chromedp.ID("matching"))); m != "10" {
		t.Fatalf("prefix h0: matching %q, want 10", m)
	}
	img = screenshot(t, ctx, "table-filter")
	checkShot(t, ctx, img, "table-filter", `tr[data-key="h00"]`, `tr[data-key="h09"]`, "#matching")
	// Below the ten rows, the page is empty: the screenshot shows no
	// row that the filter dropped.
	last := rectOf(t, ctx, `tr[data-key="h09"]`)
	below := image.Rect(0, last.Max.Y+60, 1280, 800)
	if s := share(img, below, ink); below.Dy() < 100 || s > 0.0005 {
		t.Fatalf("screenshot table-filter: %.3f%% ink below the last row (%v)", 100*s, below)
	}

	// A secondary index, by exact key.
	filter(t, ctx, "zone", "key", "eu", "")
	if got := keys(t, ctx); !slices.Equal(got, []string{"h00", "h03", "h06", "h09"}) {
		t.Fatalf("zone eu: rows %q", got)
	}
	if m := run(t, ctx, "matching", chromedp.TextContent(chromedp.ID("matching"))); m != "4" {
		t.Fatalf("zone eu: matching %q, want 4", m)
	}

	// Jobs, keyed by integers: a range from–to, and a key that is no
	// integer, which shows the API's problem, not a blank page.
	waitFor(t, "20 jobs", func() bool { return w.jobs.NumObjects(w.db.ReadTxn()) >= 20 })
	do(t, ctx, "jobs", chromedp.Navigate(w.url+"/ui/table?table=jobs"))
	// The form hints at the index's key type, and asks for a second key
	// only for a range.
	form := `[document.getElementById("f-key").placeholder, String(document.getElementById("f-to-label").hidden), document.getElementById("f-key-name").textContent]`
	if got := run(t, ctx, "the form", chromedp.Evaluate[[]string](form)); !slices.Equal(got, []string{"uint64", "true", "Key"}) {
		t.Fatalf("the jobs' form: %q", got)
	}
	filter(t, ctx, "", "range", "3", "7")
	if got := run(t, ctx, "the form", chromedp.Evaluate[[]string](form)); !slices.Equal(got, []string{"uint64", "false", "From"}) {
		t.Fatalf("the jobs' range form: %q", got)
	}
	if got := keys(t, ctx); !slices.Equal(got, []string{"3", "4", "5", "6"}) {
		t.Fatalf("jobs 3 to 7: rows %q", got)
	}
	if m := run(t, ctx, "matching", chromedp.TextContent(chromedp.ID("matching"))); m != "4" {
		t.Fatalf("jobs 3 to 7: matching %q, want 4", m)
	}
	filter(t, ctx, "", "key", "abc", "")
	refusedURL := run(t, ctx, "the refused page's URL", chromedp.Evaluate[string](`location.href`))
	problem := apiProblem(t, w.url+"/v1/tables/jobs/objects?key=abc")
	shown := run(t, ctx, "the problem", chromedp.Evaluate[[]string](`["problem-title", "problem-error", "problem-detail", "f-key"].map((id) => { const el = document.getElementById(id); return el.value ?? el.textContent; })`))
	if want := []string{problem.Title, problem.Error + " · 400", problem.Detail, "abc"}; problem.Error != "index.ErrParseKey" || !slices.Equal(shown, want) {
		t.Fatalf("key abc shows %q, want %q", shown, want)
	}
	if n := run(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#rows").length`)); n != 0 {
		t.Fatalf("a refused filter shows %d tables of rows", n)
	}
	img = screenshot(t, ctx, "table-bad-key")
	checkShot(t, ctx, img, "table-bad-key", "#problem-title", "#problem-detail", "#filter")
	if s := share(img, rectOf(t, ctx, "#problem"), near(0xfdecea)); s < 0.5 {
		t.Fatalf("screenshot table-bad-key: the problem's box is %.0f%% its colour", 100*s)
	}

	// Counts: exact on the tags index counts; a prefix cannot, and says
	// so, while its rows are read.
	do(t, ctx, "labels", chromedp.Navigate(w.url+"/ui/table?table=labels"))
	filter(t, ctx, "tags", "key", "red", "")
	if got, m := keys(t, ctx), run(t, ctx, "matching", chromedp.TextContent(chromedp.ID("matching"))); !slices.Equal(got, []string{"l1", "l2"}) || m != "2" {
		t.Fatalf("tag red: rows %q, matching %q", got, m)
	}
	filter(t, ctx, "", "prefix", "r", "")
	if got, m := keys(t, ctx), run(t, ctx, "matching", chromedp.TextContent(chromedp.ID("matching"))); !slices.Equal(got, []string{"l1", "l2"}) || m != "cannot count" {
		t.Fatalf("tag prefix r: rows %q, matching %q", got, m)
	}
	apiProblem(t, w.url+"/v1/tables/labels/count?index=tags&prefix=r")

	// A screen of jobs holds at least 25 whole rows.
	waitFor(t, "60 jobs", func() bool { return w.jobs.NumObjects(w.db.ReadTxn()) >= 60 })
	do(t, ctx, "jobs", chromedp.Navigate(w.url+"/ui/table?table=jobs"))
	whole := run(t, ctx, "rows on screen", chromedp.Evaluate[int](`[...document.querySelectorAll("#rows tr.obj")].filter((tr) => tr.getBoundingClientRect().bottom <= innerHeight).length`))
	t.Logf("%d whole rows on a 1280×800 screen", whole)
	if whole < 25 {
		t.Fatalf("%d whole rows on a 1280×800 screen, want at least 25", whole)
	}
	img = screenshot(t, ctx, "table-jobs")
	checkShot(t, ctx, img, "table-jobs", "#rows thead", `#rows tr.obj:nth-of-type(1)`, `#rows tr.obj:nth-of-type(49)`) // the 25th object, after 24 of them and their JSON rows

	// Live, new jobs come in as rows with their columns filled, and
	// their JSON below them.
	do(t, ctx, "live jobs", chromedp.Click(chromedp.ID("live")))
	waitJS(t, ctx, "a new job's row", `(() => {
		const tr = document.querySelector("#rows tr.obj.new");
		if (!tr) return false;
		const o = JSON.parse(tr.nextElementSibling.querySelector("pre").textContent);
		return tr.cells.length === 4 && tr.cells[2].textContent === tr.dataset.key && /^h\d\d$/.test(tr.cells[3].textContent) &&
			String(o.ID) === tr.dataset.key && o.Host === tr.cells[3].textContent &&
			document.getElementById("shown").textContent === String(document.querySelectorAll("#rows tr.obj").length);
	})()`)

	// The refused filter's page came with its problem's status, 400,
	// which the browser notes in the console.
	checkConsole(t, console, refusedURL)
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("waiting for %s", what)
		}
	}
}

// apiProblem reads url, which the API must refuse with a problem, and
// returns the problem.
func apiProblem(t *testing.T, url string) httpapi.Problem {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p httpapi.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != p.Status || p.Status < 400 || p.Error == "" {
		t.Fatalf("GET %s: %d %+v %v", url, resp.StatusCode, p, err)
	}
	return p
}
