package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/httpapi"
	"go.yaml.in/yaml/v3"
)

// liveServer is the fixture's database served by package httpapi on TCP
// and on a unix socket, while a writer commits to it: nodes 1000 and up
// (zone "live") come and go, so the fixture's nodes 1 to 30 (zones eu,
// us, ap) and blobs read the same whatever it does.
type liveServer struct {
	t        testing.TB
	f        *fixture
	handlers []*httpapi.Handler
	cur      atomic.Pointer[httpapi.Handler]
	tcp, uds *httptest.Server
	// tcpAddr and unixAddr are the --addr of each.
	tcpAddr, unixAddr string
	// commits counts the writer's commits.
	commits atomic.Int64
}

func newLiveServer(t testing.TB) *liveServer {
	t.Helper()
	s := &liveServer{t: t, f: memFixture(t, 30)}
	s.restart()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.cur.Load().ServeHTTP(w, r) })
	s.tcp = httptest.NewServer(h)
	s.tcpAddr = s.tcp.URL

	sock := filepath.Join(t.TempDir(), "strata.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s.uds = httptest.NewUnstartedServer(h)
	s.uds.Listener.Close()
	s.uds.Listener = l
	s.uds.Start()
	s.unixAddr = "unix://" + sock

	stop, done := make(chan struct{}), make(chan struct{})
	go s.write(stop, done)
	t.Cleanup(func() {
		close(stop)
		<-done
		for _, srv := range []*httptest.Server{s.tcp, s.uds} {
			srv.CloseClientConnections()
			srv.Close()
		}
		for _, h := range s.handlers {
			h.Close()
		}
	})
	// The writer is under way before any test reads.
	for s.commits.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	return s
}

