package stratacli

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/strata-db/strata/internal/columns"
	"go.yaml.in/yaml/v3"
)

// The output formats (--output).
const (
	formatTable = "table"
	formatJSON  = "json"
	formatJSONL = "jsonl"
	formatYAML  = "yaml"
)

var formats = []string{formatTable, formatJSON, formatJSONL, formatYAML}

// fields is a JSON object whose members keep their order: a row of output.
type fields []field

type field struct {
	name  string
	value any // string, a number, bool, json.RawMessage, fields, or anything encoding/json takes
}

// rowWriter writes a stream of rows in one format. close ends the stream
// (a JSON array's bracket, the table's last lines).
type rowWriter interface {
	write(row fields) error
	// flush writes out the rows written so far (a stream that must show
	// each row as it comes, as watch's).
	flush() error
	close() error
}

// newRowWriter returns a rowWriter of format to w. Table output takes its
// columns from the first row (expanding the members of an "object" field
// that is a JSON object), and cuts cells to maxCell runes unless maxCell
// is 0.
func newRowWriter(w io.Writer, format string, maxCell int, strike bool) rowWriter {
	if format == formatJSONL {
		return &jsonlRows{w: w, buf: make([]byte, 0, jsonlChunk+jsonlChunk/4)}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	switch format {
	case formatJSON:
		return &jsonRows{w: bw}
	case formatYAML:
		return &yamlRows{w: bw}
	}
	return &tableRows{w: bw, maxCell: maxCell, strike: strike}
}

// newStreamRowWriter is newRowWriter for rows shown as they come (watch):
// table output writes each row at once, each column as wide as its widest
// cell so far, instead of aligning blocks of rows it holds back.
func newStreamRowWriter(w io.Writer, format string, maxCell int, strike bool) rowWriter {
	rw := newRowWriter(w, format, maxCell, strike)
	if t, ok := rw.(*tableRows); ok {
		t.stream = true
	}
	return rw
}

// recordWriter is implemented by the rowWriters that write the row of a
// record of a view without a registered type without making its fields
// (view.appendRecordJSON): JSON and JSON lines.
type recordWriter interface {
	// writeRecord writes the row that v.row(rec, withTable) makes;
	// v.typed is nil.
	writeRecord(v *view, rec record, withTable bool) error
}

// jsonlRows appends its lines to buf and writes them to w in chunks of
// at least jsonlChunk bytes, or at a flush: a line is appended where it
// goes, not built and then copied into a bufio.Writer.
type jsonlRows struct {
	w   io.Writer
	buf []byte
}

// jsonlChunk is the least size of jsonlRows' writes but the last; buf
// has room for a quarter more, so that a line seldom grows it.
const jsonlChunk = 64 << 10

func (r *jsonlRows) write(row fields) error {
	n := len(r.buf)
	var err error
	if r.buf, err = row.appendJSON(r.buf); err != nil {
		r.buf = r.buf[:n]
		return err
	}
	return r.wrote()
}

func (r *jsonlRows) writeRecord(v *view, rec record, withTable bool) error {
	r.buf = v.appendRecordJSON(r.buf, rec, withTable)
	return r.wrote()
}

// wrote ends the line appended last and writes out a full chunk.
func (r *jsonlRows) wrote() error {
	r.buf = append(r.buf, '\n')
	if len(r.buf) < jsonlChunk {
		return nil
	}
	return r.writeOut()
}

// writeOut writes the lines in buf to w.
func (r *jsonlRows) writeOut() error {
	_, err := r.w.Write(r.buf)
	r.buf = r.buf[:0]
	return err
}

func (r *jsonlRows) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	return r.writeOut()
}

func (r *jsonlRows) close() error { return r.flush() }

type jsonRows struct {
	w   *bufio.Writer
	n   int
	buf []byte
}

func (r *jsonRows) write(row fields) error {
	var err error
	if r.buf, err = row.appendJSON(append(r.buf[:0], r.sep()...)); err != nil {
		return err
	}
	r.n++
	_, err = r.w.Write(r.buf)
	return err
}

