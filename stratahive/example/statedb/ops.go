package main

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
)

// EntryOps keeps a directory with a file per entry, holding its address.
type EntryOps struct {
	dir string
}

func NewEntryOps(cfg Config) (reconciler.Operations[*Entry], error) {
	return &EntryOps{dir: cfg.HostsDir}, os.MkdirAll(cfg.HostsDir, 0o755)
}

func (o *EntryOps) Update(ctx context.Context, txn statedb.ReadTxn, rev statedb.Revision, e *Entry) error {
	return os.WriteFile(filepath.Join(o.dir, e.Name), []byte(e.Addr+"\n"), 0o644)
}

func (o *EntryOps) Delete(ctx context.Context, txn statedb.ReadTxn, rev statedb.Revision, e *Entry) error {
	err := os.Remove(filepath.Join(o.dir, e.Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Prune removes the files of no entry.
func (o *EntryOps) Prune(ctx context.Context, txn statedb.ReadTxn, entries iter.Seq2[*Entry, statedb.Revision]) error {
	want := map[string]bool{}
	for e := range entries {
		want[e.Name] = true
	}
	files, err := os.ReadDir(o.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if !want[f.Name()] {
			errs = append(errs, os.Remove(filepath.Join(o.dir, f.Name())))
		}
	}
	return errors.Join(errs...)
}
