package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
)

// world is a database served with the inspector, and a writer that
// commits every 40ms: it raises the load of the hosts h00 to h11 in
// turn, and adds a job.
type world struct {
	db    *strata.DB
	hosts strata.RWTable[*Host]
	jobs  strata.RWTable[*Job]
	url   string
}

func newWorld(t *testing.T) *world {
	w := &world{db: strata.New()}
	w.hosts = strata.MustNewTable(w.db, "hosts", hostByName, hostByZone)
	w.jobs = strata.MustNewTable(w.db, "jobs", jobByID)
	wtxn := w.db.WriteTxn(w.hosts)
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

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	dirs := []string{t.TempDir()}
	if d := os.Getenv("STRATA_E2E_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
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
	waitJS(t, ctx, "the plots", `document.querySelectorAll("#plot-commits polyline").length === 1 && document.querySelectorAll("#plot-objects polyline").length === 2`)
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
	if legend != "hostsjobs" {
		t.Fatalf("legend %q", legend)
	}
	screenshot(t, ctx, "overview")

	// A table, live: rows the writer replaces flash with their new
	// revision, a deleted row is struck through, and the evil name is
	// shown as text.
	do(t, ctx, "table", chromedp.Navigate(w.url+"/ui/table?table=hosts"))
	waitJS(t, ctx, "the rows", `document.querySelectorAll("#rows tbody tr").length === 13`)
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
	waitJS(t, ctx, "h05's JSON to follow", `JSON.parse(document.querySelector('tr[data-key="h05"] pre').textContent).Load > 0`)
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
	screenshot(t, ctx, "table-live")

	// An object, watched: blocking reads bring its new state.
	do(t, ctx, "object", chromedp.Navigate(w.url+"/ui/object?table=hosts&key=h07"))
	objRev := `Number(document.getElementById("object-rev").textContent)`
	before = run(t, ctx, "h07 revision", chromedp.Evaluate[int](objRev))
	do(t, ctx, "watch", chromedp.Click(chromedp.ID("watch")))
	waitJS(t, ctx, "h07 to change", objRev+` > `+strconv.Itoa(before)+` && Number(document.getElementById("object").dataset.flashes || 0) >= 1`)
	screenshot(t, ctx, "object")

	var problems []string
	for _, m := range console() {
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning {
			problems = append(problems, m.String())
		}
	}
	if len(problems) > 0 {
		t.Fatalf("the console logged:\n%s", strings.Join(problems, "\n"))
	}
}
