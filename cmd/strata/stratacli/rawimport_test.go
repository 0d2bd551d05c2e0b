package stratacli

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// keyedTables are the tables of kindStore whose keys are fields, with the
// --key that computes them.
var keyedTables = map[string]string{
	"ints":   "ints=n:int64",
	"addrs":  "addrs=addr:addr",
	"routes": "routes=pfx:prefix",
	"pairs":  "pairs=zone:string,u:uint32",
}

// TestImportWithoutTypes: the stock command imports a snapshot's JSON
// tables of unknown type, keyed as --key says, into a store that the
// application then registers with its types; the export of that store is
// the snapshot, byte for byte.
func TestImportWithoutTypes(t *testing.T) {
	dir := kindStore(t)
	tmp := t.TempDir()
	snap := filepath.Join(tmp, "kinds.snap")
	tables := "ints,addrs,routes,pairs"
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", snap, "-d", dir, "--tables", tables); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	into := filepath.Join(tmp, "into")
	args := []string{"snapshot", "import", snap, "-d", into}
	for _, k := range keyedTables {
		args = append(args, "--key", k)
	}
	_, errOut, code := runCmd(t, nil, args...)
	if code != 0 || !strings.Contains(errOut, "imported 4 tables, 24 objects") || strings.Count(errOut, "imported without its type") != 4 ||
		!strings.Contains(errOut, "persist.ErrKeyChanged") {
		t.Fatalf("import: %d %s", code, errOut)
	}
	again := filepath.Join(tmp, "again.snap")
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", again, "-d", into, "--tables", tables); code != 0 {
		t.Fatalf("export of the imported store: %d %s", code, errOut)
	}
	a, _ := os.ReadFile(snap)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Errorf("the imported store's snapshot differs from the one imported")
	}
	// The application's Register takes the store: every key is its own.
	s, err := persist.Open(into, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := strata.New()
	for _, tbl := range kindTables(db) {
		if _, keyed := keyedTables[tbl.Name()]; !keyed {
			continue
		}
		if err := s.Register(persist.Table(tbl, persist.JSON[*kinded]())); err != nil {
			t.Errorf("register %s: %v", tbl.Name(), err)
		} else if n := tbl.NumObjects(db.ReadTxn()); n != 6 {
			t.Errorf("%s: %d objects", tbl.Name(), n)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestImportWithoutTypesRefused: a key that is not the primary key is
// caught by the order of the snapshot's objects and nothing is written;
// one that keeps the order is written and refused by the application's
// Register (the check the stock command cannot make); a table of another
// codec, and a --key that does not parse, are refused.
func TestImportWithoutTypesRefused(t *testing.T) {
	dir := kindStore(t)
	tmp := t.TempDir()
	snap := filepath.Join(tmp, "kinds.snap")
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", snap, "-d", dir, "--tables", "ints"); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	into := filepath.Join(tmp, "into")
	for _, c := range []struct {
		key string
		err error
		msg string
	}{
		{"ints=zone:string", ErrUsage, "not above the key"},
		{"ints=nope:int64", ErrUsage, `field "nope": no such field`},
		{"ints=n:uint8", ErrUsage, "uint8"},
		{"ints=addr", ErrUsage, "is not FIELD:KIND"},
		{"ints=n:integer", ErrUsage, `"integer" is no kind of key`},
		{"other=n:int64", ErrUsage, "table other is not imported"},
	} {
		_, errOut, code := runCmd(t, nil, "snapshot", "import", snap, "-d", into, "--key", c.key)
		if code != ExitUsage || !strings.Contains(errOut, c.msg) {
			t.Errorf("--key %s: %d %q, want %q", c.key, code, errOut, c.msg)
		}
		if out, _, _ := runCmd(t, nil, "dump", "ints", "-d", into, "-o", "jsonl"); out != "" {
			t.Fatalf("--key %s: the store holds objects: %s", c.key, out)
		}
	}
	// u increases with n: the order cannot tell; the application can.
	if _, errOut, code := runCmd(t, nil, "snapshot", "import", snap, "-d", into, "--key", "ints=u:uint32"); code != 0 {
		t.Fatalf("import keyed by u: %d %s", code, errOut)
	}
	s, err := persist.Open(into, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(persist.Table(kindTables(strata.New())[0], persist.JSON[*kinded]())); !errors.Is(err, persist.ErrKeyChanged) {
		t.Errorf("register of a table keyed by another field: %v, want ErrKeyChanged", err)
	}
	s.Close()

	// A binary table has no fields to read.
	bin := benchSnapshotSmall(t)
	if _, errOut, code := runCmd(t, nil, "snapshot", "import", bin, "-d", filepath.Join(tmp, "bin"), "--tables", "binary", "--key", "binary=id:uint64"); code != ExitUsage ||
		!strings.Contains(errOut, "codec is binary") {
		t.Errorf("a binary table: %d %q", code, errOut)
	}
}

// benchSnapshotSmall writes a snapshot of a table "binary" of benchRecords
// in their binary encoding.
func benchSnapshotSmall(t *testing.T) string {
	db := strata.New()
	bin := strata.MustNewTable(db, "binary", benchByID)
	txn := db.WriteTxn(bin)
	if _, _, err := bin.Insert(txn, &benchRecord{ID: 1, Name: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bin.snap")
	if err := persist.WriteSnapshotFile(path, db.ReadTxn(), persist.Table(bin, persist.Binary[benchRecord]())); err != nil {
		t.Fatal(err)
	}
	return path
}
