package durable

import (
	"fmt"
	"strings"

	"github.com/cilium/hive"
	"github.com/cilium/hive/script"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/stratahive"
)

func scriptCommands(db *strata.DB, s *Store) hive.ScriptCmdsOut {
	return hive.NewScriptCmds(map[string]script.Cmd{
		"db/snapshot": stratahive.ErrorsToStderr(snapshotCmd(db, s)),
		"db/restore":  stratahive.ErrorsToStderr(restoreCmd(s)),
	})
}

// bindingsOf returns the snapshot bindings of the named tables, of all
// without names.
func (s *Store) bindingsOf(names []string) ([]persist.TableBinding, error) {
	if len(names) == 0 {
		names = s.Tables()
	}
	var out []persist.TableBinding
	for _, n := range names {
		b, ok := s.Binding(n)
		if !ok {
			return nil, fmt.Errorf("table %q is not a durable or snapshot table (those are: %s): %w",
				n, strings.Join(s.Tables(), ", "), strata.ErrTableNotFound)
		}
		out = append(out, b)
	}
	return out, nil
}

func snapshotCmd(db *strata.DB, s *Store) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Write tables to a snapshot file",
			Args:    "file [table...]",
			Detail: []string{
				"Writes the given tables (all durable and snapshot tables, without",
				"names), as of one snapshot, to the file, replacing it atomically",
				"(persist.WriteSnapshotFile).",
			},
		},
		func(st *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("db/snapshot takes a file and tables")
			}
			bs, err := s.bindingsOf(args[1:])
			if err != nil {
				return nil, err
			}
			return nil, persist.WriteSnapshotFile(st.Path(args[0]), db.ReadTxn(), bs...)
		},
	)
}

func restoreCmd(s *Store) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Restore tables from a snapshot file",
			Args:    "file [table...]",
			Detail: []string{
				"Restores the given tables (all the file holds that are durable or",
				"snapshot tables here, without names) from the snapshot file, in one",
				"transaction, after verifying the file: or changes nothing. The",
				"tables must be empty. Durable tables are written to the store too.",
			},
		},
		func(st *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("db/restore takes a file and tables")
			}
			names := args[1:]
			if len(names) == 0 {
				// The tables the file holds that are known here.
				info, err := persist.ReadSnapshotFile(st.Path(args[0]))
				if err != nil {
					return nil, err
				}
				for _, t := range info.Tables {
					if _, ok := s.Binding(t.Name); ok {
						names = append(names, t.Name)
					}
				}
			}
			bs, err := s.bindingsOf(names)
			if err != nil {
				return nil, err
			}
			info, err := persist.ReadSnapshotFile(st.Path(args[0]), bs...)
			if err != nil {
				return nil, err
			}
			out := fmt.Sprintf("restored %d objects of %d tables\n", restoredObjects(info), len(bs))
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}

func restoredObjects(info persist.SnapshotInfo) uint64 {
	var n uint64
	for _, t := range info.Tables {
		if t.Restored {
			n += t.Objects
		}
	}
	return n
}
