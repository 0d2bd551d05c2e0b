package stratahive

import (
	"fmt"
	"io"
	"strings"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

func reconcilerStatusCmd(db *strata.DB, reg *Registry) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Show where reconcilers are with their objects",
			Args:    "[reconciler]",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringP("out", "o", "", "Write to this file instead of stdout")
				fs.String("key", "", "Show only the object with this primary key (as text)")
			},
			Detail: []string{
				"Without arguments, lists the reconcilers: their table, the objects",
				"queued, in flight and failing, and the revision reconciled.",
				"With a reconciler's name, lists each object of its table: its",
				"primary key, phase (idle, queued, in-flight, backoff, failed, ...),",
				"failed attempts since it last changed, and last error.",
			},
			AutocompleteArgs: func(_ *script.State, before []string, cur string) []string {
				if len(before) > 0 {
					return nil
				}
				var out []string
				for _, n := range reg.Reconcilers() {
					if strings.HasPrefix(n, cur) {
						out = append(out, n)
					}
				}
				return out
			},
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			file, err := s.Flags.GetString("out")
			if err != nil {
				return nil, err
			}
			key, err := s.Flags.GetString("key")
			if err != nil {
				return nil, err
			}
			var render func(io.Writer) error
			switch len(args) {
			case 0:
				render = func(w io.Writer) error { return writeReconcilers(w, db, reg) }
			case 1:
				rr, err := reg.reconciler(args[0])
				if err != nil {
					return nil, err
				}
				render = func(w io.Writer) error { return writeReconcilerObjects(w, db, rr, key) }
			default:
				return nil, fmt.Errorf("%w: reconciler/status takes at most one reconciler", ErrBadInput)
			}
			out, err := output{file: file}.write(s, render)
			if err != nil {
				return nil, err
			}
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}

func writeReconcilers(w io.Writer, db *strata.DB, reg *Registry) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Name\tModule\tTable\tQueued\tInFlight\tDelayed\tFailing\tRevision\tLag")
	for _, name := range reg.Reconcilers() {
		rr, err := reg.reconciler(name)
		if err != nil {
			return err
		}
		st := rr.stats()
		queued := 0
		for _, n := range st.Queued {
			queued += n
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", rr.name, orDash(rr.module), rr.table.Name(),
			queued, st.InFlight, st.Delayed, st.Failing, st.Revision, st.Lag)
	}
	return tw.Flush()
}

func writeReconcilerObjects(w io.Writer, db *strata.DB, rr *registeredReconciler, key string) error {
	t := strata.AnyTable{Meta: rr.table}
	txn := db.ReadTxn()
	q := strata.AnyQuery{}
	if key != "" {
		k, err := t.ParseKey("", key)
		if err != nil {
			return err
		}
		q = strata.AnyQuery{Op: strata.QueryList, Key: k}
	}
	objs, err := t.Read(txn, q)
	if err != nil {
		return err
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Key\tPhase\tStatus\tAttempts\tError")
	for o := range objs {
		// On the primary index an object's cursor is its primary key.
		in, _ := rr.inspect(o.Cursor)
		ks, _ := t.KeyString("", o.Cursor)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", ks, in.Phase, orDash(in.Status.Kind.String()), in.Attempts, orDash(errorText(in)))
	}
	return tw.Flush()
}

func errorText(in reconciler.Inspection) string {
	if in.LastError != nil {
		return in.LastError.Error()
	}
	return in.Status.GetError()
}
