package stratacli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/remote"
)

// Remote is what the online commands (--addr) need of a running database,
// through its HTTP API: its tables, the objects of a query, and a table's
// changes. A Dialer connects to one.
//
// Errors: a database that cannot be reached wraps ErrConnect; an unknown
// table wraps strata.ErrTableNotFound, an unknown index
// strata.ErrIndexNotFound, a key that does not parse index.ErrParseKey, as
// the API reports them.
type Remote interface {
	// Tables describes the database's tables.
	Tables(ctx context.Context) (RemoteDatabase, error)
	// Query returns the objects q selects in the table, in the order of
	// the index's keys.
	Query(ctx context.Context, table string, q RemoteQuery) iter.Seq2[RemoteObject, error]
	// Changes returns the table's changes after revision from: with from
	// 0, the objects the table holds first, then every change as it is
	// committed, until ctx is done.
	Changes(ctx context.Context, table string, from uint64) iter.Seq2[RemoteChange, error]
	// Close releases the connection.
	Close() error
}

// Dialer connects to the database at addr: "http://host:port",
// "https://host:port" or "unix:///path/to/socket". ctx is that of the
// command, and may end before the Remote is closed: a Dialer must not
// tie the Remote's life to it.
type Dialer func(ctx context.Context, addr string) (Remote, error)

// WithRemote sets how the online commands connect to a running database:
// HTTPDialer() by default.
func WithRemote(d Dialer) Option {
	return func(c *config) { c.dial = d }
}

// RemoteDatabase describes a running database.
type RemoteDatabase struct {
	Tables []RemoteTable `json:"tables"`
}

// RemoteTable describes a table of a running database.
type RemoteTable struct {
	Name                string        `json:"name"`
	Objects             int           `json:"objects"`
	Revision            uint64        `json:"revision"`
	Indexes             []RemoteIndex `json:"indexes"`
	Initialized         bool          `json:"initialized"`
	PendingInitializers []string      `json:"pending_initializers,omitempty"`
}

// RemoteIndex describes an index of a remote table.
type RemoteIndex struct {
	Name    string `json:"name"`
	Primary bool   `json:"primary,omitempty"`
	Unique  bool   `json:"unique,omitempty"`
}

// RemoteQuery selects objects of a remote table: those of Index ("" is the
// primary index) that Op selects with Key (and To, for a range), after
// the cursor After if it is set, at most Limit (0: all). Keys are text,
// parsed by the index's FromString, unless Raw is set: then they are the
// raw bytes of the keys.
type RemoteQuery struct {
	Index   string
	Op      strata.QueryOp
	Key, To string
	Raw     bool
	Limit   int
	// After is a cursor, a RemoteObject's Next (the HTTP API's after=,
	// base64url): the result starts just after the object it was given
	// with.
	After string
}

// RemoteObject is an object of a remote table.
type RemoteObject struct {
	Revision uint64
	// Key is the object's primary key as text, if the API gives it.
	Key    string
	Object json.RawMessage
	// Next is set on the last object of a result that Limit cut short:
	// the cursor (RemoteQuery.After) of the objects after it.
	Next string
}

// row is o as the pager prints it: its key (if the API gave it), its
// revision and the object.
func (o RemoteObject) row() fields {
	row := fields{}
	if o.Key != "" {
		row = append(row, field{"key", o.Key})
	}
	return append(row, field{"revision", o.Revision}, field{"object", o.Object})
}

// RemoteChange is a change of a remote table: an object upserted, or
// deleted (then Object is the object as it was); or, with Relist set, a
// mark that the stream lists the table (again).
type RemoteChange struct {
	Revision uint64
	// Key is the object's primary key as text, if the API gives it.
	Key     string
	Deleted bool
	Object  json.RawMessage
	// Relist marks the start of a listing of the table: the upserts that
	// follow (up to the live changes) are the objects it holds, and an
	// object shown before that is not among them was deleted meanwhile.
	// A stream from revision 0 starts with one; a stream that could not
	// resume where it broke off (the server's recent changes moved on, or
	// it restarted) lists again after another. Only Relist is set.
	Relist bool
}

// dial connects to addr, with the command's logger in the context for
// the Dialer (HTTPDialer logs a watch's reconnects with it).
func (a *app) dial(ctx context.Context, addr string) (Remote, error) {
	if _, unix := remote.SocketPath(addr); !unix && !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
		return nil, usagef("--addr %q: want http://host:port, https://host:port, or a unix socket: unix:/path, unix:///path or unix:relative/path", addr)
	}
	return a.cfg.dial(context.WithValue(ctx, loggerKey{}, a.infoLogger()), addr)
}

