package replicated_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/script"
	"github.com/cilium/hive/script/scripttest"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata/stratahive/replicated"
)

// TestScript runs testdata/*.txtar against a hive of one node, n1, on
// raft's in-memory transport at "solo", bootstrapping a cluster of itself.
func TestScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	scripttest.Test(t, ctx, func(t testing.TB, args []string) *script.Engine {
		_, trans := raft.NewInmemTransport("solo")
		h := soloHive(map[string]any{
			"strata-raft-id": "n1", "strata-raft-node-number": 1, "strata-raft-dir": t.TempDir(),
			"strata-raft-bootstrap": true,
		}, &replicated.Options{Transport: trans, Raft: testRaft},
			cell.Provide(func() (cell.Health, *cell.SimpleHealth) { return cell.NewSimpleHealth() }),
			cell.Provide(func(h *cell.SimpleHealth) hive.ScriptCmdOut {
				return hive.NewScriptCmd("health", cell.SimpleHealthCmd(h))
			}),
		)
		log := hivetest.Logger(t)
		t.Cleanup(func() {
			if err := h.Stop(log, context.Background()); err != nil {
				t.Error(err)
			}
		})
		cmds, err := h.ScriptCommands(log)
		must(t, err)
		maps.Copy(cmds, script.DefaultCmds())
		return &script.Engine{Cmds: cmds}
	}, nil, "testdata/*.txtar")
}
