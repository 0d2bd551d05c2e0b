package index

import (
	"bytes"
	"fmt"
)

// Composite returns the key of a tuple of parts: each part escaped and
// terminated (see AppendEscaped), one after the other. Composite keys
// sort lexicographically by parts: by the first part, then, among equal
// first parts, by the second, and so on, a tuple sorting before the
// longer tuples it starts. One composite key is a prefix of another
// exactly when its parts are the leading parts of the other's, so
// composite keys with the same number of parts are prefix-free, and no
// part can run into the next whatever bytes it holds.
//
// The parts are usually keys from this package's encoders, such as
// Composite(String(name), Int64(n)); the Builder writes the same bytes
// with fewer allocations.
func Composite(parts ...Key) Key {
	n := 0
	for _, p := range parts {
		n += len(p) + bytes.Count(p, zeroByte) + 2 // the exact escaped size
	}
	k := make(Key, 0, n)
	for _, p := range parts {
		k = AppendEscaped(k, p)
	}
	return k
}

// CompositePrefix returns the prefix shared by every composite key whose
// first len(parts) parts equal parts, for a prefix scan. Since every part
// carries its terminator, these are the same bytes as Composite(parts...),
// and the scan does not match composites whose last given part merely
// starts with parts[len(parts)-1]. To match those too, extend a shorter
// CompositePrefix with AppendEscapedPrefix.
func CompositePrefix(parts ...Key) Key {
	return Composite(parts...)
}

// SplitComposite returns the parts of a composite key, the inverse of
// Composite. Parts may share memory with k. The empty key has no parts.
// A key that is not a sequence of escaped parts gives an error wrapping
// ErrMalformedKey.
func SplitComposite(k Key) ([]Key, error) {
	var parts []Key
	rest := []byte(k)
	for len(rest) > 0 {
		part, r, err := UnescapeNext(rest)
		if err != nil {
			return nil, fmt.Errorf("composite part %d: %w", len(parts), err)
		}
		parts = append(parts, part)
		rest = r
	}
	return parts, nil
}
