package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/persist"
	"go.yaml.in/yaml/v3"
)

// jsonLines parses JSON lines.
func jsonLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rows = append(rows, m)
	}
	return rows
}

type inspectDoc struct {
	Kind     string `json:"kind"`
	Revision uint64 `json:"revision"`
	Objects  uint64 `json:"objects"`
	Verified *bool  `json:"verified"`
	Tables   []struct {
		Name       string `json:"name"`
		Codec      string `json:"codec"`
		Type       string `json:"type"`
		Revision   uint64 `json:"revision"`
		Objects    uint64 `json:"objects"`
		Registered bool   `json:"registered"`
	} `json:"tables"`
	StoreFormat uint64 `json:"store_format"`
}

// TestInspect summarizes a store and a snapshot of the same tables.
func TestInspect(t *testing.T) {
	dir, f := newFixture(t, 30)
	snap := f.snapshotOf(t)
	txn := f.db.ReadTxn()
	for _, args := range [][]string{{"inspect", dir}, {"inspect", "--dir", dir}, {"inspect", snap}, {"snapshot", "inspect", snap}} {
		r := strataRun(t, 0, append(args, "-o", "json")...)
		var doc inspectDoc
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r.stdout)
		}
		if doc.Objects != 59 || len(doc.Tables) != 2 || doc.Revision != f.nodes.Revision(txn) {
			t.Errorf("%v: %+v", args, doc)
		}
		for _, tb := range doc.Tables {
			want := map[string]uint64{"nodes": 29, "blobs": 30}[tb.Name]
			if tb.Objects != want || tb.Registered {
				t.Errorf("%v: table %+v", args, tb)
			}
			if tb.Name == "nodes" && (tb.Codec != "json" || tb.Type != "*github.com/strata-db/strata/cmd/strata.node" || tb.Revision != 31) {
				t.Errorf("%v: nodes %+v", args, tb)
			}
		}
		if (doc.Kind == "snapshot") != (doc.Verified != nil && *doc.Verified) || doc.Kind == "store" && doc.StoreFormat != 2 {
			t.Errorf("%v: kind %s, verified %v, format %d", args, doc.Kind, doc.Verified, doc.StoreFormat)
		}
	}
	// The text form.
	r := strataRun(t, 0, "inspect", dir)
	var words []string
	for line := range strings.Lines(r.stdout) {
		words = append(words, strings.Join(strings.Fields(line), " "))
	}
	for _, want := range []string{"format store 2, pebble 21", "objects 59", "nodes json/1 *github.com/strata-db/strata/cmd/strata.node 31 29 1318 false"} {
		if !slices.Contains(words, want) {
			t.Errorf("inspect's text lacks %q:\n%s", want, r.stdout)
		}
	}
	// tables, from the catalog and the header.
	for _, src := range []string{dir, snap} {
		r := strataRun(t, 0, "tables", src, "-o", "json")
		var tables []struct{ Name string }
		if err := json.Unmarshal([]byte(r.stdout), &tables); err != nil || len(tables) != 2 {
			t.Errorf("tables %s: %v %s", src, err, r.stdout)
		}
	}
}

