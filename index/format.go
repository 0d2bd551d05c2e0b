package index

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// format decodes k with decode and renders the value with text.
func format[T any](k Key, decode func(Key) (T, error), text func(T) string) (string, error) {
	v, err := decode(k)
	if err != nil {
		return "", err
	}
	return text(v), nil
}

func formatUint[T uint8 | uint16 | uint32 | uint64 | uint](v T) string {
	return strconv.FormatUint(uint64(v), 10)
}

func formatInt[T int8 | int16 | int32 | int64 | int](v T) string {
	return strconv.FormatInt(int64(v), 10)
}

// FormatUint8 renders a Uint8 key in base 10.
func FormatUint8(k Key) (string, error) { return format(k, DecodeUint8, formatUint) }

// FormatUint16 renders a Uint16 key in base 10.
func FormatUint16(k Key) (string, error) { return format(k, DecodeUint16, formatUint) }

// FormatUint32 renders a Uint32 key in base 10.
func FormatUint32(k Key) (string, error) { return format(k, DecodeUint32, formatUint) }

// FormatUint64 renders a Uint64 key in base 10.
func FormatUint64(k Key) (string, error) { return format(k, DecodeUint64, formatUint) }

// FormatUint renders a Uint key in base 10.
func FormatUint(k Key) (string, error) { return format(k, DecodeUint, formatUint) }

// FormatInt8 renders an Int8 key in base 10.
func FormatInt8(k Key) (string, error) { return format(k, DecodeInt8, formatInt) }

// FormatInt16 renders an Int16 key in base 10.
func FormatInt16(k Key) (string, error) { return format(k, DecodeInt16, formatInt) }

// FormatInt32 renders an Int32 key in base 10.
func FormatInt32(k Key) (string, error) { return format(k, DecodeInt32, formatInt) }

// FormatInt64 renders an Int64 key in base 10.
func FormatInt64(k Key) (string, error) { return format(k, DecodeInt64, formatInt) }

// FormatInt renders an Int key in base 10.
func FormatInt(k Key) (string, error) { return format(k, DecodeInt, formatInt) }

// FormatFloat64 renders a Float64 key in the shortest text that
// Float64String reads back to it ("NaN" and "+Inf" included).
func FormatFloat64(k Key) (string, error) {
	return format(k, DecodeFloat64, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

// FormatBool renders a Bool key as "true" or "false".
func FormatBool(k Key) (string, error) { return format(k, DecodeBool, strconv.FormatBool) }

// FormatString renders a String key as its string. It never fails.
func FormatString(k Key) (string, error) { return string(k), nil }

// FormatBytes renders a Bytes key as "0x" followed by its bytes in
// lower-case hexadecimal. It never fails.
func FormatBytes(k Key) (string, error) { return "0x" + hex.EncodeToString(k), nil }

// FormatTime renders a Time key as an RFC 3339 time in UTC, with as many
// fractional digits as it needs. A time before year 0 or after year 9999
// has no RFC 3339 form: the error wraps ErrNoTextForm.
func FormatTime(k Key) (string, error) {
	t, err := DecodeTime(k)
	if err != nil {
		return "", err
	}
	b, err := t.MarshalText()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoTextForm, err)
	}
	return string(b), nil
}

// FormatNetIPAddr renders a NetIPAddr key as netip.Addr.String does, and
// the key of the zero Addr as the empty text.
func FormatNetIPAddr(k Key) (string, error) {
	a, err := DecodeNetIPAddr(k)
	if err != nil {
		return "", err
	}
	b, _ := a.MarshalText() // never fails
	return string(b), nil
}

// FormatNetIPPrefix renders a NetIPPrefix key as netip.Prefix.String
// does, host bits included, and the key of the zero Prefix as the empty
// text. An invalid Prefix that carries an address (an out-of-range
// length given to netip.PrefixFrom) has no text form: the error wraps
// ErrNoTextForm.
func FormatNetIPPrefix(k Key) (string, error) {
	p, err := DecodeNetIPPrefix(k)
	if err != nil {
		return "", err
	}
	if !p.IsValid() && p != (netip.Prefix{}) {
		return "", fmt.Errorf("%w: invalid prefix of %v", ErrNoTextForm, p.Addr())
	}
	b, _ := p.MarshalText() // never fails
	return string(b), nil
}

// CompositeFormatter returns a formatter of composite keys, the inverse
// of CompositeParser(sep, parsers...) when each formatter is the inverse
// of the parser in its position: it splits the key into its parts,
// renders part i with parts[i] and joins the texts with sep. A key of
// fewer parts than formatters (a CompositePrefix) renders as the parts
// it has.
//
// Its error wraps ErrMalformedKey if the key is not a composite of at
// most len(parts) parts, or a part's formatter's error. It wraps
// ErrNoTextForm if the text would not parse back: a key of no parts, or
// a part other than the last formatter's whose text contains sep.
// CompositeFormatter panics if sep is empty or no part is given.
func CompositeFormatter(sep string, parts ...func(Key) (string, error)) func(Key) (string, error) {
	if sep == "" || len(parts) == 0 {
		panic("index: CompositeFormatter needs a separator and at least one part")
	}
	return func(k Key) (string, error) {
		keys, err := SplitComposite(k)
		switch {
		case err != nil:
			return "", err
		case len(keys) > len(parts):
			return "", fmt.Errorf("%w: composite of %d parts, want at most %d", ErrMalformedKey, len(keys), len(parts))
		case len(keys) == 0:
			return "", fmt.Errorf("%w: composite of no parts", ErrNoTextForm)
		}
		var b strings.Builder
		for i, part := range keys {
			text, err := parts[i](part)
			if err != nil {
				return "", fmt.Errorf("composite part %d: %w", i, err)
			}
			if i < len(parts)-1 && strings.Contains(text, sep) {
				return "", fmt.Errorf("%w: composite part %d %q contains the separator %q", ErrNoTextForm, i, text, sep)
			}
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(text)
		}
		return b.String(), nil
	}
}
