package stratahive

import (
	"fmt"
	"strconv"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

// countCmd is db/count: how many objects a query selects, counted in the
// tree (AnyTable.Count) without visiting them.
func countCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Count the objects of a table, of a key, a prefix or from a key on",
			Args:    "table [key]",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringP("index", "i", "", "Index to count in (default: the primary index)")
				fs.Bool("prefix", false, "Count the objects whose key starts with key")
				fs.Bool("lowerbound", false, "Count the objects whose key is key or above")
			},
			Detail: []string{
				"Prints how many objects db/list (with a key), db/prefix (--prefix) or",
				"db/lowerbound (--lowerbound) would show, or without a key how many the",
				"index holds, counted in O(key length) from the counts the tree keeps.",
				"An index where an object has several keys cannot count a prefix, a",
				"lower bound or the whole index (strata.ErrCannotCount).",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < 1 || len(args) > 2 {
				return nil, fmt.Errorf("%w: db/count takes a table and a key, or a table", ErrBadInput)
			}
			indexName, err := s.Flags.GetString("index")
			if err != nil {
				return nil, err
			}
			prefix, err := s.Flags.GetBool("prefix")
			if err != nil {
				return nil, err
			}
			lower, err := s.Flags.GetBool("lowerbound")
			if err != nil {
				return nil, err
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			q := strata.AnyQuery{Index: indexName, Op: strata.QueryAll}
			switch {
			case prefix && lower:
				return nil, fmt.Errorf("%w: db/count takes --prefix or --lowerbound, not both", ErrBadInput)
			case len(args) == 1 && (prefix || lower):
				return nil, fmt.Errorf("%w: db/count --prefix and --lowerbound take a key", ErrBadInput)
			case len(args) == 2:
				if q.Key, err = t.ParseKey(indexName, args[1]); err != nil {
					return nil, err
				}
				q.Op = strata.QueryList
				if prefix {
					q.Op = strata.QueryPrefix
				} else if lower {
					q.Op = strata.QueryLowerBound
				}
			}
			n, err := t.Count(db.ReadTxn(), q)
			if err != nil {
				return nil, err
			}
			out := strconv.Itoa(n) + "\n"
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}
