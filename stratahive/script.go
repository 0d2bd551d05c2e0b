package stratahive

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

// Commands returns the script commands by name: db, db/show, db/insert,
// db/delete, db/cmp, db/get, db/list, db/prefix, db/lowerbound,
// db/count, db/and, db/in, db/or, db/watch, db/initialized, db/empty,
// db/dump and reconciler/status.
// `help -v db/show` (and so on) in a script or a shell describes each.
//
// Tables are named by name; keys are typed as text and parsed by the
// index's FromString (or its default, see strata.Index). A command given
// an unknown table or index, a key that does not parse or a file that
// does not decode fails with an error that says so, and writes nothing.
// Their writes are made through a handle named "script".
func Commands(db *strata.DB, reg *Registry) map[string]script.Cmd {
	// Writes name the handle "script" as their writer (LastWriter).
	db = db.NewHandle("script")
	cmds := map[string]script.Cmd{
		"db":                dbCmd(db, reg),
		"db/show":           showCmd(db),
		"db/insert":         writeCmd(db, true),
		"db/delete":         writeCmd(db, false),
		"db/cmp":            cmpCmd(db),
		"db/get":            queryCmd(db, queryGet),
		"db/list":           queryCmd(db, queryList),
		"db/prefix":         queryCmd(db, queryPrefix),
		"db/lowerbound":     queryCmd(db, queryLowerBound),
		"db/count":          countCmd(db),
		"db/and":            multiCmd(db, "db/and"),
		"db/in":             multiCmd(db, "db/in"),
		"db/or":             multiCmd(db, "db/or"),
		"db/watch":          watchCmd(db),
		"db/initialized":    initializedCmd(db),
		"db/empty":          emptyCmd(db),
		"db/dump":           dumpCmd(db),
		"reconciler/status": reconcilerStatusCmd(db, reg),
	}
	for name, cmd := range cmds {
		cmds[name] = ErrorsToStderr(cmd)
	}
	return cmds
}

// ErrorsToStderr returns cmd with its errors written to its stderr as
// well, so that a script checks them with "! db/show x" and "stderr
// 'table not found'" (the engine otherwise keeps a failed command's
// error out of stderr). Every command of Commands is wrapped so.
func ErrorsToStderr(cmd script.Cmd) script.Cmd { return errorsToStderr{cmd} }

type errorsToStderr struct{ script.Cmd }

func (c errorsToStderr) Run(s *script.State, args ...string) (script.WaitFunc, error) {
	wait, err := c.Cmd.Run(s, args...)
	if err != nil {
		return func(*script.State) (string, string, error) { return "", err.Error() + "\n", err }, nil
	}
	if wait == nil {
		return nil, nil
	}
	return func(s *script.State) (string, string, error) {
		stdout, stderr, err := wait(s)
		if err != nil && stderr == "" {
			stderr = err.Error() + "\n"
		}
		return stdout, stderr, err
	}, nil
}

// lookupTable finds the table name; the error wraps
// strata.ErrTableNotFound and lists the tables there are.
func lookupTable(db *strata.DB, name string) (strata.AnyTable, error) {
	t, err := db.AnyTable(name)
	if err != nil {
		var names []string
		for _, m := range db.Tables() {
			names = append(names, m.Name())
		}
		slices.Sort(names)
		return strata.AnyTable{}, fmt.Errorf("%w (the tables are: %s)", err, strings.Join(names, ", "))
	}
	return t, nil
}

func completeTables(db *strata.DB) func(*script.State, []string, string) []string {
	return func(_ *script.State, before []string, cur string) []string {
		if len(before) > 0 {
			return nil
		}
		var out []string
		for _, m := range db.Tables() {
			if strings.HasPrefix(m.Name(), cur) {
				out = append(out, m.Name())
			}
		}
		slices.Sort(out)
		return out
	}
}

// outputFlags are the flags of the commands that show objects.
func outputFlags(fs *pflag.FlagSet) {
	fs.StringP("out", "o", "", "Write to this file instead of stdout")
	fs.StringP("format", "f", "", "Format: table, yaml or json (default: table for TableWritable objects, else yaml)")
	fs.StringSlice("columns", nil, "Columns to show, by TableHeader name (table format)")
}

type output struct {
	file    string
	format  string
	columns []string
}

func outputOf(s *script.State) (output, error) {
	var o output
	var err error
	if o.file, err = s.Flags.GetString("out"); err != nil {
		return o, err
	}
	if o.format, err = s.Flags.GetString("format"); err != nil {
		return o, err
	}
	o.columns, err = s.Flags.GetStringSlice("columns")
	return o, err
}

// write renders with fn to the output file, or returns the text as the
// command's stdout.
func (o output) write(s *script.State, fn func(io.Writer) error) (string, error) {
	var buf strings.Builder
	if err := fn(&buf); err != nil {
		return "", err
	}
	if o.file == "" {
		return buf.String(), nil
	}
	if err := os.WriteFile(s.Path(o.file), []byte(buf.String()), 0o644); err != nil {
		return "", err
	}
	return "", nil
}

