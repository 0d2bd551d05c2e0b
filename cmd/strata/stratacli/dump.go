package stratacli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// queryFlags are the flags that select objects: one index, one op and its
// keys, a limit, a cursor. They are the HTTP API's query parameters.
type queryFlags struct {
	index                   string
	get, prefix, lowerbound string
	from, to                string
	keyFormat, keySep       string
	// by is --by FIELD:KIND[,…]: the query is on keys computed from the
	// fields of a JSON table of unknown type (fieldquery.go).
	by                          string
	limit                       int
	hasGet, hasPrefix, hasLower bool
	hasFrom, hasTo              bool
	// after is --after, a cursor in base64url (the API's after=), and
	// afterKey the index position it names; nil without --after.
	after    string
	afterKey []byte
}

func (q *queryFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&q.index, "index", "", "the `index` to query (the primary index by default)")
	f.StringVar(&q.get, "get", "", "the objects whose key is `KEY`")
	f.StringVar(&q.prefix, "prefix", "", "the objects whose key starts with `KEY`")
	f.StringVar(&q.lowerbound, "lowerbound", "", "the objects whose key is at least `KEY`")
	f.StringVar(&q.from, "from", "", "a range's first key (included)")
	f.StringVar(&q.to, "to", "", "a range's end key (excluded)")
	f.StringVar(&q.keyFormat, "key-format", keyFormatText, keyFormatHelp)
	f.StringVar(&q.keySep, "key-sep", "/", "the separator of a composite key's parts (--key-format KIND,KIND)")
	f.StringVar(&q.by, "by", "", "`FIELD:KIND[,FIELD:KIND]`: query the keys of these fields of a JSON table of unknown type (offline), for want of its secondary indexes")
	f.IntVar(&q.limit, "limit", 0, "show at most `N` objects (0: all); if more follow, stderr gives the next page's --after")
	f.StringVar(&q.after, "after", "", "start just after the object of `CURSOR`, a page's next cursor (the HTTP API's after=)")
}

// read records which flags were given.
func (q *queryFlags) read(cmd *cobra.Command) error {
	f := cmd.Flags()
	q.hasGet, q.hasPrefix, q.hasLower = f.Changed("get"), f.Changed("prefix"), f.Changed("lowerbound")
	q.hasFrom, q.hasTo = f.Changed("from"), f.Changed("to")
	n := 0
	for _, b := range []bool{q.hasGet, q.hasPrefix, q.hasLower, q.hasFrom || q.hasTo} {
		if b {
			n++
		}
	}
	switch {
	case n > 1:
		return usagef("give one of --get, --prefix, --lowerbound and --from/--to")
	case q.limit < 0:
		return usagef("--limit %d: want 0 or more", q.limit)
	}
	if err := checkKeyFormat(q.keyFormat, q.keySep); err != nil {
		return err
	}
	if q.by != "" {
		switch {
		case q.index != "":
			return usagef("give --index or --by, not both")
		case f.Changed("after"):
			return usagef("--by has no cursors: --after cannot go on from a page of it")
		}
	}
	if f.Changed("after") {
		k, err := decodeCursor(q.after)
		if err != nil {
			return usagef("--after %q: not a cursor (base64url, as a page gives it): %v", q.after, err)
		}
		q.afterKey = k
	}
	return nil
}

// decodeCursor decodes a cursor: base64url, with or without padding,
// and not empty.
func decodeCursor(s string) ([]byte, error) {
	k, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err == nil && len(k) == 0 {
		err = errors.New("empty")
	}
	return k, err
}

// encodeCursor encodes a cursor as the HTTP API does.
func encodeCursor(k []byte) string { return base64.RawURLEncoding.EncodeToString(k) }

// op returns the query's op.
func (q *queryFlags) op() strata.QueryOp {
	switch {
	case q.hasGet:
		return strata.QueryList
	case q.hasPrefix:
		return strata.QueryPrefix
	case q.hasLower:
		return strata.QueryLowerBound
	case q.hasFrom || q.hasTo:
		return strata.QueryRange
	}
	return strata.QueryAll
}

// anyQuery returns the query on the table of v, its keys parsed.
func (q *queryFlags) anyQuery(v *view) (strata.AnyQuery, error) {
	aq := strata.AnyQuery{Index: q.index, Op: q.op(), After: q.afterKey}
	parse := func(has bool, text string) (index.Key, error) {
		if !has {
			return nil, nil
		}
		return v.parseKey(q.index, text, q.keyFormat, q.keySep)
	}
	var err error
	switch aq.Op {
	case strata.QueryList:
		aq.Key, err = parse(true, q.get)
	case strata.QueryPrefix:
		aq.Key, err = parse(true, q.prefix)
	case strata.QueryLowerBound:
		aq.Key, err = parse(true, q.lowerbound)
	case strata.QueryRange:
		if aq.Key, err = parse(q.hasFrom, q.from); err == nil {
			aq.To, err = parse(q.hasTo, q.to)
			if !q.hasTo {
				// No end: a lower bound.
				aq.Op = strata.QueryLowerBound
			}
		}
	}
	return aq, err
}

