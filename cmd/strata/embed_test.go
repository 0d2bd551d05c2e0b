package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// embedRun runs the example application and fails unless it exits with
// want.
func embedRun(t testing.TB, want int, args ...string) result {
	t.Helper()
	r := run(t, embedBin, args...)
	if r.code != want {
		t.Fatalf("embed %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// TestEmbed: an application that embeds the command with its types
// registered gets its objects decoded, as columns, queried on any index
// with keys as text, checked by key, and imported from snapshots.
func TestEmbed(t *testing.T) {
	dir := t.TempDir()
	embedRun(t, 0, "seed", "--dir", dir, "-n", "9")

	// Columns of the objects' fields, a secondary index, keys as text.
	r := embedRun(t, 0, "debug", "dump", "nodes", "--dir", dir, "--index", "zone", "--get", "eu")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"KEY", "REVISION", "ID", "NAME", "ZONE", "TAGS"}) || len(lines) != 4 {
		t.Fatalf("dump by zone:\n%s", r.stdout)
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"1", "1", "1", "node-1", "eu", `["seed"]`}) {
		t.Errorf("first row: %q", got)
	}
	// A binary table, decoded; its keys (netip prefixes) as text.
	r = embedRun(t, 0, "debug", "dump", "routes", "-d", dir, "--lowerbound", "10.0.0.5/24", "--limit", "2", "-o", "jsonl")
	rows := jsonLines(t, r.stdout)
	if len(rows) != 2 || rows[0]["key"] != "10.0.1.0/24" || rows[0]["object"].(map[string]any)["node"] != 2.0 {
		t.Errorf("routes from 10.0.0.5/24: %v", rows)
	}
	r = embedRun(t, 0, "debug", "get", "nodes", "5", "-d", dir, "-o", "json")
	var one []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || len(one) != 1 || one[0]["key"] != "5" {
		t.Errorf("get nodes 5: %s", r.stdout)
	}
	if r := embedRun(t, 2, "debug", "get", "nodes", "five", "-d", dir); !strings.Contains(r.stderr, "cannot parse key") {
		t.Errorf("a key that does not parse: %s", r.stderr)
	}
	embedRun(t, 4, "debug", "get", "nodes", "99", "-d", dir)
	if r := embedRun(t, 0, "debug", "inspect", dir, "-o", "json"); strings.Count(r.stdout, `"registered": true`) != 2 {
		t.Errorf("inspect: the tables are not registered:\n%s", r.stdout)
	}
	if r := embedRun(t, 0, "debug", "check", dir); strings.TrimSpace(r.stdout) != "OK" {
		t.Errorf("check: %s", r.stdout)
	}

	// Snapshots: export, check with the types, query, import into a new
	// store, which then holds the same.
	snap := filepath.Join(t.TempDir(), "app.snap")
	embedRun(t, 0, "debug", "snapshot", "export", "-d", dir, snap)
	if r := embedRun(t, 0, "debug", "check", snap); strings.TrimSpace(r.stdout) != "OK" {
		t.Errorf("check of the snapshot: %s", r.stdout)
	}
	r = embedRun(t, 0, "debug", "dump", "nodes", "-f", snap, "--index", "zone", "--prefix", "u", "-o", "jsonl")
	if rows := jsonLines(t, r.stdout); len(rows) != 3 || rows[0]["key"] != "2" {
		t.Errorf("nodes of zone u* in the snapshot: %v", rows)
	}
	into := filepath.Join(t.TempDir(), "restored")
	r = embedRun(t, 0, "debug", "snapshot", "import", snap, "-d", into)
	if !strings.Contains(r.stderr, "imported 2 tables, 18 objects") {
		t.Errorf("import: %s", r.stderr)
	}
	a := embedRun(t, 0, "debug", "snapshot", "decode", snap).stdout
	snap2 := filepath.Join(t.TempDir(), "again.snap")
	embedRun(t, 0, "debug", "snapshot", "export", "-d", into, snap2)
	if b := embedRun(t, 0, "debug", "snapshot", "decode", snap2).stdout; a != b {
		t.Errorf("the imported store differs:\n%s\n%s", a, b)
	}
	// A store that holds the tables already is refused, and unchanged.
	if r := embedRun(t, 1, "debug", "snapshot", "import", snap, "-d", into); !strings.Contains(r.stderr, "not empty") {
		t.Errorf("import into a full store: %s", r.stderr)
	}

	// diff by primary key: three nodes more.
	more := t.TempDir()
	embedRun(t, 0, "seed", "--dir", more, "--nodes", "12")
	snap3 := filepath.Join(t.TempDir(), "more.snap")
	embedRun(t, 0, "debug", "snapshot", "export", "-d", more, snap3)
	r = embedRun(t, 0, "debug", "snapshot", "diff", snap, snap3, "--tables", "nodes", "-o", "jsonl")
	var keys []string
	for _, row := range jsonLines(t, r.stdout) {
		keys = append(keys, row["change"].(string)+" "+row["key"].(string))
	}
	if !slices.Equal(keys, []string{"added 10", "added 11", "added 12"}) {
		t.Errorf("diff by key: %q", keys)
	}
}
