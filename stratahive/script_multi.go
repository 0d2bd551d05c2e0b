package stratahive

import (
	"fmt"
	"iter"
	"strings"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

// db/and, db/in and db/or: key queries of several indexes combined as
// strata.And, In and Or combine them (AnyTable.And, In and Or;
// docs/queries.md), shown as db/list shows objects.

// multiUsage describes the three commands.
var multiUsage = map[string]struct {
	summary, detail string
	read            func(strata.AnyTable, strata.ReadTxn, ...strata.AnyQuery) (iter.Seq[strata.AnyObject], error)
}{
	"db/and": {"Show the objects every index=key query selects",
		"Shows the objects every query selects, in primary-key order (strata.And).", strata.AnyTable.And},
	"db/in": {"Show the objects any of one index's keys selects",
		"Shows the objects any query selects, every query on one index, in the index's order (strata.In).", strata.AnyTable.In},
	"db/or": {"Show the objects any index=key query selects",
		"Shows the objects any query selects, on any indexes, in primary-key order (strata.Or).", strata.AnyTable.Or},
}

func multiCmd(db *strata.DB, name string) script.Cmd {
	u := multiUsage[name]
	return script.Command(
		script.CmdUsage{
			Summary: u.summary,
			Args:    "table index=key...",
			Flags: func(fs *pflag.FlagSet) {
				outputFlags(fs)
				fs.Bool("delete", false, "Delete the objects shown, in one transaction")
			},
			Detail: []string{
				u.detail,
				"Each query index=key selects the objects whose key in the index is",
				"key (db/list's); a query without '=' (or =key) is a key of the",
				"primary index. Each object shows once. The keys are typed as text",
				"and parsed by the index. No queries, an unknown index, an LPM index",
				"(db/in: queries of several indexes) fail, and nothing is written.",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < 1 {
				return nil, fmt.Errorf("%w: %s takes a table and index=key queries", ErrBadInput, name)
			}
			o, err := outputOf(s)
			if err != nil {
				return nil, err
			}
			del, err := s.Flags.GetBool("delete")
			if err != nil {
				return nil, err
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			qs := make([]strata.AnyQuery, len(args)-1)
			for i, arg := range args[1:] {
				ix, key, ok := strings.Cut(arg, "=") // index names have no '=' (strata.NamePattern)
				if !ok {
					ix, key = "", arg
				}
				qs[i] = strata.AnyQuery{Index: ix, Op: strata.QueryList}
				if qs[i].Key, err = t.ParseKey(ix, key); err != nil {
					return nil, err
				}
			}
			seq, err := u.read(t, db.ReadTxn(), qs...)
			if err != nil {
				return nil, err
			}
			objs := func(yield func(any, strata.Revision) bool) {
				for o := range seq {
					if !yield(o.Object, o.Revision) {
						return
					}
				}
			}
			return showObjects(s, db, t, objs, o, del)
		},
	)
}
