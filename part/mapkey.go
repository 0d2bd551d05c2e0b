package part

import (
	"encoding/binary"
	"reflect"
	"strconv"
	"unsafe"
)

// MapKey is the set of types that can be the keys of a Map and the elements
// of a Set: strings and integers of every width, including named types with
// one of these underlying types (such as `type Label string`).
//
// Keys are stored in the tree under an order-preserving encoding, so Map and
// Set iterate in the natural order of their keys: strings byte-wise (as Go's
// < orders them), integers numerically, negative before positive. Floats and
// booleans are not keys: NaN has no place in an order, and a set of two
// booleans needs no tree.
type MapKey interface {
	~string |
		~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// keyCodec says how the keys of one MapKey type are encoded: as their string
// bytes, or as a big-endian integer of a given width whose sign bit, for
// signed types, is flipped so that negatives sort first. It is worked out
// once, by reflection, when a collection gets its first element, and is then
// carried by every version derived from it, so that Get, Set, Has and the
// rest never reflect. The zero keyCodec means "not yet worked out", which
// only the zero Map and the zero Set have.
type keyCodec uint8

const (
	codecWidth  keyCodec = 0x0f // byte width of an integer key: 1, 2, 4 or 8
	codecSigned keyCodec = 0x10 // the integer type is signed
	codecString keyCodec = 0x20 // the key is a string; no width
)

// codecFor works out the keyCodec of K. It is the only place that reflects.
func codecFor[K MapKey]() keyCodec {
	t := reflect.TypeFor[K]()
	switch t.Kind() {
	case reflect.String:
		return codecString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return keyCodec(t.Size()) | codecSigned
	default:
		return keyCodec(t.Size())
	}
}

func (c keyCodec) width() int { return int(c & codecWidth) }

// keyString reinterprets a string-kinded key as a string.
func keyString[K MapKey](k *K) string { return *(*string)(unsafe.Pointer(k)) }

// keyBits returns the bits of an integer key, zero-extended to 64 bits.
func keyBits[K MapKey](c keyCodec, k *K) uint64 {
	p := unsafe.Pointer(k)
	switch c.width() {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	default:
		return *(*uint64)(p)
	}
}

// setKeyBits stores the low bits of u into an integer key.
func setKeyBits[K MapKey](c keyCodec, k *K, u uint64) {
	p := unsafe.Pointer(k)
	switch c.width() {
	case 1:
		*(*uint8)(p) = uint8(u)
	case 2:
		*(*uint16)(p) = uint16(u)
	case 4:
		*(*uint32)(p) = uint32(u)
	default:
		*(*uint64)(p) = u
	}
}

// encodeKey returns the tree key of k. For a string key the result aliases
// the string's bytes, and for an integer key it aliases buf, so it is only
// good for reads and for Txn.Insert, which copies the key; it must not be
// modified.
func encodeKey[K MapKey](c keyCodec, k K, buf *[8]byte) []byte {
	if c&codecString != 0 {
		s := keyString(&k)
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	w := c.width()
	u := keyBits(c, &k)
	if c&codecSigned != 0 {
		u ^= 1 << (w*8 - 1)
	}
	binary.BigEndian.PutUint64(buf[:], u<<(64-w*8))
	return buf[:w]
}

// formatKey returns k as text: a string key as it is, an integer key in
// decimal. This is the form of the keys of a Map marshalled as a JSON object.
func formatKey[K MapKey](c keyCodec, k K) string {
	if c&codecString != 0 {
		return keyString(&k)
	}
	u := keyBits(c, &k)
	if c&codecSigned != 0 {
		shift := 64 - c.width()*8
		return strconv.FormatInt(int64(u<<shift)>>shift, 10)
	}
	return strconv.FormatUint(u, 10)
}

// parseKey is the inverse of formatKey. It fails with an error wrapping
// strconv.ErrSyntax or strconv.ErrRange when s is not a decimal integer that
// fits K.
func parseKey[K MapKey](c keyCodec, s string) (k K, err error) {
	if c&codecString != 0 {
		*(*string)(unsafe.Pointer(&k)) = s
		return k, nil
	}
	var u uint64
	if c&codecSigned != 0 {
		var i int64
		i, err = strconv.ParseInt(s, 10, c.width()*8)
		u = uint64(i)
	} else {
		u, err = strconv.ParseUint(s, 10, c.width()*8)
	}
	if err != nil {
		return k, err
	}
	setKeyBits(c, &k, u)
	return k, nil
}
