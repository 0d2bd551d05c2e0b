package stratahive_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/script"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/stratahive"
)

// TestCmpUpdate: in the engine's update mode, a listing that does not
// match is rewritten with the table's rows, in the file's columns.
func TestCmpUpdate(t *testing.T) {
	h, _ := newTestHive(t, newWorld())
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	cmds, err := h.ScriptCommands(log)
	must(t, err)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "hosts.yaml"), []byte("name: a1\nzone: eu\n---\nname: b22\nzone: us\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "hosts.table"), []byte("Zone Name\nxx   zz\n"), 0o644))
	s, err := script.NewState(context.Background(), dir, nil)
	must(t, err)
	s.DoUpdate = true
	e := &script.Engine{Cmds: cmds}
	var out strings.Builder
	must(t, e.ExecuteLine(s, "db/insert hosts hosts.yaml", &out))
	must(t, e.ExecuteLine(s, "db/cmp --timeout=10ms hosts hosts.table", &out))
	want := "Zone   Name\neu     a1\nus     b22\n"
	if got := s.FileUpdates["hosts.table"]; got != want {
		t.Fatalf("update of hosts.table:\n%q\nwant\n%q", got, want)
	}
	// Without update mode the same comparison fails.
	s.DoUpdate = false
	if err := e.ExecuteLine(s, "db/cmp --timeout=10ms hosts hosts.table", &out); err == nil {
		t.Fatal("db/cmp of a wrong listing succeeded")
	}
	// The rewritten listing matches.
	must(t, os.WriteFile(filepath.Join(dir, "hosts.table"), []byte(want), 0o644))
	must(t, e.ExecuteLine(s, "db/cmp --timeout=10ms hosts hosts.table", &out))
}

// TestBadInputWritesNothing: a failed db/insert leaves the table's
// revision where it was.
func TestBadInputWritesNothing(t *testing.T) {
	h, _ := newTestHive(t, newWorld())
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	cmds, err := h.ScriptCommands(log)
	must(t, err)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "good.yaml"), []byte("name: a1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: [1, 2]\n"), 0o644))
	s, err := script.NewState(context.Background(), dir, nil)
	must(t, err)
	e := &script.Engine{Cmds: cmds}
	var out strings.Builder
	if err := e.ExecuteLine(s, "db/insert hosts good.yaml bad.yaml", &out); err == nil {
		t.Fatal("db/insert of a bad file succeeded")
	}
	if err := e.ExecuteLine(s, "db/empty hosts", &out); err != nil {
		t.Fatalf("after a failed insert: %v", err)
	}
}

// TestCommandsWithoutHive: the script commands work without a hive, over
// a database and a Registry of the program's own (NewRegistry): db lists
// the tables with the modules that declared them, db/get reads, and
// reconciler/status lists no reconciler.
func TestCommandsWithoutHive(t *testing.T) {
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName, hostByZone, hostByAddr)
	must(t, err)
	reg := stratahive.NewRegistry()
	must(t, reg.Declare("hosts", "app"))
	insertHosts(t, db, hosts, &Host{Name: "a1", Zone: "eu"})
	e := &script.Engine{Cmds: stratahive.Commands(db, reg)}
	s, err := script.NewState(context.Background(), t.TempDir(), nil)
	must(t, err)
	for _, tc := range []struct{ line, want string }{
		{"db", "app"},
		{"db/get hosts a1", "a1"},
		{"reconciler/status", "Name"},
	} {
		var out strings.Builder
		if err := e.ExecuteLine(s, tc.line, &out); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant %q in it", tc.line, out.String(), tc.want)
		}
	}
	if got := reg.Reconcilers(); len(got) != 0 {
		t.Errorf("reconcilers %v, want none", got)
	}
}

// route is a table row with a prefix in an LPM index, for
// TestQueriesAsMigratingSays.
type route struct {
	ID  uint64       `yaml:"id"`
	Dst netip.Prefix `yaml:"dst"`
}

// routesScript returns a database with a table "routes" of one route,
// 10.0.0.0/8 with ID 1, indexed by ID (no FromString) and by an LPM
// index "prefix", its revision, and a script engine of the database's
// commands with a state to run them in.
func routesScript(t *testing.T) (*strata.DB, strata.RWTable[*route], strata.Revision, *script.Engine, *script.State) {
	t.Helper()
	byID := strata.Index[*route, uint64]{ // no FromString
		Name:       "id",
		FromObject: func(r *route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	byDst := strata.LPMIndex[*route]{
		Name:       "prefix",
		FromObject: func(r *route) strata.PrefixSet { return strata.PrefixSetOf(r.Dst) },
	}
	db := strata.New()
	routes, err := strata.NewTable(db, "routes", byID, byDst)
	must(t, err)
	wtxn := db.WriteTxn(routes)
	_, _, err = routes.Insert(wtxn, &route{ID: 1, Dst: netip.MustParsePrefix("10.0.0.0/8")})
	must(t, err)
	txn, err := wtxn.Commit()
	must(t, err)
	e := &script.Engine{Cmds: stratahive.Commands(db, stratahive.NewRegistry())}
	s, err := script.NewState(context.Background(), t.TempDir(), nil)
	must(t, err)
	return db, routes, routes.Revision(txn), e, s
}

// TestQueriesAsMigratingSays: what MIGRATING.md says of text queries
// through the db/* commands. On an LPM index an address is a
// longest-prefix match and a prefix an exact query (statedb's
// NetIPPrefixIndex does a longest-prefix match for both); an index
// without FromString parses its key from text when the key type has a
// text form (statedb's fails).
func TestQueriesAsMigratingSays(t *testing.T) {
	_, _, _, e, s := routesScript(t)
	for _, tc := range []struct {
		line  string
		found bool
	}{
		{"db/get routes 1", true},                             // no FromString: parsed as a uint64
		{"db/get -i prefix routes 10.1.2.3", true},            // an address: the longest match, 10.0.0.0/8
		{"db/get -i prefix routes 10.1.0.0/16", false},        // a prefix: exactly 10.1.0.0/16, which no route has
		{"db/get -i prefix routes 10.0.0.0/8", true},          // exactly 10.0.0.0/8
		{"db/prefix -i prefix routes 10.0.0.0/8", true},       // 10.0.0.0/8 and its subnets
		{"db/list -i prefix -f yaml routes 10.1.2.3", true},   // every match
		{"db/list -i prefix -f yaml routes 192.0.2.1", false}, // none
	} {
		var out strings.Builder
		if err := e.ExecuteLine(s, tc.line, &out); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if got := strings.Contains(out.String(), "10.0.0.0/8"); got != tc.found {
			t.Errorf("%s: found %v, want %v:\n%s", tc.line, got, tc.found, out.String())
		}
	}
}
