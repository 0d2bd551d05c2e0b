package stratacli

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/remote"
)

// The and, in and or commands: key queries of several indexes combined
// as strata.And, In and Or combine them (docs/queries.md), offline in a
// store or snapshot of a registered table, online by the server (the HTTP
// API's /and, /in and /or).

// RemoteCombiner is a Remote that combines key queries of several indexes
// on the server, as HTTPDialer's does (the HTTP API's /and, /in and /or).
// The and, in and or commands need it online.
type RemoteCombiner interface {
	// Combine returns the objects that qs, combined by op ("and", "in" or
	// "or"), select in the table, from one snapshot: each query selects
	// the objects whose key in its Index is its Key (its Op is
	// strata.QueryList; Raw in every query or in none). The objects come
	// in the order strata.And, In or Or gives, each once.
	Combine(ctx context.Context, table, op string, qs []RemoteQuery) iter.Seq2[RemoteObject, error]
}

// Combine asks the server's /and, /in or /or.
func (r *httpRemote) Combine(ctx context.Context, table, op string, qs []RemoteQuery) iter.Seq2[RemoteObject, error] {
	cqs := make([]remote.Query, len(qs))
	for i, q := range qs {
		cqs[i] = q.client()
	}
	return func(yield func(RemoteObject, error) bool) {
		for o, err := range r.c.Combined(ctx, table, remote.Combine(op), cqs...) {
			if err != nil {
				yield(RemoteObject{}, r.fail(err))
				return
			}
			if !yield(RemoteObject{Revision: o.Revision, Key: o.Key, Object: o.Object}, nil) {
				return
			}
		}
	}
}

// combineOps describes the three commands.
var combineOps = []struct {
	op, short, order string
	read             func(strata.AnyTable, strata.ReadTxn, ...strata.AnyQuery) (iter.Seq[strata.AnyObject], error)
}{
	{"and", "Show the objects every INDEX=KEY query selects", "in primary-key order", strata.AnyTable.And},
	{"in", "Show the objects any INDEX=KEY query of one index selects", "in the index's order (by key, then primary key)", strata.AnyTable.In},
	{"or", "Show the objects any INDEX=KEY query selects", "in primary-key order", strata.AnyTable.Or},
}

// combineCommands returns the and, in and or commands.
func (a *app) combineCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for i := range combineOps {
		cmds = append(cmds, a.combineCommand(i))
	}
	return cmds
}

