package index

import (
	"bytes"
	"iter"
)

// KeySet is the zero, one or many keys that one object yields for one
// index. A unique index yields exactly one key per object; a multi-valued
// index (tags, addresses) may yield any number.
//
// The zero KeySet is empty. A KeySet holding a single key does not
// allocate: the first key is stored inline and only further keys live in
// a slice. The database calls Len and At for every object it writes
// (BenchmarkKeySetIterate guards them); both are small enough to be
// inlined.
//
// A KeySet is a value: copying it is cheap and copies share the keys.
// Neither the KeySet nor the caller may modify its keys after creation.
type KeySet struct {
	// n is the number of keys. first holds key 0 when n >= 1; rest holds
	// keys 1..n-1 when n >= 2 and is nil otherwise, so len(rest) == n-1
	// whenever n > 0.
	n     int
	first Key
	rest  []Key
}

// NewKeySet returns a KeySet holding keys in the given order. It keeps
// the keys themselves but not the keys slice, which the caller may reuse.
// With zero or one key it does not allocate; with more it allocates one
// slice for keys[1:].
func NewKeySet(keys ...Key) KeySet {
	switch len(keys) {
	case 0:
		return KeySet{}
	case 1:
		return KeySet{n: 1, first: keys[0]}
	default:
		rest := make([]Key, len(keys)-1)
		copy(rest, keys[1:])
		return KeySet{n: len(keys), first: keys[0], rest: rest}
	}
}

// Len returns the number of keys in s.
func (s KeySet) Len() int { return s.n }

// At returns the i'th key of s. It panics if i is out of range
// [0, s.Len()).
func (s KeySet) At(i int) Key {
	if i == 0 && s.n > 0 {
		return s.first
	}
	return s.rest[i-1]
}

// All returns an iterator over the keys of s in order.
func (s KeySet) All() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for i := range s.n {
			if !yield(s.At(i)) {
				return
			}
		}
	}
}

// Contains reports whether s holds a key equal to k.
func (s KeySet) Contains(k Key) bool {
	for i := range s.n {
		if bytes.Equal(s.At(i), k) {
			return true
		}
	}
	return false
}
