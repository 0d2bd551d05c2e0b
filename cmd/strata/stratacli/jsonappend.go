package stratacli

import (
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/strata-db/strata/internal/wirejson"
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
		b = wirejson.AppendString(b, f.name)
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
		return wirejson.AppendString(b, *x), nil
	case *uint64:
		return strconv.AppendUint(b, *x, 10), nil
	case *uint32:
		return strconv.AppendUint(b, uint64(*x), 10), nil
	case *hexBytes:
		return appendHex(b, *x), nil
	case json.RawMessage:
		return appendRaw(b, x), nil
	case tableObject:
		return appendRaw(b, x.raw), nil
	case string:
		return wirejson.AppendString(b, x), nil
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
	return wirejson.Append(b, v)
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
