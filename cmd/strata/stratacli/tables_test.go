package stratacli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTablesTellsOnlyWhatItRead: tables of a store, which reads only the
// catalog, leaves out the objects and revisions it did not count (they
// were shown as zeros); of a snapshot it gives its header's, which are
// inspect's.
func TestTablesTellsOnlyWhatItRead(t *testing.T) {
	dir := hostStore(t)
	out, errOut, code := runCmd(t, nil, "tables", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("tables: %d %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("tables: %v %s", err, out)
	}
	for _, k := range []string{"objects", "revision", "bytes"} {
		if _, ok := rows[0][k]; ok {
			t.Errorf("tables of a store says %q, which it did not read: %s", k, out)
		}
	}
	if rows[0]["name"] != "hosts" || rows[0]["codec"] != "json" {
		t.Errorf("tables of a store: %s", out)
	}
	if out, _, _ := runCmd(t, nil, "tables", dir); strings.Contains(out, "REVISION") || strings.Contains(out, "OBJECTS") || !strings.Contains(out, "hosts") {
		t.Errorf("tables of a store, as text:\n%s", out)
	}

	snap := filepath.Join(t.TempDir(), "h.snap")
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", snap, "-d", dir); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	out, _, _ = runCmd(t, nil, "tables", snap, "-o", "json")
	var snapRows []struct {
		Name     string
		Revision *uint64
		Objects  *uint64
	}
	if err := json.Unmarshal([]byte(out), &snapRows); err != nil || len(snapRows) != 1 || snapRows[0].Objects == nil || snapRows[0].Revision == nil ||
		*snapRows[0].Objects != 3 || *snapRows[0].Revision != 3 {
		t.Fatalf("tables of a snapshot: %v %s", err, out)
	}
	if out, _, _ := runCmd(t, nil, "tables", snap); !strings.Contains(strings.Join(strings.Fields(out), " "), "REVISION OBJECTS REGISTERED hosts json/1 *github.com/strata-db/strata/cmd/strata/stratacli.host 3 3 false") {
		t.Errorf("tables of a snapshot, as text:\n%q", out)
	}
}
