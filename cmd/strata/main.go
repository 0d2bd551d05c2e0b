// Command strata looks inside Strata databases: store directories,
// snapshot files and running databases. See package stratacli, which an
// application embeds to add the same commands, with its table types, to
// its own binary.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/strata-db/strata/cmd/strata/stratacli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The online commands (--addr) reach a running database through its
	// HTTP API (package httpapi) with the Go client of package remote.
	cmd := stratacli.NewCommand(stratacli.WithRemote(stratacli.HTTPDialer()))
	code := stratacli.Run(ctx, cmd, os.Args[1:])
	stop()
	os.Exit(code)
}
