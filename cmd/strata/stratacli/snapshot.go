package stratacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata/persist"
)

func (a *app) snapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Export, import, verify, inspect, decode and compare snapshot files",
	}
	cmd.AddCommand(a.exportCommand(), a.importCommand(), a.verifyCommand(), a.snapInspectCommand(), a.decodeCommand(), a.diffCommand())
	return cmd
}

func (a *app) exportCommand() *cobra.Command {
	var tables []string
	var force bool
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Write a snapshot of a store (--dir) to FILE, and verify it",
		Long: `Write a snapshot of the store --dir (every table, or those of --tables) to
FILE, from the stored records (no type is needed), then read FILE back and
verify it. FILE is written under a temporary name, synced and renamed, so
it is never left half written; an existing FILE is kept unless --force.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.dir == "" {
				return usagef("snapshot export reads a store: give --dir")
			}
			if exists(args[0]) && !force {
				return usagef("%s exists: give --force to replace it", args[0])
			}
			return a.export(cmd.Context(), a.dir, args[0], tables)
		},
	}
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "the `tables` to export (all by default)")
	cmd.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	return cmd
}

func (a *app) export(ctx context.Context, dir, path string, tables []string) error {
	r, err := a.openStore(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	p := a.progress("export", 0)
	err = persist.WriteFileAtomic(path, func(w io.Writer) error {
		return r.WriteSnapshot(ctxWriter{ctx, countingWriter{w, p}}, tables...)
	})
	p.done()
	if err != nil {
		return err
	}
	// Read it back: what is on disk is what was meant.
	info, err := a.verifyFile(ctx, path)
	if err != nil {
		return fmt.Errorf("verifying the snapshot written: %w", err)
	}
	want := map[string]uint64{}
	for _, st := range r.Tables() {
		if len(tables) == 0 || slices.Contains(tables, st.Name) {
			n := uint64(0)
			for _, err := range r.Objects(st.Name, nil, nil) {
				if err != nil {
					return err
				}
				n++
			}
			want[st.Name] = n
		}
	}
	for _, t := range info.tables {
		if want[t.Name] != t.Objects {
			return fmt.Errorf("verifying the snapshot written: table %s: %s, the store holds %d", t.Name, count(t.Objects, "object"), want[t.Name])
		}
	}
	a.logf("exported %s, %s, %s to %s (verified)", count(len(info.tables), "table"), count(info.objects, "object"), humanBytes(int64(info.bytes)), path)
	return nil
}

// ctxWriter fails writes once ctx is done, so that an interrupted export
// stops.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

func (a *app) importCommand() *cobra.Command {
	var tables, keys []string
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Load a snapshot FILE into a store (--dir)",
		Long: `Load the tables of snapshot FILE (every table, or those of --tables) into the
store --dir, created if it does not exist, in one transaction: all of it or
nothing. The tables must be empty in the store. Importing needs each
table's type: a store keeps every object under its primary key, which the
application's primary index computes from the object, and a snapshot
records no keys. So it works in an application that registers its tables
(stratacli.WithTable).

Without a table's type, a table stored with the JSON codec can be imported
if --key TABLE=FIELD:KIND says how its primary key is computed: from the
field FIELD (a.b for a nested one) of each object's JSON, as a key of kind
KIND (string, int64, uint32, addr, prefix, time, …); FIELD:KIND,FIELD:KIND
for a composite key. The objects are written as they are. Checked: each is
JSON with those fields, of their kinds, and the keys strictly increase in
the snapshot's order (its primary key order). Not checked without the
type: that the key is the one the application's primary index computes
(its Register checks every key, and refuses the table with
persist.ErrKeyChanged if one differs), that the objects decode into its
type, and its secondary indexes (it computes them when it loads). Other
tables of unknown type are refused, naming them.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.dir == "" {
				return usagef("snapshot import writes a store: give --dir")
			}
			return a.importSnapshot(cmd.Context(), args[0], a.dir, tables, keys)
		},
	}
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "the `tables` to import (all by default)")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "`TABLE=FIELD:KIND[,FIELD:KIND…]`: the primary key of a JSON table of unknown type, from its objects' fields (repeatable)")
	return cmd
}

