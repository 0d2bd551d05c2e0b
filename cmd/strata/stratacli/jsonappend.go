package stratacli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The JSON of output rows is appended by hand: encoding/json costs an
// encoder and reflection per value, which made a dump of a snapshot
// forty times slower than reading it (BenchmarkSnapshotRead). The row
// writers append into one reused buffer, without allocating per row for
// the kinds of value rows hold.

// hexBytes is a value written as a JSON string of its bytes in hex.
type hexBytes []byte

// MarshalJSON writes the hex string (for encoding/json's callers).
func (h hexBytes) MarshalJSON() ([]byte, error) { return appendJSONValue(nil, h) }

// MarshalJSON writes the members in order.
func (fs fields) MarshalJSON() ([]byte, error) { return fs.appendJSON(nil) }

// appendJSON appends the JSON object of the members, in order.
func (fs fields) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	var err error
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.name)
		b = append(b, ':')
		if b, err = appendJSONValue(b, f.value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONValue appends v as JSON: the kinds rows hold by hand, anything
// else through encoding/json (without escaping HTML characters).
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *json.RawMessage:
		return appendRaw(b, *x), nil
	case *string:
		return appendJSONString(b, *x), nil
	case *uint64:
		return strconv.AppendUint(b, *x, 10), nil
	case *uint32:
		return strconv.AppendUint(b, uint64(*x), 10), nil
	case *hexBytes:
		return appendHex(b, *x), nil
	case json.RawMessage:
		return appendRaw(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case hexBytes:
		return appendHex(b, x), nil
	case fields:
		return x.appendJSON(b)
	case nil:
		return append(b, "null"...), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it
// without HTML escaping: control characters, quotes and backslashes
// escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			switch r {
			case utf8.RuneError:
				b = append(b, `\ufffd`...)
			default:
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// deref returns the value a row's field points to, for the kinds of
// pointer rows hold (view.row), or v.
func deref(v any) any {
	switch x := v.(type) {
	case *json.RawMessage:
		return *x
	case *string:
		return *x
	case *uint64:
		return *x
	case *uint32:
		return *x
	case *hexBytes:
		return *x
	}
	return v
}

// appendRaw appends JSON that is already encoded, null if there is none.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendHex appends the bytes as a JSON string of hex digits.
func appendHex(b []byte, h hexBytes) []byte {
	b = append(b, '"')
	b = hex.AppendEncode(b, h)
	return append(b, '"')
}
