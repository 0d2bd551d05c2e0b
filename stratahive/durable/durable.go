// Package durable declares durable Strata tables in a cilium/hive program:
// tables kept in a Pebble store (package persist) that the hive opens
// when it starts, loads the tables from before any other start hook can
// read them, and closes when it stops. It also adds the db/snapshot and
// db/restore script commands.
//
// It is a package of its own so that a hive program that keeps its
// tables in memory (package stratahive alone) does not build Pebble.
//
//	hive.New(
//		stratahive.Cell,
//		durable.Cell, // --strata-persist-dir, --strata-persist-sync
//		cell.Module("app", "The application",
//			durable.Table("hosts", persist.JSON[*Host](), hostByName),
//		),
//	)
package durable

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/stratahive"
)

// Cell provides the hive's durable store, *Store, which opens a
// persist.Store in --strata-persist-dir when the hive starts, registers
// (and so loads) every table declared with Table, and closes the store
// when the hive stops. If the store cannot be opened or a table cannot
// be loaded, the hive fails to start with the store's error (such as
// persist.ErrLocked, persist.ErrSchemaMismatch).
//
// Its start hook runs before the start hooks of every cell that uses a
// durable table (those cells are built after the table, which is built
// after the store), and reconcilers and derivations start after it: by
// the time any of them reads a durable table, it is loaded.
var Cell = cell.Module(
	"strata-durable",
	"Durable tables on a Pebble store",

	cell.Config(DefaultConfig),
	cell.Provide(newStore, scriptCommands),
)

// Config is the durable store's configuration, set with hive flags.
type Config struct {
	// StrataPersistDir is the store's directory (--strata-persist-dir).
	// It is required.
	StrataPersistDir string
	// StrataPersistSync is when a commit is durable
	// (--strata-persist-sync): "sync" (the default: every commit is
	// fsynced before it is acknowledged, concurrent ones sharing syncs)
	// or "buffered" (acknowledged at once and synced every
	// StrataPersistSyncInterval; see persist.Buffered for what a crash
	// loses).
	StrataPersistSync string
	// StrataPersistSyncInterval is the sync interval of the buffered
	// mode (--strata-persist-sync-interval).
	StrataPersistSyncInterval time.Duration
}

// DefaultConfig is the configuration without flags: no directory, sync
// commits.
var DefaultConfig = Config{StrataPersistSync: SyncAlways, StrataPersistSyncInterval: 100 * time.Millisecond}

// The values of --strata-persist-sync.
const (
	SyncAlways   = "sync"
	SyncBuffered = "buffered"
)

// Flags registers the store's flags.
func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("strata-persist-dir", def.StrataPersistDir, "Directory of the durable tables' store (required)")
	flags.String("strata-persist-sync", def.StrataPersistSync, "When a commit is durable: sync (fsynced before it is acknowledged) or buffered")
	flags.Duration("strata-persist-sync-interval", def.StrataPersistSyncInterval, "How often the buffered mode syncs")
}

// Errors of the configuration.
var (
	// ErrNoDir: durable tables need --strata-persist-dir.
	ErrNoDir = errors.New("durable: --strata-persist-dir is not set")
	// ErrInvalidConfig: a flag has a value the store does not know.
	ErrInvalidConfig = errors.New("durable: invalid configuration")
)

// Store is the hive's durable store. Its persist.Store is open from the
// hive's start to its stop.
type Store struct {
	opts persist.Options
	dir  string

	mu sync.Mutex
	// tables are the tables declared with Table (durable: registered
	// with the store when it opens) and SnapshotTable, in declaration
	// order: those db/snapshot and db/restore know.
	tables []declared
	store  *persist.Store
}

type declared struct {
	name    strata.TableName
	binding persist.TableBinding
	durable bool
}

type storeParams struct {
	cell.In

	Config    Config
	Lifecycle cell.Lifecycle
	Log       *slog.Logger
	// Metrics, if the program provides it, receives the store's figures.
	Metrics metrics.Store `optional:"true"`
}