func (r *jsonRows) writeRecord(v *view, rec record, withTable bool) error {
	r.buf = v.appendRecordJSON(append(r.buf[:0], r.sep()...), rec, withTable)
	r.n++
	_, err := r.w.Write(r.buf)
	return err
}

// sep returns what goes before the next row: the array's bracket or a
// comma.
func (r *jsonRows) sep() string {
	if r.n == 0 {
		return "[\n  "
	}
	return ",\n  "
}

func (r *jsonRows) flush() error { return r.w.Flush() }

func (r *jsonRows) close() error {
	if r.n == 0 {
		r.w.WriteString("[]\n")
	} else {
		r.w.WriteString("\n]\n")
	}
	return r.w.Flush()
}

type yamlRows struct {
	w *bufio.Writer
	n int
}

func (r *yamlRows) write(row fields) error {
	data, err := row.MarshalJSON()
	if err != nil {
		return err
	}
	out, err := yamlOf(data, true)
	if err != nil {
		return err
	}
	r.n++
	_, err = r.w.Write(out)
	return err
}

func (r *yamlRows) flush() error { return r.w.Flush() }

func (r *yamlRows) close() error {
	if r.n == 0 {
		r.w.WriteString("[]\n")
	}
	return r.w.Flush()
}

// yamlOf renders JSON data as YAML, keeping the order of object members
// (JSON is YAML: the decoder's node keeps it); as an item of a sequence if
// item is set.
func yamlOf(data []byte, item bool) ([]byte, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	plainStyle(&node)
	var v any = &node
	if item {
		v = []*yaml.Node{node.Content[0]}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("rendering YAML: %w", err)
	}
	enc.Close()
	return b.Bytes(), nil
}

// plainStyle drops the flow style and quoting that decoding JSON gives
// every node, so that the YAML reads as YAML. Strings that would read as
// another type stay quoted (the encoder sees to that).
func plainStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	for _, c := range n.Content {
		plainStyle(c)
	}
}

// tableRows writes rows as aligned columns, flushed every tableChunk rows
// so that memory does not grow with the output.
type tableRows struct {
	w       *bufio.Writer
	tw      *tabwriter.Writer
	columns []string
	maxCell int
	strike  bool
	n       int
	// stream: rows are padded to widths, the widest cell of each column
	// so far, and written at once, without tw.
	stream bool
	widths []int
}

const tableChunk = 256

func (r *tableRows) write(row fields) error {
	if r.stream {
		return r.writeStream(row)
	}
	if r.tw == nil {
		r.tw = tabwriter.NewWriter(r.w, 0, 0, 2, ' ', 0)
		r.columns = tableColumns(row)
		heads := make([]string, len(r.columns))
		for i, c := range r.columns {
			heads[i] = strings.ToUpper(c)
		}
		fmt.Fprintln(r.tw, strings.Join(heads, "\t"))
	}
	vals := rowValues(row)
	cells := make([]string, len(r.columns))
	for i, c := range r.columns {
		cells[i] = r.cell(vals[c])
	}
	line := strings.Join(cells, "\t")
	if r.strike && deleted(row) {
		// Struck through, in a terminal (the escape sequences take no
		// width in tabwriter: each cell is wrapped whole).
		for i := range cells {
			cells[i] = "\x1b[9m" + cells[i] + "\x1b[0m"
		}
		line = strings.Join(cells, "\t")
	}
	fmt.Fprintln(r.tw, line)
	r.n++
	if r.n%tableChunk == 0 {
		return r.tw.Flush()
	}
	return nil
}

// writeStream writes row padded to the columns' widths so far (the
// header with the first row).
func (r *tableRows) writeStream(row fields) error {
	if r.columns == nil {
		r.columns = tableColumns(row)
		r.widths = make([]int, len(r.columns))
		vals := rowValues(row)
		heads := make([]string, len(r.columns))
		for i, c := range r.columns {
			heads[i] = strings.ToUpper(c)
			r.widths[i] = max(utf8.RuneCountInString(heads[i]), utf8.RuneCountInString(r.cell(vals[c])))
		}
		r.writePadded(heads, false)
	}
	vals := rowValues(row)
	cells := make([]string, len(r.columns))
	for i, c := range r.columns {
		cells[i] = r.cell(vals[c])
	}
	r.writePadded(cells, r.strike && deleted(row))
	return nil
}

