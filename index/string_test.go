package index

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStringOrder(t *testing.T) {
	checkOrder(t, orderCase[string]{
		enc:  String,
		app:  AppendString,
		cmp:  strings.Compare,
		edge: []string{"", "\x00", "\x00\x00", "\x00\x01", "\x01", "a", "a\x00", "a\xff", "ab", "b", "\xff", "\xff\xff"},
		gen:  func(r *rand.Rand) string { return string(randBytes(r, 6)) },
	})
}

func TestBytesOrder(t *testing.T) {
	checkOrder(t, orderCase[[]byte]{
		enc:  Bytes,
		app:  AppendBytes,
		cmp:  bytes.Compare,
		edge: [][]byte{nil, {}, {0}, {0, 0}, {0, 0xff}, {1}, {0xff}, []byte("a\x00b")},
		gen:  func(r *rand.Rand) []byte { return randBytes(r, 6) },
	})
}

func TestBytesCopies(t *testing.T) {
	b := []byte("abc")
	k := Bytes(b)
	b[0] = 'x'
	if string(k) != "abc" {
		t.Errorf("Bytes key changed with its source: %q", k)
	}
}

// label renders differently from its underlying string, so that a test
// can tell Stringer uses the String method.
type label string

func (l label) String() string { return "<" + string(l) + ">" }

func TestStringerOrder(t *testing.T) {
	checkOrder(t, orderCase[label]{
		enc:  Stringer[label],
		app:  AppendStringer[label],
		cmp:  func(a, b label) int { return strings.Compare(a.String(), b.String()) },
		edge: []label{"", "a", "ab", "b", "\x00", "\xff"},
		gen:  func(r *rand.Rand) label { return label(randBytes(r, 4)) },
	})
	if got := Stringer(label("x")); string(got) != "<x>" {
		t.Errorf("Stringer(label(x)) = %q, want <x>", got)
	}
}

func TestBoolOrder(t *testing.T) {
	checkOrder(t, orderCase[bool]{
		enc: Bool,
		app: AppendBool,
		cmp: func(a, b bool) int {
			switch {
			case a == b:
				return 0
			case !a:
				return -1
			}
			return 1
		},
		edge: []bool{false, true},
		gen:  func(r *rand.Rand) bool { return r.IntN(2) == 0 },
	})
}