// write commits until stop is closed: node 1000+i inserted, node
// 1000+i-8 deleted, every millisecond.
func (s *liveServer) write(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := uint64(0); ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		txn := s.f.db.WriteTxn(s.f.nodes)
		if _, _, err := s.f.nodes.Insert(txn, &node{ID: 1000 + i, Name: fmt.Sprint("live-", i), Zone: "live"}); err != nil {
			panic(err)
		}
		if i >= 8 {
			if _, _, err := s.f.nodes.Delete(txn, &node{ID: 1000 + i - 8}); err != nil {
				panic(err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			panic(err)
		}
		s.commits.Add(1)
	}
}

// restart serves the database with a new handler: to a client, a server
// restarted (another instance), which cannot resume its change streams.
func (s *liveServer) restart() {
	h := httpapi.New(s.f.db, httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	s.handlers = append(s.handlers, h)
	s.cur.Store(h)
}

// dropConnections cuts every connection to the server, as a network
// failure would.
func (s *liveServer) dropConnections() {
	s.tcp.CloseClientConnections()
	s.uds.CloseClientConnections()
}

func (s *liveServer) insert(n *node) {
	s.t.Helper()
	txn := s.f.db.WriteTxn(s.f.nodes)
	must(s.t)(s.f.nodes.Insert(txn, n))
	mustCommit(s.t, txn)
}

func (s *liveServer) remove(id uint64) {
	s.t.Helper()
	txn := s.f.db.WriteTxn(s.f.nodes)
	must(s.t)(s.f.nodes.Delete(txn, &node{ID: id}))
	mustCommit(s.t, txn)
}

// ids returns the ids of the nodes in rows of jsonl output.
func ids(t testing.TB, out string) []float64 {
	t.Helper()
	ids := []float64{}
	for _, row := range jsonLines(t, out) {
		obj, ok := row["object"].(map[string]any)
		if !ok {
			t.Fatalf("row without an object: %v", row)
		}
		ids = append(ids, obj["id"].(float64))
	}
	return ids
}

// TestOnlineTables lists a running database's tables, over TCP and a unix
// socket (in its URL form, and in the form "unix:/path" servers print),
// in every format.
func TestOnlineTables(t *testing.T) {
	s := newLiveServer(t)
	for _, addr := range []string{s.tcpAddr, s.unixAddr, "unix:" + strings.TrimPrefix(s.unixAddr, "unix://")} {
		var tables []struct {
			Name    string
			Objects int
			Indexes []struct {
				Name    string
				Primary bool
			}
		}
		r := strataRun(t, 0, "tables", "--addr", addr, "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &tables); err != nil {
			t.Fatalf("%s: %v\n%s", addr, err, r.stdout)
		}
		if len(tables) != 2 || tables[0].Name != "nodes" || tables[1].Name != "blobs" || tables[1].Objects != 30 ||
			tables[0].Objects < 29 || len(tables[0].Indexes) != 2 || !tables[0].Indexes[0].Primary || tables[0].Indexes[1].Name != "zone" {
			t.Errorf("%s: tables %+v", addr, tables)
		}
		r = strataRun(t, 0, "tables", "--addr", addr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 || !slices.Equal(strings.Fields(lines[0]), []string{"TABLE", "OBJECTS", "REVISION", "INITIALIZED", "INDEXES"}) ||
			!strings.HasPrefix(lines[1], "nodes ") || !strings.HasSuffix(lines[1], " id,zone") || !strings.Contains(lines[2], " 30 ") {
			t.Errorf("%s: tables as text:\n%s", addr, r.stdout)
		}
		var doc []map[string]any
		if err := yaml.Unmarshal([]byte(strataRun(t, 0, "tables", "--addr", addr, "-o", "yaml").stdout), &doc); err != nil || len(doc) != 2 || doc[0]["name"] != "nodes" {
			t.Errorf("%s: tables as YAML: %v %v", addr, doc, err)
		}
	}
}

// TestOnlineDump reads a running database with every query op, on the
// primary and a secondary index, with keys as text and raw, in every
// output format, and get.
func TestOnlineDump(t *testing.T) {
	s := newLiveServer(t)
	txn := s.f.db.ReadTxn()
	eu := []float64{}
	for n := range s.f.nodes.List(txn, nodeByZone.Query("eu")) {
		eu = append(eu, float64(n.ID))
	}
	for _, addr := range []string{s.tcpAddr, s.unixAddr} {
		for _, c := range []struct {
			args []string
			want []float64
		}{
			{[]string{"--get", "5"}, []float64{5}},
			{[]string{"--get", "2"}, []float64{}},
			{[]string{"--lowerbound", "27", "--limit", "4"}, []float64{27, 28, 29, 30}},
			{[]string{"--from", "1", "--to", "6"}, []float64{1, 3, 4, 5}},
			{[]string{"--from", "29"}, nil}, // no end: a lower bound, checked below
			{[]string{"--index", "zone", "--get", "eu"}, eu},
			{[]string{"--index", "zone", "--prefix", "e"}, eu},
			{[]string{"--index", "zone", "--from", "a", "--to", "f", "--limit", "3"}, []float64{5, 8, 11}}, // ap first
			{[]string{"--key-format", "hex", "--from", hexKey(1), "--to", hexKey(4)}, []float64{1, 3}},
			{[]string{"--key-format", "hex", "--to", hexKey(4)}, []float64{1, 3}},
			{[]string{"--key-format", "hex", "--index", "zone", "--prefix", "6575"}, eu}, // "eu"
		} {
			args := append([]string{"dump", "nodes", "--addr", addr, "-o", "jsonl"}, c.args...)
			got := ids(t, strataRun(t, 0, args...).stdout)
			switch {
			case c.want != nil:
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: dump %v: %v, want %v", addr, c.args, got, c.want)
				}
			default:
				// 29, 30, then the writer's nodes.
				if len(got) < 3 || got[0] != 29 || got[1] != 30 || got[2] < 1000 {
					t.Errorf("%s: dump %v: %v", addr, c.args, got)
				}
			}
		}

		// All objects: the fixture's first, in key order, then the
		// writer's.
		got := ids(t, strataRun(t, 0, "dump", "nodes", "--addr", addr, "-o", "jsonl").stdout)
		want := []float64{1}
		for i := 3; i <= 30; i++ {
			want = append(want, float64(i))
		}
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) || len(got) > len(want) && got[len(want)] < 1000 {
			t.Errorf("%s: dump nodes: %v", addr, got)
		}

		// The output formats.
		r := strataRun(t, 0, "dump", "nodes", "--addr", addr, "--limit", "2")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 || !slices.Equal(strings.Fields(lines[0]), []string{"KEY", "REVISION", "ID", "NAME", "ZONE"}) ||
			!slices.Equal(strings.Fields(lines[2]), []string{"3", "3", "3", "node-3", "eu"}) {
			t.Errorf("%s: table output:\n%s", addr, r.stdout)
		}
		var arr []map[string]any
		if err := json.Unmarshal([]byte(strataRun(t, 0, "dump", "blobs", "--addr", addr, "-o", "json").stdout), &arr); err != nil || len(arr) != 30 || arr[4]["key"] != "5" {
			t.Errorf("%s: -o json: %d rows, %v", addr, len(arr), err)
		}
		var seq []map[string]any
		if err := yaml.Unmarshal([]byte(strataRun(t, 0, "dump", "nodes", "--addr", addr, "-o", "yaml", "--index", "zone", "--get", "us").stdout), &seq); err != nil ||
			len(seq) == 0 || seq[0]["object"].(map[string]any)["zone"] != "us" || seq[0]["key"] != "1" {
			t.Errorf("%s: -o yaml: %v, %v", addr, seq, err)
		}
		if out := strataRun(t, 0, "dump", "nodes", "--addr", addr, "-o", "json", "--get", "2").stdout; out != "[]\n" {
			t.Errorf("%s: an empty JSON result: %q", addr, out)
		}

		// get, on either index.
		rows := jsonLines(t, strataRun(t, 0, "get", "nodes", "7", "--addr", addr, "-o", "jsonl").stdout)
		if len(rows) != 1 || rows[0]["key"] != "7" || rows[0]["object"].(map[string]any)["name"] != "node-7" {
			t.Errorf("%s: get nodes 7: %v", addr, rows)
		}
		if got := ids(t, strataRun(t, 0, "get", "nodes", "ap", "--index", "zone", "--addr", addr, "-o", "jsonl").stdout); !slices.Equal(got, []float64{5}) {
			t.Errorf("%s: get nodes ap --index zone: %v", addr, got)
		}
		if r := strataRun(t, 4, "get", "nodes", "2", "--addr", addr); !strings.Contains(r.stderr, "no object with key \"2\"") || r.stdout != "" {
			t.Errorf("%s: get of a deleted node: %q %q", addr, r.stdout, r.stderr)
		}
	}
}

// hexKey is the primary key of node id, in hex.
func hexKey(id uint64) string { return hex.EncodeToString(nodeByID.Query(id).Key()) }

// nextCursor returns the cursor of the next page a dump gives on stderr,
// "" if none.
func nextCursor(t testing.TB, stderr string) string {
	t.Helper()
	for line := range strings.Lines(stderr) {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "next page: --after "); ok {
			return c
		}
	}
	return ""
}

