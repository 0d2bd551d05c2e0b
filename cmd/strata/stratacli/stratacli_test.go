package stratacli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runCmd runs a command tree made with opts in this process.
func runCmd(t testing.TB, opts []Option, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := NewCommand(opts...)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code = Run(context.Background(), cmd, args)
	return out.String(), withoutDiskWarnings(errOut.String()), code
}

// withoutDiskWarnings returns stderr without Pebble's warning that the
// disk is nearly full. The warning is about the machine the test runs on,
// not the command under test: a CI run with 10% of its disk free failed
// every test that wants an empty stderr.
func withoutDiskWarnings(stderr string) string {
	var b strings.Builder
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, `msg="pebble: low disk space"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

type host struct {
	Name string `json:"name"`
	Zone string `json:"zone"`
}

var (
	hostByName = strata.Index[*host, string]{
		Name:       "name",
		FromObject: func(h *host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*host, string]{
		Name:       "zone",
		FromObject: func(h *host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
		Unique:     true, // a key of its own, to stand in for a changed primary index
	}
)

// hostStore writes hosts a1 (eu), b1 (us) and c1 (ap) into a new store.
func hostStore(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	if err := s.Register(persist.Table(hosts, persist.JSON[*host]())); err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(hosts)
	for _, h := range []*host{{"a1", "eu"}, {"b1", "us"}, {"c1", "ap"}} {
		if _, _, err := hosts.Insert(txn, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestKeysChecked: check finds every object whose primary key, computed
// by the registered type, is not the key it is stored under.
func TestKeysChecked(t *testing.T) {
	dir := hostStore(t)
	same := []Option{WithTable("hosts", persist.JSON[*host](), hostByName, hostByZone)}
	if out, _, code := runCmd(t, same, "check", dir); code != 0 || out != "OK\n" {
		t.Fatalf("check with the type as stored: %d %q", code, out)
	}
	// The primary index is now the zone: every stored key is another.
	rekeyed := []Option{WithTable("hosts", persist.JSON[*host](), hostByZone, hostByName)}
	out, _, code := runCmd(t, rekeyed, "check", dir)
	if code != ExitCorrupt || !strings.HasSuffix(out, "3 errors found\n") ||
		!strings.Contains(out, `the object stored under key "a1" (6131) has primary key "eu" (6575)`) {
		t.Errorf("check with another primary index: %d\n%s", code, out)
	}
	// A registered type of another identity: shown raw, with a note.
	other := []Option{WithTable("hosts", persist.JSON[*host](), hostByName), WithTypeName("hosts", "example.com/Host")}
	out, errOut, code := runCmd(t, other, "dump", "hosts", "-d", dir, "-o", "jsonl")
	if code != 0 || !strings.Contains(errOut, "shown raw") || !strings.Contains(out, `"key_hex":"6131"`) {
		t.Errorf("a table stored as another type: %d %q %q", code, out, errOut)
	}
	// With the type: queries on the secondary index, keys as text.
	out, _, code = runCmd(t, same, "dump", "hosts", "-d", dir, "--index", "zone", "--lowerbound", "f", "-o", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"b1"`) {
		t.Errorf("zone >= f: %d %q", code, out)
	}
	if _, errOut, code := runCmd(t, same, "dump", "hosts", "-d", dir, "--index", "nope", "--get", "x"); code != ExitUsage || !strings.Contains(errOut, "index") {
		t.Errorf("an unknown index: %d %q", code, errOut)
	}
}

// fakeRemote is a running database for the online commands.
type fakeRemote struct {
	queries []RemoteQuery
	closed  bool
}

func (f *fakeRemote) Tables(context.Context) (RemoteDatabase, error) {
	return RemoteDatabase{Tables: []RemoteTable{{Name: "hosts", Objects: 2, Revision: 7, Initialized: true,
		Indexes: []RemoteIndex{{Name: "name", Primary: true, Unique: true}, {Name: "zone"}}}}}, nil
}

func (f *fakeRemote) Query(_ context.Context, table string, q RemoteQuery) iter.Seq2[RemoteObject, error] {
	f.queries = append(f.queries, q)
	return func(yield func(RemoteObject, error) bool) {
		if table != "hosts" {
			yield(RemoteObject{}, fmt.Errorf("table %q: %w", table, strata.ErrTableNotFound))
			return
		}
		for i, name := range []string{"a1", "b1"} {
			if q.Op == strata.QueryList && q.Key != name || q.After != "" && encodeCursor([]byte(name)) <= q.After {
				continue
			}
			o := RemoteObject{Revision: uint64(i + 1), Key: name, Object: json.RawMessage(`{"name":"` + name + `"}`)}
			if q.Limit == 1 && i == 0 {
				// A page of one, and a next.
				o.Next = encodeCursor([]byte(name))
				yield(o, nil)
				return
			}
			if !yield(o, nil) {
				return
			}
		}
	}
}