// writePadded writes one line of cells, each padded to its column's
// width (widened to fit it), two spaces apart; struck through if strike.
func (r *tableRows) writePadded(cells []string, strike bool) {
	for i, c := range cells {
		n := utf8.RuneCountInString(c)
		r.widths[i] = max(r.widths[i], n)
		if strike {
			// The escape sequences wrap the text, not the padding.
			c = "\x1b[9m" + c + "\x1b[0m"
		}
		r.w.WriteString(c)
		if i < len(cells)-1 {
			r.w.WriteString(strings.Repeat(" ", r.widths[i]-n+2))
		}
	}
	r.w.WriteByte('\n')
}

func (r *tableRows) flush() error {
	if r.tw != nil {
		if err := r.tw.Flush(); err != nil {
			return err
		}
	}
	return r.w.Flush()
}

func (r *tableRows) close() error {
	if r.tw != nil {
		if err := r.tw.Flush(); err != nil {
			return err
		}
	}
	return r.w.Flush()
}

// deleted reports whether a row is that of a deleted object (watch).
func deleted(row fields) bool {
	for _, f := range row {
		if f.name == "deleted" {
			b, _ := f.value.(bool)
			return b
		}
	}
	return false
}

// tableColumns returns the columns of rows like row: its fields, with the
// members of a field "object" that is a JSON object in its place (the
// rule of package columns, which the web inspector shares), or the
// object's TableHeader (tableObject).
func tableColumns(row fields) []string {
	var cols []string
	for _, f := range row {
		if to, ok := f.value.(tableObject); ok && f.name == "object" {
			cols = append(cols, to.header...)
			continue
		}
		if raw, ok := deref(f.value).(json.RawMessage); ok && f.name == "object" {
			if names := columns.Names(raw); names != nil {
				cols = append(cols, names...)
				continue
			}
		}
		cols = append(cols, f.name)
	}
	return cols
}

// rowValues returns the values of row's columns: its fields, and the
// members of its object if it is a JSON object, or its TableRow.
func rowValues(row fields) map[string]any {
	vals := make(map[string]any, len(row)+8)
	for _, f := range row {
		if to, ok := f.value.(tableObject); ok && f.name == "object" {
			for i, name := range to.header {
				vals[name] = to.row[i]
			}
			continue
		}
		value := deref(f.value)
		raw, ok := value.(json.RawMessage)
		if f.name != "object" || !ok {
			vals[f.name] = value
			continue
		}
		if members := columns.Members(raw); members != nil {
			for _, m := range members {
				vals[m.Name] = m.Value
			}
		} else {
			vals[f.name] = raw
		}
	}
	return vals
}

// cell renders a value for a table cell: strings bare, the rest as compact
// JSON, control characters escaped, cut to maxCell runes.
func (r *tableRows) cell(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s = x
	case hexBytes:
		s = hex.EncodeToString(x)
	case json.RawMessage:
		s = columns.Text(x)
	default:
		if b, err := appendJSONValue(nil, v); err == nil {
			s = string(b)
		} else {
			s = fmt.Sprint(v)
		}
	}
	s = columns.Printable(s)
	if r.maxCell > 0 && utf8.RuneCountInString(s) > r.maxCell {
		rs := []rune(s)
		s = string(rs[:r.maxCell-1]) + "…"
	}
	return s
}

// writeDoc writes v, a result that is one document (inspect, tables, a
// summary), in format to w: JSON, one JSON line, YAML, or, for table,
// what text writes.
func writeDoc(w io.Writer, format string, v any, text func(w io.Writer) error) error {
	switch format {
	case formatJSON, formatJSONL, formatYAML:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if format == formatJSON {
			enc.SetIndent("", "  ")
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
		out := b.Bytes()
		if format == formatYAML {
			var err error
			if out, err = yamlOf(out, false); err != nil {
				return err
			}
		}
		_, err := w.Write(out)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if err := text(tw); err != nil {
		return err
	}
	return tw.Flush()
}