// TestOnlinePages pages through a running database's tables with --limit
// and --after, on the primary and a secondary index, and finds the
// cursors the same as those of a store of the same objects.
func TestOnlinePages(t *testing.T) {
	s := newLiveServer(t)
	dir, _ := newFixture(t, 30)
	for _, c := range []struct {
		table string
		args  []string
		n     int
	}{
		{"blobs", nil, 30},
		{"nodes", []string{"--index", "zone", "--get", "eu"}, 10},
		{"nodes", []string{"--to", "26", "--from", "4"}, 22},
	} {
		var all []string
		after, pages := "", 0
		for {
			args := append([]string{"dump", c.table, "--addr", s.unixAddr, "-o", "jsonl", "--limit", "4"}, c.args...)
			if after != "" {
				args = append(args, "--after", after)
			}
			r := strataRun(t, 0, args...)
			rows := jsonLines(t, r.stdout)
			for _, row := range rows {
				all = append(all, row["key"].(string))
			}
			pages++
			if after = nextCursor(t, r.stderr); after == "" {
				if len(rows) > 4 || r.stderr != "" {
					t.Errorf("%s %v: last page: %d rows, stderr %q", c.table, c.args, len(rows), r.stderr)
				}
				break
			}
			if len(rows) != 4 {
				t.Fatalf("%s %v: a page of %d rows, and a next one", c.table, c.args, len(rows))
			}
		}
		whole := jsonLines(t, strataRun(t, 0, append([]string{"dump", c.table, "--addr", s.tcpAddr, "-o", "jsonl"}, c.args...)...).stdout)
		var want []string
		for _, row := range whole {
			want = append(want, row["key"].(string))
		}
		if !slices.Equal(all, want) || len(all) != c.n || pages != (c.n+3)/4 {
			t.Errorf("%s %v: %d pages: %q, want %q", c.table, c.args, pages, all, want)
		}
	}

	// A cursor is the same online and offline, and works in both.
	online := strataRun(t, 0, "dump", "blobs", "--addr", s.tcpAddr, "--limit", "5", "-o", "jsonl")
	offline := strataRun(t, 0, "dump", "blobs", "-d", dir, "--limit", "5", "-o", "jsonl")
	cursor := nextCursor(t, online.stderr)
	if cursor == "" || nextCursor(t, offline.stderr) != cursor {
		t.Fatalf("cursors: online %q, offline %q", online.stderr, offline.stderr)
	}
	if got := jsonLines(t, strataRun(t, 0, "dump", "blobs", "-d", dir, "--limit", "1", "-o", "jsonl", "--after", cursor).stdout); len(got) != 1 || got[0]["key_hex"] != hexKey32(6) {
		t.Errorf("the online cursor, offline: %v", got)
	}
	if r := strataRun(t, 2, "dump", "blobs", "--addr", s.tcpAddr, "--after", "!!"); !strings.Contains(r.stderr, "not a cursor") {
		t.Errorf("a bad cursor: %q", r.stderr)
	}
}