// remoteQuery turns the query flags into a RemoteQuery.
func (q *queryFlags) remoteQuery() (RemoteQuery, error) {
	if q.by != "" {
		return RemoteQuery{}, usagef("--by reads the fields of stored objects (--dir, --file); query a running database's indexes with --index")
	}
	// Keys of a kind (--key-format uint64, …) are encoded here and sent
	// raw, as hex keys are.
	parse := keyParser(q.keyFormat, q.keySep)
	rq := RemoteQuery{Index: q.index, Op: q.op(), Limit: q.limit, Raw: parse != nil, After: q.after}
	switch rq.Op {
	case strata.QueryList:
		rq.Key = q.get
	case strata.QueryPrefix:
		rq.Key = q.prefix
	case strata.QueryLowerBound:
		rq.Key = q.lowerbound
	case strata.QueryRange:
		rq.Key, rq.To = q.from, q.to
		switch {
		case !q.hasTo:
			rq.Op = strata.QueryLowerBound
		case !q.hasFrom && !rq.Raw:
			// The API's ranges have both ends, and "" is no key of most
			// indexes.
			return rq, usagef("--to without --from: a running database's range needs both (or keys in hex: --key-format hex, where --from is the empty key)")
		}
	}
	if rq.Raw {
		for _, k := range []*string{&rq.Key, &rq.To} {
			if *k == "" && q.keyFormat != keyFormatHex {
				continue // not given: the empty key
			}
			b, err := parse(*k)
			if err != nil {
				if q.keyFormat != keyFormatHex {
					err = fmt.Errorf("key %q as %s: %w", *k, q.keyFormat, err)
				}
				return rq, err
			}
			*k = string(b)
		}
	}
	return rq, nil
}

func (a *app) dumpRemote(ctx context.Context, addr, table string, q *queryFlags, p *pager) error {
	rq, err := q.remoteQuery()
	if err != nil {
		return err
	}
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer rm.Close()
	for o, err := range rm.Query(ctx, table, rq) {
		if err != nil {
			return err
		}
		if more, err := p.emit(o.row(), nil); err != nil || !more {
			return err
		}
		if o.Next != "" {
			p.next = o.Next
		}
	}
	return nil
}

func (a *app) watchCommand() *cobra.Command {
	var from uint64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "watch TABLE",
		Short: "Follow a running database's table as it changes (--addr)",
		Long: `Show the objects of TABLE in a running database (--addr), then every change
as it is committed, until interrupted or --timeout: upserts, and deletes
(struck through in a terminal, DELETED true otherwise; "deleted": true in
JSON). --from R starts after revision R instead of with the current
objects.

A watch outlives a dropped connection: it reconnects and resumes after
the last change it showed (saying so on stderr). When the server cannot
resume there (it restarted, or its recent changes moved on), the watch
lists the table again, and says so on stderr: an object shown before that
is not listed again was deleted meanwhile.`,
		Args: exactArgs("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, addr, err := a.source("")
			if err != nil {
				return err
			}
			if kind != sourceRemote {
				return usagef("watch follows a running database: give --addr")
			}
			if timeout < 0 {
				return usagef("--timeout %v: want 0 or more", timeout)
			}
			return a.watch(cmd.Context(), addr, args[0], from, timeout)
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 0, "start after `revision` R (0: the current objects first)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop after `duration` d, with exit code 0 (0: when interrupted)")
	return cmd
}

func (a *app) watch(ctx context.Context, addr, table string, from uint64, timeout time.Duration) (err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer rm.Close()
	out := a.streamRows()
	// The end of the output (JSON's closing bracket) is written by close:
	// a watch whose last write fails must not exit 0.
	defer func() {
		if cerr := out.close(); err == nil {
			err = cerr
		}
	}()
	listings := 0
	last := from // the newest revision shown
	for c, err := range rm.Changes(ctx, table, from) {
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of a watch
			}
			return err
		}
		if c.Relist {
			// The first listing of a watch from 0 is what it asked for.
			if listings > 0 || from > 0 {
				a.logf("watch: the server cannot resume the changes of table %s after revision %d (it restarted, or its recent changes moved on): listing the table again; an object shown before that is not listed again was deleted", table, last)
			}
			listings++
			continue
		}
		last = max(last, c.Revision)
		row := fields{}
		if c.Key != "" {
			row = append(row, field{"key", c.Key})
		}
		row = append(row, field{"revision", c.Revision}, field{"deleted", c.Deleted}, field{"object", c.Object})
		if err := out.write(row); err != nil {
			return err
		}
		// A stream: each row as it comes.
		if err := out.flush(); err != nil {
			return err
		}
	}
	return nil
}

// tablesRemote writes the tables of a running database.
func (a *app) tablesRemote(ctx context.Context, addr string) error {
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer rm.Close()
	db, err := rm.Tables(ctx)
	if err != nil {
		return err
	}
	// An array of tables, as offline.
	if db.Tables == nil {
		db.Tables = []RemoteTable{}
	}
	return writeDoc(a.out, a.format, db.Tables, func(w io.Writer) error {
		fmt.Fprintln(w, "TABLE\tOBJECTS\tREVISION\tINITIALIZED\tINDEXES")
		for _, t := range db.Tables {
			var names []string
			for _, ix := range t.Indexes {
				names = append(names, ix.Name)
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%v\t%s\n", t.Name, t.Objects, t.Revision, t.Initialized, strings.Join(names, ","))
		}
		return nil
	})
}
