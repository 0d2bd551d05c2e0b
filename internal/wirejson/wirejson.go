// Package wirejson is the one home of the JSON that Strata writes for
// other programs to read (the HTTP API's objects and events, the strata
// command's output, WriteJSON, the mirror's comparisons): encoding/json's
// output without HTML escaping (so that "<" stays "<"), with no trailing
// newline, and a fast appender for strings that writes the same bytes.
package wirejson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Encoder encodes values as JSON without HTML escaping, reusing one
// buffer. Not safe for concurrent use.
type Encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder {
	e := &Encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// Encode returns v's JSON, without a trailing newline. The bytes are
// valid until the next call.
func (e *Encoder) Encode(v any) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}), nil
}

// Marshal returns v's JSON as Encoder writes it, in a slice of its own.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends v's JSON, as Encoder writes it, to dst.
func Append(dst []byte, v any) ([]byte, error) {
	b, err := NewEncoder().Encode(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// AppendString appends s as a JSON string, byte for byte as Encoder writes
// a string: quotes, backslashes and control characters escaped (\n, \r,
// \t, \b, \f, else \u00XX), invalid UTF-8 replaced by \ufffd, and U+2028 and
// U+2029 escaped so that the text is also safe inside JavaScript. It
// copies runs of plain bytes at once and does not allocate beyond dst.
func AppendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
