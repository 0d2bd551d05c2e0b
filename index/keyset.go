package index

import (
	"bytes"
	"iter"
	"slices"
)

// KeySet is the zero, one or many keys that one object yields for one
// index. A unique index yields exactly one key per object; a multi-valued
// index (tags, addresses) may yield any number.
//
// The zero KeySet is empty. A KeySet holding a single key does not
// allocate: NewKeySet keeps the key itself, and KeySetOf copies a key of
// up to 16 bytes into the KeySet, so that the key it was given need not
// live on the heap at all. Only further keys live in a slice. The database
// calls Len and At for every object it writes (BenchmarkKeySetIterate
// guards them); both are small enough to be inlined.
//
// A KeySet is a value: copying it is cheap, and copies share the keys
// NewKeySet kept (a key KeySetOf copied is copied with the KeySet). Neither
// the KeySet nor the caller may modify its keys after creation; At's
// result for a key KeySetOf copied lives in the KeySet it was called on.
type KeySet struct {
	// n is the number of keys. first holds key 0 when n >= 1, unless it
	// is held in short (inline); rest holds keys 1..n-1 when n >= 2 and
	// is nil otherwise, so len(rest) == n-1 whenever n > 0.
	n      int
	first  Key
	rest   []Key
	short  [maxShortKey]byte
	slen   uint8
	inline bool
}

// maxShortKey is the longest key KeySetOf holds in the KeySet itself: an
// integer, a netip.Addr, a short name.
const maxShortKey = 16

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

// KeySetOf returns a KeySet holding a copy of the single key k. A key of
// up to 16 bytes is held in the KeySet itself, so an index whose
// FromObject returns KeySetOf(Uint64(o.ID)) allocates nothing: the
// encoder's buffer does not escape, and stays on the stack
// (BenchmarkKeySetOf). A longer key is copied to the heap; for those
// NewKeySet, which keeps the key without copying, is the cheaper one.
func KeySetOf(k Key) KeySet {
	if len(k) <= maxShortKey {
		s := KeySet{n: 1, slen: uint8(len(k)), inline: true}
		copy(s.short[:], k)
		return s
	}
	return KeySet{n: 1, first: slices.Clip(bytes.Clone(k))}
}

// Len returns the number of keys in s.
func (s KeySet) Len() int { return s.n }

// At returns the i'th key of s. It panics if i is out of range
// [0, s.Len()).
func (s *KeySet) At(i int) Key {
	if i == 0 && s.n > 0 {
		if s.inline {
			return s.short[:s.slen:s.slen]
		}
		return s.first
	}
	return s.rest[i-1]
}

// All returns an iterator over the keys of s in order.
func (s *KeySet) All() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for i := range s.n {
			if !yield(s.At(i)) {
				return
			}
		}
	}
}

// Contains reports whether s holds a key equal to k.
func (s *KeySet) Contains(k Key) bool {
	for i := range s.n {
		if bytes.Equal(s.At(i), k) {
			return true
		}
	}
	return false
}
