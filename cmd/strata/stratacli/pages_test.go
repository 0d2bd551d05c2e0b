package stratacli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// tenHosts writes hosts h00 to h09 (zones eu, us, ap in turn) into a new
// store and a snapshot of the same, and returns their paths.
func tenHosts(t testing.TB) (dir, snap string) {
	t.Helper()
	dir = t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZoneMulti)
	binding := persist.Table(hosts, persist.JSON[*host]())
	if err := s.Register(binding); err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(hosts)
	for i := range 10 {
		if _, _, err := hosts.Insert(txn, &host{Name: fmt.Sprintf("h%02d", i), Zone: []string{"eu", "us", "ap"}[i%3]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	snap = filepath.Join(t.TempDir(), "hosts.snap")
	if err := persist.WriteSnapshotFile(snap, db.ReadTxn(), binding); err != nil {
		t.Fatal(err)
	}
	return dir, snap
}

// hostByZoneMulti is the index by zone of tenHosts, not unique.
var hostByZoneMulti = strata.Index[*host, string]{
	Name:       "zone",
	FromObject: hostByZone.FromObject,
	FromKey:    hostByZone.FromKey,
}

// page runs a dump and returns the keys of its rows (text, or hex for a
// table of unknown type) and the next page's cursor from stderr.
func page(t *testing.T, opts []Option, args ...string) (keys []string, next string) {
	t.Helper()
	out, errOut, code := runCmd(t, opts, append(args, "-o", "jsonl")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	for line := range strings.Lines(out) {
		var row struct {
			Key    string `json:"key"`
			KeyHex string `json:"key_hex"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%v: %q: %v", args, line, err)
		}
		keys = append(keys, row.Key+row.KeyHex)
	}
	for line := range strings.Lines(errOut) {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "next page: --after "); ok {
			next = c
		} else {
			t.Errorf("%v: stderr %q", args, line)
		}
	}
	return keys, next
}

// TestPages pages through stores and snapshots with --limit and --after,
// on the primary index and a secondary one, with and without the table's
// type: the pages together are the whole result.
func TestPages(t *testing.T) {
	dir, snap := tenHosts(t)
	typed := []Option{WithTable("hosts", persist.JSON[*host](), hostByName, hostByZoneMulti)}
	for _, c := range []struct {
		name string
		opts []Option
		args []string
	}{
		{"store", nil, []string{"-d", dir}},
		{"store typed", typed, []string{"-d", dir}},
		{"store prefix", typed, []string{"-d", dir, "--prefix", "h0"}},
		{"store range", nil, []string{"-d", dir, "--key-format", "hex", "--from", "683031", "--to", "683039"}},
		{"store secondary", typed, []string{"-d", dir, "--index", "zone"}},
		{"store secondary list", typed, []string{"-d", dir, "--index", "zone", "--get", "eu"}},
		{"snapshot typed", typed, []string{"-f", snap}},
		{"snapshot secondary", typed, []string{"-f", snap, "--index", "zone", "--lowerbound", "eu"}},
	} {
		whole, next := page(t, c.opts, append([]string{"dump", "hosts"}, c.args...)...)
		if next != "" || len(whole) == 0 {
			t.Fatalf("%s: the whole dump: %q, next %q", c.name, whole, next)
		}
		var all []string
		after, pages := "", 0
		for {
			args := append([]string{"dump", "hosts", "--limit", "3"}, c.args...)
			if after != "" {
				args = append(args, "--after", after)
			}
			keys, next := page(t, c.opts, args...)
			all = append(all, keys...)
			pages++
			if next == "" {
				break
			}
			if len(keys) != 3 || pages > 10 {
				t.Fatalf("%s: page %d of %d rows, then %q", c.name, pages, len(keys), next)
			}
			after = next
		}
		if !slices.Equal(all, whole) || pages != (len(whole)+2)/3 {
			t.Errorf("%s: %d pages of %q, want %q", c.name, pages, all, whole)
		}
	}
	// The secondary index's cursor is its own (zone, then name): eu's
	// first three, then the rest of eu.
	keys, next := page(t, typed, "dump", "hosts", "-d", dir, "--index", "zone", "--get", "eu", "--limit", "3")
	if !slices.Equal(keys, []string{"h00", "h03", "h06"}) {
		t.Fatalf("eu: %q", keys)
	}
	if keys, _ := page(t, typed, "dump", "hosts", "-d", dir, "--index", "zone", "--after", next); !slices.Equal(keys, []string{"h09", "h01", "h04", "h07"}) {
		t.Errorf("the zone index after h06 of eu: %q", keys)
	}
	// After the last key, or the key of a get: nothing.
	if keys, next := page(t, nil, "dump", "hosts", "-d", dir, "--after", encodeCursor([]byte("h09"))); len(keys) != 0 || next != "" {
		t.Errorf("after the last: %q %q", keys, next)
	}
	if keys, _ := page(t, nil, "dump", "hosts", "-d", dir, "--key-format", "hex", "--get", "683035", "--after", encodeCursor([]byte("h05"))); len(keys) != 0 {
		t.Errorf("a get after its key: %q", keys)
	}
	// A snapshot records no keys: without the type, no cursors.
	if _, errOut, code := runCmd(t, nil, "dump", "hosts", "-f", snap, "--after", encodeCursor([]byte("h05"))); code != ExitUsage || !strings.Contains(errOut, "snapshots record no keys") {
		t.Errorf("--after in a snapshot of unknown type: %d %q", code, errOut)
	}
	if keys, next := page(t, nil, "dump", "hosts", "-f", snap, "--limit", "3"); len(keys) != 3 || next != "" {
		t.Errorf("a page of a snapshot of unknown type: %q, next %q", keys, next)
	}
	for _, bad := range []string{"", "!", "a b"} {
		if _, errOut, code := runCmd(t, nil, "dump", "hosts", "-d", dir, "--after", bad); code != ExitUsage || !strings.Contains(errOut, "not a cursor") {
			t.Errorf("--after %q: %d %q", bad, code, errOut)
		}
	}
}
