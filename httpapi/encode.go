package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/strata-db/strata"
)

// objectEncoder encodes objects with encoding/json, reusing its buffer.
// Not safe for concurrent use.
type objectEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newObjectEncoder() *objectEncoder {
	e := &objectEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// encode returns obj's JSON, valid until the next call.
func (e *objectEncoder) encode(obj any) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}), nil
}

// appendObject appends the JSON of an Object (kind "") or of an Event of
// an object: the fields in Object's and Event's order, the object's JSON
// as it is, or, if encoding it failed, null and the error.
func appendObject(dst []byte, kind EventKind, rev strata.Revision, key string, obj []byte, encErr error) []byte {
	dst = append(dst, '{')
	if kind != "" {
		dst = append(dst, `"kind":"`...)
		dst = append(dst, kind...)
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"rev":`...)
	dst = strconv.AppendUint(dst, rev, 10)
	dst = append(dst, `,"key":`...)
	dst = appendJSONString(dst, key)
	dst = append(dst, `,"obj":`...)
	if encErr != nil {
		dst = append(dst, `null,"error":`...)
		dst = appendJSONString(dst, encErr.Error())
	} else {
		dst = append(dst, obj...)
	}
	return append(dst, '}')
}

// appendBookmark appends the JSON of a bookmark Event.
func appendBookmark(dst []byte, rev strata.Revision) []byte {
	dst = append(dst, `{"kind":"bookmark","rev":`...)
	dst = strconv.AppendUint(dst, rev, 10)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028
// and U+2029 escaped so that the text is also safe inside JavaScript.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// jsonMarshal is json.Marshal without HTML escaping.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