// primary reports whether the query is on the table's primary index.
func (q *queryFlags) primary(v *view) bool {
	if q.index == "" {
		return true
	}
	if v.typed != nil {
		idx := v.typed.anyTable().Indexes()
		return idx[0].Name == q.index
	}
	return false
}

// bounds returns the key range of a query on the primary index: [lower,
// upper), nil for no bound.
func bounds(aq strata.AnyQuery) (lower, upper []byte) {
	switch aq.Op {
	case strata.QueryList:
		return aq.Key, append(bytes.Clone(aq.Key), 0)
	case strata.QueryPrefix:
		return aq.Key, prefixEnd(aq.Key)
	case strata.QueryLowerBound:
		return aq.Key, nil
	case strata.QueryRange:
		if aq.Key == nil {
			aq.Key = []byte{}
		}
		return aq.Key, aq.To
	}
	return nil, nil
}

// afterBounds narrows the key range [lower, upper) of a query on the
// primary index to the keys after the cursor after (a primary key), if it
// is not nil. empty reports that no key is left.
func afterBounds(lower, upper, after []byte) (l, u []byte, empty bool) {
	if after == nil {
		return lower, upper, false
	}
	// The first key after it: primary keys are unique.
	if start := append(bytes.Clone(after), 0); lower == nil || bytes.Compare(start, lower) > 0 {
		lower = start
	}
	return lower, upper, upper != nil && bytes.Compare(lower, upper) >= 0
}

// prefixEnd returns the first key after every key that starts with p, nil
// if there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (a *app) dumpCommand() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "dump TABLE",
		Short: "Show a table's objects, or those a query selects",
		Long: `Show the objects of TABLE, in the order of the index's keys, or those that
--get, --prefix, --lowerbound or --from/--to select in --index.

Keys are typed as text and parsed by the index when the table's type is
registered. A store records no key kinds: for a table of unknown type, say
the key's kind with --key-format (string, int64, uint32, addr, prefix,
time, …; "string,uint32" for a composite whose parts --key-sep joins), or
give its bytes in hex (--key-format hex). Such a table is queried on its
primary index only: secondary indexes are not stored, but computed by the
application's index functions. Of such a table stored as JSON, --by
FIELD:KIND queries keys the command computes from the objects' fields as
it reads them (each element's, for an array; FIELD:KIND,FIELD:KIND for a
composite), in a store or a snapshot; the query's keys are then of those
kinds. A snapshot records no keys: a table of unknown type in a snapshot
is otherwise only listed whole.

With --limit N, when more objects follow, the last line on stderr gives
the cursor of the next page: run the same dump with --after CURSOR. Each
page is read from the source as it is then. Cursors are those of the
HTTP API, and the same online and offline. A snapshot records no keys: a
table of unknown type in a snapshot has no cursors.

A dump of a snapshot verifies the blocks it reads and stops after its
table; snapshot verify checks the whole file.`,
		Args: exactArgs("TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := q.read(cmd); err != nil {
				return err
			}
			return a.dump(cmd.Context(), args[0], &q, false)
		},
	}
	q.register(cmd)
	return cmd
}

func (a *app) getCommand() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "get TABLE KEY",
		Short: "Show the object whose key is KEY",
		Long: `Show the first object of TABLE whose key in --index (the primary index by
default) is KEY. Exits with 4 if there is none.`,
		Args: exactArgs("TABLE", "KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := q.read(cmd); err != nil {
				return err
			}
			q.get, q.hasGet, q.limit = args[1], true, 1
			q.hasPrefix, q.hasLower, q.hasFrom, q.hasTo = false, false, false, false
			return a.dump(cmd.Context(), args[0], &q, true)
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.index, "index", "", "the `index` of KEY (the primary index by default)")
	f.StringVar(&q.keyFormat, "key-format", keyFormatText, keyFormatHelp)
	f.StringVar(&q.keySep, "key-sep", "/", "the separator of a composite key's parts (--key-format KIND,KIND)")
	f.StringVar(&q.by, "by", "", "`FIELD:KIND[,FIELD:KIND]`: KEY is of these fields of a JSON table of unknown type (offline)")
	return cmd
}

