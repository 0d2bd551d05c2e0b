package httpapi

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/columns"
	"github.com/strata-db/strata/internal/wirejson"
)

// The inspector's table page (GET /ui/table): one page of a query's
// objects as a table of their fields, with each object's JSON in a row
// below its own that the script shows on a click; a filter form that
// reads any index by exact key, prefix, lower bound or range, with keys
// typed as text and parsed as the API parses them (parseRead, so
// AnyTable.ParseKey: the index's FromString or its key type's default);
// and the number of objects the filter matches, counted as
// /v1/tables/{table}/count counts (AnyTable.Count), or "cannot count"
// where the index cannot (strata.ErrCannotCount). A filter the API
// refuses shows the form again with the API's problem (its error value's
// name and message) in place of the rows, served with the problem's
// status.
//
// The columns, after the key and the revision, are the objects' own when
// their type implements strata.TableWritable (statedb's convention, which
// the db/... script commands follow too): TableHeader's names, and each
// object's TableRow. Otherwise they follow package columns, the rule of
// the strata command's table output: the members of the objects' JSON,
// in the order they first appear on the page (the CLI takes the first
// row's; a page takes every row's, so that a field one object leaves out
// still has its column); a value that is no JSON object is one column,
// "object". Live mode keeps to the same columns: the change stream's
// events carry a TableWritable object's row (Event.Row). Pages are read with the API's cursors,
// so a page costs the same in a table of 100 objects or 10 million.

// defaultPageRows is the number of rows of a table page without limit=.
const defaultPageRows = 100

// maxPageRows is the most rows limit= may ask for.
const maxPageRows = 10000

type tablePage struct {
	Title string
	Info  TableInfo
	// The query, as the form holds it.
	Index, Op, Key, To string
	Raw                bool
	Limit              int
	// Revision is the table's revision in the snapshot shown.
	Revision strata.Revision
	// Columns are the columns after the key and the revision; each row
	// has a cell for each. TableWritable: they are the objects'
	// TableHeader, and the cells their TableRow.
	Columns       []string
	TableWritable bool
	Rows          []row
	// Next is the link to the next page ("" on the last).
	Next template.URL
	// First is the link to the first page, if this is not it.
	First template.URL
	// Live: the rows follow the change stream (the view's whole table:
	// new objects are shown too).
	AllObjects bool
	// Problem, if not nil, is why the query cannot be read: the page
	// shows it in place of the rows.
	Problem *Problem
	// Count is the number of objects the query matches, unless
	// CountProblem says why the index cannot count them.
	Count        int
	CountProblem *Problem
	// CountQuery is the query string of the count endpoint for the
	// query, from which live mode refreshes Count.
	CountQuery string
}

// uiOp is a query op of the filter form: its value (the op= of the
// page's URL) and how the form names it.
type uiOp struct{ Value, Label string }

var uiOps = []uiOp{
	{"all", "every object"},
	{"key", "exact"},
	{"prefix", "prefix"},
	{"lowerbound", "at least"},
	{"range", "range from–to"},
}

func (u *ui) table(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := u.h.db.AnyTable(vals.Get("table"))
	if err != nil {
		return u.renderError(w, err)
	}
	// Live mode streams the changes from the revision of the page: start
	// the table's ring (if it is not running) before the page's snapshot
	// is taken, so that the ring covers it for RingRetention.
	if hb, err := u.h.attach(t); err == nil {
		u.h.detach(hb)
	}
	txn := u.h.db.ReadTxn()
	p := tablePage{
		Title:    t.Name(),
		Info:     tableInfo(txn, t),
		Index:    vals.Get("index"),
		Op:       vals.Get("op"),
		Key:      vals.Get("key"),
		To:       vals.Get("to"),
		Limit:    defaultPageRows,
		Revision: t.Revision(txn),
	}
	if p.Op == "" {
		p.Op = "all"
	}
	p.Raw, _ = strconv.ParseBool(vals.Get("raw"))
	status := http.StatusOK
	if err := u.readPage(&p, t, txn, vals); err != nil {
		prob := ProblemOf(err)
		p.Problem, p.Rows, p.Columns, p.Next = &prob, nil, nil, ""
		status = prob.Status
	}
	return u.render(w, status, "table", p)
}

