package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Host is the object of the tests' main table.
type Host struct {
	Name string
	Zone string
	Up   bool
	Note string `json:",omitempty"`
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
)

// Point has a primary index without a text form: its keys are raw only.
type Point struct{ X, Y int32 }

type pointKey struct{ X, Y int32 }

var pointByXY = strata.Index[*Point, pointKey]{
	Name: "xy",
	FromObject: func(p *Point) index.KeySet {
		return index.NewKeySet(append(index.Int32(p.X), index.Int32(p.Y)...))
	},
	FromKey: func(k pointKey) index.Key { return append(index.Int32(k.X), index.Int32(k.Y)...) },
	Unique:  true,
}

// fixture is a database with a hosts table and a points table, and a
// handler serving it on a test server.
type fixture struct {
	db     *strata.DB
	hosts  strata.RWTable[*Host]
	points strata.RWTable[*Point]
	h      *Handler
	srv    *httptest.Server
}

// mustCommit commits txn and returns the new snapshot, failing the test if
// the commit fails.
func mustCommit(t testing.TB, txn strata.WriteTxn) strata.ReadTxn {
	t.Helper()
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rtxn
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	f := &fixture{db: strata.New()}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f.hosts = strata.MustNewTable(f.db, "hosts", hostByName, hostByZone)
	f.points = strata.MustNewTable(f.db, "points", pointByXY)
	f.h = New(f.db, opts)
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.h.Close()
		f.srv.Close()
	})
	return f
}

// insert commits hosts and returns the table's revision.
func (f *fixture) insert(t testing.TB, hosts ...*Host) strata.Revision {
	t.Helper()
	wtxn := f.db.WriteTxn(f.hosts)
	for _, h := range hosts {
		if _, _, err := f.hosts.Insert(wtxn, h); err != nil {
			t.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return f.hosts.Revision(txn)
}

// remove deletes the hosts of the names given.
func (f *fixture) remove(t testing.TB, names ...string) strata.Revision {
	t.Helper()
	wtxn := f.db.WriteTxn(f.hosts)
	for _, n := range names {
		if _, hadOld, err := f.hosts.Delete(wtxn, &Host{Name: n}); err != nil || !hadOld {
			t.Fatalf("delete %q: %v, found %v", n, err, hadOld)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return f.hosts.Revision(txn)
}

// sixHosts: a1..a3 in eu, b1..b3 in us.
func sixHosts() []*Host {
	var hs []*Host
	for _, z := range []struct{ prefix, zone string }{{"a", "eu"}, {"b", "us"}} {
		for i := 1; i <= 3; i++ {
			hs = append(hs, &Host{Name: fmt.Sprint(z.prefix, i), Zone: z.zone})
		}
	}
	return hs
}

// response is a response read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t testing.TB, method, path string, body io.Reader, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{resp.StatusCode, resp.Header, data}
}

func (f *fixture) get(t testing.TB, path string, header ...string) response {
	t.Helper()
	return f.do(t, http.MethodGet, path, nil, header...)
}

// decode decodes r's JSON body into v, requiring status.
func (r response) decode(t testing.TB, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// problem checks that r is a problem document of status naming the error
// name, and returns it.
func (r response) problem(t testing.TB, status int, name string) Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d: %s)", ct, r.status, r.body)
	}
	var p Problem
	r.decode(t, status, &p)
	if p.Status != status || p.Error != name || p.Title == "" || p.Detail == "" || !strings.HasPrefix(p.Type, "https://") {
		t.Fatalf("problem %+v, want status %d, error %s", p, status, name)
	}
	return p
}

// pageKeys returns the keys of a page's objects.
func pageKeys(p Page) []string {
	keys := make([]string, len(p.Objects))
	for i, o := range p.Objects {
		keys[i] = o.Key
	}
	return keys
}

// eventReader reads a change stream's events, NDJSON or SSE.
type eventReader struct {
	t   testing.TB
	br  *bufio.Reader
	sse bool
	// id is the last SSE id read.
	id string
}

func newEventReader(t testing.TB, r io.Reader, sse bool) *eventReader {
	return &eventReader{t: t, br: bufio.NewReader(r), sse: sse}
}

// next reads the next event; ok is false at the end of the stream.
func (er *eventReader) next() (ev Event, ok bool) {
	er.t.Helper()
	if !er.sse {
		line, err := er.br.ReadBytes('\n')
		if err != nil {
			return Event{}, false
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			er.t.Fatalf("decoding %q: %v", line, err)
		}
		return ev, true
	}
	var name, data string
	for {
		line, err := er.br.ReadString('\n')
		if err != nil {
			return Event{}, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if data == "" {
				continue // retry: or an empty block
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				er.t.Fatalf("decoding %q: %v", data, err)
			}
			if string(ev.Kind) != name {
				er.t.Fatalf("SSE event %q holds an event of kind %q", name, ev.Kind)
			}
			return ev, true
		case strings.HasPrefix(line, "id: "):
			er.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "retry: "):
		default:
			er.t.Fatalf("unexpected SSE line %q", line)
		}
	}
}

// until reads events until one of kind at revision rev, and returns those
// read before it.
func (er *eventReader) until(kind EventKind, rev strata.Revision) []Event {
	er.t.Helper()
	var evs []Event
	for {
		ev, ok := er.next()
		if !ok {
			er.t.Fatalf("stream ended waiting for %s at %d; read %+v", kind, rev, evs)
		}
		if ev.Kind == kind && ev.Revision == rev {
			return evs
		}
		evs = append(evs, ev)
	}
}

// stream opens a change stream and returns its reader and a function that
// closes it.
func (f *fixture) stream(t testing.TB, query string, sse bool, header ...string) (*eventReader, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tables/hosts/changes"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sse {
		req.Header.Set("Accept", "text/event-stream")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return newEventReader(t, resp.Body, sse), resp
}

// eventually polls cond until it holds, for up to 10 seconds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// serve serves one request with h directly, without a server.
func serve(h http.Handler, method, target string) response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
}