func (a *app) combineCommand(i int) *cobra.Command {
	c := combineOps[i]
	var keyFormat, keySep string
	cmd := &cobra.Command{
		Use:   c.op + " TABLE INDEX=KEY...",
		Short: c.short,
		Long: fmt.Sprintf(`Show the objects of TABLE that the queries select, combined as strata.%s
combines them, %s, each object once. Each query INDEX=KEY selects the
objects whose key in INDEX is KEY; a query without "=" (or =KEY) is a key
of the primary index. %s

Online (--addr), the server runs the query (the HTTP API's /%s). Offline,
the table's type must be registered (stratacli.WithTable): the command
loads the table from the store or snapshot and runs the query on it.

Keys are typed as dump's are (--key-format, --key-sep). A query of an
unknown index, of an LPM index, or none at all is a usage error.`,
			strings.ToUpper(c.op[:1])+c.op[1:], c.order, map[string]string{
				"and": "And returns the objects every query selects.",
				"in":  "In returns the objects any query selects; every query must be on one index (an IN list of keys).",
				"or":  "Or returns the objects any query selects, on any indexes.",
			}[c.op], c.op),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("%s takes TABLE and INDEX=KEY queries", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKeyFormat(keyFormat, keySep); err != nil {
				return err
			}
			return a.combine(cmd.Context(), i, args[0], args[1:], keyFormat, keySep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyFormat, "key-format", keyFormatText, keyFormatHelp)
	f.StringVar(&keySep, "key-sep", "/", "the separator of a composite key's parts (--key-format KIND,KIND)")
	return cmd
}

// splitQueryArg splits an INDEX=KEY argument at its first "=" (index
// names have none: strata.NamePattern); without one, it is a key of the
// primary index.
func splitQueryArg(s string) (ix, key string) {
	ix, key, ok := strings.Cut(s, "=")
	if !ok {
		return "", s
	}
	return ix, key
}

// combine writes the objects of table that the queries args, combined by
// combineOps[i], select.
func (a *app) combine(ctx context.Context, i int, table string, args []string, keyFormat, keySep string) error {
	kind, path, err := a.source("")
	if err != nil {
		return err
	}
	out := a.rows()
	p := newPager(ctx, out, 0)
	if kind == sourceRemote {
		err = a.combineRemote(ctx, path, i, table, args, keyFormat, keySep, p)
	} else {
		err = a.combineOffline(kind, path, i, table, args, keyFormat, keySep, p)
	}
	if cerr := out.close(); err == nil {
		err = cerr
	}
	return err
}

func (a *app) combineRemote(ctx context.Context, addr string, i int, table string, args []string, keyFormat, keySep string, p *pager) error {
	parse := keyParser(keyFormat, keySep)
	qs := make([]RemoteQuery, len(args))
	for j, s := range args {
		ix, key := splitQueryArg(s)
		qs[j] = RemoteQuery{Index: ix, Op: strata.QueryList, Key: key, Raw: parse != nil}
		if parse != nil {
			k, err := parse(key)
			if err != nil {
				if keyFormat != keyFormatHex {
					err = fmt.Errorf("key %q as %s: %w", key, keyFormat, err)
				}
				return err
			}
			qs[j].Key = string(k)
		}
	}
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer rm.Close()
	c, ok := rm.(RemoteCombiner)
	if !ok {
		return usagef("%s: this command's connection to a running database cannot combine queries (its Remote is no RemoteCombiner)", combineOps[i].op)
	}
	for o, err := range c.Combine(ctx, table, combineOps[i].op, qs) {
		if err != nil {
			return err
		}
		if more, err := p.emit(o.row(), nil); err != nil || !more {
			return err
		}
	}
	return nil
}

// combineOffline loads the table from the store or snapshot at path into
// the session's registered table, and runs the query there. The queries
// are parsed, and their indexes checked, before the table is read.
func (a *app) combineOffline(kind, path string, i int, table string, args []string, keyFormat, keySep string, p *pager) error {
	s, err := a.newSession()
	if err != nil {
		return err
	}
	var v *view
	var load func() error
	if kind == sourceStore {
		r, err := a.openStore(path)
		if err != nil {
			return err
		}
		defer r.Close()
		st, err := r.Table(table)
		if err != nil {
			return err
		}
		v = s.view(st.Name, st.Schema, 0)
		load = func() error { return s.load(v, storeRecords(r, table), 0, st.Revision) }
	} else {
		f, sr, err := openSnapshot(path)
		if err != nil {
			return err
		}
		defer f.Close()
		pos, info, err := snapshotTable(sr, table)
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		v = s.view(info.Name, snapshotSchema(info), info.CodecVersion)
		load = func() error {
			if err := s.load(v, snapshotRecords(sr, pos), info.CodecVersion, info.Revision); err != nil {
				return fmt.Errorf("snapshot %s: %w", path, err)
			}
			return nil
		}
	}
	if v.typed == nil {
		return v.typeNeeded(combineOps[i].op + " (its indexes are the application's)")
	}
	qs := make([]strata.AnyQuery, len(args))
	for j, s := range args {
		ix, key := splitQueryArg(s)
		k, err := v.parseKey(ix, key, keyFormat, keySep)
		if err != nil {
			return err
		}
		qs[j] = strata.AnyQuery{Index: ix, Op: strata.QueryList, Key: k}
	}
	t := v.typed.anyTable()
	// The query on the empty table: a bad one fails before the load.
	if _, err := combineOps[i].read(t, s.db.ReadTxn(), qs...); err != nil {
		return err
	}
	if err := load(); err != nil {
		return err
	}
	seq, err := combineOps[i].read(t, s.db.ReadTxn(), qs...)
	if err != nil {
		return err
	}
	for o := range seq {
		row, err := v.objectRow(nil, o.Object, o.Revision)
		if err != nil {
			return err
		}
		if more, err := p.emit(row, nil); err != nil || !more {
			return err
		}
	}
	return nil
}
