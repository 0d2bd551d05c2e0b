package durable_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/cilium/hive/script"
	"github.com/cilium/hive/script/scripttest"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/durable"
)

// Route is the durable, reconciled table of the tests.
type Route struct {
	Prefix string            `json:"prefix" yaml:"prefix"`
	Via    string            `json:"via" yaml:"via"`
	Status reconciler.Status `json:"status" yaml:"status"`
}

func (r *Route) TableHeader() []string { return []string{"Prefix", "Via", "Status"} }
func (r *Route) TableRow() []string    { return []string{r.Prefix, r.Via, r.Status.Kind.String()} }

var routeByPrefix = strata.Index[*Route, string]{
	Name:       "prefix",
	FromObject: func(r *Route) index.KeySet { return index.NewKeySet(index.String(r.Prefix)) },
	FromKey:    index.String,
	Unique:     true,
}

// Peer is kept in memory, and snapshotted.
type Peer struct {
	Name string `json:"name" yaml:"name"`
}

func (p *Peer) TableHeader() []string { return []string{"Name"} }
func (p *Peer) TableRow() []string    { return []string{p.Name} }

var peerByName = strata.Index[*Peer, string]{
	Name:       "name",
	FromObject: func(p *Peer) index.KeySet { return index.NewKeySet(index.String(p.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// app is the test program: durable routes reconciled into a world,
// peers in memory with snapshots.
type app struct {
	world  *reconcilertest.World[*Route]
	db     *strata.DB
	routes strata.RWTable[*Route]
	// seenAtStart is what a start hook of a cell using routes read.
	seenAtStart []string
	initAtStart bool
}

func newApp() *app {
	return &app{world: reconcilertest.NewWorld(func(r *Route) string { return r.Prefix })}
}

func (a *app) cells() []cell.Cell {
	return []cell.Cell{
		stratahive.Cell, durable.Cell, job.Cell, cell.SimpleHealthCell,
		cell.Module("app", "The test application",
			durable.Table("routes", persist.JSON[*Route](), routeByPrefix),
			durable.SnapshotTable("peers", persist.JSON[*Peer](), peerByName),
			cell.Provide(job.Registry.NewGroup, func() reconciler.Operations[*Route] { return a.world }),
			stratahive.Reconciler(
				func(r *Route) *Route { c := *r; return &c },
				func(r *Route, s reconciler.Status) *Route { r.Status = s; return r },
				func(r *Route) reconciler.Status { return r.Status },
				reconciler.WithRetry(20*time.Millisecond, 20*time.Millisecond),
				reconciler.WithoutPruning(),
			),
			// A cell whose start hook reads the durable table.
			cell.Invoke(func(lc cell.Lifecycle, db *strata.DB, routes strata.RWTable[*Route]) {
				a.db, a.routes = db, routes
				lc.Append(cell.Hook{OnStart: func(cell.HookContext) error {
					txn := db.ReadTxn()
					a.initAtStart, _ = routes.Initialized(txn)
					for r := range routes.All(txn) {
						a.seenAtStart = append(a.seenAtStart, r.Prefix)
					}
					return nil
				}})
			}),
		),
	}
}

func newHive(t testing.TB, a *app, flags map[string]string, extra ...cell.Cell) *hive.Hive {
	h := hive.New(append(a.cells(), extra...)...)
	for k, v := range flags {
		h.Viper().Set(k, v)
	}
	return h
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestart: what one run of the program committed, the next finds
// loaded before its own start hooks read the table, with the reconciler's
// statuses.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	log := hivetest.Logger(t)
	flags := map[string]string{"strata-persist-dir": dir}

	a := newApp()
	h := newHive(t, a, flags)
	must(t, h.Start(log, context.Background()))
	if !a.initAtStart || len(a.seenAtStart) != 0 {
		t.Fatalf("first run: start hook saw initialized=%v %v", a.initAtStart, a.seenAtStart)
	}
	wtxn := a.db.WriteTxn(a.routes)
	for _, p := range []string{"10.0.0.0/8", "192.168.0.0/16"} {
		_, _, err := a.routes.Insert(wtxn, &Route{Prefix: p, Via: "eth0", Status: reconciler.StatusPending()})
		must(t, err)
	}
	_, err := wtxn.Commit()
	must(t, err)
	waitWorld(t, a.world, "10.0.0.0/8", "192.168.0.0/16")
	must(t, h.Stop(log, context.Background()))

	b := newApp()
	h = newHive(t, b, flags)
	must(t, h.Start(log, context.Background()))
	defer func() { must(t, h.Stop(log, context.Background())) }()
	if !b.initAtStart || !slices.Equal(b.seenAtStart, []string{"10.0.0.0/8", "192.168.0.0/16"}) {
		t.Fatalf("second run: start hook saw initialized=%v %v, want both routes", b.initAtStart, b.seenAtStart)
	}
	// The statuses came back too: the reconciler's Done, (which it
	// refreshes, as a claim about a world that may have changed).
	for r := range b.routes.All(b.db.ReadTxn()) {
		if k := r.Status.Kind; k != reconciler.StatusKindDone && k != reconciler.StatusKindRefreshing {
			t.Errorf("route %s loaded with status %v", r.Prefix, k)
		}
	}
}

func waitWorld(t testing.TB, w *reconcilertest.World[*Route], keys ...string) {
	t.Helper()
	deadline := time.After(time.Minute) // only a hang reaches it
	for {
		changed := w.Changed()
		if slices.Equal(w.Keys(), keys) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("world holds %v, want %v", w.Keys(), keys)
		}
	}
}

// TestOpenFailureStopsHive: a store that cannot open fails the hive's
// start with the store's error, and stops what had started.
func TestOpenFailureStopsHive(t *testing.T) {
	dir := t.TempDir()
	other, err := persist.Open(dir, persist.Options{})
	must(t, err)
	defer other.Close()

	// A hook that starts before the store's is stopped again.
	started, stopped := false, false
	a := newApp()
	h := hive.New(append([]cell.Cell{cell.Invoke(func(lc cell.Lifecycle) {
		lc.Append(cell.Hook{
			OnStart: func(cell.HookContext) error { started = true; return nil },
			OnStop:  func(cell.HookContext) error { stopped = true; return nil },
		})
	})}, a.cells()...)...)
	h.Viper().Set("strata-persist-dir", dir)
	// Run, as a program does: the start fails, the hive stops, and Run
	// returns the store's error.
	err = h.Run(hivetest.Logger(t))
	if !errors.Is(err, persist.ErrLocked) {
		t.Fatalf("run on a locked directory: %v, want persist.ErrLocked", err)
	}
	if !started || !stopped {
		t.Errorf("the hook before the store: started %v, stopped %v", started, stopped)
	}
	// The cells after the store did not start: the reconciler never ran.
	if ops := a.world.Ops(); len(ops) != 0 || a.seenAtStart != nil {
		t.Errorf("after a failed start: world ops %v, start hook saw %v", ops, a.seenAtStart)
	}
}

func TestNoDir(t *testing.T) {
	h := newHive(t, newApp(), nil)
	if err := h.Start(hivetest.Logger(t), context.Background()); !errors.Is(err, durable.ErrNoDir) {
		t.Fatalf("start without --strata-persist-dir: %v", err)
	}
}

func TestSyncFlag(t *testing.T) {
	h := newHive(t, newApp(), map[string]string{"strata-persist-dir": t.TempDir(), "strata-persist-sync": "sometimes"})
	err := h.Populate(hivetest.Logger(t))
	if !errors.Is(err, durable.ErrInvalidConfig) || !strings.Contains(err.Error(), `--strata-persist-sync="sometimes": want sync or buffered`) {
		t.Fatalf("populate with --strata-persist-sync=sometimes: %v", err)
	}

	a := newApp()
	h = newHive(t, a, map[string]string{"strata-persist-dir": t.TempDir(), "strata-persist-sync": "buffered", "strata-persist-sync-interval": "5ms"})
	log := hivetest.Logger(t)
	must(t, h.Start(log, context.Background()))
	wtxn := a.db.WriteTxn(a.routes)
	_, _, err = a.routes.Insert(wtxn, &Route{Prefix: "10.0.0.0/8"})
	must(t, err)
	_, err = wtxn.Commit()
	must(t, err)
	must(t, h.Stop(log, context.Background()))
}

func TestScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	scripttest.Test(t, ctx, func(t testing.TB, args []string) *script.Engine {
		a := newApp()
		h := newHive(t, a, map[string]string{"strata-persist-dir": t.TempDir()})
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
