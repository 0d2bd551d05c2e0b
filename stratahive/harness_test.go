package stratahive_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
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
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"github.com/strata-db/strata/stratahive"
)

// Host is the test programs' reconciled table: a host with an address,
// in a zone.
type Host struct {
	Name   string            `yaml:"name" json:"name"`
	Zone   string            `yaml:"zone" json:"zone"`
	Addr   netip.Addr        `yaml:"addr" json:"addr"`
	Status reconciler.Status `yaml:"status" json:"status"`
}

func (h *Host) TableHeader() []string { return []string{"Name", "Zone", "Addr", "Status", "Error"} }

func (h *Host) TableRow() []string {
	return []string{h.Name, h.Zone, h.Addr.String(), h.Status.Kind.String(), h.Status.GetError()}
}

func (h *Host) Clone() *Host                        { c := *h; return &c }
func (h *Host) GetStatus() reconciler.Status        { return h.Status }
func (h *Host) SetStatus(s reconciler.Status) *Host { h.Status = s; return h }
func hostKey(h *Host) string                        { return h.Name }
func newWorld() *reconcilertest.World[*Host]        { return reconcilertest.NewWorld(hostKey) }

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
	hostByAddr = strata.Index[*Host, netip.Addr]{
		Name: "addr",
		FromObject: func(h *Host) index.KeySet {
			if !h.Addr.IsValid() {
				return index.KeySet{} // no address, not in the index
			}
			return index.NewKeySet(index.NetIPAddr(h.Addr))
		},
		FromKey: index.NetIPAddr,
		Unique:  true,
	}
)

// Record is derived from Host: its name in DNS.
type Record struct {
	FQDN string     `yaml:"fqdn"`
	Addr netip.Addr `yaml:"addr"`
}

func (r *Record) TableHeader() []string { return []string{"FQDN", "Addr"} }
func (r *Record) TableRow() []string    { return []string{r.FQDN, r.Addr.String()} }

var recordByFQDN = strata.Index[*Record, string]{
	Name:       "fqdn",
	FromObject: func(r *Record) index.KeySet { return index.NewKeySet(index.String(r.FQDN)) },
	FromKey:    index.String,
	Unique:     true,
}

// hostRecord derives a host's record; hosts without an address have none.
func hostRecord(h *Host, deleted bool) (*Record, stratahive.DeriveResult) {
	r := &Record{FQDN: h.Name + ".example.com", Addr: h.Addr}
	switch {
	case deleted:
		return r, stratahive.DeriveDelete
	case !h.Addr.IsValid():
		// An address removed: delete the record, if there was one.
		return r, stratahive.DeriveDelete
	}
	return r, stratahive.DeriveInsert
}

// Note shows as YAML: it does not implement TableWritable.
type Note struct {
	ID   uint64 `yaml:"id" json:"id"`
	Text string `yaml:"text" json:"text"`
}

