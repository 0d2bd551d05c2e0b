package index

import (
	"bytes"
	"encoding/hex"
)

// Key is an encoded index key. Keys of one index are compared with
// bytes.Compare; every encoder in this package produces keys whose byte
// order matches the natural order of the encoded values.
//
// Keys are never modified once made: not by the database, which copies
// what it stores, and not by their holder. String and Stringer return keys
// that share memory with the encoded string, which is what makes queries by
// string keys free of allocations; writing to such a key would write to the
// string's (possibly read-only) memory. Keys taken apart by UnescapeNext or
// SplitComposite share memory with their input.
type Key []byte

// Equal reports whether k and other hold the same bytes. A nil Key and an
// empty Key are equal.
func (k Key) Equal(other Key) bool {
	return bytes.Equal(k, other)
}

// String renders k for error messages and logs. A non-empty key made only
// of printable ASCII (0x20 to 0x7e) is shown as that text; any other key,
// including the empty one, is shown as "0x" followed by its bytes in hex.
// The rendering is meant for people: the text form of one key can look
// like the hex form of another.
func (k Key) String() string {
	if len(k) > 0 && isPrintableASCII(k) {
		return string(k)
	}
	buf := make([]byte, 2+hex.EncodedLen(len(k)))
	buf[0], buf[1] = '0', 'x'
	hex.Encode(buf[2:], k)
	return string(buf)
}

func isPrintableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
