package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// fixedLen checks that a key of the named encoder has its n bytes.
func fixedLen(k Key, n int, typ string) error {
	if len(k) != n {
		return fmt.Errorf("%w: %s key of %d bytes, want %d", ErrMalformedKey, typ, len(k), n)
	}
	return nil
}

// DecodeUint8 returns the value of a Uint8 key.
func DecodeUint8(k Key) (uint8, error) {
	if err := fixedLen(k, 1, "Uint8"); err != nil {
		return 0, err
	}
	return k[0], nil
}

// DecodeUint16 returns the value of a Uint16 key.
func DecodeUint16(k Key) (uint16, error) {
	if err := fixedLen(k, 2, "Uint16"); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(k), nil
}

// DecodeUint32 returns the value of a Uint32 key.
func DecodeUint32(k Key) (uint32, error) {
	if err := fixedLen(k, 4, "Uint32"); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(k), nil
}

// DecodeUint64 returns the value of a Uint64 key.
func DecodeUint64(k Key) (uint64, error) {
	if err := fixedLen(k, 8, "Uint64"); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(k), nil
}

// DecodeUint returns the value of a Uint key. On a platform with 32-bit
// ints, a key of a larger value is malformed.
func DecodeUint(k Key) (uint, error) {
	v, err := DecodeUint64(k)
	if err == nil && uint64(uint(v)) != v {
		return 0, fmt.Errorf("%w: %d overflows uint", ErrMalformedKey, v)
	}
	return uint(v), err
}

// DecodeInt8 returns the value of an Int8 key.
func DecodeInt8(k Key) (int8, error) {
	if err := fixedLen(k, 1, "Int8"); err != nil {
		return 0, err
	}
	return int8(k[0] ^ 0x80), nil
}

// DecodeInt16 returns the value of an Int16 key.
func DecodeInt16(k Key) (int16, error) {
	if err := fixedLen(k, 2, "Int16"); err != nil {
		return 0, err
	}
	return int16(binary.BigEndian.Uint16(k) ^ (1 << 15)), nil
}

// DecodeInt32 returns the value of an Int32 key.
func DecodeInt32(k Key) (int32, error) {
	if err := fixedLen(k, 4, "Int32"); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(k) ^ (1 << 31)), nil
}

// DecodeInt64 returns the value of an Int64 key.
func DecodeInt64(k Key) (int64, error) {
	if err := fixedLen(k, 8, "Int64"); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)), nil
}

// DecodeInt returns the value of an Int key. On a platform with 32-bit
// ints, a key of a value out of int's range is malformed.
func DecodeInt(k Key) (int, error) {
	v, err := DecodeInt64(k)
	if err == nil && int64(int(v)) != v {
		return 0, fmt.Errorf("%w: %d overflows int", ErrMalformedKey, v)
	}
	return int(v), err
}

// DecodeFloat64 returns the value of a Float64 key: +0 for the key of
// both zeros, and a NaN for the key of every NaN. The 8-byte keys that
// Float64 never makes (those of a NaN other than the one NaN key, and of
// -0) are malformed.
func DecodeFloat64(k Key) (float64, error) {
	if err := fixedLen(k, 8, "Float64"); err != nil {
		return 0, err
	}
	bits := binary.BigEndian.Uint64(k)
	var v float64
	switch {
	case bits == nanKey:
		return math.NaN(), nil
	case bits&(1<<63) != 0:
		v = math.Float64frombits(bits &^ (1 << 63))
	default:
		v = math.Float64frombits(^bits)
	}
	if float64Bits(v) != bits {
		return 0, fmt.Errorf("%w: Float64 never makes the key %#016x", ErrMalformedKey, bits)
	}
	return v, nil
}

// DecodeBool returns the value of a Bool key.
func DecodeBool(k Key) (bool, error) {
	if err := fixedLen(k, 1, "Bool"); err != nil {
		return false, err
	}
	switch k[0] {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, fmt.Errorf("%w: Bool key 0x%02x", ErrMalformedKey, k[0])
}

// DecodeString returns the string of a String key. It never fails.
func DecodeString(k Key) (string, error) { return string(k), nil }

// DecodeBytes returns a copy of the bytes of a Bytes key. It never fails.
func DecodeBytes(k Key) ([]byte, error) { return bytes.Clone(k), nil }

// DecodeTime returns the instant of a Time key, in UTC.
func DecodeTime(k Key) (time.Time, error) {
	if err := fixedLen(k, timeKeyLen, "Time"); err != nil {
		return time.Time{}, err
	}
	sec := int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
	nsec := binary.BigEndian.Uint32(k[8:])
	if nsec >= 1e9 {
		return time.Time{}, fmt.Errorf("%w: Time key with %d nanoseconds", ErrMalformedKey, nsec)
	}
	// The inverse of AppendTime's wrapping addition: time.Unix adds
	// unixToInternal back, wrapping the same way.
	return time.Unix(sec-unixToInternal, int64(nsec)).UTC(), nil
}

// DecodeNetIPAddr returns the address of a NetIPAddr key, with its zone.
func DecodeNetIPAddr(k Key) (netip.Addr, error) {
	a, n, err := decodeAddr(k, true)
	if err == nil && n != len(k) {
		err = fmt.Errorf("%w: %d bytes after a NetIPAddr key", ErrMalformedKey, len(k)-n)
	}
	return a, err
}

// decodeAddr decodes the NetIPAddr key at the start of k and returns its
// length. An IPv6 key takes the rest of k as its zone when zone is set,
// and has no zone otherwise.
func decodeAddr(k Key, zone bool) (netip.Addr, int, error) {
	if len(k) == 0 {
		return netip.Addr{}, 0, fmt.Errorf("%w: empty NetIPAddr key", ErrMalformedKey)
	}
	switch k[0] {
	case tagInvalidAddr:
		return netip.Addr{}, 1, nil
	case tagIPv4:
		if len(k) >= 5 {
			return netip.AddrFrom4([4]byte(k[1:5])), 5, nil
		}
	case tagIPv6:
		if len(k) >= 17 {
			a := netip.AddrFrom16([16]byte(k[1:17]))
			if !zone {
				return a, 17, nil
			}
			return a.WithZone(string(k[17:])), len(k), nil
		}
	default:
		return netip.Addr{}, 0, fmt.Errorf("%w: NetIPAddr family tag 0x%02x", ErrMalformedKey, k[0])
	}
	return netip.Addr{}, 0, fmt.Errorf("%w: NetIPAddr key of %d bytes", ErrMalformedKey, len(k))
}

// DecodeNetIPPrefix returns the prefix of a NetIPPrefix key, host bits
// included.
func DecodeNetIPPrefix(k Key) (netip.Prefix, error) {
	// The key is the masked address, Bits()+1, the address. The masked
	// address has no zone, so its length is known from its tag.
	_, n, err := decodeAddr(k, false)
	if err == nil && n == len(k) {
		err = fmt.Errorf("%w: NetIPPrefix key without its length", ErrMalformedKey)
	}
	if err != nil {
		return netip.Prefix{}, err
	}
	a, err := DecodeNetIPAddr(k[n+1:])
	if err != nil {
		return netip.Prefix{}, err
	}
	p := netip.PrefixFrom(a, int(k[n])-1)
	if !bytes.Equal(AppendNetIPPrefix(nil, p), k) {
		return netip.Prefix{}, fmt.Errorf("%w: NetIPPrefix never makes the key %x", ErrMalformedKey, []byte(k))
	}
	return p, nil
}