// dump writes the objects of table that q selects. With one set, finding
// none is ErrNotFound.
func (a *app) dump(ctx context.Context, table string, q *queryFlags, one bool) error {
	kind, path, err := a.source("")
	if err != nil {
		return err
	}
	out := a.rows()
	p := newPager(ctx, out, q.limit)
	switch kind {
	case sourceStore:
		err = a.dumpStore(path, table, q, p)
	case sourceSnapshot:
		err = a.dumpSnapshot(path, table, q, p)
	default:
		err = a.dumpRemote(ctx, path, table, q, p)
	}
	if cerr := out.close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
	case one && p.n == 0:
		return notFoundf("table %s: no object with key %q", table, q.get)
	case !one && p.next != "":
		a.logf("next page: --after %s", p.next)
	}
	return err
}

// emitFunc writes a row, given with the cursor of its object (its
// position in the query's index, nil if not known), and says whether to
// go on.
type emitFunc func(row fields, cursor []byte) (bool, error)

// pager writes a dump's rows up to its limit and finds where the next
// page starts: it takes one row past the limit, and if one comes, the
// cursor of the last row written is the next page's.
type pager struct {
	ctx context.Context
	out rowWriter
	// records is out if it writes records' rows itself, or nil.
	records recordWriter
	limit   int // 0: none
	n       int // rows written
	// last is the cursor of the last row written (with a limit), copied:
	// a row's cursor is valid until the next; known: it was given.
	last  []byte
	known bool
	// next is the next page's cursor, encoded; "" if the result is
	// complete or its cursor is not known.
	next string
}

func newPager(ctx context.Context, out rowWriter, limit int) *pager {
	p := &pager{ctx: ctx, out: out, limit: limit}
	p.records, _ = out.(recordWriter)
	return p
}

func (p *pager) emit(row fields, cursor []byte) (bool, error) {
	if p.full() {
		return false, nil
	}
	if err := p.out.write(row); err != nil {
		return false, err
	}
	return p.wrote(cursor)
}

// emitRecord is emit of the row of rec, an object of the table of v,
// whose cursor is cursor, or the row's key (v.rowKey) if cursor is nil.
// For a view without a registered type, an output that writes records
// itself (JSON, JSON lines) writes it without making the row's fields.
func (p *pager) emitRecord(v *view, rec record, cursor []byte) (bool, error) {
	if p.records == nil || v.typed != nil {
		row, err := v.row(rec, false)
		if err != nil {
			return false, err
		}
		if cursor == nil {
			cursor = v.rowKey
		}
		return p.emit(row, cursor)
	}
	if p.full() {
		return false, nil
	}
	if err := p.records.writeRecord(v, rec, false); err != nil {
		return false, err
	}
	if cursor == nil {
		cursor = v.rowKey
	}
	return p.wrote(cursor)
}

// full reports whether the limit is reached: a row comes past it, so the
// last row's cursor is the next page's.
func (p *pager) full() bool {
	if p.limit > 0 && p.n == p.limit {
		if p.known {
			p.next = encodeCursor(p.last)
		}
		return true
	}
	return false
}

// wrote counts a row written, whose cursor is cursor, and says whether to
// go on.
func (p *pager) wrote(cursor []byte) (bool, error) {
	p.n++
	if p.limit > 0 {
		p.last, p.known = append(p.last[:0], cursor...), cursor != nil
	}
	if p.n%1024 == 0 && p.ctx.Err() != nil {
		return false, p.ctx.Err()
	}
	return true, nil
}

func (a *app) dumpStore(dir, table string, q *queryFlags, p *pager) error {
	r, err := a.openStore(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Table(table)
	if err != nil {
		return err
	}
	s, err := a.newSession()
	if err != nil {
		return err
	}
	v := s.view(st.Name, st.Schema, 0)
	if v.note != "" {
		a.logf("note: %s", v.note)
	}
	if q.by != "" {
		if err := byFieldUsable(v, q.by); err != nil {
			return err
		}
		return a.dumpByField(v, storeRecords(r, table), q, p)
	}
	a.setKeyKind(v, q.keyFormat, q.keySep)
	if !q.primary(v) && v.typed == nil {
		return secondaryError(table, q.index, "store")
	}
	aq, err := q.anyQuery(v)
	if err != nil {
		return err
	}
	if q.primary(v) {
		lower, upper := bounds(aq)
		lower, upper, empty := afterBounds(lower, upper, aq.After)
		if empty {
			return nil
		}
		for obj, err := range r.Objects(table, lower, upper) {
			if err != nil {
				return err
			}
			rec := record{key: obj.Key, revision: obj.Revision, version: obj.Version, value: obj.Value}
			if more, err := p.emitRecord(v, rec, obj.Key); err != nil || !more {
				return err
			}
		}
		return nil
	}
	if err := s.load(v, storeRecords(r, table), 0, st.Revision); err != nil {
		return err
	}
	return s.query(v, aq, p.emit)
}

// storeRecords returns the records of a table of r.
func storeRecords(r *persist.Reader, table string) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		for obj, err := range r.Objects(table, nil, nil) {
			if !yield(record{key: obj.Key, revision: obj.Revision, version: obj.Version, value: obj.Value}, err) || err != nil {
				return
			}
		}
	}
}

