package stratacli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata/persist"
)

// maxShown is how many errors check prints; it counts them all.
const maxShown = 1000

// checkResult is what check found.
type checkResult struct {
	Kind    string   `json:"kind"`
	Path    string   `json:"path"`
	Tables  int      `json:"tables"`
	Objects uint64   `json:"objects"`
	OK      bool     `json:"ok"`
	Count   int      `json:"errors_found"`
	Errors  []string `json:"errors"`
	// lsmRead is how many bytes the check of a store's LSM read, as its
	// progress counted them.
	lsmRead int64
}

// problem records one error found.
func (c *checkResult) problem(err error) {
	c.Count++
	if len(c.Errors) < maxShown {
		c.Errors = append(c.Errors, err.Error())
	}
}

func (a *app) checkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check [PATH]",
		Short: "Check a store or a snapshot: checksums, keys, catalog; prints OK or N errors found",
		Long: `Check a store directory or a snapshot file (PATH, or --dir/--file) and print
each error found, then "OK" or "N errors found" (exit code 3).

A store: every file of the LSM is read and its checksums and order checked
(Pebble's level checker); the catalog is consistent (ids unique, schemas
and revisions of known tables only, no objects of a table the catalog does
not name, no unknown records); every value is well formed and of a codec
version the table's schema knows. A snapshot: every block's checksum, the
structure, counts and whole-file checksum; no object newer than its table.

Where the table's type is registered, every object is decoded and its
primary key computed: in a store it must be the key it is stored under, in a
snapshot the keys must come in strictly increasing order. Objects stored
with the JSON codec must be valid JSON.`,
		Args: maxArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, path, err := a.source(optArg(args))
			if err != nil {
				return err
			}
			res := checkResult{Kind: kind, Path: path, Errors: []string{}}
			switch kind {
			case sourceStore:
				err = a.checkStore(cmd.Context(), path, &res)
			case sourceSnapshot:
				err = a.checkSnapshot(cmd.Context(), path, &res)
			default:
				return usagef("check reads a store or a snapshot, not a running database")
			}
			if err != nil {
				return err
			}
			res.OK = res.Count == 0
			if err := writeDoc(a.out, a.format, res, res.text); err != nil {
				return err
			}
			if !res.OK {
				return fmt.Errorf("%s: %w", path, ErrErrorsFound)
			}
			return nil
		},
	}
}

// text writes the errors found, then OK or their number.
func (c checkResult) text(w io.Writer) error {
	for _, e := range c.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	if c.Count > len(c.Errors) {
		fmt.Fprintf(w, "... and %d more\n", c.Count-len(c.Errors))
	}
	switch c.Count {
	case 0:
		fmt.Fprintln(w, "OK")
	case 1:
		fmt.Fprintln(w, "1 error found")
	default:
		fmt.Fprintf(w, "%d errors found\n", c.Count)
	}
	return nil
}

