package replicated_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/hashicorp/raft"

	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/replicated"
)

// soloHive is a hive of one node with the hosts table, its flags set
// from flags, and opts provided if not nil.
func soloHive(flags map[string]any, opts *replicated.Options, extra ...cell.Cell) *hive.Hive {
	cells := []cell.Cell{stratahive.Cell, replicated.Cell,
		cell.Module("app", "The test application", replicated.Table("hosts", persist.JSON[*Host](), hostByName))}
	if opts != nil {
		cells = append(cells, cell.Provide(func() replicated.Options { return *opts }))
	}
	h := hive.New(append(cells, extra...)...)
	for k, v := range flags {
		h.Viper().Set(k, v)
	}
	return h
}

// TestConfigErrors: a configuration the Cell cannot run with fails the
// hive's construction with ErrInvalidConfig, naming the flag, and starts
// nothing.
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	base := func(kv ...any) map[string]any {
		m := map[string]any{"strata-raft-id": "n1", "strata-raft-node-number": 1,
			"strata-raft-dir": dir, "strata-raft-bind": "127.0.0.1:0"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		flags map[string]any
		want  string
	}{
		{base("strata-raft-id", ""), "--strata-raft-id is not set"},
		{base("strata-raft-node-number", 0), "--strata-raft-node-number=0: want 1 to 65535"},
		{base("strata-raft-node-number", 65536), "--strata-raft-node-number=65536: want 1 to 65535"},
		{base("strata-raft-dir", ""), "--strata-raft-dir is not set"},
		{base("strata-raft-bind", ""), "--strata-raft-bind is not set"},
		{base("strata-raft-health-contact", "-1s"), "--strata-raft-health-contact=-1s: must not be negative"},
		{base("strata-raft-peers", "n1"), `"n1": want id=raft-address or id=raft-address/forward-address`},
		{base("strata-raft-peers", "n1=a=b"), `"n1=a=b": want id=raft-address`},
		{base("strata-raft-peers", "n1=a/b/c"), `"n1=a/b/c": want id=raft-address`},
		{base("strata-raft-peers", "=a"), `"=a": want id=raft-address`},
		{base("strata-raft-peers", "n1=a,n1=b"), `"n1=b": ID or address given twice`},
		{base("strata-raft-peers", "n1=a,n2=a"), `"n2=a": ID or address given twice`},
		{base("strata-raft-peers", "n2=a,n3=b", "strata-raft-bootstrap", true), `--strata-raft-peers does not name this node, "n1"`},
	} {
		h := soloHive(tc.flags, nil)
		err := h.Populate(hivetest.Logger(t))
		if !errors.Is(err, replicated.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flags %v: %v, want ErrInvalidConfig saying %q", tc.flags, err, tc.want)
		}
	}
	// With a transport of the program's, --strata-raft-bind is not needed.
	_, trans := raft.NewInmemTransport("")
	h := soloHive(base("strata-raft-bind", ""), &replicated.Options{Transport: trans})
	must(t, h.Populate(hivetest.Logger(t)))
}

func TestParsePeers(t *testing.T) {
	peers, err := replicated.ParsePeers([]string{"n1=10.0.0.1:7000/10.0.0.1:7001", " n2=[::1]:7000 ", ""})
	must(t, err)
	want := []replicated.Peer{
		{ID: "n1", Address: "10.0.0.1:7000", Forward: "10.0.0.1:7001"},
		{ID: "n2", Address: "[::1]:7000"},
	}
	if len(peers) != len(want) || peers[0] != want[0] || peers[1] != want[1] {
		t.Fatalf("ParsePeers: %+v, want %+v", peers, want)
	}
}

// TestStartErrors: what cannot open fails the hive's start with its
// error, and closes what had opened (goleak checks that no goroutine is
// left, the Pebble store's included).
func TestStartErrors(t *testing.T) {
	log := hivetest.Logger(t)
	flags := func(dir string, kv ...any) map[string]any {
		m := map[string]any{"strata-raft-id": "n1", "strata-raft-node-number": 1, "strata-raft-dir": dir}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	inmem := func() *replicated.Options {
		_, trans := raft.NewInmemTransport("")
		return &replicated.Options{Transport: trans, Raft: testRaft}
	}

	// The directory is a file: the log store cannot open.
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o644))
	if err := soloHive(flags(file), inmem()).Start(log, context.Background()); err == nil {
		t.Error("start in a directory that is a file succeeded")
	}

	// The raft address is taken: the transport cannot open, and the log
	// store it opened before is closed again.
	dir := t.TempDir()
	ln := listen(t)
	defer ln.Close()
	err := soloHive(flags(dir, "strata-raft-bind", ln.Addr().String()), nil).Start(log, context.Background())
	if err == nil || !strings.Contains(err.Error(), "--strata-raft-bind") {
		t.Errorf("start on a taken raft address: %v", err)
	}
	// So is the forward address: the transport is closed again.
	err = soloHive(flags(dir, "strata-raft-bind", "127.0.0.1:0", "strata-raft-forward", ln.Addr().String()), nil).Start(log, context.Background())
	if err == nil || !strings.Contains(err.Error(), "--strata-raft-forward") {
		t.Errorf("start on a taken forward address: %v", err)
	}
	// An unspecified address cannot be advertised.
	err = soloHive(flags(dir, "strata-raft-bind", "0.0.0.0:0"), nil).Start(log, context.Background())
	if err == nil || !strings.Contains(err.Error(), "--strata-raft-bind") {
		t.Errorf("start on 0.0.0.0 without --strata-raft-advertise: %v", err)
	}

	// Bootstrap peers that give this node another address than its
	// transport's: the node is created, and closed again.
	err = soloHive(flags(dir, "strata-raft-peers", "n1=elsewhere", "strata-raft-bootstrap", true), inmem()).Start(log, context.Background())
	if !errors.Is(err, replicate.ErrInvalidMembership) {
		t.Errorf("bootstrap with another address for this node: %v, want replicate.ErrInvalidMembership", err)
	}

	// No replicated table: nothing to replicate.
	h := hive.New(stratahive.Cell, replicated.Cell, cell.Provide(func() replicated.Options { return *inmem() }),
		cell.Invoke(func(*replicated.Replica) {}))
	for k, v := range flags(dir) {
		h.Viper().Set(k, v)
	}
	if err := h.Start(log, context.Background()); !errors.Is(err, replicated.ErrNoTables) {
		t.Errorf("start without tables: %v, want ErrNoTables", err)
	}
}
