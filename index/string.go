package index

import (
	"fmt"
	"unsafe"
)

// String encodes s as its raw bytes, so keys follow the order of strings
// compared with < (byte-wise, not by Unicode collation).
//
// The encoding is not prefix-free: String("ab") is a prefix of
// String("abc"). That is what a prefix scan over a string index wants,
// but it means a String key cannot be followed by another field without
// escaping: use Composite or Builder, or AppendEscaped, for that.
//
// The key shares memory with s (see Key): it costs no allocation.
func String(s string) Key { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// AppendString appends the String encoding of s to dst.
func AppendString(dst []byte, s string) []byte { return append(dst, s...) }

// Bytes encodes b as a copy of its raw bytes, so keys follow the order of
// bytes.Compare. Like String it is not prefix-free. A nil or empty b
// gives an empty key.
func Bytes(b []byte) Key { return append(Key(nil), b...) }

// AppendBytes appends the Bytes encoding of b to dst.
func AppendBytes(dst []byte, b []byte) []byte { return append(dst, b...) }

// Stringer encodes v as String(v.String()). Its order is the order of the
// strings v renders to, which need not be any order the type defines.
// The type parameter lets callers pass concrete types without boxing them
// in an interface.
func Stringer[T fmt.Stringer](v T) Key { return String(v.String()) }

// AppendStringer appends the Stringer encoding of v to dst.
func AppendStringer[T fmt.Stringer](dst []byte, v T) []byte {
	return append(dst, v.String()...)
}

// Bool encodes false as the byte 0x00 and true as 0x01, so false sorts
// before true.
func Bool(v bool) Key { return AppendBool(make(Key, 0, 1), v) }

// AppendBool appends the Bool encoding of v to dst.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}
