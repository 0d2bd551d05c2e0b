package index

import (
	"encoding/binary"
	"math"
)

// nanKey is the encoding shared by every NaN. It is below the encoding of
// -Inf (0x000fffffffffffff), which is the smallest key of a non-NaN value.
const nanKey = 0

// Float64 encodes v as 8 bytes whose order is the order of cmp.Compare:
//
//   - every NaN, whatever its sign and payload, has the same key, which
//     sorts before -Inf (as cmp.Compare, slices.Sort and sort.Float64s
//     put NaN first);
//   - -0 and +0 have the same key, since they compare equal;
//   - otherwise keys follow numeric order, -Inf first and +Inf last.
//
// The encoding is the IEEE 754 bit pattern with all bits flipped for
// negative numbers and only the sign bit flipped for positive ones.
func Float64(v float64) Key { return AppendFloat64(make(Key, 0, 8), v) }

// AppendFloat64 appends the Float64 encoding of v to dst.
func AppendFloat64(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(dst, float64Bits(v))
}

func float64Bits(v float64) uint64 {
	switch {
	case v != v:
		return nanKey
	case v == 0:
		v = 0 // -0 becomes +0.
	}
	bits := math.Float64bits(v)
	if bits&(1<<63) != 0 {
		return ^bits
	}
	return bits | 1<<63
}
