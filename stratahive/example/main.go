// Command hostsd keeps a directory with a file per host, holding its
// address: hosts go into a table, entries are derived from them, and a
// reconciler writes the entries out.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/spf13/pflag"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
)

// Config is the program's configuration.
type Config struct {
	HostsDir string
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("hosts-dir", def.HostsDir, "Directory of the host files")
}

func newHive() *hive.Hive {
	return hive.NewWithOptions(
		hive.Options{
			ModuleDecorators: cell.ModuleDecorators{
				func(db *strata.DB, id cell.ModuleID) *strata.DB { return db.NewHandle(string(id)) },
			},
		},
		stratahive.Cell,
		job.Cell,
		cell.SimpleHealthCell,
		cell.Module("hostsd", "Host files from a table",
			cell.Config(Config{HostsDir: "hosts.d"}),
			cell.Provide(
				job.Registry.NewGroup,
				NewHostTable,
				strata.RWTable[*Host].ToTable,
				NewEntryTable,
				NewEntryOps,
			),
			cell.Invoke(stratahive.Derive[*Host, *Entry]("derive-entries", deriveEntry)),
			cell.Invoke(registerReconciler),
		),
	)
}

func registerReconciler(params stratahive.ReconcilerParams, entries strata.RWTable[*Entry], ops reconciler.Operations[*Entry]) error {
	_, err := stratahive.RegisterReconciler(
		params,
		entries,
		(*Entry).Clone,
		(*Entry).SetStatus,
		(*Entry).GetStatus,
		ops,
		nil,
		reconciler.WithPruning(time.Minute),
	)
	return err
}

func main() {
	h := newHive()
	flags := pflag.NewFlagSet("hostsd", pflag.ExitOnError)
	h.RegisterFlags(flags)
	flags.Parse(os.Args[1:])
	if err := h.Run(slog.Default()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
