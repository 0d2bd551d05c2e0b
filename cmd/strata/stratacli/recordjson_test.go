package stratacli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/persist"
)

// TestRecordJSON: the rows that JSON and JSON lines write straight from
// a record (writeRecord) are, byte for byte, those of the generic path
// (view.row, then write): for JSON-codec and raw (hex) tables, with and
// without keys and the table's name, and names and values that need
// escaping or are missing.
func TestRecordJSON(t *testing.T) {
	names := []string{"hosts", "a\"b\\c\n\t\x01<&>\u2028\u2029é", "bad\xffutf8"}
	views := func(name string) []*view {
		return []*view{
			{name: name, stored: &persist.Schema{Codec: "json", Version: 1}, version: 1, json: true},
			{name: name, stored: &persist.Schema{Codec: "binary", Version: 3}, version: 3},
			{name: name, version: 0},
			// Keys shown as text of a kind (uint16): {0xff, 0} is
			// 65280, "a1" 24881, the empty key none ("").
			{name: name, stored: &persist.Schema{Codec: "json", Version: 1}, version: 1, json: true, keyKind: keyFormatter("uint16", "/")},
		}
	}
	records := []record{
		{revision: 1, value: []byte(`{"name":"a\"1\u2028","zone":"<eu>"}`)},
		{revision: 18446744073709551615, version: 7, value: []byte{0, 1, 0xfe, 0xff}},
		{key: []byte("a1"), revision: 2, value: []byte(`"x"`)},
		{key: []byte{}, revision: 3, version: 2, value: []byte(`[]`)},
		{key: []byte{0xff, 0}, revision: 0},
		{revision: 4, value: []byte{}},
	}
	for _, name := range names {
		for vi, v := range views(name) {
			for _, withTable := range []bool{false, true} {
				for _, format := range []string{formatJSONL, formatJSON} {
					var generic, direct bytes.Buffer
					gw := newRowWriter(&generic, format, 0, false)
					dw := newRowWriter(&direct, format, 0, false)
					rw, ok := dw.(recordWriter)
					if !ok {
						t.Fatalf("%s: no recordWriter", format)
					}
					for ri, rec := range records {
						row, err := v.row(rec, withTable)
						if err != nil {
							t.Fatal(err)
						}
						rowKey := v.rowKey
						if err := gw.write(row); err != nil {
							t.Fatal(err)
						}
						v.rowKey = []byte("stale")
						if err := rw.writeRecord(v, rec, withTable); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(v.rowKey, rowKey) || (v.rowKey == nil) != (rowKey == nil) {
							t.Errorf("view %d record %d: rowKey %q, want %q", vi, ri, v.rowKey, rowKey)
						}
					}
					if err := gw.close(); err != nil {
						t.Fatal(err)
					}
					if err := dw.close(); err != nil {
						t.Fatal(err)
					}
					if generic.String() != direct.String() {
						t.Errorf("table %q view %d table %v %s:\n%s\nwant\n%s", name, vi, withTable, format, direct.String(), generic.String())
					}
				}
			}
		}
	}
}

// TestRecordJSONDump: dumps of a store and a snapshot of tables of
// unknown type (the direct path) to JSON lines and JSON: every object in
// order, its key in hex from a store, JSON's elements the same bytes as
// the lines.
func TestRecordJSONDump(t *testing.T) {
	dir, snap := tenHosts(t)
	for _, src := range []struct {
		flag, path string
		keys       bool
	}{{"-d", dir, true}, {"-f", snap, false}} {
		args := []string{"dump", "hosts", src.flag, src.path}
		lines, errOut, code := runCmd(t, nil, append(args, "-o", formatJSONL)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		i := 0
		for line := range strings.Lines(lines) {
			var row struct {
				KeyHex   *string `json:"key_hex"`
				Revision uint64  `json:"revision"`
				Object   host    `json:"object"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("%v: %q: %v", args, line, err)
			}
			name := fmt.Sprintf("h%02d", i)
			if row.Object.Name != name || row.Revision == 0 || (row.KeyHex != nil) != src.keys ||
				src.keys && *row.KeyHex != hex.EncodeToString([]byte(name)) {
				t.Errorf("%v: line %d: %q", args, i, line)
			}
			i++
		}
		if i != 10 {
			t.Errorf("%v: %d lines", args, i)
		}
		arr, errOut, code := runCmd(t, nil, append(args, "-o", formatJSON)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errOut)
		}
		want := "[\n  " + strings.ReplaceAll(strings.TrimSuffix(lines, "\n"), "\n", ",\n  ") + "\n]\n"
		if arr != want {
			t.Errorf("%v -o json:\n%s\nwant\n%s", args, arr, want)
		}
	}
}
