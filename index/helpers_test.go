package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// testSeed seeds every random test. It is fixed so that failures
// reproduce; each test logs it.
const testSeed = 0x5747a7a

// randPairs is the number of random pairs each property test compares.
const randPairs = 20000

func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	t.Logf("seed %#x", testSeed)
	return rand.New(rand.NewPCG(testSeed, uint64(len(t.Name()))))
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// orderCase describes one encoder for checkOrder.
type orderCase[T any] struct {
	enc  func(T) Key
	app  func([]byte, T) []byte // the Append twin of enc
	cmp  func(a, b T) int       // the reference order enc must follow
	edge []T                    // hand-picked values, compared pairwise
	gen  func(*rand.Rand) T     // random values
}

// checkOrder asserts that keys follow c.cmp (same sign, equal keys iff
// equal values) on every pair of edge values and on random pairs mixing
// edge and generated values, that the Append twin writes the same bytes
// after an existing prefix, and that sorting keys sorts values.
func checkOrder[T any](t *testing.T, c orderCase[T]) {
	t.Helper()
	r := newRand(t)
	check := func(a, b T) {
		t.Helper()
		ka, kb := c.enc(a), c.enc(b)
		want := sign(c.cmp(a, b))
		if got := sign(bytes.Compare(ka, kb)); got != want {
			t.Fatalf("order of %v (%v) and %v (%v): keys compare %d, values %d", a, ka, b, kb, got, want)
		}
	}
	for _, a := range c.edge {
		for _, b := range c.edge {
			check(a, b)
		}
	}
	pick := func() T {
		if len(c.edge) > 0 && r.IntN(8) == 0 {
			return c.edge[r.IntN(len(c.edge))]
		}
		return c.gen(r)
	}
	values := slices.Clone(c.edge)
	for range randPairs {
		a, b := pick(), pick()
		check(a, b)
		values = append(values, a)
	}

	prefix := []byte("prefix")
	for _, v := range values {
		k := c.enc(v)
		got := c.app(slices.Clip(prefix), v)
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], k) {
			t.Fatalf("append twin of %v: got %x after prefix, want %x", v, got, k)
		}
		if got := c.app(nil, v); !bytes.Equal(got, k) {
			t.Fatalf("append twin of %v into nil: got %x, want %x", v, got, k)
		}
	}

	// Sorting by key must sort by value.
	type kv struct {
		k Key
		v T
	}
	kvs := make([]kv, len(values))
	for i, v := range values {
		kvs[i] = kv{c.enc(v), v}
	}
	slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	for i := 1; i < len(kvs); i++ {
		if c.cmp(kvs[i-1].v, kvs[i].v) > 0 {
			t.Fatalf("sorted by key, %v comes before %v", kvs[i-1].v, kvs[i].v)
		}
	}
}

// integer is every type the integer encoders take.
type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint
}

// randInt returns a random integer: often small (so that equal pairs and
// values around 0 and -1 occur), otherwise any bit pattern.
func randInt[T integer](r *rand.Rand) T {
	if r.IntN(4) == 0 {
		return T(r.IntN(9) - 4)
	}
	return T(r.Uint64())
}

// randBytes returns a short random string over an alphabet that includes
// the bytes the escaping treats specially, so that collisions, shared
// prefixes and escapes are frequent.
func randBytes(r *rand.Rand, maxLen int) []byte {
	const alphabet = "\x00\x01\x02ab\xfe\xff"
	b := make([]byte, r.IntN(maxLen+1))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

// quoted makes test failure messages readable for byte strings.
func quoted(b []byte) string { return fmt.Sprintf("%q", b) }