// readPage reads the page of t that vals asks for into p: its rows and
// columns, the links to the first and next pages, and the count.
func (u *ui) readPage(p *tablePage, t strata.AnyTable, txn strata.ReadTxn, vals url.Values) error {
	if s := vals.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > maxPageRows {
			return fmt.Errorf("%w: limit=%q: want 1 to %d", ErrBadRequest, s, maxPageRows)
		}
		p.Limit = n
	}
	// The form's query, in the API's terms.
	api := url.Values{}
	if p.Index != "" {
		api.Set("index", p.Index)
	}
	switch p.Op {
	case "all":
	case "key", "prefix", "lowerbound":
		api.Set(p.Op, p.Key)
	case "range":
		api.Set("from", p.Key)
		api.Set("to", p.To)
	default:
		values := make([]string, len(uiOps))
		for i, op := range uiOps {
			values[i] = op.Value
		}
		return fmt.Errorf("%w: op=%q: want one of %v", ErrBadRequest, p.Op, values)
	}
	if p.Raw {
		api.Set("raw", "1")
	}
	p.CountQuery = api.Encode()
	api.Set("limit", strconv.Itoa(p.Limit))
	if after := vals.Get("after"); after != "" {
		api.Set("after", after)
	}
	req, err := u.h.parseRead(api, t, false)
	if err != nil {
		return err
	}
	seq, err := t.Read(txn, req.q)
	if err != nil {
		return err
	}
	p.AllObjects = p.Op == "all"
	primary := isPrimary(t, req.q.Index)
	enc := wirejson.NewEncoder()
	var last []byte
	for o := range seq {
		if len(p.Rows) == p.Limit {
			next := cloneValues(vals)
			next.Set("after", encodeBase64(last))
			p.Next = template.URL("table?" + next.Encode())
			break
		}
		p.Rows = append(p.Rows, rowOf(t, primary, o, enc))
		last = o.Cursor
	}
	if vals.Has("after") {
		first := cloneValues(vals)
		first.Del("after")
		p.First = template.URL("table?" + first.Encode())
	}
	header := t.TableHeader()
	p.Columns, p.TableWritable = fillCells(p.Rows, header), header != nil

	count := req.q
	count.After = nil
	if p.Count, err = t.Count(txn, count); err != nil {
		if !errors.Is(err, strata.ErrCannotCount) {
			return err
		}
		prob := ProblemOf(err)
		p.CountProblem = &prob
	}
	return nil
}

// fillCells returns the columns of rows and sets each row's Cells: with a
// header (the objects' TableHeader), the header and each object's
// TableRow; without, the names of the objects' members in the order they
// first appear, and their values.
func fillCells(rows []row, header []string) []string {
	if header != nil {
		for i := range rows {
			rows[i].Cells = tableCells(rows[i].tableRow, len(header))
			rows[i].members, rows[i].tableRow = nil, nil
		}
		return slices.Clip(header)
	}
	var cols []string
	pos := map[string]int{}
	for _, r := range rows {
		for _, m := range r.members {
			if _, ok := pos[m.Name]; !ok {
				pos[m.Name] = len(cols)
				cols = append(cols, m.Name)
			}
		}
	}
	for i := range rows {
		cells := make([]string, len(cols))
		for _, m := range rows[i].members {
			cells[pos[m.Name]] = columns.Cell(m.Value)
		}
		rows[i].Cells, rows[i].members = cells, nil
	}
	return slices.Clip(cols)
}

// tableCells returns a TableRow as the cells of a row under a header of
// width columns: a row of another width (or none: TableRow panicked)
// shows as a note in the first cell, so that no cell sits under another
// column's name.
func tableCells(tableRow []string, width int) []string {
	if len(tableRow) == width {
		return tableRow
	}
	cells := make([]string, width)
	if width > 0 {
		cells[0] = fmt.Sprintf("(TableRow returned %d columns, want %d from TableHeader)", len(tableRow), width)
	}
	return cells
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}