func (a *app) importSnapshot(ctx context.Context, path, dir string, tables, keys []string) error {
	specs, err := parseRawKeySpecs(keys)
	if err != nil {
		return err
	}
	f, sr, err := openSnapshot(path)
	if err != nil {
		return err
	}
	infos := sr.Tables()
	f.Close()
	if len(tables) == 0 {
		for _, t := range infos {
			tables = append(tables, t.Name)
		}
	}
	s, err := a.newSession()
	if err != nil {
		return err
	}
	bindings, raw, err := s.importBindings(path, infos, tables, specs)
	if err != nil {
		return err
	}
	store, err := persist.Open(dir, persist.Options{Logger: a.logger()})
	if err != nil {
		return storeError(dir, err)
	}
	if err := store.Register(bindings...); err != nil {
		store.Close()
		return err
	}
	f, err = os.Open(path)
	if err != nil {
		store.Close()
		return err
	}
	defer f.Close()
	p := a.progress("import", fileSize(f))
	info, err := persist.ReadSnapshot(ctxReader{ctx, countingReader{f, p}}, bindings...)
	p.done()
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("importing %s: %w", path, err)
	}
	var objects uint64
	for _, t := range info.Tables {
		if t.Restored {
			objects += t.Objects
		}
	}
	a.logf("imported %s, %s from %s into %s", count(len(bindings), "table"), count(objects, "object"), path, dir)
	for _, name := range raw {
		a.logf("note: table %s was imported without its type, keyed by %s: its objects are JSON with those fields and their keys "+
			"increase in the snapshot's order; not checked: that these are the keys the application's primary index computes "+
			"(its Register checks them: persist.ErrKeyChanged), that the objects decode into its type, and its secondary indexes",
			name, specs[name])
	}
	return nil
}

// parseRawKeySpecs parses the --key flags of snapshot import, by table.
func parseRawKeySpecs(keys []string) (map[string]rawKeySpec, error) {
	specs := map[string]rawKeySpec{}
	for _, k := range keys {
		spec, err := parseRawKeySpec(k)
		if err != nil {
			return nil, err
		}
		if _, twice := specs[spec.table]; twice {
			return nil, usagef("--key: table %s given twice", spec.table)
		}
		specs[spec.table] = spec
	}
	return specs, nil
}