// TestDump shows objects stored as JSON as JSON, and others in hex, from
// a store and a snapshot, with queries on the primary key in hex.
func TestDump(t *testing.T) {
	dir, f := newFixture(t, 30)
	snap := f.snapshotOf(t)
	txn := f.db.ReadTxn()

	wantNodes := []string{}
	for n, rev := range f.nodes.All(txn) {
		data, _ := json.Marshal(n)
		wantNodes = append(wantNodes, fmt.Sprintf("%d %s", rev, data))
	}
	for _, src := range [][]string{{"-d", dir}, {"-f", snap}} {
		rows := jsonLines(t, strataRun(t, 0, append([]string{"dump", "nodes", "-o", "jsonl"}, src...)...).stdout)
		var got []string
		for _, row := range rows {
			data, _ := json.Marshal(row["object"])
			got = append(got, fmt.Sprintf("%v %s", row["revision"], data))
		}
		if !slices.Equal(got, wantNodes) {
			t.Errorf("dump nodes %v:\n%q\nwant\n%q", src, got, wantNodes)
		}
		// Binary objects in hex.
		rows = jsonLines(t, strataRun(t, 0, append([]string{"dump", "blobs", "-o", "jsonl", "--limit", "3"}, src...)...).stdout)
		if len(rows) != 3 {
			t.Fatalf("--limit 3: %d rows", len(rows))
		}
		b, _, _ := f.blobs.Get(txn, blobByID.Query(1))
		want, _ := b.AppendBinary(nil)
		if rows[0]["value_hex"] != hex.EncodeToString(want) {
			t.Errorf("blob 1: %v, want %x", rows[0], want)
		}
		if _, ok := rows[0]["key_hex"]; ok != (src[0] == "-d") {
			t.Errorf("a store's rows have the key, a snapshot's do not: %v", rows[0])
		}
	}

	// Queries on the primary key, in hex, in a store.
	key := func(id uint64) string { return hex.EncodeToString(nodeByID.Query(id).Key()) }
	ids := func(out string) []float64 {
		var ids []float64
		for _, row := range jsonLines(t, out) {
			ids = append(ids, row["object"].(map[string]any)["id"].(float64))
		}
		return ids
	}
	for _, c := range []struct {
		args []string
		want []float64
	}{
		{[]string{"--get", key(5)}, []float64{5}},
		{[]string{"--get", key(2)}, nil},
		{[]string{"--lowerbound", key(27)}, []float64{27, 28, 29, 30}},
		{[]string{"--from", key(1), "--to", key(5)}, []float64{1, 3, 4}},
		{[]string{"--to", key(4)}, []float64{1, 3}},
		{[]string{"--prefix", key(7)[:14]}, []float64{1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}},
	} {
		r := strataRun(t, 0, append([]string{"dump", "nodes", "-d", dir, "-o", "jsonl", "--key-format", "hex"}, c.args...)...)
		if got := ids(r.stdout); !slices.Equal(got, c.want) {
			t.Errorf("dump %v: %v, want %v", c.args, got, c.want)
		}
	}

	// Table output: the JSON objects' members as columns.
	r := strataRun(t, 0, "dump", "nodes", "-d", dir, "--limit", "2")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "KEY_HEX") || !strings.Contains(lines[0], "NAME") || !strings.Contains(lines[1], "node-1") {
		t.Errorf("table output:\n%s", r.stdout)
	}
	// JSON and YAML.
	var arr []map[string]any
	if err := json.Unmarshal([]byte(strataRun(t, 0, "dump", "nodes", "-d", dir, "-o", "json").stdout), &arr); err != nil || len(arr) != 29 {
		t.Errorf("-o json: %d rows, %v", len(arr), err)
	}
	var seq []map[string]any
	if err := yaml.Unmarshal([]byte(strataRun(t, 0, "dump", "nodes", "-d", dir, "-o", "yaml").stdout), &seq); err != nil || len(seq) != 29 || seq[0]["object"].(map[string]any)["name"] != "node-1" {
		t.Errorf("-o yaml: %d rows, %v", len(seq), err)
	}
	if out := strataRun(t, 0, "dump", "nodes", "-d", dir, "-o", "json", "--key-format", "hex", "--get", key(2)).stdout; out != "[]\n" {
		t.Errorf("an empty JSON result: %q", out)
	}

	// get.
	if rows := jsonLines(t, strataRun(t, 0, "get", "nodes", key(3), "-d", dir, "-o", "jsonl", "--key-format", "hex").stdout); len(rows) != 1 {
		t.Errorf("get: %v", rows)
	}
	r = strataRun(t, 4, "get", "nodes", key(2), "-d", dir, "--key-format", "hex")
	if !strings.Contains(r.stderr, "no object") {
		t.Errorf("get of a missing key: %s", r.stderr)
	}
}

