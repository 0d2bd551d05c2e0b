package replicated_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/hashicorp/raft"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/stratahive"
	"github.com/strata-db/strata/stratahive/replicated"
)

// Greeting is the example's replicated object.
type Greeting struct {
	Name string `json:"name"`
}

var greetingByName = strata.Index[*Greeting, string]{
	Name:       "name",
	FromObject: func(g *Greeting) index.KeySet { return index.NewKeySet(index.String(g.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// A program with a replicated table and a leader-only job, as one node
// that bootstraps a cluster of itself over TCP. Every node of a real
// cluster runs the same program with its own flags and the same
// --strata-raft-peers (id=raft-address/forward-address, ...); the job
// runs on the leader only, and Node().Write works on any node (a
// follower forwards it to the leader).
func Example() {
	dir, err := os.MkdirTemp("", "replicated-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	h := hive.New(
		stratahive.Cell, job.Cell, cell.SimpleHealthCell, replicated.Cell,
		cell.Provide(func() replicated.Options {
			// Quicker elections than raft's defaults (1 s), for an
			// example that runs in a test.
			return replicated.Options{Raft: func(c *raft.Config) {
				c.HeartbeatTimeout, c.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
				c.LeaderLeaseTimeout = 100 * time.Millisecond
			}}
		}),
		cell.Module("greeter", "Greets from the leader",
			replicated.Table("greetings", persist.JSON[*Greeting](), greetingByName),
			cell.Provide(job.Registry.NewGroup),
			cell.Invoke(func(jobs job.Group, r *replicated.Replica, greetings strata.RWTable[*Greeting], shutdown hive.Shutdowner) {
				jobs.Add(r.LeaderJob("greet", func(ctx context.Context, _ cell.Health) error {
					// Only the leader runs this: it writes through the
					// node, which replicates the write before it returns.
					index, err := r.Node().Write(ctx, []strata.TableMeta{greetings}, func(txn strata.WriteTxn) error {
						_, _, err := greetings.Insert(txn, &Greeting{Name: "world"})
						return err
					})
					if err != nil {
						return err
					}
					txn, err := r.Node().ReadAtLeast(ctx, index)
					if err != nil {
						return err
					}
					g, _, _ := greetings.Get(txn, greetingByName.Query("world"))
					fmt.Println("hello,", g.Name, "from", r.ID())
					shutdown.Shutdown()
					return nil
				}))
			}),
		),
	)
	flags := pflag.NewFlagSet("example", pflag.ContinueOnError)
	h.RegisterFlags(flags)
	err = flags.Parse([]string{
		"--strata-raft-id=n1", "--strata-raft-node-number=1",
		"--strata-raft-bind=127.0.0.1:0", "--strata-raft-dir=" + dir,
		"--strata-raft-bootstrap",
	})
	if err != nil {
		panic(err)
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if err := h.Run(quiet); err != nil {
		panic(err)
	}
	// Output: hello, world from n1
}
