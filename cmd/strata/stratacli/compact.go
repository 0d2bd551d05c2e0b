package stratacli

import (
	"context"
	"io/fs"

	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata/persist"
)

func (a *app) compactCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "compact [DIR]",
		Short: "Compact a store (DIR or --dir), reclaiming the space of deleted and replaced objects",
		Long: `Compact the store in DIR (or --dir): Pebble rewrites its files into the last
level of the LSM, dropping what deletes and replacements left behind. The
store must not be in use (it is opened for writing). Prints the size of
the store's files before and after.`,
		Args: maxArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, dir, err := a.source(optArg(args))
			if err != nil {
				return err
			}
			if kind != sourceStore {
				return usagef("compact works on a store directory")
			}
			return a.compact(cmd.Context(), dir)
		},
	}
}

func (a *app) compact(ctx context.Context, dir string) error {
	// Open (which creates a store) only what is one.
	r, err := a.openStore(dir)
	if err != nil {
		return err
	}
	r.Close()
	before := dirBytes(dir)
	store, err := persist.Open(dir, persist.Options{Logger: a.logger()})
	if err != nil {
		return storeError(dir, err)
	}
	p := a.progress("compact", 0)
	start := time.Now()
	err = store.Compact(ctx)
	p.done()
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	after := dirBytes(dir)
	a.logf("compacted %s in %v: %s before, %s after", dir, time.Since(start).Round(time.Millisecond), humanBytes(before), humanBytes(after))
	return nil
}

// dirBytes returns the size of the files in dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
