package stratahive_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/hive/script"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/stratahive"
)

// statedb's per-command constructors are the commands of Commands.
func TestStatedbCommandConstructors(t *testing.T) {
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName, hostByZone, hostByAddr)
	must(t, err)
	insertHosts(t, db, hosts, &Host{Name: "a1", Zone: "eu"})
	cmds := map[string]script.Cmd{
		"db":             stratahive.DBCmd(db),
		"db/show":        stratahive.ShowCmd(db),
		"db/cmp":         stratahive.CompareCmd(db),
		"db/empty":       stratahive.EmptyCmd(db),
		"db/insert":      stratahive.InsertCmd(db),
		"db/delete":      stratahive.DeleteCmd(db),
		"db/get":         stratahive.GetCmd(db),
		"db/prefix":      stratahive.PrefixCmd(db),
		"db/list":        stratahive.ListCmd(db),
		"db/lowerbound":  stratahive.LowerBoundCmd(db),
		"db/watch":       stratahive.WatchCmd(db),
		"db/initialized": stratahive.InitializedCmd(db),
		"db/dump":        stratahive.DumpCmd(db),
	}
	all := stratahive.Commands(db, stratahive.NewRegistry())
	for name, cmd := range cmds {
		if cmd == nil || all[name] == nil || cmd.Usage().Summary != all[name].Usage().Summary {
			t.Errorf("%s: %v, want Commands' %v", name, cmd, all[name])
		}
	}
	e := &script.Engine{Cmds: cmds}
	dir := t.TempDir()
	s, err := script.NewState(context.Background(), dir, nil)
	must(t, err)
	for _, tc := range []struct{ line, want string }{
		{"db", "hosts"},
		{"db/get hosts a1", "a1"},
		{"db/prefix hosts a", "a1"},
		{"db/dump", "a1"},
		{"db/show -o " + filepath.Join(dir, "hosts.table") + " hosts", ""},
		{"db/cmp hosts hosts.table", ""},
	} {
		var out strings.Builder
		if err := e.ExecuteLine(s, tc.line, &out); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant %q in it", tc.line, out.String(), tc.want)
		}
	}
}
