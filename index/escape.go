package index

import (
	"bytes"
	"fmt"
	"slices"
)

// The escaping scheme: a 0x00 byte inside a key is written as 0x00 0xff,
// and the escaped key ends with the terminator 0x00 0x01. Every other
// byte is written as is. Since 0x01 < 0xff and any byte other than 0x00
// is > 0x00, an escaped key that ends sorts before every longer key it
// is a prefix of, which is what keeps the order.
const (
	escapeByte  = 0x00 // starts an escape pair or the terminator
	escapedZero = 0xff // 0x00 0xff stands for a 0x00 of the key
	terminator  = 0x01 // 0x00 0x01 ends an escaped key
)

var zeroByte = []byte{escapeByte}

// AppendEscaped appends k to dst in escaped form: every 0x00 byte of k
// becomes 0x00 0xff, and the terminator 0x00 0x01 follows.
//
// Escaped keys keep the order of their sources,
// bytes.Compare(esc(a), esc(b)) == bytes.Compare(a, b), and are
// prefix-free: no escaped key is a proper prefix of another. So escaped
// keys can be concatenated (Composite) and a non-unique secondary key can
// be followed by a primary key without two entries colliding.
func AppendEscaped(dst []byte, k []byte) []byte {
	dst = slices.Grow(dst, len(k)+2)
	dst = AppendEscapedPrefix(dst, k)
	return append(dst, escapeByte, terminator)
}

// AppendEscapedPrefix appends p to dst escaped as AppendEscaped does but
// without the terminator. If p is a prefix of k, the result is a prefix
// of the escaped form of k. A prefix scan for it therefore finds every
// escaped key whose source starts with p; appended to a CompositePrefix,
// it finds every composite whose next part starts with p.
func AppendEscapedPrefix(dst []byte, p []byte) []byte {
	i := bytes.IndexByte(p, escapeByte)
	if i < 0 {
		return append(dst, p...)
	}
	// Keys with a 0x00 tend to have many (fixed-width integers): copy the
	// rest byte by byte rather than searching for each one.
	dst = append(dst, p[:i]...)
	for _, c := range p[i:] {
		if c == escapeByte {
			dst = append(dst, escapeByte, escapedZero)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// UnescapeNext decodes the escaped key at the start of b, as written by
// AppendEscaped, and returns it together with the bytes after its
// terminator. When the key contains no escaped 0x00, the returned key
// shares memory with b (its capacity is clipped, so appending to it does
// not overwrite b); otherwise it is a new slice.
//
// If b does not start with a well-formed escaped key (no terminator, or
// 0x00 followed by a byte other than 0xff or 0x01), UnescapeNext returns
// nil, nil and an error wrapping ErrMalformedKey. It never panics.
func UnescapeNext(b []byte) (key []byte, rest []byte, err error) {
	var out []byte // nil until the first escaped 0x00 forces a copy
	pos := 0
	for {
		i := bytes.IndexByte(b[pos:], escapeByte)
		if i < 0 || pos+i+1 >= len(b) {
			return nil, nil, fmt.Errorf("%w: missing terminator", ErrMalformedKey)
		}
		j := pos + i
		switch b[j+1] {
		case terminator:
			if out == nil {
				return b[:j:j], b[j+2:], nil
			}
			return append(out, b[pos:j]...), b[j+2:], nil
		case escapedZero:
			out = append(out, b[pos:j+1]...) // up to and including the 0x00
			pos = j + 2
		default:
			return nil, nil, fmt.Errorf("%w: byte 0x%02x after 0x00 at offset %d", ErrMalformedKey, b[j+1], j+1)
		}
	}
}

// escapeTail escapes buf[start:] in place, as AppendEscaped would, and
// appends the terminator. It lets Builder encode a value straight into
// its buffer and escape it there, without a scratch buffer.
func escapeTail(buf []byte, start int) []byte {
	zeros := bytes.Count(buf[start:], zeroByte)
	end := len(buf)
	buf = slices.Grow(buf, zeros+2)[:end+zeros+2]
	w := end + zeros
	buf[w], buf[w+1] = escapeByte, terminator
	// Move bytes right from the end, opening a gap after each 0x00. Once
	// every 0x00 is passed the gap is closed and the rest stays put.
	for r := end - 1; zeros > 0; r-- {
		if c := buf[r]; c == escapeByte {
			w -= 2
			buf[w], buf[w+1] = escapeByte, escapedZero
			zeros--
		} else {
			w--
			buf[w] = c
		}
	}
	return buf
}