func (f *fakeRemote) Changes(ctx context.Context, table string, from uint64) iter.Seq2[RemoteChange, error] {
	return func(yield func(RemoteChange, error) bool) {
		for _, c := range []RemoteChange{{Revision: from + 1, Object: json.RawMessage(`{"name":"a1"}`)},
			{Revision: from + 2, Deleted: true, Object: json.RawMessage(`{"name":"a1"}`)}} {
			if !yield(c, nil) {
				return
			}
		}
		<-ctx.Done() // a watch goes on until interrupted
		yield(RemoteChange{}, ctx.Err())
	}
}

func (f *fakeRemote) Close() error { f.closed = true; return nil }

// TestOnline runs tables, dump, get and watch against a fake database.
func TestOnline(t *testing.T) {
	fake := &fakeRemote{}
	var dialed []string
	opts := []Option{WithRemote(func(_ context.Context, addr string) (Remote, error) {
		dialed = append(dialed, addr)
		if strings.Contains(addr, "down") {
			return nil, fmt.Errorf("dial %s: %w", addr, ErrConnect)
		}
		return fake, nil
	})}
	addr := "unix:///run/app.sock"
	out, _, code := runCmd(t, opts, "tables", "--addr", addr)
	if code != 0 || !strings.Contains(out, "hosts") || !strings.Contains(out, "name,zone") {
		t.Errorf("tables: %d %q", code, out)
	}
	out, _, code = runCmd(t, opts, "dump", "hosts", "--addr", addr, "--index", "zone", "--prefix", "e", "--limit", "5", "-o", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("dump: %d %q", code, out)
	}
	if q := fake.queries[0]; q != (RemoteQuery{Index: "zone", Op: strata.QueryPrefix, Key: "e", Limit: 5}) {
		t.Errorf("query sent: %+v", q)
	}
	// Pages: the server's next cursor on stderr, and --after sent.
	out, errOut, code := runCmd(t, opts, "dump", "hosts", "--addr", addr, "--limit", "1", "-o", "jsonl")
	if code != 0 || !strings.Contains(out, `"key":"a1"`) || errOut != "next page: --after YTE\n" {
		t.Errorf("a page: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCmd(t, opts, "dump", "hosts", "--addr", addr, "--limit", "1", "--after", "YTE", "-o", "jsonl")
	if code != 0 || strings.TrimSpace(out) != `{"key":"b1","revision":2,"object":{"name":"b1"}}` || errOut != "" || fake.queries[len(fake.queries)-1].After != "YTE" {
		t.Errorf("the next page: %d %q %q", code, out, errOut)
	}
	if out, _, code = runCmd(t, opts, "get", "hosts", "b1", "--addr", addr, "-o", "jsonl"); code != 0 || !strings.Contains(out, `"key":"b1"`) {
		t.Errorf("get: %d %q", code, out)
	}
	if _, _, code = runCmd(t, opts, "get", "hosts", "zz", "--addr", addr); code != ExitNotFound {
		t.Errorf("get of a missing key: %d", code)
	}
	if _, _, code = runCmd(t, opts, "dump", "nope", "--addr", addr); code != ExitNotFound {
		t.Errorf("dump of a missing table: %d", code)
	}
	if _, errOut, code := runCmd(t, opts, "tables", "--addr", "http://down:1"); code != ExitConnect || !strings.Contains(errOut, "cannot connect") {
		t.Errorf("a database that is down: %d %q", code, errOut)
	}
	if _, _, code = runCmd(t, opts, "tables", "--addr", "ftp://x"); code != ExitUsage {
		t.Errorf("a bad address: %d", code)
	}

	// watch: until the context is done.
	cmd := NewCommand(opts...)
	var buf bytes.Buffer
	cmd.SetOut(&buf)
	cmd.SetErr(&buf)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	code = Run(ctx, cmd, []string{"watch", "hosts", "--addr", addr, "--from", "10", "-o", "jsonl"})
	if code != 0 || buf.String() != `{"revision":11,"deleted":false,"object":{"name":"a1"}}`+"\n"+`{"revision":12,"deleted":true,"object":{"name":"a1"}}`+"\n" {
		t.Errorf("watch: %d %q", code, buf.String())
	}
	if !fake.closed {
		t.Error("the connection was not closed")
	}
}

// TestRowWriters: the formats' framing, the table's columns, cut cells
// and struck-through deleted rows.
func TestRowWriters(t *testing.T) {
	rows := []fields{
		{{"key", "a"}, {"revision", uint64(1)}, {"object", json.RawMessage(`{"b":"x\ty","a":[1,2]}`)}},
		{{"key", "b"}, {"revision", uint64(2)}, {"deleted", true}, {"object", json.RawMessage(`{"b":"` + strings.Repeat("z", 100) + `","a":null}`)}},
	}
	render := func(format string, strike bool) string {
		var b bytes.Buffer
		w := newRowWriter(&b, format, 20, strike)
		for _, r := range rows {
			if err := w.write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got := render(formatTable, false); got != "KEY  REVISION  B                     A\n"+
		"a    1         x\\ty                  [1,2]\n"+
		"b    2         zzzzzzzzzzzzzzzzzzz…  null\n" {
		t.Errorf("table:\n%s", got)
	}
	if got := render(formatTable, true); !strings.Contains(got, "\x1b[9mb\x1b[0m") || strings.Contains(got, "\x1b[9ma") {
		t.Errorf("struck through:\n%q", got)
	}
	if got := render(formatYAML, false); !strings.HasPrefix(got, "- key: a\n  revision: 1\n  object:\n    b: \"x\\ty\"\n    a:\n      - 1\n") {
		t.Errorf("yaml keeps the members' order:\n%s", got)
	}
	var arr []map[string]any
	if err := json.Unmarshal([]byte(render(formatJSON, false)), &arr); err != nil || len(arr) != 2 {
		t.Errorf("json: %v", err)
	}
	if got := render(formatJSONL, false); strings.Count(got, "\n") != 2 || !strings.HasPrefix(got, `{"key":"a","revision":1,"object":{"b":"x\ty","a":[1,2]}}`) {
		t.Errorf("jsonl:\n%s", got)
	}
}

// TestStreamRows: a watch's table is written row by row, each column as
// wide as its widest cell so far, deleted rows struck through in a
// terminal (the escape sequences around the text, not the padding).
func TestStreamRows(t *testing.T) {
	var b bytes.Buffer
	w := newStreamRowWriter(&b, formatTable, 0, true)
	for _, row := range []fields{
		{{"key", "a"}, {"revision", uint64(1)}, {"deleted", false}, {"object", json.RawMessage(`{"zone":"eu"}`)}},
		{{"key", "bbbbbbbbbb"}, {"revision", uint64(2)}, {"deleted", true}, {"object", json.RawMessage(`{"zone":"us"}`)}},
		{{"key", "c"}, {"revision", uint64(3)}, {"deleted", false}, {"object", json.RawMessage(`{"zone":"ap"}`)}},
	} {
		n := b.Len()
		if err := w.write(row); err != nil {
			t.Fatal(err)
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if b.Len() == n {
			t.Fatal("a row was held back")
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	want := "KEY  REVISION  DELETED  ZONE\n" +
		"a    1         false    eu\n" +
		"\x1b[9mbbbbbbbbbb\x1b[0m  \x1b[9m2\x1b[0m         \x1b[9mtrue\x1b[0m     \x1b[9mus\x1b[0m\n" +
		"c           3         false    ap\n"
	if b.String() != want {
		t.Errorf("stream table:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestProgressReport: a bar redrawn in place, or log lines; nothing in
// mode none; done stops the drawing goroutine (goleak checks).
func TestProgressReport(t *testing.T) {
	var b syncBuffer
	p := newProgress(&b, progressBar, time.Hour, "verify", 1000)
	p.add(250, 10)
	p.draw(p.start.Add(2 * time.Second))
	p.done()
	if got := b.String(); !strings.HasPrefix(got, "\r[======                  ] verify: 250 B of 1000 B (25%), 10 objects, 125 B/s, 2s") || !strings.HasSuffix(got, "\r") {
		t.Errorf("bar: %q", got)
	}
	b.Reset()
	p = newProgress(&b, progressLog, time.Millisecond, "export", 0)
	p.add(3<<20, 0)
	for !strings.Contains(b.String(), "\n") {
		time.Sleep(time.Millisecond)
	}
	p.done()
	if line, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(line, "export: 3.0 MiB, ") || strings.Contains(b.String(), "\r") {
		t.Errorf("log: %q", b.String())
	}
	b.Reset()
	p = newProgress(&b, progressNone, time.Millisecond, "x", 0)
	p.add(1, 1)
	p.done()
	if b.String() != "" {
		t.Errorf("none: %q", b.String())
	}
}

// TestExitCodes maps errors to the documented codes.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("x"), 1},
		{usagef("x"), 2},
		{fmt.Errorf("a: %w", index.ErrParseKey), 2},
		{fmt.Errorf("a: %w", persist.ErrCorruptSnapshot), 3},
		{fmt.Errorf("a: %w", persist.ErrCorrupt), 3},
		{fmt.Errorf("a: %w", ErrErrorsFound), 3},
		{notFoundf("x"), 4},
		{fmt.Errorf("a: %w", os.ErrNotExist), 4},
		{fmt.Errorf("a: %w", persist.ErrNoStore), 4},
		{fmt.Errorf("a: %w", ErrConnect), 5},
		{fmt.Errorf("a: %w", persist.ErrLocked), 6},
	} {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine and the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }
func (b *syncBuffer) Reset()         { b.mu.Lock(); defer b.mu.Unlock(); b.b.Reset() }
