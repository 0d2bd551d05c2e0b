package stratahive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"

	"github.com/strata-db/strata"
)

// TableWritable is strata.TableWritable, statedb's interface of the same
// name: objects that implement it show as rows of columns in the db/*
// script commands, others as YAML or JSON.
type TableWritable = strata.TableWritable

// The formats of db/show and the query commands.
const (
	formatTable = "table"
	formatYAML  = "yaml"
	formatJSON  = "json"
)

// ErrNotTableWritable: the table format was asked of a table whose
// objects do not implement TableWritable.
var ErrNotTableWritable = errors.New("objects do not implement TableWritable (TableHeader, TableRow)")

// ErrBadInput: a script command's argument, flag or input file is not
// what it takes. The error says which and why.
var ErrBadInput = errors.New("bad input")

// tableHeader returns the header of t's objects, or ErrNotTableWritable.
func tableHeader(t strata.AnyTable) (header []string, err error) {
	typ := t.ObjectType()
	var zero reflect.Value
	if typ.Kind() == reflect.Pointer {
		zero = reflect.New(typ.Elem())
	} else {
		zero = reflect.New(typ).Elem()
	}
	w, ok := zero.Interface().(TableWritable)
	if !ok {
		return nil, fmt.Errorf("table %q: %v: %w", t.Name(), typ, ErrNotTableWritable)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("table %q: %v.TableHeader panicked: %v", t.Name(), typ, r)
		}
	}()
	return w.TableHeader(), nil
}

// tableRow returns obj's row, checked against the header's width.
func tableRow(t strata.AnyTable, obj any, width int) (row []string, err error) {
	w, ok := obj.(TableWritable)
	if !ok {
		return nil, fmt.Errorf("table %q: %T: %w", t.Name(), obj, ErrNotTableWritable)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("table %q: %T.TableRow panicked: %v", t.Name(), obj, r)
		}
	}()
	row = w.TableRow()
	if len(row) != width {
		return nil, fmt.Errorf("table %q: TableRow returned %d columns, want %d from TableHeader: %w", t.Name(), len(row), width, ErrBadInput)
	}
	return row, nil
}

// columnPicker selects columns of a header by name (case-insensitively).
type columnPicker struct {
	header []string
	pick   []int
}

func newColumnPicker(header, names []string) (columnPicker, error) {
	if len(names) == 0 {
		p := columnPicker{header: header, pick: make([]int, len(header))}
		for i := range header {
			p.pick[i] = i
		}
		return p, nil
	}
	p := columnPicker{header: names}
	for _, n := range names {
		i := indexFold(header, n)
		if i < 0 {
			return columnPicker{}, fmt.Errorf("%w: no column %q: the columns are %s", ErrBadInput, n, strings.Join(header, ", "))
		}
		p.pick = append(p.pick, i)
	}
	return p, nil
}

func indexFold(xs []string, s string) int {
	for i, x := range xs {
		if strings.EqualFold(x, s) {
			return i
		}
	}
	return -1
}

func (p columnPicker) take(row []string) []string {
	out := make([]string, len(p.pick))
	for i, j := range p.pick {
		out[i] = row[j]
	}
	return out
}

// newTabWriter aligns columns with at least three spaces between them.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

// writeObjects writes objs in the format (table, yaml or json), with the
// chosen columns for the table format.
func writeObjects(w io.Writer, t strata.AnyTable, objs iter.Seq2[any, strata.Revision], format string, columns []string) error {
	if len(columns) > 0 && format != formatTable {
		return fmt.Errorf("%w: --columns needs --format=table", ErrBadInput)
	}
	switch format {
	case formatTable:
		header, err := tableHeader(t)
		if err != nil {
			return err
		}
		cols, err := newColumnPicker(header, columns)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		tw := newTabWriter(&buf)
		fmt.Fprintln(tw, strings.Join(cols.header, "\t"))
		for obj := range objs {
			row, err := tableRow(t, obj, len(header))
			if err != nil {
				return err
			}
			fmt.Fprintln(tw, strings.Join(cols.take(row), "\t"))
		}
		tw.Flush()
		_, err = w.Write(trimLines(buf.Bytes()))
		return err
	case formatYAML:
		first := true
		for obj := range objs {
			out, err := yaml.Marshal(obj)
			if err != nil {
				return fmt.Errorf("table %q: encoding YAML: %w", t.Name(), err)
			}
			if !first {
				io.WriteString(w, "---\n")
			}
			first = false
			if _, err := w.Write(out); err != nil {
				return err
			}
		}
		return nil
	case formatJSON:
		for obj := range objs {
			out, err := json.MarshalIndent(obj, "", "  ")
			if err != nil {
				return fmt.Errorf("table %q: encoding JSON: %w", t.Name(), err)
			}
			if _, err := w.Write(append(out, '\n')); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown format %q: want table, yaml or json", ErrBadInput, format)
}

// defaultFormat is the table format for TableWritable objects, YAML for
// others.
func defaultFormat(t strata.AnyTable) string {
	if _, err := tableHeader(t); err != nil {
		return formatYAML
	}
	return formatTable
}

// trimLines removes the spaces the tab writer leaves at line ends.
func trimLines(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	return bytes.Join(lines, []byte("\n"))
}
