package stratacli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// RemoteCounter is a Remote that counts a query's objects on the server,
// as HTTPDialer's does (the HTTP API's /count, counted in the tree in
// O(key length)). The count command uses it when the Remote offers it, and
// counts the objects of Query otherwise.
type RemoteCounter interface {
	// Count returns how many objects q selects in the table (q's Limit
	// and After are not used), and the table's revision it counted at.
	Count(ctx context.Context, table string, q RemoteQuery) (n int, revision uint64, err error)
}

// Count asks the server's /count.
func (r *httpRemote) Count(ctx context.Context, table string, q RemoteQuery) (int, uint64, error) {
	res, err := r.c.Count(ctx, table, q.client())
	if err != nil {
		return 0, 0, r.fail(err)
	}
	return res.Count, uint64(res.Revision), nil
}

// countResult is what count prints with -o json or jsonl.
type countResult struct {
	Table string `json:"table"`
	Count int    `json:"count"`
	// Revision is the table's, online; offline it is left out.
	Revision uint64 `json:"revision,omitempty"`
	// Counted says how: "server" (the server counted in its tree) or
	// "read" (the command read every object the query selects).
	Counted string `json:"counted"`
}

func (a *app) countCommand() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "count TABLE",
		Short: "Count a table's objects, or those a query selects",
		Long: `Count the objects of TABLE, or those that --get, --prefix, --lowerbound or
--from/--to select in --index: the objects dump would show, each once.

Online (--addr), the server counts in its tree, in O(key length) however
many objects match (the HTTP API's /count); a prefix or range of an index
where an object has several keys cannot be counted so, and is refused
(index.ErrCannotCount). Offline, the command reads every object the query
selects from the store or the snapshot, as dump does.

The keys are typed as dump's are (--key-format, --key-sep, --by). Prints
the number, or with -o json a document of the table, the count, the
revision (online) and how it was counted.`,
		Args: exactArgs("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := q.read(cmd); err != nil {
				return err
			}
			if q.limit != 0 || q.after != "" {
				return usagef("count counts the whole result: --limit and --after are dump's")
			}
			return a.count(cmd.Context(), args[0], &q)
		},
	}
	q.register(cmd)
	return cmd
}

func (a *app) count(ctx context.Context, table string, q *queryFlags) error {
	kind, path, err := a.source("")
	if err != nil {
		return err
	}
	res := countResult{Table: table, Counted: "read"}
	switch kind {
	case sourceStore, sourceSnapshot:
		c := &rowCounter{}
		p := newPager(ctx, c, 0)
		if kind == sourceStore {
			err = a.dumpStore(path, table, q, p)
		} else {
			err = a.dumpSnapshot(path, table, q, p)
		}
		res.Count = c.n
	default:
		res, err = a.countRemote(ctx, path, table, q)
	}
	if err != nil {
		return err
	}
	switch a.format {
	case "json", "jsonl":
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.out, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintln(a.out, res.Count)
	return err
}

// countRemote counts on the server if the Remote can, and by reading the
// query's objects otherwise.
func (a *app) countRemote(ctx context.Context, addr, table string, q *queryFlags) (countResult, error) {
	res := countResult{Table: table}
	rq, err := q.remoteQuery()
	if err != nil {
		return res, err
	}
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return res, err
	}
	defer rm.Close()
	if c, ok := rm.(RemoteCounter); ok {
		res.Count, res.Revision, err = c.Count(ctx, table, rq)
		res.Counted = "server"
		return res, err
	}
	res.Counted = "read"
	for _, err := range rm.Query(ctx, table, rq) {
		if err != nil {
			return res, err
		}
		res.Count++
	}
	return res, nil
}

// rowCounter is a rowWriter that counts the rows and writes nothing.
type rowCounter struct{ n int }

func (c *rowCounter) write(fields) error { c.n++; return nil }
func (c *rowCounter) flush() error       { return nil }
func (c *rowCounter) close() error       { return nil }