var noteByID = strata.Index[Note, uint64]{
	Name:       "id",
	FromObject: func(n Note) index.KeySet { return index.KeySetOf(index.Uint64(n.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// appCells is the test program: hosts reconciled into a fault-injecting
// world, DNS records derived from them, notes, in module "app".
func appCells(world *reconcilertest.World[*Host]) cell.Cell {
	return cell.Module("app", "The test application",
		stratahive.Table("hosts", hostByName, hostByZone, hostByAddr),
		stratahive.Table("records", recordByFQDN),
		stratahive.Table("notes", noteByID),
		cell.Provide(
			job.Registry.NewGroup,
			func() reconciler.Operations[*Host] { return world },
		),
		stratahive.Reconciler((*Host).Clone, (*Host).SetStatus, (*Host).GetStatus,
			reconciler.WithRetry(20*time.Millisecond, 20*time.Millisecond),
			reconciler.WithoutRefresh(),
			reconciler.WithoutPruning(),
		),
		cell.Invoke(stratahive.Derive("derive-records", hostRecord)),
	)
}

// newTestHive builds a hive of the test program, with the simple health
// and extra cells, and stops it at the end of the test.
func newTestHive(t testing.TB, world *reconcilertest.World[*Host], extra ...cell.Cell) (*hive.Hive, *cell.SimpleHealth) {
	var health *cell.SimpleHealth
	cells := append([]cell.Cell{
		stratahive.Cell,
		job.Cell,
		cell.Provide(func() (cell.Health, *cell.SimpleHealth) {
			h, sh := cell.NewSimpleHealth()
			health = sh
			return h, sh
		}),
		cell.Provide(func(h *cell.SimpleHealth) hive.ScriptCmdOut {
			return hive.NewScriptCmd("health", cell.SimpleHealthCmd(h))
		}),
		appCells(world),
	}, extra...)
	h := hive.NewWithOptions(hive.Options{ModuleDecorators: stratahive.ModuleHandles}, cells...)
	t.Cleanup(func() {
		if err := h.Stop(hivetest.Logger(t), context.Background()); err != nil {
			t.Errorf("hive stop: %v", err)
		}
	})
	if err := h.Populate(hivetest.Logger(t)); err != nil {
		t.Fatalf("populate: %v", err)
	}
	return h, health
}

// worldCmds are the script commands of the fault-injecting world.
func worldCmds(w *reconcilertest.World[*Host]) map[string]script.Cmd {
	return map[string]script.Cmd{
		"world/fail": script.Command(
			script.CmdUsage{Summary: "Make the next n operations on a key fail (n < 0: until healed)", Args: "key n"},
			func(s *script.State, args ...string) (script.WaitFunc, error) {
				if len(args) != 2 {
					return nil, fmt.Errorf("want key and n")
				}
				n, err := strconv.Atoi(args[1])
				if err != nil {
					return nil, err
				}
				if n < 0 {
					w.FailAlways(args[0], nil)
				} else {
					w.FailNext(args[0], n, nil)
				}
				return nil, nil
			}),
		"world/heal": script.Command(
			script.CmdUsage{Summary: "Remove the faults of a key", Args: "key"},
			func(s *script.State, args ...string) (script.WaitFunc, error) {
				w.Heal(args[0])
				return nil, nil
			}),
		"world/keys": script.Command(
			script.CmdUsage{Summary: "Wait until the world holds exactly these keys", Args: "key..."},
			func(s *script.State, args ...string) (script.WaitFunc, error) {
				want := slices.Sorted(slices.Values(args))
				for {
					changed := w.Changed()
					if got := w.Keys(); slices.Equal(got, want) {
						return nil, nil
					}
					// The script's context bounds the wait: a slow
					// machine makes it longer, not the script red.
					select {
					case <-changed:
					case <-s.Context().Done():
						return nil, fmt.Errorf("world holds %v, want %v: %w", w.Keys(), want, s.Context().Err())
					}
				}
			}),
		"world/ops": script.Command(
			script.CmdUsage{Summary: "Show the operations so far, and clear them"},
			func(s *script.State, args ...string) (script.WaitFunc, error) {
				ops := strings.Join(w.TakeOps(), "\n")
				return func(*script.State) (string, string, error) { return ops + "\n", "", nil }, nil
			}),
	}
}

// Lease is a table that is not initialized until the script says so
// (the command notes/sync).
type Lease struct {
	ID uint64 `yaml:"id"`
}

var leaseByID = strata.Index[*Lease, uint64]{
	Name:       "id",
	FromObject: func(l *Lease) index.KeySet { return index.KeySetOf(index.Uint64(l.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// leaseCells declares the leases table, with an initializer "lease-sync"
// that the command leases/synced completes.
func leaseCells() (cell.Cell, map[string]script.Cmd) {
	var done func() error
	c := cell.Group(
		stratahive.Table("leases", leaseByID),
		cell.Invoke(func(db *strata.DB, leases strata.RWTable[*Lease]) error {
			wtxn := db.WriteTxn(leases)
			markDone := leases.RegisterInitializer(wtxn, "lease-sync")
			if _, err := wtxn.Commit(); err != nil {
				return err
			}
			done = func() error {
				wtxn := db.WriteTxn(leases)
				markDone(wtxn)
				_, err := wtxn.Commit()
				return err
			}
			return nil
		}),
	)
	cmds := map[string]script.Cmd{
		"leases/synced": script.Command(
			script.CmdUsage{Summary: "Mark the leases table initialized"},
			func(s *script.State, args ...string) (script.WaitFunc, error) {
				return nil, done()
			}),
	}
	return c, cmds
}

// scriptEngine returns a new engine over a new test hive, for
// scripttest.Test.
func scriptEngine(extra ...cell.Cell) func(testing.TB, []string) *script.Engine {
	return func(t testing.TB, args []string) *script.Engine {
		world := newWorld()
		leases, leaseCmds := leaseCells()
		h, _ := newTestHive(t, world, append(extra, leases)...)
		cmds, err := h.ScriptCommands(hivetest.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(cmds, script.DefaultCmds())
		maps.Copy(cmds, worldCmds(world))
		maps.Copy(cmds, leaseCmds)
		return &script.Engine{Cmds: cmds}
	}
}

func TestScript(t *testing.T) {
	// A command that waits for what never comes (health, db/cmp without
	// a timeout) fails the script in a minute, not at the test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // the scripts run in parallel, after TestScript returns
	scripttest.Test(t, ctx, scriptEngine(), nil, "testdata/*.txtar")
}
