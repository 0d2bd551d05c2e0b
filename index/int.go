package index

import "encoding/binary"

// Unsigned integers are encoded big-endian at their full width, so that
// byte order is numeric order. Signed integers are encoded the same way
// after flipping the sign bit: this maps the smallest value to all zero
// bytes and the largest to all 0xff bytes, so negative numbers sort
// before zero and positive numbers.

// Uint8 encodes v as one byte.
func Uint8(v uint8) Key { return Key{v} }

// AppendUint8 appends the Uint8 encoding of v to dst.
func AppendUint8(dst []byte, v uint8) []byte { return append(dst, v) }

// Uint16 encodes v as 2 big-endian bytes.
func Uint16(v uint16) Key { return AppendUint16(make(Key, 0, 2), v) }

// AppendUint16 appends the Uint16 encoding of v to dst.
func AppendUint16(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }

// Uint32 encodes v as 4 big-endian bytes.
func Uint32(v uint32) Key { return AppendUint32(make(Key, 0, 4), v) }

// AppendUint32 appends the Uint32 encoding of v to dst.
func AppendUint32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// Uint64 encodes v as 8 big-endian bytes.
func Uint64(v uint64) Key { return AppendUint64(make(Key, 0, 8), v) }

// AppendUint64 appends the Uint64 encoding of v to dst. It allocates only
// when dst lacks room for 8 more bytes (BenchmarkAppendUint64).
func AppendUint64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// Uint encodes v as 8 big-endian bytes on every platform, so the same
// value has the same key whatever the size of uint; Uint(v) equals
// Uint64(uint64(v)).
func Uint(v uint) Key { return Uint64(uint64(v)) }

// AppendUint appends the Uint encoding of v to dst.
func AppendUint(dst []byte, v uint) []byte { return AppendUint64(dst, uint64(v)) }

// Int8 encodes v as one byte with the sign bit flipped.
func Int8(v int8) Key { return Key{uint8(v) ^ 0x80} }

// AppendInt8 appends the Int8 encoding of v to dst.
func AppendInt8(dst []byte, v int8) []byte { return append(dst, uint8(v)^0x80) }

// Int16 encodes v as 2 big-endian bytes with the sign bit flipped.
func Int16(v int16) Key { return AppendInt16(make(Key, 0, 2), v) }

// AppendInt16 appends the Int16 encoding of v to dst.
func AppendInt16(dst []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(v)^(1<<15))
}

// Int32 encodes v as 4 big-endian bytes with the sign bit flipped.
func Int32(v int32) Key { return AppendInt32(make(Key, 0, 4), v) }

// AppendInt32 appends the Int32 encoding of v to dst.
func AppendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v)^(1<<31))
}

// Int64 encodes v as 8 big-endian bytes with the sign bit flipped.
func Int64(v int64) Key { return AppendInt64(make(Key, 0, 8), v) }

// AppendInt64 appends the Int64 encoding of v to dst.
func AppendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// Int encodes v as 8 big-endian bytes with the sign bit flipped on every
// platform; Int(v) equals Int64(int64(v)).
func Int(v int) Key { return Int64(int64(v)) }

// AppendInt appends the Int encoding of v to dst.
func AppendInt(dst []byte, v int) []byte { return AppendInt64(dst, int64(v)) }
