package stratacli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/remote"
)

// apiServer serves a database of hosts with package httpapi, in process:
// gate answers every request with 503 while set.
type apiServer struct {
	db    *strata.DB
	hosts strata.RWTable[*host]
	h     *httpapi.Handler
	srv   *httptest.Server
	gate  atomic.Bool
}

func newAPIServer(t *testing.T, opts httpapi.Options) *apiServer {
	t.Helper()
	s := &apiServer{db: strata.New()}
	s.hosts = strata.MustNewTable(s.db, "hosts", hostByName, hostByZoneMulti)
	opts.Logger = slog.New(slog.DiscardHandler)
	s.h = httpapi.New(s.db, opts)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.gate.Load() {
			http.Error(w, "gated", http.StatusServiceUnavailable)
			return
		}
		s.h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.h.Close()
		s.srv.Close()
	})
	s.insert(t, &host{"a1", "eu"}, &host{"b1", "us"})
	return s
}

func (s *apiServer) insert(t testing.TB, hs ...*host) {
	t.Helper()
	txn := s.db.WriteTxn(s.hosts)
	for _, h := range hs {
		if _, _, err := s.hosts.Insert(txn, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPDialer: NewCommand's default Dialer reads a server of package
// httpapi, maps the ways a server refuses to ErrConnect, and logs a
// watch's reconnects on the command's error output; Close leaves no
// connection behind (goleak checks).
func TestHTTPDialer(t *testing.T) {
	s := newAPIServer(t, httpapi.Options{})
	if out, errOut, code := runCmd(t, nil, "dump", "hosts", "--addr", s.srv.URL, "-o", "jsonl"); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"key":"b1"`) {
		t.Errorf("dump: %d %q %q", code, out, errOut)
	}
	// A key of a kind is encoded by the command and sent raw.
	if out, errOut, code := runCmd(t, nil, "dump", "hosts", "--addr", s.srv.URL, "-o", "jsonl", "--key-format", "string", "--prefix", "b"); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"b1"`) {
		t.Errorf("dump --key-format string: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runCmd(t, nil, "dump", "hosts", "--addr", s.srv.URL, "--key-format", "uint8", "--get", "256"); code != ExitUsage || !strings.Contains(errOut, `key "256" as uint8`) {
		t.Errorf("dump --key-format uint8 --get 256: %d %q", code, errOut)
	}
	s.gate.Store(true)
	if _, errOut, code := runCmd(t, nil, "tables", "--addr", s.srv.URL); code != ExitConnect || !strings.Contains(errOut, "no Strata HTTP API") {
		t.Errorf("a 503 that is not the API's: %d %q", code, errOut)
	}
	s.gate.Store(false)

	refusing := newAPIServer(t, httpapi.Options{Authorize: func(*http.Request, httpapi.Access) error { return errors.New("no token") }})
	if _, errOut, code := runCmd(t, nil, "tables", "--addr", refusing.srv.URL); code != ExitConnect || !strings.Contains(errOut, "refused the request: 403 Forbidden") || !strings.Contains(errOut, "no token") {
		t.Errorf("a refused request: %d %q", code, errOut)
	}

	// A watch across a dropped connection.
	cmd := NewCommand()
	var out, errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	go func() { done <- Run(ctx, cmd, []string{"watch", "hosts", "--addr", s.srv.URL, "-o", "jsonl"}) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: stdout %q, stderr %q", what, out.String(), errOut.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the listing", func() bool { return strings.Contains(out.String(), `"key":"b1"`) })
	s.insert(t, &host{"c1", "ap"})
	waitFor("c1", func() bool { return strings.Contains(out.String(), `"key":"c1"`) })
	s.srv.CloseClientConnections()
	s.insert(t, &host{"d1", "ap"})
	waitFor("d1, after the drop", func() bool { return strings.Contains(out.String(), `"key":"d1"`) })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("watch: exit %d", code)
	}
	if !strings.Contains(errOut.String(), `msg="remote: change stream: reconnecting" table=hosts`) || strings.Contains(errOut.String(), "time=") {
		t.Errorf("the reconnect on the command's stderr: %q", errOut.String())
	}
	if strings.Count(out.String(), `"key":"a1"`) != 1 {
		t.Errorf("the watch listed again after a drop it could resume from:\n%s", out.String())
	}
}

// TestRemoteErrors maps the client's errors to the command's exit codes,
// keeping the server's words.
func TestRemoteErrors(t *testing.T) {
	r := &httpRemote{addr: "http://db:8080"}
	problem := func(status int, name, detail string) error {
		return &remote.Error{Status: status, Problem: httpapi.Problem{Status: status, Error: name, Detail: detail}}
	}
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{fmt.Errorf("%w: dial tcp: connection refused", remote.ErrUnreachable), ExitConnect, "cannot connect to http://db:8080: server unreachable: dial tcp: connection refused"},
		{fmt.Errorf("%w: dial unix /x.sock: %w", remote.ErrUnreachable, fs.ErrNotExist), ExitConnect, "cannot connect"},
		{fmt.Errorf("%w: not a page", remote.ErrProtocol), ExitConnect, "does not answer as a Strata HTTP API"},
		{problem(404, "", "404 Not Found: <html>"), ExitConnect, "no Strata HTTP API at http://db:8080"},
		{problem(404, "httpapi.ErrNotFound", "no endpoint"), ExitConnect, "give the path"},
		{problem(403, "httpapi.ErrForbidden", "no token"), ExitConnect, "refused the request: 403 Forbidden: no token"},
		{problem(503, "httpapi.ErrShuttingDown", "closing"), ExitConnect, "refused the request: 503"},
		{problem(400, "httpapi.ErrBadRequest", "after=\"x\": not a cursor"), ExitUsage, "after=\"x\": not a cursor"},
		{problem(400, "index.ErrParseKey", "key \"x\": cannot parse key"), ExitUsage, "key \"x\": cannot parse key"},
		{problem(404, "strata.ErrIndexNotFound", "index \"x\": index not found"), ExitUsage, "index \"x\""},
		{problem(404, "strata.ErrTableNotFound", "table \"x\": table not found"), ExitNotFound, "table \"x\""},
		{context.Canceled, ExitError, "context canceled"},
	} {
		err := r.fail(c.err)
		if ExitCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: exit %d (want %d), %q (want %q)", c.err, ExitCode(err), c.code, err, c.msg)
		}
	}
}

