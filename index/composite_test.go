package index

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// compareTuples is the reference order of composite keys: part by part,
// a tuple before the longer tuples it starts.
func compareTuples(a, b []Key) int {
	for i := range min(len(a), len(b)) {
		if c := bytes.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func randTuple(r *rand.Rand) []Key {
	t := make([]Key, r.IntN(5))
	for i := range t {
		t[i] = randBytes(r, 3)
	}
	return t
}

func tupleString(t []Key) string {
	s := "("
	for i, k := range t {
		if i > 0 {
			s += ", "
		}
		s += quoted(k)
	}
	return s + ")"
}

func TestCompositeOrder(t *testing.T) {
	r := newRand(t)
	var tuples [][]Key
	for range randPairs {
		a, b := randTuple(r), randTuple(r)
		if r.IntN(3) == 0 { // share leading parts
			b = append(slices.Clone(a[:r.IntN(len(a)+1)]), b...)
		}
		ka, kb := Composite(a...), Composite(b...)
		if got, want := sign(bytes.Compare(ka, kb)), sign(compareTuples(a, b)); got != want {
			t.Fatalf("%s and %s: keys compare %d, tuples %d", tupleString(a), tupleString(b), got, want)
		}
		tuples = append(tuples, a)
	}
	// A composite is a prefix of another exactly when its tuple leads the
	// other's; so composites of one arity are prefix-free.
	tuples = tuples[:400]
	keys := make([]Key, len(tuples))
	byLen := map[int][][]byte{}
	for i, a := range tuples {
		keys[i] = Composite(a...)
		byLen[len(a)] = append(byLen[len(a)], keys[i])
	}
	for i, a := range tuples {
		for j, b := range tuples {
			leads := len(a) <= len(b) && compareTuples(a, b[:len(a)]) == 0
			if got := bytes.HasPrefix(keys[j], keys[i]); got != leads {
				t.Fatalf("Composite%s has prefix Composite%s: %v, want %v", tupleString(b), tupleString(a), got, leads)
			}
		}
	}
	for _, keys := range byLen {
		checkPrefixFree(t, keys)
	}
}

func TestCompositePrefix(t *testing.T) {
	r := newRand(t)
	for range randPairs {
		parts := randTuple(r)
		k := Composite(parts...)
		for i := range len(parts) + 1 {
			if p := CompositePrefix(parts[:i]...); !bytes.HasPrefix(k, p) {
				t.Fatalf("CompositePrefix of %s is not a prefix of Composite %s", tupleString(parts[:i]), tupleString(parts))
			}
		}
		// A prefix matches exactly the tuples that start with its parts.
		other := randTuple(r)
		n := min(len(other), r.IntN(3))
		starts := len(parts) >= n && compareTuples(parts[:n], other[:n]) == 0
		if got := bytes.HasPrefix(k, CompositePrefix(other[:n]...)); got != starts {
			t.Fatalf("Composite %s has prefix of %s: %v, want %v", tupleString(parts), tupleString(other[:n]), got, starts)
		}
	}
}

func TestSplitCompositeRoundTrip(t *testing.T) {
	r := newRand(t)
	for range randPairs {
		parts := randTuple(r)
		got, err := SplitComposite(Composite(parts...))
		if err != nil {
			t.Fatalf("SplitComposite(Composite%s): %v", tupleString(parts), err)
		}
		if compareTuples(got, parts) != 0 {
			t.Fatalf("SplitComposite(Composite%s) = %s", tupleString(parts), tupleString(got))
		}
	}
	if parts, err := SplitComposite(nil); err != nil || len(parts) != 0 {
		t.Errorf("SplitComposite(nil) = %v, %v; want no parts", parts, err)
	}
}

func TestSplitCompositeMalformed(t *testing.T) {
	valid := Composite(String("a"), Uint8(0))
	for _, k := range []Key{
		Key("a"),
		append(slices.Clone(valid), 'x'),
		append(slices.Clone(valid), 0),
		append(slices.Clone(valid), 0, 7),
		valid[:len(valid)-1],
	} {
		if parts, err := SplitComposite(k); !errors.Is(err, ErrMalformedKey) || parts != nil {
			t.Errorf("SplitComposite(%q) = %v, %v; want ErrMalformedKey", k, parts, err)
		}
	}
}

// TestBuilderMatchesComposite checks that every Builder method writes the
// bytes of Composite over the plain encoder, including values whose
// encoding holds 0x00 bytes that must be escaped in place.
func TestBuilderMatchesComposite(t *testing.T) {
	r := newRand(t)
	now := time.Unix(0, 0)
	addr := netip.MustParseAddr("fe80::1%eth0")
	pfx := netip.MustParsePrefix("10.0.0.0/8")
	var b Builder
	for range 2000 {
		b.Reset()
		var parts []Key
		for range r.IntN(6) {
			switch r.IntN(10) {
			case 0:
				v := randInt[uint64](r)
				b.Uint64(v)
				parts = append(parts, Uint64(v))
			case 1:
				v := randInt[int64](r)
				b.Int64(v)
				parts = append(parts, Int64(v))
			case 2:
				v := float64(randInt[int8](r)) / 4
				if v == 1 {
					v = math.NaN()
				}
				b.Float64(v)
				parts = append(parts, Float64(v))
			case 3:
				v := string(randBytes(r, 5))
				b.String(v)
				parts = append(parts, String(v))
			case 4:
				v := randBytes(r, 5)
				b.Bytes(v)
				parts = append(parts, Bytes(v))
			case 5:
				v := r.IntN(2) == 0
				b.Bool(v)
				parts = append(parts, Bool(v))
			case 6:
				v := now.Add(time.Duration(randInt[int64](r)))
				b.Time(v)
				parts = append(parts, Time(v))
			case 7:
				b.NetIPAddr(addr)
				parts = append(parts, NetIPAddr(addr))
			case 8:
				b.NetIPPrefix(pfx)
				parts = append(parts, NetIPPrefix(pfx))
			default:
				v := Key(randBytes(r, 5))
				b.Key(v)
				parts = append(parts, v)
			}
			// A key built earlier must survive further parts.
			before := b.Build()
			saved := slices.Clone(before)
			b.Key(Key("\x00more\x00"))
			if !bytes.Equal(before, saved) {
				t.Fatalf("adding a part changed an earlier Build result")
			}
			b.buf = b.buf[:len(saved)]
		}
		if got, want := b.Build(), Composite(parts...); !got.Equal(want) {
			t.Fatalf("Builder gave %q, Composite gives %q", got, want)
		}
	}
}

// FuzzComposite checks composite order and the Split round trip on
// tuples decoded from the fuzzer's bytes.
func FuzzComposite(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte{1, 'a', 0}, []byte{2, 'a', 0})
	f.Add([]byte{1, 'a', 1, 'b'}, []byte{2, 'a', 'b'})
	f.Add([]byte{1, 0, 2, 0, 0}, []byte{1, 0, 1, 0, 1, 0})
	f.Add([]byte{3, 0xff, 0, 1}, []byte{3, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ta, tb := fuzzTuple(a), fuzzTuple(b)
		ka, kb := Composite(ta...), Composite(tb...)
		if got, want := sign(bytes.Compare(ka, kb)), sign(compareTuples(ta, tb)); got != want {
			t.Fatalf("%s and %s: keys compare %d, tuples %d", tupleString(ta), tupleString(tb), got, want)
		}
		leads := len(ta) <= len(tb) && compareTuples(ta, tb[:len(ta)]) == 0
		if got := bytes.HasPrefix(kb, ka); got != leads {
			t.Fatalf("Composite%s has prefix Composite%s: %v, want %v", tupleString(tb), tupleString(ta), got, leads)
		}
		parts, err := SplitComposite(ka)
		if err != nil || compareTuples(parts, ta) != 0 {
			t.Fatalf("SplitComposite(Composite%s) = %s, %v", tupleString(ta), tupleString(parts), err)
		}
	})
}

// fuzzTuple decodes a tuple from data: a length byte (mod 8), then that
// many bytes of part, repeated.
func fuzzTuple(data []byte) []Key {
	var t []Key
	for len(data) > 0 {
		n := min(int(data[0]%8), len(data)-1)
		t = append(t, Key(data[1:1+n]))
		data = data[1+n:]
	}
	return t
}