// importBindings returns the bindings of the tables snapshot import loads
// from the snapshot at path (whose tables infos describes): a registered
// type's, or for a table of unknown type one that --key (specs) keys;
// and the names of the latter. A table of unknown type without a --key
// fails with ErrTypeNeeded, naming every such table.
func (s *session) importBindings(path string, infos []persist.SnapshotTableInfo, tables []string, specs map[string]rawKeySpec) (
	bindings []persist.TableBinding, raw []string, err error) {
	var unknown []string
	for _, name := range tables {
		i := slices.IndexFunc(infos, func(t persist.SnapshotTableInfo) bool { return t.Name == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("snapshot %s: table %q: %w", path, name, persist.ErrSnapshotTableMissing)
		}
		t, registered := s.tables[name]
		spec, keyed := specs[name]
		switch {
		case registered && keyed:
			return nil, nil, usagef("--key %s=%s: table %s's type is registered, which computes its keys", name, spec, name)
		case registered:
			bindings = append(bindings, t.binding())
		case keyed:
			b, err := rawBinding(s.db, infos[i], spec)
			if err != nil {
				return nil, nil, err
			}
			bindings = append(bindings, b)
			raw = append(raw, name)
		default:
			unknown = append(unknown, name)
		}
	}
	for name, spec := range specs {
		if !slices.Contains(tables, name) {
			return nil, nil, usagef("--key %s=%s: table %s is not imported", name, spec, name)
		}
	}
	if len(unknown) > 0 {
		return nil, nil, importTypeError(unknown)
	}
	return bindings, raw, nil
}

// importTypeError is the error of snapshot import of tables whose types
// the command does not know: why the stock command cannot, and how to.
func importTypeError(tables []string) error {
	return &wrapped{err: ErrTypeNeeded, msg: fmt.Sprintf(
		"snapshot import needs the type of every table it loads, and these are not registered: %s. A snapshot records "+
			"no primary keys (only each object's encoding and revision) and a store keeps every object under its primary "+
			"key, which only the table's primary index, Go code of the application, computes from the decoded object. "+
			"Import with the application's own command (stratacli.WithTable) or persist.ReadSnapshotFile, or copy the "+
			"store directory itself; for a table stored as JSON, say how its key is computed: --key TABLE=FIELD:KIND; "+
			"leave these tables out with --tables",
		strings.Join(tables, ", "))}
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// verified is what verifyFile read.
type verified struct {
	tables  []persist.SnapshotTableInfo
	objects uint64
	bytes   uint64
}

// verifyFile reads the snapshot at path whole, verifying it.
func (a *app) verifyFile(ctx context.Context, path string) (verified, error) {
	f, sr, err := openSnapshot(path)
	if err != nil {
		return verified{}, err
	}
	defer f.Close()
	p := a.progress("verify", fileSize(f))
	defer p.done()
	var n uint64
	for sr.Next() {
		if n++; n%4096 == 0 {
			p.set(int64(sr.Offset()))
			if err := ctx.Err(); err != nil {
				return verified{}, err
			}
		}
	}
	if err := sr.Err(); err != nil {
		return verified{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return verified{tables: sr.Tables(), objects: n, bytes: sr.Offset()}, nil
}

func (a *app) verifyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify a snapshot file: every checksum, the structure, the counts",
		Long: `Read snapshot FILE whole and verify it: every block's checksum, the header's
counts, the footer and the whole-file checksum. Prints OK, or the damage
found (exit code 3). check also decodes the objects of registered tables.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := a.verifyFile(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			doc := fields{{"ok", true}, {"tables", len(v.tables)}, {"objects", v.objects}, {"bytes", v.bytes}}
			return writeDoc(a.out, a.format, doc, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "OK: %s, %s, %s\n", count(len(v.tables), "table"), count(v.objects, "object"), count(v.bytes, "byte"))
				return err
			})
		},
	}
}

func (a *app) snapInspectCommand() *cobra.Command {
	cmd := a.inspectCommand()
	cmd.Use = "inspect FILE"
	cmd.Short = "Summarize a snapshot file (as inspect FILE)"
	cmd.Args = exactArgs("FILE")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if info, err := os.Stat(args[0]); err == nil && info.IsDir() {
			return usagef("%s is a directory, not a snapshot file", args[0])
		}
		return run(cmd, args)
	}
	return cmd
}

func (a *app) decodeCommand() *cobra.Command {
	var tables []string
	cmd := &cobra.Command{
		Use:   "decode FILE",
		Short: "Write every object of a snapshot, one per line (JSON lines by default)",
		Long: `Write the objects of snapshot FILE (every table, or those of --tables), each
with its table and revision: decoded if the table's type is registered, as
JSON if stored with the JSON codec, as hex otherwise. The output is JSON
lines unless --output says otherwise. The whole file is verified: damage
ends the output with exit code 3.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("output") {
				a.format = formatJSONL
			}
			return a.decode(cmd.Context(), args[0], tables)
		},
	}
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "the `tables` to decode (all by default)")
	return cmd
}

func (a *app) decode(ctx context.Context, path string, tables []string) error {
	f, sr, err := openSnapshot(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := a.newSession()
	if err != nil {
		return err
	}
	infos := sr.Tables()
	views := make([]*view, len(infos))
	for _, name := range tables {
		if _, _, err := snapshotTable(sr, name); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
	}
	for i, t := range infos {
		if len(tables) == 0 || slices.Contains(tables, t.Name) {
			views[i] = s.view(t.Name, snapshotSchema(t), t.CodecVersion)
			if views[i].note != "" {
				a.logf("note: %s", views[i].note)
			}
		}
	}
	out := a.rows()
	records, _ := out.(recordWriter)
	n := 0
	for sr.Next() {
		r := sr.Record()
		v := views[r.Table]
		if v == nil {
			continue
		}
		rec := record{revision: r.Revision, value: r.Value}
		var err error
		if records != nil && v.typed == nil {
			err = records.writeRecord(v, rec, true)
		} else {
			var row fields
			if row, err = v.row(rec, true); err == nil {
				err = out.write(row)
			}
		}
		if err != nil {
			out.close()
			return err
		}
		if n++; n%1024 == 0 && ctx.Err() != nil {
			out.close()
			return ctx.Err()
		}
	}
	if err := out.close(); err != nil {
		return err
	}
	if err := sr.Err(); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

// errDifferent is diff's error with --exit-code when the snapshots differ.
var errDifferent = errors.New("the snapshots differ")