// timeoutFlag is the --timeout of the commands that wait.
func timeoutFlag(fs *pflag.FlagSet) {
	fs.Duration("timeout", 5*time.Second, "How long to wait at most")
}

func dbCmd(db *strata.DB, reg *Registry) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Describe the database's tables",
			Detail: []string{
				"Lists every table: its objects, revision, the deleted objects kept",
				"for change feeds (graveyard), its open change feeds, indexes",
				"(the primary first), pending initializers, Go type, the handle",
				"(module) that last wrote it and the module that declared it.",
			},
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) > 0 {
				return nil, fmt.Errorf("%w: db takes no arguments", ErrBadInput)
			}
			txn := db.ReadTxn()
			metas := db.Tables()
			slices.SortFunc(metas, func(a, b strata.TableMeta) int { return strings.Compare(a.Name(), b.Name()) })
			var buf strings.Builder
			tw := newTabWriter(&buf)
			fmt.Fprintln(tw, "Name\tObjects\tRevision\tGraveyard\tFeeds\tIndexes\tInitializers\tGo type\tLast writer\tDeclared by")
			for _, m := range metas {
				t := strata.AnyTable{Meta: m}
				fs := t.FeedStats(txn)
				declared, ok := reg.DeclaredBy(m.Name())
				switch {
				case !ok:
					declared = "-"
				case declared == "":
					declared = "(root)"
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%v\t%s\t%s\n",
					m.Name(), m.NumObjects(txn), m.Revision(txn), fs.Graveyard, fs.Feeds,
					strings.Join(m.Indexes(), ", "), orDash(strings.Join(m.PendingInitializers(txn), ", ")),
					t.ObjectType(), orDash(m.LastWriter(txn)), declared)
			}
			tw.Flush()
			out := string(trimLines([]byte(buf.String())))
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func showCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Show the objects of a table",
			Args:    "table",
			Flags:   outputFlags,
			Detail: []string{
				"Writes every object of the table, in primary key order, as a table",
				"of columns (TableWritable objects), YAML or JSON.",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("%w: db/show takes one table", ErrBadInput)
			}
			o, err := outputOf(s)
			if err != nil {
				return nil, err
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			if o.format == "" {
				o.format = defaultFormat(t)
			}
			txn := db.ReadTxn()
			out, err := o.write(s, func(w io.Writer) error {
				return writeObjects(w, t, t.All(txn), o.format, o.columns)
			})
			if err != nil {
				return nil, err
			}
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}

func emptyCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary:          "Check that tables are empty",
			Args:             "table...",
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("%w: db/empty takes one or more tables", ErrBadInput)
			}
			txn := db.ReadTxn()
			for _, name := range args {
				t, err := lookupTable(db, name)
				if err != nil {
					return nil, err
				}
				if n := t.NumObjects(txn); n > 0 {
					return nil, fmt.Errorf("table %q holds %d objects", name, n)
				}
			}
			return nil, nil
		},
	)
}

func initializedCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Wait until tables are initialized",
			Args:    "[table...]",
			Flags:   timeoutFlag,
			Detail: []string{
				"Waits until every initializer of the given tables (of all tables,",
				"without arguments) is done, or fails after the timeout naming the",
				"initializers still pending.",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			timeout, err := s.Flags.GetDuration("timeout")
			if err != nil {
				return nil, err
			}
			var tables []strata.AnyTable
			if len(args) == 0 {
				for _, m := range db.Tables() {
					tables = append(tables, strata.AnyTable{Meta: m})
				}
			}
			for _, name := range args {
				t, err := lookupTable(db, name)
				if err != nil {
					return nil, err
				}
				tables = append(tables, t)
			}
			deadline := time.NewTimer(timeout)
			defer deadline.Stop()
			for _, t := range tables {
				ok, ch := t.Initialized(db.ReadTxn())
				if ok {
					continue
				}
				select {
				case <-ch:
				case <-deadline.C:
					return nil, fmt.Errorf("table %q not initialized after %s: pending %v",
						t.Name(), timeout, t.PendingInitializers(db.ReadTxn()))
				case <-s.Context().Done():
					return nil, s.Context().Err()
				}
			}
			return nil, nil
		},
	)
}

func dumpCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Dump tables as JSON",
			Args:    "[table...]",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringP("out", "o", "", "Write to this file instead of stdout")
			},
			Detail: []string{
				"Writes the given tables (all, without arguments) as one JSON object",
				"mapping each table's name to its objects (strata.WriteJSON).",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			file, err := s.Flags.GetString("out")
			if err != nil {
				return nil, err
			}
			for _, name := range args {
				if _, err := lookupTable(db, name); err != nil {
					return nil, err
				}
			}
			txn := db.ReadTxn()
			out, err := output{file: file}.write(s, func(w io.Writer) error {
				return strata.WriteJSON(w, txn, args...)
			})
			if err != nil {
				return nil, err
			}
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}
