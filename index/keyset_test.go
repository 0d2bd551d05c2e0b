package index

import (
	"bytes"
	"slices"
	"testing"
)

func TestKeySet(t *testing.T) {
	a, b, c := String("a"), String("b"), String("")
	for _, keys := range [][]Key{nil, {a}, {c}, {a, b}, {a, b, c, a}} {
		s := NewKeySet(keys...)
		if s.Len() != len(keys) {
			t.Fatalf("NewKeySet(%v).Len() = %d", keys, s.Len())
		}
		for i, k := range keys {
			if !s.At(i).Equal(k) {
				t.Errorf("NewKeySet(%v).At(%d) = %v", keys, i, s.At(i))
			}
			if !s.Contains(k) {
				t.Errorf("NewKeySet(%v) does not contain %v", keys, k)
			}
		}
		if got := slices.Collect(s.All()); len(got) != len(keys) || !slices.EqualFunc(got, keys, Key.Equal) {
			t.Errorf("NewKeySet(%v).All() = %v", keys, got)
		}
		if s.Contains(String("z")) {
			t.Errorf("NewKeySet(%v) contains z", keys)
		}
	}
	if (KeySet{}).Len() != 0 {
		t.Errorf("zero KeySet is not empty")
	}
}

func TestKeySetAllStops(t *testing.T) {
	s := NewKeySet(String("a"), String("b"), String("c"))
	n := 0
	for range s.All() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("iterated %d keys after break at 2", n)
	}
}

func TestKeySetCopiesSlice(t *testing.T) {
	keys := []Key{String("a"), String("b")}
	s := NewKeySet(keys...)
	keys[1] = String("x")
	if !s.At(1).Equal(String("b")) {
		t.Errorf("KeySet changed with the caller's slice: %v", s.At(1))
	}
}

func TestKeySetAtOutOfRange(t *testing.T) {
	for _, s := range []KeySet{{}, NewKeySet(String("a")), NewKeySet(String("a"), String("b"))} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("At(%d) on a set of %d keys did not panic", s.Len(), s.Len())
				}
			}()
			s.At(s.Len())
		}()
	}
}

func TestKeyString(t *testing.T) {
	for _, c := range []struct {
		k    Key
		want string
	}{
		{nil, "0x"},
		{Key("hello world"), "hello world"},
		{Key("a\x00"), "0x6100"},
		{Uint16(0x1234), "0x1234"},
		{Key("\x7f"), "0x7f"},
		{Key("~ !"), "~ !"},
	} {
		if got := c.k.String(); got != c.want {
			t.Errorf("Key(%q).String() = %q, want %q", []byte(c.k), got, c.want)
		}
	}
	if !Key(nil).Equal(Key{}) || Key("a").Equal(Key("b")) {
		t.Errorf("Key.Equal is wrong")
	}
}

// TestKeySetOf: KeySetOf holds a copy of its key, short (in the KeySet) or
// long (on the heap), which At, All and Contains return as NewKeySet's
// would; changing the key passed in, or a copy of the KeySet, leaves it
// as it was.
func TestKeySetOf(t *testing.T) {
	for n := range 40 {
		k := make(Key, n)
		for i := range k {
			k[i] = byte('a' + i)
		}
		want := bytes.Clone(k)
		s := KeySetOf(k)
		clear(k)
		if s.Len() != 1 || !bytes.Equal(s.At(0), want) {
			t.Fatalf("KeySetOf(%d bytes).At(0) = %q, want %q", n, s.At(0), want)
		}
		if !s.Contains(want) || (n > 0 && s.Contains(want[:n-1])) {
			t.Fatalf("KeySetOf(%q).Contains is wrong", want)
		}
		if got := slices.Collect(s.All()); len(got) != 1 || !bytes.Equal(got[0], want) {
			t.Fatalf("KeySetOf(%q).All() = %q", want, got)
		}
		c := s
		if n > 0 {
			c.At(0)[0] = 0 // a caller must not, but a copy is its own
			if n <= maxShortKey && !bytes.Equal(s.At(0), want) {
				t.Fatalf("changing a copy of KeySetOf(%q) changed it", want)
			}
		}
		if a := s.At(0); cap(a) != len(a) {
			t.Fatalf("KeySetOf(%d bytes).At(0) has room to append into the KeySet: cap %d", n, cap(a))
		}
	}
}