func newStore(p storeParams) (*Store, error) {
	s := &Store{dir: p.Config.StrataPersistDir, opts: persist.Options{Logger: p.Log, Metrics: p.Metrics}}
	switch p.Config.StrataPersistSync {
	case SyncAlways, "":
		s.opts.Sync = persist.Sync{}
	case SyncBuffered:
		if p.Config.StrataPersistSyncInterval <= 0 {
			return nil, fmt.Errorf("%w: --strata-persist-sync-interval=%s: must be positive", ErrInvalidConfig, p.Config.StrataPersistSyncInterval)
		}
		s.opts.Sync = persist.Buffered{Interval: p.Config.StrataPersistSyncInterval}
	default:
		return nil, fmt.Errorf("%w: --strata-persist-sync=%q: want %s or %s", ErrInvalidConfig, p.Config.StrataPersistSync, SyncAlways, SyncBuffered)
	}
	p.Lifecycle.Append(cell.Hook{OnStart: s.start, OnStop: s.stop})
	return s, nil
}

func (s *Store) start(cell.HookContext) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return ErrNoDir
	}
	st, err := persist.Open(s.dir, s.opts)
	if err != nil {
		return err
	}
	var durable []persist.TableBinding
	for _, d := range s.tables {
		if d.durable {
			durable = append(durable, d.binding)
		}
	}
	if err := st.Register(durable...); err != nil {
		return errors.Join(err, st.Close())
	}
	s.store = st
	return nil
}

func (s *Store) stop(cell.HookContext) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		return nil
	}
	err := s.store.Close()
	s.store = nil
	return err
}

// Persist returns the open persist.Store, or nil outside the hive's run.
func (s *Store) Persist() *persist.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store
}

// Tables returns the names of the tables declared with Table and
// SnapshotTable, in declaration order.
func (s *Store) Tables() []strata.TableName {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]strata.TableName, len(s.tables))
	for i, d := range s.tables {
		names[i] = d.name
	}
	return names
}

// Binding returns the binding of the table name, declared with Table or
// SnapshotTable, for persist's snapshot functions.
func (s *Store) Binding(name strata.TableName) (persist.TableBinding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.tables, func(d declared) bool { return d.name == name })
	if i < 0 {
		return nil, false
	}
	return s.tables[i].binding, true
}

func (s *Store) add(name strata.TableName, b persist.TableBinding, durable bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		return fmt.Errorf("durable: table %q declared after the store opened", name)
	}
	s.tables = append(s.tables, declared{name, b, durable})
	return nil
}

// TableParams are what a durable table's cell takes from the hive.
type TableParams struct {
	cell.In
	stratahive.TableParams

	Store *Store
}

// Table declares a durable table of Obj, named name, whose objects the
// codec encodes, as a cell: like stratahive.Table, it provides the table
// as strata.RWTable[Obj] and strata.Table[Obj], and it registers the
// table with the hive's store when the hive starts, which loads what the
// table held when the program last ran. Until it is loaded the table is
// not initialized (its initializer is persist.InitializerName): do not
// write to it before the hive starts.
func Table[Obj any](name strata.TableName, codec persist.Codec[Obj], primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) cell.Cell {
	return tableCell(name, codec, true, primary, secondary)
}

// SnapshotTable declares a table kept in memory only, as
// stratahive.Table does, that db/snapshot and db/restore can write to and
// read from a snapshot file with the given codec.
func SnapshotTable[Obj any](name strata.TableName, codec persist.Codec[Obj], primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) cell.Cell {
	return tableCell(name, codec, false, primary, secondary)
}

func tableCell[Obj any](name strata.TableName, codec persist.Codec[Obj], durable bool, primary strata.Indexer[Obj], secondary []strata.Indexer[Obj]) cell.Cell {
	return cell.Group(
		cell.Provide(func(p TableParams) (strata.RWTable[Obj], strata.Table[Obj], error) {
			t, err := stratahive.NewTable(p.TableParams, name, primary, secondary...)
			if err != nil {
				return nil, nil, err
			}
			if err := p.Store.add(name, persist.Table(t, codec), durable); err != nil {
				return nil, nil, err
			}
			return t, t, nil
		}),
		cell.Invoke(func(strata.RWTable[Obj]) {}),
	)
}
