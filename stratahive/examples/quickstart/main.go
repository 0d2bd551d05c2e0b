package main

import (
	"context"
	"fmt"
	"iter"
	"log"
	"log/slog"
	"os"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/durable"
)

// Greeting is a line to show; Status is the reconciler's.
type Greeting struct {
	Name   string            `json:"name"`
	Status reconciler.Status `json:"status"`
}

var byName = strata.Index[*Greeting, string]{
	Name:       "name",
	FromObject: func(g *Greeting) index.KeySet { return index.NewKeySet(index.String(g.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// screen is the outside world.
type screen struct{}

func (screen) Update(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, g *Greeting) error {
	fmt.Println("hello,", g.Name)
	return nil
}

func (screen) Delete(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, g *Greeting) error {
	return nil
}

func (screen) Prune(ctx context.Context, txn strata.ReadTxn, objs iter.Seq2[*Greeting, strata.Revision]) error {
	return nil
}

var program = cell.Module("greeter", "Greets the names of a durable table",
	durable.Table("greetings", persist.JSON[*Greeting](), byName),
	cell.Provide(
		job.Registry.NewGroup,
		func() reconciler.Operations[*Greeting] { return screen{} },
	),
	stratahive.Reconciler(
		func(g *Greeting) *Greeting { c := *g; return &c },
		func(g *Greeting, s reconciler.Status) *Greeting { g.Status = s; return g },
		func(g *Greeting) reconciler.Status { return g.Status },
	),
	cell.Invoke(greet),
)

// greet adds a job that inserts a greeting, waits until it is on the
// screen, and stops the program.
func greet(jobs job.Group, db *strata.DB, greetings strata.RWTable[*Greeting],
	r *reconciler.Reconciler[*Greeting], shutdown hive.Shutdowner) {
	jobs.Add(job.OneShot("greet", func(ctx context.Context, _ cell.Health) error {
		wtxn := db.WriteTxn(greetings)
		if _, _, err := greetings.Insert(wtxn, &Greeting{Name: "world", Status: reconciler.StatusPending()}); err != nil {
			return err
		}
		rev := greetings.Revision(wtxn)
		if _, err := wtxn.Commit(); err != nil {
			return err
		}
		// The reconciler prints "hello, world".
		if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
			return err
		}
		fmt.Println(greetings.NumObjects(db.ReadTxn()), "greeting(s) stored")
		shutdown.Shutdown()
		return nil
	}))
}

func main() {
	h := hive.New(stratahive.Cell, durable.Cell, job.Cell, cell.SimpleHealthCell, program)
	flags := pflag.NewFlagSet("quickstart", pflag.ExitOnError)
	h.RegisterFlags(flags) // --strata-persist-dir, --strata-persist-sync, --strata-metrics
	flags.Parse(os.Args[1:])
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := h.Run(quiet); err != nil {
		log.Fatal(err)
	}
}