func (a *app) checkStore(ctx context.Context, dir string, res *checkResult) error {
	reads := newReadCounter()
	r, err := a.openStoreOn(dir, reads)
	if errors.Is(err, persist.ErrCorrupt) {
		res.problem(err)
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	s, err := a.newSession()
	if err != nil {
		return err
	}
	// Pebble's level checker tells nothing as it goes: its progress is
	// the bytes read from the table files, of their size.
	p := a.progress("check: the LSM's files", sstBytes(dir))
	reads.to.Store(p)
	err = r.CheckLSM()
	reads.to.Store(nil)
	p.done()
	res.lsmRead = p.bytes.Load()
	if err != nil {
		res.problem(err)
	}
	if err := r.Check(res.problem); err != nil {
		return err
	}
	p = a.progress("check: objects", 0)
	defer p.done()
	for _, st := range r.Tables() {
		res.Tables++
		v := s.view(st.Name, st.Schema, 0)
		n, size := 0, 0
		for obj, err := range r.Objects(st.Name, nil, nil) {
			if err != nil {
				res.problem(err)
				continue
			}
			res.Objects++
			size += len(obj.Key) + len(obj.Value)
			if n++; n%1024 == 0 {
				p.add(int64(size), 1024)
				size = 0
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if st.Schema != nil && obj.Version > st.Schema.Version {
				res.problem(fmt.Errorf("table %s: key %x: value of codec version %d, the schema's is %d", st.Name, obj.Key, obj.Version, st.Schema.Version))
				continue
			}
			rec := record{key: obj.Key, revision: obj.Revision, version: obj.Version, value: obj.Value}
			if err := v.checkObject(rec); err != nil {
				res.problem(err)
			}
		}
	}
	return nil
}

// checkObject checks an object of a store: it decodes with the registered
// type, and its primary key is the key it is stored under; or a JSON
// value is valid JSON.
func (v *view) checkObject(rec record) error {
	if v.typed == nil {
		if v.json && rec.version == v.stored.Version && !json.Valid(rec.value) {
			return fmt.Errorf("table %s: key %x: value is not valid JSON", v.name, rec.key)
		}
		return nil
	}
	obj, err := v.decode(rec)
	if err != nil {
		return fmt.Errorf("key %x: %w", rec.key, err)
	}
	key, err := v.typed.primaryKey(obj)
	if err != nil {
		return err
	}
	if !bytes.Equal(key, rec.key) {
		return fmt.Errorf("table %s: the object stored under key %s has primary key %s", v.name, v.keyText(rec.key), v.keyText(key))
	}
	return nil
}

// keyText renders a primary key of a registered table for a message.
func (v *view) keyText(key []byte) string {
	text, err := v.typed.anyTable().KeyString("", key)
	if err != nil {
		return fmt.Sprintf("%x", key)
	}
	return fmt.Sprintf("%q (%x)", text, key)
}

func (a *app) checkSnapshot(ctx context.Context, path string, res *checkResult) error {
	f, sr, err := openSnapshot(path)
	if errors.Is(err, persist.ErrCorruptSnapshot) || errors.Is(err, persist.ErrSnapshotVersion) {
		res.problem(err)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := a.newSession()
	if err != nil {
		return err
	}
	infos := sr.Tables()
	res.Tables = len(infos)
	views := make([]*view, len(infos))
	for i, t := range infos {
		views[i] = s.view(t.Name, snapshotSchema(t), t.CodecVersion)
	}
	p := a.progress("check", fileSize(f))
	defer p.done()
	var last []byte // the previous primary key of a registered table
	table := -1
	for sr.Next() {
		r := sr.Record()
		res.Objects++
		if res.Objects%1024 == 0 {
			p.set(int64(sr.Offset()))
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.Table != table {
			table, last = r.Table, nil
		}
		info, v := infos[r.Table], views[r.Table]
		if r.Revision > info.Revision {
			res.problem(fmt.Errorf("table %s: an object at revision %d, above the table's %d", info.Name, r.Revision, info.Revision))
		}
		switch {
		case v.typed != nil:
			obj, err := v.decode(record{revision: r.Revision, value: r.Value})
			if err != nil {
				res.problem(err)
				continue
			}
			key, err := v.typed.primaryKey(obj)
			if err != nil {
				res.problem(err)
				continue
			}
			if last != nil && bytes.Compare(key, last) <= 0 {
				what := "out of order"
				if bytes.Equal(key, last) {
					what = "twice"
				}
				res.problem(fmt.Errorf("table %s: primary key %s %s (the object at revision %d)", info.Name, v.keyText(key), what, r.Revision))
			}
			last = key
		case v.json && !json.Valid(r.Value):
			res.problem(fmt.Errorf("table %s: the object at revision %d is not valid JSON", info.Name, r.Revision))
		}
	}
	if err := sr.Err(); err != nil {
		res.problem(fmt.Errorf("snapshot %s: %w", path, err))
	}
	return nil
}