// TestBadInput: a wrong command line exits with 2, what is missing with 4,
// and each says what is wrong.
func TestBadInput(t *testing.T) {
	dir, f := newFixture(t, 3)
	snap := f.snapshotOf(t)
	for _, c := range []struct {
		code int
		args []string
		msg  string
	}{
		{2, []string{"frobnicate"}, "unknown command"},
		{2, []string{"inspect", "--bogus"}, "unknown flag"},
		{2, []string{"dump"}, "takes 1 argument (TABLE), got 0"},
		{2, []string{"inspect", "a", "b"}, "takes at most 1 argument (PATH), got 2"},
		{2, []string{"dump", "nodes"}, "say what to read"},
		{2, []string{"dump", "nodes", "-d", dir, "-f", snap}, "one of --dir, --file and --addr"},
		{2, []string{"inspect", dir, "-d", dir}, "not both"},
		{2, []string{"inspect", dir, "-o", "xml"}, "--output"},
		{2, []string{"dump", "nodes", "-d", dir, "--get", "1", "--prefix", "1"}, "one of --get"},
		{2, []string{"dump", "nodes", "-d", dir, "--get", "1"}, "say the key's kind with --key-format KIND"},
		{2, []string{"dump", "nodes", "-d", dir, "--get", "zz", "--key-format", "hex"}, "not hex"},
		{2, []string{"dump", "nodes", "-d", dir, "--index", "zone", "--get", "eu"}, "index \"zone\""},
		{2, []string{"dump", "nodes", "-f", snap, "--get", "00", "--key-format", "hex"}, "a snapshot records no keys"},
		{2, []string{"dump", "nodes", "-d", dir, "--limit", "-1"}, "--limit"},
		{2, []string{"snapshot", "import", snap, "-d", t.TempDir()}, "needs the type"},
		{2, []string{"snapshot", "export", snap, "-d", dir}, "exists"},
		{2, []string{"compact", snap}, "store directory"},
		{2, []string{"watch", "nodes", "-d", dir}, "give --addr"},
		{4, []string{"inspect", filepath.Join(dir, "nope")}, "no such file"},
		{4, []string{"inspect", "-d", filepath.Join(dir, "nope")}, "no store"},
		{4, []string{"inspect", "-d", t.TempDir()}, "no store"},
		{4, []string{"dump", "nope", "-d", dir}, "no such table"},
		{4, []string{"dump", "nope", "-f", snap}, "table not in snapshot"},
		{4, []string{"snapshot", "verify", filepath.Join(dir, "nope.snap")}, "no such file"},
		{5, []string{"tables", "--addr", "http://127.0.0.1:1"}, "cannot connect to http://127.0.0.1:1"},
	} {
		r := run(t, strataBin, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("strata %s: exit %d (want %d), stderr %q (want %q), stdout %q", strings.Join(c.args, " "), r.code, c.code, r.stderr, c.msg, r.stdout)
		}
	}
}

