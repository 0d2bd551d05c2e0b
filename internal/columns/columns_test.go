package columns

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestNames: an object's columns are its members in order; an empty
// object has none; anything else is no object.
func TestNames(t *testing.T) {
	for raw, want := range map[string][]string{
		`{"Name":"a","Zone":{"x":1},"Up":true}`: {"Name", "Zone", "Up"},
		` { "b" : 1 , "a" : [1,2] } `:           {"b", "a"},
		`{}`:                                    {},
	} {
		got := Names([]byte(raw))
		if got == nil || !slices.Equal(got, want) {
			t.Errorf("Names(%s) = %#v, want %#v", raw, got, want)
		}
	}
	for _, raw := range []string{`[1,2]`, `"s"`, `12`, `null`, `{"a":`, `{"a" 1}`, ``} {
		if got := Names([]byte(raw)); got != nil {
			t.Errorf("Names(%s) = %#v, want nil", raw, got)
		}
	}
}

// TestMembers: the values are each member's JSON, as encoded.
func TestMembers(t *testing.T) {
	got := Members([]byte(`{"a": {"x": [1, 2]}, "b":"t"}`))
	want := []Member{{"a", json.RawMessage(`{"x": [1, 2]}`)}, {"b", json.RawMessage(`"t"`)}}
	if len(got) != len(want) {
		t.Fatalf("Members = %v", got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || string(got[i].Value) != string(want[i].Value) {
			t.Errorf("member %d = %s %s, want %s %s", i, got[i].Name, got[i].Value, want[i].Name, want[i].Value)
		}
	}
}

// TestCell: strings bare, the rest compact, control characters and
// invalid UTF-8 escaped.
func TestCell(t *testing.T) {
	for raw, want := range map[string]string{
		`"eu"`:               `eu`,
		`"a\tb\nc"`:          `a\tb\nc`,
		`"\u001b[31mred"`:    `\x1b[31mred`,
		`"é"`:                `é`,
		`12`:                 `12`,
		`true`:               `true`,
		`null`:               `null`,
		`{ "x" : [ 1, 2 ] }`: `{"x":[1,2]}`,
		`not json`:           `not json`,
	} {
		if got := Cell([]byte(raw)); got != want {
			t.Errorf("Cell(%s) = %q, want %q", raw, got, want)
		}
	}
	if got := Printable("a\xffb"); got != `a\xffb` {
		t.Errorf("Printable of invalid UTF-8 = %q", got)
	}
}
