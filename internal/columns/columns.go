// Package columns is the rule by which a JSON object becomes a row of
// columns, shared by the strata command's table output
// (cmd/strata/stratacli) and the web inspector (package httpapi), so that
// a table reads the same in a terminal and in a browser:
//
//   - an object's columns are its members, in the order it encodes them
//     (for a Go struct, the order of its fields);
//   - a cell is a string's text, or any other value's compact JSON;
//   - characters that would break a line or a terminal (control
//     characters, invalid UTF-8) are escaped as Go escapes them.
package columns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Member is one member of a JSON object: its name and its value, as
// encoded.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Members returns the members of raw, in order, if raw is a JSON object
// (an empty one gives an empty, non-nil slice), and nil if it is anything
// else or does not parse. The values alias raw.
func Members(raw []byte) []Member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	members := []Member{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		members = append(members, Member{Name: name, Value: value})
	}
	return members
}

// Names returns the names of the members of raw, in order, if raw is a
// JSON object (an empty one gives an empty, non-nil slice), and nil
// otherwise: the columns of a row whose object is raw.
func Names(raw []byte) []string {
	members := Members(raw)
	if members == nil {
		return nil
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	return names
}

// Text renders a JSON value as the text of a cell: a string as its text,
// anything else as compact JSON (or as it is, if it does not parse).
func Text(raw []byte) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// Cell renders a JSON value as a cell: Text, made Printable.
func Cell(raw []byte) string { return Printable(Text(raw)) }

// Printable returns s with the characters that would break a line of a
// table or a terminal escaped (tabs, newlines, escape sequences, invalid
// UTF-8), as a Go string literal's contents; s itself if it has none.
func Printable(s string) string {
	clean := true
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := fmt.Sprintf("%+q", s)
	return q[1 : len(q)-1]
}