// closingFails is an output that takes every write but the one that ends
// a JSON array: a full disk or a closed pipe at the last moment.
type closingFails struct{ syncBuffer }

func (w *closingFails) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("]")) {
		return 0, errors.New("disk full")
	}
	return w.syncBuffer.Write(p)
}

// TestWatchReportsItsLastWrite: a watch whose output cannot be ended (the
// JSON array's closing bracket is written when the watch stops) fails
// instead of exiting 0 with a truncated document.
func TestWatchReportsItsLastWrite(t *testing.T) {
	s := newAPIServer(t, httpapi.Options{})
	cmd := NewCommand()
	var out closingFails
	var errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code := Run(context.Background(), cmd, []string{"watch", "hosts", "--addr", s.srv.URL, "-o", "json", "--timeout", "300ms"})
	if !strings.Contains(out.String(), `"key": "b1"`) && !strings.Contains(out.String(), `"key":"b1"`) {
		t.Fatalf("the watch wrote no rows: %q", out.String())
	}
	if code == 0 || !strings.Contains(errOut.String(), "disk full") {
		t.Fatalf("a watch whose last write failed: exit %d, stderr %q", code, errOut.String())
	}
}

// TestUnixAddressForms: every form of a unix socket's address that a
// server takes or prints is one --addr takes: "unix:/abs/path" (what
// servers print), the URL form "unix:///abs/path", and a path relative to
// the working directory, "unix:rel.sock" (what examples/inspect's -addr
// takes) or "unix://rel.sock". "unix:" alone names no socket.
func TestUnixAddressForms(t *testing.T) {
	s := newAPIServer(t, httpapi.Options{})
	dir := t.TempDir()
	t.Chdir(dir)
	l, err := net.Listen("unix", "rel.sock")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.h}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serving on the socket: %v", err)
		}
	})
	abs := filepath.Join(dir, "rel.sock")
	for _, addr := range []string{"unix:" + abs, "unix://" + abs, "unix:rel.sock", "unix://rel.sock", "unix:./rel.sock"} {
		if out, errOut, code := runCmd(t, nil, "get", "hosts", "a1", "--addr", addr, "-o", "jsonl"); code != 0 || !strings.Contains(out, `"key":"a1"`) {
			t.Errorf("--addr %s: %d %q %q", addr, code, out, errOut)
		}
	}
	for _, addr := range []string{"unix:", "unix://", "/abs/path.sock"} {
		if _, errOut, code := runCmd(t, nil, "tables", "--addr", addr); code != ExitUsage {
			t.Errorf("--addr %q: %d %q, want a usage error", addr, code, errOut)
		}
	}
}
