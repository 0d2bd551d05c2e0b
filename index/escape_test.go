package index

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func esc(k []byte) []byte { return AppendEscaped(nil, k) }

func TestEscapeKnownEncodings(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "\x00\x01"},
		{"a", "a\x00\x01"},
		{"\x00", "\x00\xff\x00\x01"},
		{"a\x00\x00b", "a\x00\xff\x00\xffb\x00\x01"},
		{"\xff\x01", "\xff\x01\x00\x01"},
	} {
		if got := esc([]byte(c.in)); string(got) != c.want {
			t.Errorf("AppendEscaped(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEscapeOrder(t *testing.T) {
	checkOrder(t, orderCase[[]byte]{
		enc:  func(b []byte) Key { return esc(b) },
		app:  AppendEscaped,
		cmp:  bytes.Compare,
		edge: [][]byte{nil, {0}, {0, 0}, {0, 1}, {0, 0xff}, {1}, {0xff}, {0xff, 0}, []byte("a"), []byte("a\x00")},
		gen:  func(r *rand.Rand) []byte { return randBytes(r, 6) },
	})
}

// checkPrefixFree fails if any key in keys is a proper prefix of another.
func checkPrefixFree(t *testing.T, keys [][]byte) {
	t.Helper()
	for i, a := range keys {
		for j, b := range keys {
			if i != j && len(a) < len(b) && bytes.HasPrefix(b, a) {
				t.Fatalf("%q is a proper prefix of %q", a, b)
			}
		}
	}
}

func TestEscapePrefixFree(t *testing.T) {
	r := newRand(t)
	for range 20 {
		var keys [][]byte
		for range 200 {
			keys = append(keys, esc(randBytes(r, 5)))
		}
		checkPrefixFree(t, keys)
	}
}

// TestEscapedPrefix checks that the escaped prefix of p is a prefix of the
// escaped form of k exactly when p is a prefix of k, so prefix scans over
// escaped keys find what a scan over raw keys would.
func TestEscapedPrefix(t *testing.T) {
	r := newRand(t)
	for range randPairs {
		k := randBytes(r, 6)
		e := esc(k)
		for i := range len(k) + 1 {
			if p := AppendEscapedPrefix(nil, k[:i]); !bytes.HasPrefix(e, p) {
				t.Fatalf("escaped prefix %q of %q is not a prefix of %q", p, k[:i], e)
			}
		}
		p := randBytes(r, 3)
		if got, want := bytes.HasPrefix(e, AppendEscapedPrefix(nil, p)), bytes.HasPrefix(k, p); got != want {
			t.Fatalf("escaped %q has escaped prefix %q: %v, raw: %v", k, p, got, want)
		}
	}
}

func TestUnescapeNextRoundTrip(t *testing.T) {
	r := newRand(t)
	for range randPairs {
		k, tail := randBytes(r, 6), randBytes(r, 4)
		in := append(esc(k), tail...)
		orig := slices.Clone(in)
		got, rest, err := UnescapeNext(in)
		if err != nil {
			t.Fatalf("UnescapeNext(%q): %v", in, err)
		}
		if !bytes.Equal(got, k) || !bytes.Equal(rest, tail) {
			t.Fatalf("UnescapeNext(%q) = %q, %q; want %q, %q", in, got, rest, k, tail)
		}
		// Appending to the key must not overwrite the input.
		_ = append(got, 'x', 'y', 'z')
		if !bytes.Equal(in, orig) {
			t.Fatalf("appending to the key of %q changed the input to %q", orig, in)
		}
	}
}

func TestUnescapeNextMalformed(t *testing.T) {
	for _, in := range []string{
		"",
		"abc",
		"\x00",
		"abc\x00",
		"\x00\x02",
		"a\x00\x00\x01",
		"\x00\xff",
		"\x00\xffa",
		"\x00\xff\x00",
		"\x00\xfe\x00\x01",
	} {
		key, rest, err := UnescapeNext([]byte(in))
		if !errors.Is(err, ErrMalformedKey) {
			t.Errorf("UnescapeNext(%q) error = %v, want ErrMalformedKey", in, err)
		}
		if key != nil || rest != nil {
			t.Errorf("UnescapeNext(%q) = %q, %q with error, want nil, nil", in, key, rest)
		}
	}
}

// FuzzEscape checks the escape round trip, order preservation and
// prefix-freeness on pairs of inputs, and that UnescapeNext neither
// panics on arbitrary input nor accepts a non-canonical encoding.
func FuzzEscape(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"a", "b"}, {"\x00", ""}, {"", "\x00"}, {"a\x00", "a"},
		{"\x00\x01", "\x00\xff"}, {"\xff\x00\x00", "\xff\x00"}, {"\x00\x01", "x"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ea, eb := esc(a), esc(b)
		if got, want := bytes.Compare(ea, eb), bytes.Compare(a, b); got != want {
			t.Fatalf("escaped %q and %q compare %d, raw %d", a, b, got, want)
		}
		if len(ea) < len(eb) && bytes.HasPrefix(eb, ea) {
			t.Fatalf("escaped %q is a proper prefix of escaped %q", a, b)
		}
		key, rest, err := UnescapeNext(append(ea, b...))
		if err != nil || !bytes.Equal(key, a) || !bytes.Equal(rest, b) {
			t.Fatalf("UnescapeNext(esc(%q)+%q) = %q, %q, %v", a, b, key, rest, err)
		}
		// Arbitrary input: either an error, or a canonical encoding.
		key, rest, err = UnescapeNext(a)
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) {
				t.Fatalf("UnescapeNext(%q): error %v is not ErrMalformedKey", a, err)
			}
			return
		}
		if re := append(esc(key), rest...); !bytes.Equal(re, a) {
			t.Fatalf("UnescapeNext(%q) = %q, %q, which re-encodes to %q", a, key, rest, re)
		}
	})
}