// hexKey32 is the primary key of blob id, in hex.
func hexKey32(id uint32) string { return hex.EncodeToString(blobByID.Query(id).Key()) }

// TestOnlineErrors: a database that cannot be reached exits with 5, an
// unknown table with 4, a key that does not parse with 2 and the server's
// problem text; each says what is wrong.
func TestOnlineErrors(t *testing.T) {
	s := newLiveServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	missing := "unix://" + filepath.Join(t.TempDir(), "nobody.sock")
	notAPI := httptest.NewServer(http.NotFoundHandler())
	defer notAPI.Close()
	for _, c := range []struct {
		code int
		args []string
		msg  string
	}{
		{5, []string{"tables", "--addr", refused}, "cannot connect to " + refused},
		{5, []string{"dump", "nodes", "--addr", refused}, "connection refused"},
		{5, []string{"get", "nodes", "1", "--addr", missing}, "cannot connect to " + missing},
		{5, []string{"watch", "nodes", "--addr", refused}, "connection refused"},
		{5, []string{"watch", "nodes", "--addr", missing}, "no such file"},
		{5, []string{"tables", "--addr", notAPI.URL}, "no Strata HTTP API at " + notAPI.URL},
		{2, []string{"tables", "--addr", "ftp://host"}, "want http://"},
		{4, []string{"dump", "nope", "--addr", s.tcpAddr}, `"nope"`},
		{4, []string{"get", "nope", "1", "--addr", s.unixAddr}, `"nope"`},
		{4, []string{"watch", "nope", "--addr", s.unixAddr}, `"nope"`},
		{2, []string{"dump", "nodes", "--addr", s.tcpAddr, "--get", "five"}, `"five"`},
		{2, []string{"get", "nodes", "1.5", "--addr", s.unixAddr}, `"1.5"`},
		{2, []string{"dump", "nodes", "--addr", s.tcpAddr, "--index", "nope", "--get", "x"}, `"nope"`},
		{2, []string{"dump", "nodes", "--addr", s.tcpAddr, "--to", "5"}, "--to without --from"},
		{2, []string{"dump", "nodes", "--addr", s.tcpAddr, "--key-format", "hex", "--get", "zz"}, "not hex"},
	} {
		r := run(t, strataBin, c.args...)
		t.Logf("strata %s: exit %d: %s", strings.Join(c.args, " "), r.code, r.stderr)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("strata %s: exit %d (want %d), stderr %q (want %q), stdout %q", strings.Join(c.args, " "), r.code, c.code, r.stderr, c.msg, r.stdout)
		}
	}
	// The server's own words for a key that does not parse.
	r := run(t, strataBin, "dump", "nodes", "--addr", s.tcpAddr, "--get", "five")
	if !strings.Contains(r.stderr, "cannot parse key") {
		t.Errorf("a key that does not parse: %q", r.stderr)
	}
}

