package stratahive

import (
	"fmt"
	"io"
	"iter"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

// queryOp is the query a query command runs.
type queryOp int

const (
	queryGet queryOp = iota
	queryList
	queryPrefix
	queryLowerBound
)

var queryUsage = [...]struct{ name, summary, detail string }{
	queryGet:        {"db/get", "Show the first object with a key", "Shows the first object whose key in the index is key."},
	queryList:       {"db/list", "Show the objects with a key", "Shows every object whose key in the index is key."},
	queryPrefix:     {"db/prefix", "Show the objects whose key starts with a prefix", "Shows every object whose key in the index starts with key."},
	queryLowerBound: {"db/lowerbound", "Show the objects from a key on", "Shows every object whose key in the index is key or above, in key order."},
}

func queryCmd(db *strata.DB, op queryOp) script.Cmd {
	u := queryUsage[op]
	return script.Command(
		script.CmdUsage{
			Summary: u.summary,
			Args:    "table key",
			Flags: func(fs *pflag.FlagSet) {
				outputFlags(fs)
				fs.StringP("index", "i", "", "Index to query (default: the primary index)")
				fs.Bool("delete", false, "Delete the objects shown, in one transaction")
			},
			Detail: []string{
				u.detail,
				"The key is typed as text and parsed by the index's FromString (or",
				"the default of its key type): a number, a string, an address...",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("%w: %s takes a table and a key", ErrBadInput, u.name)
			}
			o, err := outputOf(s)
			if err != nil {
				return nil, err
			}
			indexName, err := s.Flags.GetString("index")
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
			objs, err := runQuery(t, db.ReadTxn(), op, indexName, args[1])
			if err != nil {
				return nil, err
			}
			return showObjects(s, db, t, objs, o, del)
		},
	)
}

func runQuery(t strata.AnyTable, txn strata.ReadTxn, op queryOp, indexName, key string) (iter.Seq2[any, strata.Revision], error) {
	switch op {
	case queryGet:
		obj, rev, found, err := t.Get(txn, indexName, key)
		if err != nil {
			return nil, err
		}
		return func(yield func(any, strata.Revision) bool) {
			if found {
				yield(obj, rev)
			}
		}, nil
	case queryList:
		return t.List(txn, indexName, key)
	case queryPrefix:
		return t.Prefix(txn, indexName, key)
	default:
		return t.LowerBound(txn, indexName, key)
	}
}

// deleteAll deletes objs in one transaction, or none of them.
// showObjects writes objs as o says (in t's default format unless o
// names one) and, with del, deletes them in one transaction and logs how
// many: the end of db/get, db/list, ... and of db/and, db/in, db/or.
func showObjects(s *script.State, db *strata.DB, t strata.AnyTable, objs iter.Seq2[any, strata.Revision], o output, del bool) (script.WaitFunc, error) {
	if o.format == "" {
		o.format = defaultFormat(t)
	}
	out, err := o.write(s, func(w io.Writer) error {
		return writeObjects(w, t, objs, o.format, o.columns)
	})
	if err != nil {
		return nil, err
	}
	if del {
		n, err := deleteAll(db, t, objs)
		if err != nil {
			return nil, err
		}
		s.Logf("deleted %d objects\n", n)
	}
	return func(*script.State) (string, string, error) { return out, "", nil }, nil
}

func deleteAll(db *strata.DB, t strata.AnyTable, objs iter.Seq2[any, strata.Revision]) (int, error) {
	wtxn := db.WriteTxn(t.Meta)
	defer wtxn.Abort()
	n := 0
	for obj := range objs {
		_, had, err := t.Delete(wtxn, obj)
		if err != nil {
			return 0, err
		}
		if had {
			n++
		}
	}
	if _, err := wtxn.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}
