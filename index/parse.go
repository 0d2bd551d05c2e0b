package index

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// parseError wraps a parser's cause with ErrParseKey and the type it
// parsed.
func parseError(typ string, err error) error {
	return fmt.Errorf("%w as %s: %w", ErrParseKey, typ, err)
}

func parseUint(s string, bits int, typ string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, parseError(typ, err)
	}
	return v, nil
}

func parseInt(s string, bits int, typ string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, parseError(typ, err)
	}
	return v, nil
}

// Uint8String parses s as a base-10 uint8 and encodes it with Uint8.
func Uint8String(s string) (Key, error) {
	v, err := parseUint(s, 8, "uint8")
	return Uint8(uint8(v)), err
}

// Uint16String parses s as a base-10 uint16 and encodes it with Uint16.
func Uint16String(s string) (Key, error) {
	v, err := parseUint(s, 16, "uint16")
	return Uint16(uint16(v)), err
}

// Uint32String parses s as a base-10 uint32 and encodes it with Uint32.
func Uint32String(s string) (Key, error) {
	v, err := parseUint(s, 32, "uint32")
	return Uint32(uint32(v)), err
}

// Uint64String parses s as a base-10 uint64 and encodes it with Uint64.
func Uint64String(s string) (Key, error) {
	v, err := parseUint(s, 64, "uint64")
	return Uint64(v), err
}

// UintString parses s as a base-10 uint and encodes it with Uint.
func UintString(s string) (Key, error) {
	v, err := parseUint(s, strconv.IntSize, "uint")
	return Uint(uint(v)), err
}

// Int8String parses s as a base-10 int8 and encodes it with Int8.
func Int8String(s string) (Key, error) {
	v, err := parseInt(s, 8, "int8")
	return Int8(int8(v)), err
}

// Int16String parses s as a base-10 int16 and encodes it with Int16.
func Int16String(s string) (Key, error) {
	v, err := parseInt(s, 16, "int16")
	return Int16(int16(v)), err
}

// Int32String parses s as a base-10 int32 and encodes it with Int32.
func Int32String(s string) (Key, error) {
	v, err := parseInt(s, 32, "int32")
	return Int32(int32(v)), err
}

// Int64String parses s as a base-10 int64 and encodes it with Int64.
func Int64String(s string) (Key, error) {
	v, err := parseInt(s, 64, "int64")
	return Int64(v), err
}

// IntString parses s as a base-10 int and encodes it with Int.
func IntString(s string) (Key, error) {
	v, err := parseInt(s, strconv.IntSize, "int")
	return Int(int(v)), err
}

// Float64String parses s with strconv.ParseFloat and encodes it with
// Float64.
func Float64String(s string) (Key, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, parseError("float64", err)
	}
	return Float64(v), nil
}

// BoolString parses s with strconv.ParseBool and encodes it with Bool.
func BoolString(s string) (Key, error) {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return nil, parseError("bool", err)
	}
	return Bool(v), nil
}

// FromString encodes s with String: the text is the string. It never
// fails. (The name is statedb's, so that an index's FromString reads
// FromString: index.FromString.)
func FromString(s string) (Key, error) { return String(s), nil }

// BytesString parses s as hexadecimal, with or without a leading "0x",
// and encodes the bytes with Bytes.
func BytesString(s string) (Key, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		return nil, parseError("hex bytes", err)
	}
	return Key(b), nil
}

// TimeString parses s as an RFC 3339 time, with optional fractional
// seconds (time.RFC3339Nano), and encodes it with Time.
func TimeString(s string) (Key, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, parseError("RFC 3339 time", err)
	}
	return Time(t), nil
}

// NetIPAddrString parses s with netip.ParseAddr, or the empty text as the
// zero Addr, and encodes it with NetIPAddr.
func NetIPAddrString(s string) (Key, error) {
	var a netip.Addr
	if err := a.UnmarshalText([]byte(s)); err != nil {
		return nil, parseError("IP address", err)
	}
	return NetIPAddr(a), nil
}

// NetIPPrefixString parses s with netip.ParsePrefix, or the empty text as
// the zero Prefix, and encodes it with NetIPPrefix. Host bits are kept:
// "10.1.2.3/8" and "10.0.0.0/8" are different keys (see NetIPPrefix).
func NetIPPrefixString(s string) (Key, error) {
	var p netip.Prefix
	if err := p.UnmarshalText([]byte(s)); err != nil {
		return nil, parseError("IP prefix", err)
	}
	return NetIPPrefix(p), nil
}

// CompositeParser returns a parser of composite keys typed as the texts
// of their parts joined by sep, such as "eu-west/7" for
// Composite(String("eu-west"), Int64(7)) with sep "/" and parts
// FromString and Int64String. The text is cut at the first len(parts)-1
// separators, so only the last part's text may contain sep. Text with
// fewer parts gives the CompositePrefix of the parts it has, for prefix
// queries: "eu-west" gives CompositePrefix(String("eu-west")).
//
// The parser's errors wrap ErrParseKey and name the part that failed.
// CompositeParser panics if sep is empty or no part is given: that is a
// mistake in the index definition.
func CompositeParser(sep string, parts ...func(string) (Key, error)) func(string) (Key, error) {
	if sep == "" || len(parts) == 0 {
		panic("index: CompositeParser needs a separator and at least one part")
	}
	return func(s string) (Key, error) {
		texts := strings.SplitN(s, sep, len(parts))
		keys := make([]Key, len(texts))
		for i, text := range texts {
			k, err := parts[i](text)
			if err != nil {
				return nil, fmt.Errorf("composite part %d: %w", i, wrapParse(err))
			}
			keys[i] = k
		}
		return Composite(keys...), nil
	}
}

// wrapParse makes sure a part parser's error wraps ErrParseKey, whoever
// wrote the parser.
func wrapParse(err error) error {
	if errors.Is(err, ErrParseKey) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrParseKey, err)
}