// TestLocked: a store a process has open fails fast, with exit code 6 and a
// message that names the ways out.
func TestLocked(t *testing.T) {
	dir, _ := newFixture(t, 3)
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(t.TempDir(), "out.snap")
	for _, args := range [][]string{{"inspect", dir}, {"dump", "nodes", "-d", dir}, {"check", dir}, {"tables", dir},
		{"snapshot", "export", "-d", dir, out}, {"compact", dir}} {
		r := run(t, strataBin, args...)
		if r.code != 6 || !strings.Contains(r.stderr, "in use by a running process") ||
			!strings.Contains(r.stderr, "--addr") || !strings.Contains(r.stderr, "snapshot") {
			t.Errorf("strata %v on a locked store: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("export of a locked store left %s", out)
	}
}

// TestCheck: sound stores and snapshots are OK; damage is found, reported
// and exits with 3.
func TestCheck(t *testing.T) {
	dir, f := newFixture(t, 200)
	snap := f.snapshotOf(t)
	for _, src := range []string{dir, snap} {
		if r := strataRun(t, 0, "check", src); strings.TrimSpace(r.stdout) != "OK" {
			t.Errorf("check %s: %q", src, r.stdout)
		}
		var res struct {
			OK      bool   `json:"ok"`
			Objects uint64 `json:"objects"`
		}
		if err := json.Unmarshal([]byte(strataRun(t, 0, "check", src, "-o", "json").stdout), &res); err != nil || !res.OK || res.Objects != 399 {
			t.Errorf("check %s -o json: %+v %v", src, res, err)
		}
	}

	// A corrupted snapshot: one byte flipped in the middle.
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.snap")
	flipped := slices.Clone(data)
	flipped[len(data)/2] ^= 0x40
	if err := os.WriteFile(bad, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	r := strataRun(t, 3, "check", bad)
	if !strings.Contains(r.stdout, "checksum mismatch") || !strings.HasSuffix(r.stdout, "1 error found\n") {
		t.Errorf("check of a corrupted snapshot:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"snapshot", "verify", bad}, {"inspect", bad}, {"snapshot", "decode", bad}} {
		r := run(t, strataBin, args...)
		if r.code != 3 || !strings.Contains(r.stderr, "corrupt snapshot") || !strings.Contains(r.stderr, bad) {
			t.Errorf("strata %v of a corrupted snapshot: exit %d, %s", args, r.code, r.stderr)
		}
	}
	// Truncated, and not a snapshot at all.
	trunc := filepath.Join(t.TempDir(), "trunc.snap")
	if err := os.WriteFile(trunc, data[:len(data)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := strataRun(t, 3, "snapshot", "verify", trunc); !strings.Contains(r.stderr, "truncated") {
		t.Errorf("verify of a truncated snapshot: %s", r.stderr)
	}
	if r := strataRun(t, 3, "check", filepath.Join(dir, "OPTIONS-000003")); !strings.Contains(r.stdout, "not a Strata snapshot") {
		t.Errorf("check of a file that is no snapshot: %s", r.stdout)
	}

	// A store with a damaged table file.
	damaged := copyDir(t, dir)
	ssts, _ := filepath.Glob(filepath.Join(damaged, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table files")
	}
	for _, sst := range ssts {
		flipFileByte(t, sst, 100)
	}
	r = strataRun(t, 3, "check", damaged)
	if !strings.Contains(r.stdout, "error found") && !strings.Contains(r.stdout, "errors found") {
		t.Errorf("check of a damaged store:\n%s", r.stdout)
	}
}

func copyDir(t testing.TB, dir string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func flipFileByte(t testing.TB, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotExport: a snapshot exported from the store is what the
// application's WriteSnapshot writes of the same tables, byte for byte,
// and verifies.
func TestSnapshotExport(t *testing.T) {
	dir, f := newFixture(t, 100)
	want, err := os.ReadFile(f.snapshotOf(t))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export.snap")
	r := strataRun(t, 0, "snapshot", "export", "-d", dir, out, "--tables", "nodes,blobs")
	if !strings.Contains(r.stderr, "exported 2 tables, 199 objects") || !strings.Contains(r.stderr, "verified") || r.stdout != "" {
		t.Errorf("export: %q %q", r.stdout, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the export (%d bytes) differs from WriteSnapshot's (%d)", len(got), len(want))
	}
	strataRun(t, 0, "snapshot", "export", "-d", dir, out, "--force", "--tables", "blobs")
	if r := strataRun(t, 0, "snapshot", "verify", out); r.stdout != "OK: 1 table, 100 objects, "+fmt.Sprint(fileLen(t, out))+" bytes\n" {
		t.Errorf("verify: %q", r.stdout)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("export left %d files", len(ents))
	}
	strataRun(t, 4, "snapshot", "export", "-d", dir, out, "--force", "--tables", "nope")
}

func fileLen(t testing.TB, path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// TestSnapshotDiff compares snapshots before and after changes.
func TestSnapshotDiff(t *testing.T) {
	f := memFixture(t, 10)
	a := f.snapshotOf(t)
	txn := f.db.WriteTxn(f.nodes, f.blobs)
	must(t)(f.nodes.Insert(txn, &node{ID: 5, Name: "renamed", Zone: "eu"}))
	must(t)(f.nodes.Delete(txn, &node{ID: 7}))
	must(t)(f.blobs.Insert(txn, &blob{ID: 99}))
	mustCommit(t, txn)
	b := f.snapshotOf(t)

	r := strataRun(t, 0, "snapshot", "diff", a, b, "-o", "jsonl")
	var changes []string
	for _, row := range jsonLines(t, r.stdout) {
		changes = append(changes, fmt.Sprintf("%s %s %v %v", row["table"], row["change"], row["revision_a"], row["revision_b"]))
	}
	// nodes: 5 replaced (revision 5 -> 12), 7 deleted; blobs: 99 added.
	want := []string{"nodes added 0 12", "blobs added 0 11", "nodes removed 5 0", "nodes removed 7 0"}
	if !slices.Equal(changes, want) {
		t.Errorf("diff:\n%q\nwant\n%q", changes, want)
	}
	if !strings.Contains(r.stderr, "4 differences") {
		t.Errorf("diff's summary: %q", r.stderr)
	}
	strataRun(t, 1, "snapshot", "diff", a, b, "--exit-code")
	if r := strataRun(t, 0, "snapshot", "diff", a, a, "--exit-code"); r.stdout != "" || !strings.Contains(r.stderr, "no differences") {
		t.Errorf("diff of a snapshot with itself: %q %q", r.stdout, r.stderr)
	}
}

// TestDecode writes every object of a snapshot as JSON lines.
func TestDecode(t *testing.T) {
	_, f := newFixture(t, 20)
	snap := f.snapshotOf(t)
	rows := jsonLines(t, strataRun(t, 0, "snapshot", "decode", snap).stdout)
	if len(rows) != 39 || rows[0]["table"] != "nodes" || rows[38]["table"] != "blobs" {
		t.Errorf("decode: %d rows", len(rows))
	}
	rows = jsonLines(t, strataRun(t, 0, "snapshot", "decode", snap, "--tables", "blobs").stdout)
	if len(rows) != 20 {
		t.Errorf("decode --tables blobs: %d rows", len(rows))
	}
	strataRun(t, 4, "snapshot", "decode", snap, "--tables", "nope")
}

// TestCompact compacts a store and keeps its objects.
func TestCompact(t *testing.T) {
	dir, _ := newFixture(t, 500)
	before := strataRun(t, 0, "dump", "blobs", "-d", dir, "-o", "jsonl").stdout
	r := strataRun(t, 0, "compact", dir)
	if !strings.Contains(r.stderr, "compacted") {
		t.Errorf("compact: %q", r.stderr)
	}
	if after := strataRun(t, 0, "dump", "blobs", "-d", dir, "-o", "jsonl").stdout; after != before {
		t.Error("compact changed the objects")
	}
	strataRun(t, 0, "check", dir)
}

// TestProgress: progress and logs go to stderr, as log lines when it is not
// a terminal, never as a bar; stdout holds the data alone.
func TestProgress(t *testing.T) {
	_, f := newFixture(t, 3000)
	snap := f.snapshotOf(t)
	r := strataRun(t, 0, "snapshot", "verify", snap, "--progress", "log", "--progress-interval", "1ms")
	if !strings.HasPrefix(r.stdout, "OK:") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout: %q", r.stdout)
	}
	if r.stderr != "" && !strings.Contains(r.stderr, "verify: ") {
		t.Errorf("stderr: %q", r.stderr)
	}
	for _, args := range [][]string{{"snapshot", "verify", snap}, {"check", snap}} {
		if r := strataRun(t, 0, args...); strings.Contains(r.stderr, "\r") {
			t.Errorf("strata %v drew a bar on a stderr that is no terminal: %q", args, r.stderr)
		}
	}
}