// load fills the registered table of v with records, decoded.
func (s *session) load(v *view, records iter.Seq2[record, error], version uint32, revision uint64) error {
	t := v.typed.anyTable()
	txn := s.db.WriteTxn(t.Meta)
	defer txn.Abort()
	if err := v.typed.restore(txn, records, version, revision); err != nil {
		return fmt.Errorf("loading table %s: %w", v.name, err)
	}
	_, err := txn.Commit()
	return err
}

// query writes the objects aq selects in the loaded table of v.
func (s *session) query(v *view, aq strata.AnyQuery, emit emitFunc) error {
	t := v.typed.anyTable()
	seq, err := t.Read(s.db.ReadTxn(), aq)
	if err != nil {
		return err
	}
	for o := range seq {
		row, err := v.objectRow(nil, o.Object, o.Revision)
		if err != nil {
			return err
		}
		if more, err := emit(row, o.Cursor); err != nil || !more {
			return err
		}
	}
	return nil
}

func (a *app) dumpSnapshot(path, table string, q *queryFlags, p *pager) error {
	f, sr, err := openSnapshot(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pos, info, err := snapshotTable(sr, table)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	s, err := a.newSession()
	if err != nil {
		return err
	}
	v := s.view(info.Name, snapshotSchema(info), info.CodecVersion)
	if v.note != "" {
		a.logf("note: %s", v.note)
	}
	if q.by != "" {
		if err := byFieldUsable(v, q.by); err != nil {
			return err
		}
		return a.dumpByField(v, snapshotRecords(sr, pos), q, p)
	}
	if v.typed == nil {
		switch {
		case !q.primary(v):
			return secondaryError(table, q.index, "snapshot")
		case q.op() != strata.QueryAll:
			return &wrapped{err: ErrIndexNotStored, msg: fmt.Sprintf("table %s: a query by key in a snapshot needs the table's type: "+
				"a snapshot records no keys, not even primary ones, which the application's index computes from the objects. "+
				"List the table whole (leave out --get, --prefix, --lowerbound, --from and --to), query a store or the running "+
				"application (--addr), or use an application's own command that registers the table (stratacli.WithTable)", table)}
		case q.afterKey != nil:
			return v.typeNeeded("--after in a snapshot (snapshots record no keys)")
		}
	}
	aq, err := q.anyQuery(v)
	if err != nil {
		return err
	}
	records := snapshotRecords(sr, pos)
	if aq.Op == strata.QueryAll && q.primary(v) && aq.After == nil {
		for sr.Next() {
			r := sr.Record()
			if r.Table < pos {
				continue
			}
			if r.Table > pos {
				return nil
			}
			more, err := p.emitRecord(v, record{revision: r.Revision, value: r.Value}, nil)
			if err != nil || !more {
				return err
			}
		}
		if err := sr.Err(); err != nil {
			return fmt.Errorf("snapshot %s: %w", path, err)
		}
		return nil
	}
	if err := s.load(v, records, info.CodecVersion, info.Revision); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return s.query(v, aq, p.emit)
}

// snapshotTable returns the position and description of table in the
// snapshot. The error wraps persist.ErrSnapshotTableMissing.
func snapshotTable(sr *persist.SnapshotReader, table string) (int, persist.SnapshotTableInfo, error) {
	for i, t := range sr.Tables() {
		if t.Name == table {
			return i, t, nil
		}
	}
	return 0, persist.SnapshotTableInfo{}, fmt.Errorf("table %q: %w", table, persist.ErrSnapshotTableMissing)
}

// snapshotSchema returns the schema of a snapshot's table, nil for a
// snapshot of format 1, which records none.
func snapshotSchema(t persist.SnapshotTableInfo) *persist.Schema {
	if t.Codec == "" && t.Type == "" {
		return &persist.Schema{Version: t.CodecVersion}
	}
	return &persist.Schema{Codec: t.Codec, Version: t.CodecVersion, Type: t.Type}
}

// snapshotRecords returns the records of the table at position pos,
// reading the tables before it (verifying their blocks) and stopping at
// its end. The reader's error, if any, ends it.
func snapshotRecords(sr *persist.SnapshotReader, pos int) iter.Seq2[record, error] {
	return func(yield func(record, error) bool) {
		for sr.Next() {
			r := sr.Record()
			if r.Table < pos {
				continue
			}
			if r.Table > pos {
				return
			}
			if !yield(record{revision: r.Revision, value: r.Value}, nil) {
				return
			}
		}
		if err := sr.Err(); err != nil {
			yield(record{}, err)
		}
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