// watcher is a strata watch running in the background, its output
// gathered as it comes.
type watcher struct {
	cmd    *exec.Cmd
	lines  chan map[string]any
	stderr syncBuffer
	done   chan error
}

func startWatch(t *testing.T, args ...string) *watcher {
	t.Helper()
	w := &watcher{cmd: exec.Command(strataBin, append([]string{"watch"}, args...)...), lines: make(chan map[string]any, 1<<16), done: make(chan error, 1)}
	w.cmd.Env = append(os.Environ(), "CI=")
	w.cmd.Stderr = &w.stderr
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsed": sc.Text()}
			}
			w.lines <- m
		}
		_, _ = io.Copy(io.Discard, stdout) // a drain: the lines read above are what the test checks
	}()
	go func() {
		<-read
		w.done <- w.cmd.Wait()
	}()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			if err := <-w.done; err != nil {
				if _, exited := err.(*exec.ExitError); !exited {
					t.Error(err)
				}
			}
		}
	})
	return w
}

// await reads the watch's rows until one satisfies match, and fails the
// test if none does within 10 seconds.
func (w *watcher) await(t *testing.T, what string, match func(row map[string]any) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case row := <-w.lines:
			if _, ok := row["unparsed"]; ok {
				t.Fatalf("watch wrote a line that is not JSON: %v", row)
			}
			if match(row) {
				return
			}
		case err := <-w.done:
			t.Fatalf("watch ended (%v) before %s; stderr:\n%s", err, what, w.stderr.String())
		case <-timeout:
			t.Fatalf("timed out waiting for %s; stderr:\n%s", what, w.stderr.String())
		}
	}
}

// wait waits for the watch to end and returns its exit code.
func (w *watcher) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-w.done:
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatal(err)
		}
		return w.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatalf("watch did not end; stderr:\n%s", w.stderr.String())
		return -1
	}
}

// change matches a watch's row of node id, deleted or not.
func change(id float64, deleted bool) func(map[string]any) bool {
	return func(row map[string]any) bool {
		obj, _ := row["object"].(map[string]any)
		return obj != nil && obj["id"] == id && row["deleted"] == deleted && row["key"] == fmt.Sprint(id)
	}
}

// TestOnlineWatch follows a table while the writer commits: the listing,
// then inserts and deletes as they come; across dropped connections (it
// resumes) and a restarted server (it lists again, and says so); until
// interrupted.
func TestOnlineWatch(t *testing.T) {
	s := newLiveServer(t)
	w := startWatch(t, "nodes", "--addr", s.tcpAddr, "-o", "jsonl")
	w.await(t, "node 30 in the listing", change(30, false))
	w.await(t, "a live delete of the writer's", func(row map[string]any) bool { return row["deleted"] == true })

	s.insert(&node{ID: 777, Name: "watch-me", Zone: "eu"})
	w.await(t, "node 777's insert", change(777, false))
	s.remove(777)
	w.await(t, "node 777's delete", change(777, true))

	// A dropped connection: the watch resumes where it was.
	s.dropConnections()
	s.insert(&node{ID: 778, Name: "after a drop", Zone: "eu"})
	w.await(t, "node 778, after the drop", change(778, false))
	if !strings.Contains(w.stderr.String(), "reconnecting") {
		t.Errorf("the reconnect is not told on stderr: %q", w.stderr.String())
	}
	if strings.Contains(w.stderr.String(), "listing the table again") {
		t.Errorf("a resumed watch listed again: %q", w.stderr.String())
	}

	// A restarted server cannot resume the stream: the watch lists the
	// table again, and says so.
	s.restart()
	s.dropConnections()
	s.remove(778)
	w.await(t, "node 30 in the second listing", change(30, false))
	s.insert(&node{ID: 779, Name: "after a restart", Zone: "eu"})
	w.await(t, "node 779, after the restart", change(779, false))
	if !strings.Contains(w.stderr.String(), "listing the table again") {
		t.Errorf("the relist is not told on stderr: %q", w.stderr.String())
	}

	// Interrupted: the normal end of a watch.
	if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(t); code != 0 {
		t.Errorf("watch exited with %d on SIGINT; stderr:\n%s", code, w.stderr.String())
	}
	t.Logf("watch's stderr:\n%s", w.stderr.String())
}

