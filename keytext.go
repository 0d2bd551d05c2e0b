package strata

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/index"
)

// Keys as text: the defaults of Index.FromString and Index.ToString, for
// an index whose Key type has a text form of its own.
//
// The text form of a key type K is its encoding.TextUnmarshaler (and
// TextMarshaler, to render) when *K implements it, as time.Time,
// netip.Addr and netip.Prefix do; otherwise, for K of a basic kind, named
// or not, what package strconv reads and writes (base-10 integers, floats,
// bools, the string itself), and hexadecimal for byte slices. The default
// parser reads the text into a K and encodes it with the index's FromKey,
// so it is right whatever encoding FromKey uses.
//
// Rendering must go the other way, from the key's bytes to a K, and
// nothing says which encoding made them. The default renderer tries the
// decoders of package index that fit K (for an integer type, the signed
// and unsigned ones of the key's width), renders each candidate and
// accepts it only if that text, parsed and encoded with FromKey, gives
// back the very key: so the text it shows denotes the key, or it shows
// none and the caller falls back to index.Key.String. None of this is on
// a hot path: it serves tools and error messages.

// parseKeyText reads s as a K in K's text form. ok is false if K has none.
func parseKeyText[K any](s string) (k K, ok bool, err error) {
	if u, isText := any(&k).(encoding.TextUnmarshaler); isText {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			var zero K
			return zero, true, keyTextError[K](err)
		}
		return k, true, nil
	}
	v := reflect.ValueOf(&k).Elem()
	t := v.Type()
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		var b bool
		b, err = strconv.ParseBool(s)
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		n, err = strconv.ParseInt(s, 10, t.Bits())
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		n, err = strconv.ParseUint(s, 10, t.Bits())
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		var f float64
		f, err = strconv.ParseFloat(s, t.Bits())
		v.SetFloat(f)
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 {
			return k, false, nil
		}
		var b []byte
		b, err = hex.DecodeString(strings.TrimPrefix(s, "0x"))
		v.SetBytes(b)
	default:
		return k, false, nil
	}
	if err != nil {
		var zero K
		return zero, true, keyTextError[K](err)
	}
	return k, true, nil
}

func keyTextError[K any](err error) error {
	return fmt.Errorf("%w as %v: %w", index.ErrParseKey, reflect.TypeFor[K](), err)
}

// hasKeyText reports whether K has a text form that parseKeyText reads,
// without calling any of K's methods.
func hasKeyText[K any]() bool {
	t := reflect.TypeFor[K]()
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8
	}
	return false
}

// formatKeyText renders k in K's text form. ok is false if K has none or
// k cannot be written in it.
func formatKeyText[K any](k K) (string, bool) {
	if _, isText := any(&k).(encoding.TextUnmarshaler); isText {
		m, ok := any(k).(encoding.TextMarshaler)
		if !ok {
			return "", false
		}
		b, err := m.MarshalText()
		return string(b), err == nil
	}
	v := reflect.ValueOf(&k).Elem()
	switch t := v.Type(); t.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, t.Bits()), true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "0x" + hex.EncodeToString(v.Bytes()), true
		}
	}
	return "", false
}

// keyCandidates calls try with each value of K that one of package
// index's decoders reads from key, until try returns false.
func keyCandidates[K any](key index.Key, try func(K) bool) {
	var k K
	switch p := any(&k).(type) {
	case *time.Time:
		if t, err := index.DecodeTime(key); err == nil {
			*p = t
			try(k)
		}
		return
	case *netip.Addr:
		if a, err := index.DecodeNetIPAddr(key); err == nil {
			*p = a
			try(k)
		}
		return
	case *netip.Prefix:
		if pfx, err := index.DecodeNetIPPrefix(key); err == nil {
			*p = pfx
			try(k)
		}
		return
	}
	v := reflect.ValueOf(&k).Elem()
	switch t := v.Type(); t.Kind() {
	case reflect.String:
		v.SetString(string(key))
		try(k)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes(bytes.Clone(key))
			try(k)
		}
	case reflect.Bool:
		if b, err := index.DecodeBool(key); err == nil {
			v.SetBool(b)
			try(k)
		}
	case reflect.Float32, reflect.Float64:
		if f, err := index.DecodeFloat64(key); err == nil {
			v.SetFloat(f)
			try(k)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		signed, unsigned, ok := intCandidates(key)
		if !ok {
			return
		}
		// SetInt truncates to K's width, as the conversion FromKey's
		// author wrote would (index.Uint8(uint8(v)) for an int8 v).
		v.SetInt(signed)
		if try(k) {
			v.SetInt(int64(unsigned))
			try(k)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		signed, unsigned, ok := intCandidates(key)
		if !ok {
			return
		}
		v.SetUint(unsigned)
		if try(k) {
			v.SetUint(uint64(signed))
			try(k)
		}
	}
}

// intCandidates reads a key of 1, 2, 4 or 8 bytes as the integer the
// signed encoders (index.Int8 to Int64) and the unsigned ones (Uint8 to
// Uint64) of that width would have made it from.
func intCandidates(key index.Key) (signed int64, unsigned uint64, ok bool) {
	var buf [8]byte
	switch n := len(key); n {
	case 1, 2, 4, 8:
		copy(buf[8-n:], key)
		unsigned = binary.BigEndian.Uint64(buf[:])
		shift := 64 - 8*n
		// Flip the sign bit of the width, then sign-extend.
		signed = int64((unsigned^1<<(8*n-1))<<shift) >> shift
		return signed, unsigned, true
	}
	return 0, 0, false
}

// defaultKeyString renders key as K's text, if some decoded candidate's
// text parses and encodes with fromKey to key itself.
func defaultKeyString[K any](fromKey func(K) index.Key, key index.Key) (text string, ok bool) {
	if fromKey == nil {
		return "", false
	}
	keyCandidates(key, func(v K) bool {
		s, canWrite := formatKeyText(v)
		if !canWrite {
			return true
		}
		back, _, err := parseKeyText[K](s)
		if err != nil || !bytes.Equal(fromKey(back), key) {
			return true
		}
		text, ok = s, true
		return false
	})
	return text, ok
}
