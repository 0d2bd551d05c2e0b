package stratahive

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/reconciler"
)

// Cell provides the database, *strata.DB, to the hive, with what comes
// with it: the choice of metrics (Config, or a metrics.Metrics provided
// by the program), the registry of declared tables (Table) and of
// reconcilers (RegisterReconciler), and the db/* and reconciler/*
// script commands (ScriptCommands).
//
// The *strata.DB it provides is the database's first handle. With
// ModuleHandles in the hive's options each module gets a handle of its
// own, named after the module, so that metrics and LastWriter tell which
// module wrote.
var Cell = cell.Module(
	"strata",
	"In-memory transactional database",

	cell.Config(DefaultConfig),
	cell.Provide(
		newMetrics,
		newDB,
		NewRegistry,
		ScriptCommands,
	),
)

// Config is the Cell's configuration, set with hive flags.
type Config struct {
	// StrataMetrics chooses the metrics of the database and the
	// reconcilers when the program provides none of its own: "none" (the
	// default, which costs nothing), "expvar" (published under "strata"
	// and "strata_reconcilers") or "prometheus" (registered with the
	// hive's prometheus.Registerer, or the default registry, while the
	// hive runs).
	StrataMetrics string
}

// DefaultConfig is the Cell's configuration without flags.
var DefaultConfig = Config{StrataMetrics: MetricsNone}

// The values of --strata-metrics.
const (
	MetricsNone       = "none"
	MetricsExpVar     = "expvar"
	MetricsPrometheus = "prometheus"
)

// Flags registers --strata-metrics.
func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("strata-metrics", def.StrataMetrics,
		"Metrics of the database and its reconcilers: none, expvar or prometheus")
}

// ModuleHandles, in hive.Options.ModuleDecorators, gives every module its
// own handle on the database (strata.DB.NewHandle), named after the
// module's full ID ("app.routes"): the write transactions a module opens
// are reported under its name, and LastWriter names it.
//
//	h := hive.NewWithOptions(hive.Options{ModuleDecorators: stratahive.ModuleHandles}, ...)
var ModuleHandles = cell.ModuleDecorators{ModuleHandle}

// ModuleHandle returns the handle of db named after the module id.
func ModuleHandle(db *strata.DB, id cell.FullModuleID) *strata.DB {
	return db.NewHandle(id.String())
}

// Metrics is what the Cell measures with, as chosen by Config or provided
// by the program: the database's metrics, and the reconcilers' default
// (RegisterReconciler uses it unless the reconciler is given its own).
type Metrics struct {
	// DB receives the database's measurements.
	DB metrics.Metrics
	// Reconcilers receives the measurements of reconcilers registered
	// without metrics of their own.
	Reconcilers reconciler.Metrics

	// collectors are registered with the hive's Prometheus registry while
	// the hive runs.
	collectors []prom.Collector
}

type metricsParams struct {
	cell.In

	Config    Config
	Lifecycle cell.Lifecycle
	Log       *slog.Logger
	// Metrics and ReconcilerMetrics, if the program provides them, are
	// used whatever the configuration says.
	Metrics           metrics.Metrics    `optional:"true"`
	ReconcilerMetrics reconciler.Metrics `optional:"true"`
	// Registerer is where Prometheus metrics are registered; the default
	// registry if the program provides none.
	Registerer prom.Registerer `optional:"true"`
}

// ErrInvalidConfig: a flag of the Cell has a value it does not know.
var ErrInvalidConfig = errors.New("stratahive: invalid configuration")

func newMetrics(p metricsParams) (*Metrics, error) {
	m := &Metrics{DB: metrics.NopMetrics{}, Reconcilers: reconciler.NopMetrics{}}
	switch p.Config.StrataMetrics {
	case MetricsNone, "":
	case MetricsExpVar:
		dbm := metrics.NewExpVar("strata", true)
		rm := reconciler.NewExpVar("strata_reconcilers", true)
		for _, err := range []error{dbm.Err(), rm.Err()} {
			if err != nil {
				// Another hive of this process published first: these
				// figures are still read through Metrics.
				p.Log.Warn("strata: expvar metrics not published", "error", err)
			}
		}
		m.DB, m.Reconcilers = dbm, rm
	case MetricsPrometheus:
		if err := m.usePrometheus(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: --strata-metrics=%q: want %s, %s or %s",
			ErrInvalidConfig, p.Config.StrataMetrics, MetricsNone, MetricsExpVar, MetricsPrometheus)
	}
	if p.Metrics != nil {
		m.DB = p.Metrics
	}
	if p.ReconcilerMetrics != nil {
		m.Reconcilers = p.ReconcilerMetrics
	}
	if len(m.collectors) > 0 {
		reg := p.Registerer
		if reg == nil {
			reg = prom.DefaultRegisterer
		}
		m.registerWhileRunning(p.Lifecycle, reg)
	}
	return m, nil
}

// registerWhileRunning registers the collectors with reg when the hive
// starts and unregisters them when it stops, so that a process may build
// one hive after another (as tests do).
func (m *Metrics) registerWhileRunning(lc cell.Lifecycle, reg prom.Registerer) {
	var registered []prom.Collector
	lc.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			for _, c := range m.collectors {
				if err := reg.Register(c); err != nil {
					for _, r := range registered {
						reg.Unregister(r)
					}
					registered = nil
					return fmt.Errorf("stratahive: registering Prometheus metrics: %w", err)
				}
				registered = append(registered, c)
			}
			return nil
		},
		OnStop: func(cell.HookContext) error {
			for _, c := range registered {
				reg.Unregister(c)
			}
			registered = nil
			return nil
		},
	})
}

type dbParams struct {
	cell.In

	Metrics *Metrics
}

// newDB creates the database. A Strata database runs no goroutines and
// needs no start or stop of its own: what the hive's lifecycle drives
// are the metrics (registered while it runs), durable tables
// (stratahive/durable) and reconcilers and derivations (jobs).
func newDB(p dbParams) *strata.DB {
	return strata.New(strata.WithMetrics(p.Metrics.DB))
}

// ScriptCommands returns the db/* and reconciler/* script commands, for
// the hive's script engine (hive.ScriptCommands) and a running program's
// shell. Cell provides them; a program without Cell can provide them
// itself with cell.Provide(stratahive.ScriptCommands).
func ScriptCommands(db *strata.DB, reg *Registry) hive.ScriptCmdsOut {
	return hive.NewScriptCmds(Commands(db, reg))
}
