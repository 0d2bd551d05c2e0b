package stratahive

import (
	"fmt"
	"strings"
	"time"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

func watchCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Show the changes of a table as they happen",
			Args:    "table",
			Flags: func(fs *pflag.FlagSet) {
				fs.Int("count", 0, "Stop after this many changes (0: when the script or shell command ends)")
				fs.Duration("timeout", 0, "With --count, fail if the changes do not come within this time (0: no limit)")
			},
			Detail: []string{
				"Opens a change feed of the table and shows every object inserted,",
				"replaced or deleted, starting with the objects the table holds: a",
				"row per change (TableWritable objects; YAML otherwise), deletes",
				"marked (deleted). Each object shows once in its newest state: one",
				"changed several times (or inserted and deleted) between two reads",
				"of the feed shows once. The feed is opened when the command starts, so",
				"run in the background (db/watch --count=N table &) it sees every",
				"change made after it, and 'wait' shows them.",
			},
			Async:            true,
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("%w: db/watch takes one table", ErrBadInput)
			}
			count, err := s.Flags.GetInt("count")
			if err != nil {
				return nil, err
			}
			timeout, err := s.Flags.GetDuration("timeout")
			if err != nil {
				return nil, err
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			header, headerErr := tableHeader(t)
			wtxn := db.WriteTxn(t.Meta)
			feed, err := t.Changes(wtxn)
			if err != nil {
				wtxn.Abort()
				return nil, err
			}
			if _, err := wtxn.Commit(); err != nil {
				feed.Close()
				return nil, err
			}
			return func(s *script.State) (string, string, error) {
				defer feed.Close()
				var out strings.Builder
				emit := func(line string) {
					out.WriteString(line)
					s.Logf("%s", line)
				}
				if headerErr == nil {
					emit(strings.Join(header, "  ") + "\n")
				}
				var deadline <-chan time.Time
				if timeout > 0 {
					timer := time.NewTimer(timeout)
					defer timer.Stop()
					deadline = timer.C
				}
				seen := 0
				for {
					changes, watch := feed.Next(db.ReadTxn())
					for c := range changes {
						line, err := changeLine(t, header, headerErr == nil, c)
						if err != nil {
							return out.String(), "", err
						}
						emit(line)
						seen++
						if count > 0 && seen == count {
							return out.String(), "", nil
						}
					}
					select {
					case <-watch:
					case <-deadline:
						return out.String(), "", fmt.Errorf("db/watch %s: %d of %d changes after %s", t.Name(), seen, count, timeout)
					case <-s.Context().Done():
						if count > 0 {
							return out.String(), "", s.Context().Err()
						}
						return out.String(), "", nil
					}
				}
			}, nil
		},
	)
}

// changeLine renders one change: its row, or its YAML.
func changeLine(t strata.AnyTable, header []string, rows bool, c strata.Change[any]) (string, error) {
	mark := ""
	if c.Deleted {
		mark = " (deleted)"
	}
	if rows {
		row, err := tableRow(t, c.Object, len(header))
		if err != nil {
			return "", err
		}
		return strings.TrimRight(strings.Join(row, "  "), " ") + mark + "\n", nil
	}
	var b strings.Builder
	if err := writeObjects(&b, t, func(yield func(any, strata.Revision) bool) { yield(c.Object, c.Revision) }, formatYAML, nil); err != nil {
		return "", err
	}
	return "---" + mark + "\n" + b.String(), nil
}