// TestOnlineWatchFrom: --from starts after a revision, without the
// listing, and --timeout ends the watch with exit code 0; table output
// marks deleted rows (no terminal: no escape sequences) and keeps its
// columns aligned as rows come. A revision the server cannot resume from
// lists the table, and says so.
func TestOnlineWatchFrom(t *testing.T) {
	s := newLiveServer(t)
	// A watch that keeps the server's ring of the table's recent changes,
	// which a stream from a revision resumes from.
	w := startWatch(t, "nodes", "--addr", s.tcpAddr, "-o", "jsonl")
	w.await(t, "a live delete", func(row map[string]any) bool { return row["deleted"] == true })
	rev := s.f.nodes.Revision(s.f.db.ReadTxn())

	start := time.Now()
	r := strataRun(t, 0, "watch", "nodes", "--addr", s.unixAddr, "--from", fmt.Sprint(rev), "--timeout", "300ms")
	if time.Since(start) < 300*time.Millisecond || r.stderr != "" {
		t.Errorf("watch --timeout 300ms ended after %v; stderr %q", time.Since(start), r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 3 || !slices.Equal(strings.Fields(lines[0]), []string{"KEY", "REVISION", "DELETED", "ID", "NAME", "ZONE"}) {
		t.Fatalf("watch's table:\n%s", r.stdout)
	}
	deletes := 0
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 6 || f[3] != f[0] || f[5] != "live" || f[1] <= fmt.Sprint(rev) && len(f[1]) <= len(fmt.Sprint(rev)) {
			t.Errorf("a row of another node than the writer's, or from before revision %d: %q", rev, line)
		}
		if f[2] == "true" {
			deletes++
		}
	}
	if deletes == 0 || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("watch's table: %d deletes:\n%q", deletes, r.stdout)
	}
	// Each row is written as it comes, its columns as wide as the widest
	// cell so far: at the header's positions in the first row, never left
	// of them after.
	zone := strings.Index(lines[0], "ZONE")
	if strings.LastIndex(lines[1], "live") != zone {
		t.Errorf("the first row %q is not aligned with the header %q", lines[1], lines[0])
	}
	for _, line := range lines[2:] {
		if strings.LastIndex(line, "live") < zone {
			t.Errorf("row %q is left of the header %q", line, lines[0])
		}
	}

	// A revision ahead of the table's (of a server before its restart):
	// the table is listed, and stderr says why.
	r = strataRun(t, 0, "watch", "nodes", "--addr", s.tcpAddr, "--from", "99999999", "--timeout", "300ms", "-o", "jsonl")
	if got := ids(t, r.stdout); len(got) < 29 || got[0] != 1 || got[1] != 3 {
		t.Errorf("watch from a revision the server does not have: %v", got)
	}
	if !strings.Contains(r.stderr, "cannot resume the changes of table nodes after revision 99999999") {
		t.Errorf("the listing is not told on stderr: %q", r.stderr)
	}

	if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := w.wait(t); code != 0 {
		t.Errorf("watch exited with %d on SIGINT; stderr:\n%s", code, w.stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
