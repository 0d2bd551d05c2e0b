package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/script"
	"github.com/cilium/hive/script/scripttest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestScript runs the program's script tests against a hive whose hosts
// directory is the test's; the command files shows that directory.
func TestScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	scripttest.Test(t, ctx, func(t testing.TB, args []string) *script.Engine {
		dir := t.TempDir()
		h := newHive()
		h.Viper().Set("hosts-dir", dir)
		log := hivetest.Logger(t)
		t.Cleanup(func() { h.Stop(log, context.Background()) })
		cmds, err := h.ScriptCommands(log)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(cmds, script.DefaultCmds())
		cmds["files"] = filesCmd(dir)
		return &script.Engine{Cmds: cmds}
	}, nil, "testdata/*.txtar")
}

// filesCmd waits until the hosts directory holds the given files.
func filesCmd(dir string) script.Cmd {
	return script.Command(
		script.CmdUsage{Summary: "Wait until the hosts directory holds these name=addr files", Args: "name=addr..."},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			want := slices.Sorted(slices.Values(args))
			var got []string
			for s.Context().Err() == nil {
				got = got[:0]
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
					got = append(got, e.Name()+"="+strings.TrimSpace(string(b)))
				}
				if slices.Equal(got, want) {
					return nil, nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			return nil, s.Context().Err()
		},
	)
}
