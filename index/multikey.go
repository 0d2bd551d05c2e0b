package index

import (
	"fmt"
	"iter"
	"reflect"
	"unsafe"

	"github.com/strata-db/strata/part"
)

// Helpers for multi-valued indexes, whose objects have one key per element
// of a collection field (tags, addresses, ports): each returns a KeySet of
// one key per element, in the collection's order, for an index's
// FromObject. The names are statedb's. Repeated elements give repeated
// keys, which the database stores once.

// keySetOwning returns a KeySet of keys, taking ownership of the slice.
func keySetOwning(keys []Key) KeySet {
	switch len(keys) {
	case 0:
		return KeySet{}
	case 1:
		return KeySet{n: 1, first: keys[0]}
	}
	return KeySet{n: len(keys), first: keys[0], rest: keys[1:]}
}

// StringSlice returns a KeySet of String(s) for each s in ss. The keys
// share memory with the strings; only the KeySet's slice is allocated, and
// nothing for fewer than two strings.
func StringSlice(ss []string) KeySet {
	if len(ss) == 1 {
		return KeySet{n: 1, first: String(ss[0])}
	}
	keys := make([]Key, len(ss))
	for i, s := range ss {
		keys[i] = String(s)
	}
	return keySetOwning(keys)
}

// StringerSlice returns a KeySet of Stringer(x) for each x in xs.
func StringerSlice[T fmt.Stringer](xs []T) KeySet { return Slice(Stringer[T], xs) }

// Slice returns a KeySet of toKey(x) for each x in xs, such as
// Slice(NetIPAddr, o.Addrs).
func Slice[T any](toKey func(T) Key, xs []T) KeySet {
	if len(xs) == 1 {
		return KeySet{n: 1, first: toKey(xs[0])}
	}
	keys := make([]Key, len(xs))
	for i, x := range xs {
		keys[i] = toKey(x)
	}
	return keySetOwning(keys)
}

// Seq returns a KeySet of toKey(x) for each x that seq yields, such as
// Seq(String, maps.Keys(o.Labels)).
func Seq[T any](toKey func(T) Key, seq iter.Seq[T]) KeySet {
	var keys []Key
	for x := range seq {
		keys = append(keys, toKey(x))
	}
	return keySetOwning(keys)
}

// Seq2 returns a KeySet of toKey(a) for each pair (a, b) that seq yields:
// the keys of a map, say.
func Seq2[A, B any](toKey func(A) Key, seq iter.Seq2[A, B]) KeySet {
	var keys []Key
	for a := range seq {
		keys = append(keys, toKey(a))
	}
	return keySetOwning(keys)
}

// StringerSeq returns a KeySet of Stringer(x) for each x that seq yields.
func StringerSeq[T fmt.Stringer](seq iter.Seq[T]) KeySet { return Seq(Stringer[T], seq) }

// StringerSeq2 returns a KeySet of Stringer(a) for each pair (a, b) that
// seq yields.
func StringerSeq2[A fmt.Stringer, B any](seq iter.Seq2[A, B]) KeySet {
	return Seq2(Stringer[A], seq)
}

// StringMap returns a KeySet of String(k) for each key k of m, in no
// particular order. The keys share memory with the map's strings.
func StringMap[V any](m map[string]V) KeySet {
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, String(k))
	}
	return keySetOwning(keys)
}

// Set returns a KeySet of the elements of s, in s's order: a tag index's
// FromObject is index.Set(o.Tags). Each element is encoded by this
// package's encoder of its kind, so the index's FromKey is that encoder: String for
// strings (the keys share memory with the elements), Int8 to Int64 and
// Uint8 to Uint64 for integers of those widths, Int and Uint for int and
// uint (and uintptr), whatever the platform. A set of one element costs
// no allocation; a larger one costs the KeySet's slice and, for integers,
// one buffer that all keys share (BenchmarkSet).
func Set[T part.MapKey](s part.Set[T]) KeySet {
	n := s.Len()
	if n == 0 {
		return KeySet{}
	}
	kind := reflect.TypeFor[T]().Kind()
	if n == 1 {
		for x := range s.All() {
			if kind == reflect.String {
				return KeySet{n: 1, first: String(*(*string)(unsafe.Pointer(&x)))}
			}
			var buf [8]byte
			return KeySetOf(appendIntKind(buf[:0], kind, unsafe.Pointer(&x)))
		}
	}
	keys := make([]Key, 0, n)
	if kind == reflect.String {
		for x := range s.All() {
			keys = append(keys, String(*(*string)(unsafe.Pointer(&x))))
		}
		return keySetOwning(keys)
	}
	buf := make([]byte, 0, n*intKeyLen(kind))
	for x := range s.All() {
		start := len(buf)
		buf = appendIntKind(buf, kind, unsafe.Pointer(&x))
		keys = append(keys, Key(buf[start:len(buf):len(buf)]))
	}
	return keySetOwning(keys)
}

// intKeyLen is the length of the key of an integer of the given kind.
func intKeyLen(kind reflect.Kind) int {
	switch kind {
	case reflect.Int8, reflect.Uint8:
		return 1
	case reflect.Int16, reflect.Uint16:
		return 2
	case reflect.Int32, reflect.Uint32:
		return 4
	}
	return 8
}

// appendIntKind appends the key of the integer of the given kind at p.
func appendIntKind(dst []byte, kind reflect.Kind, p unsafe.Pointer) []byte {
	switch kind {
	case reflect.Int8:
		return AppendInt8(dst, *(*int8)(p))
	case reflect.Int16:
		return AppendInt16(dst, *(*int16)(p))
	case reflect.Int32:
		return AppendInt32(dst, *(*int32)(p))
	case reflect.Int64:
		return AppendInt64(dst, *(*int64)(p))
	case reflect.Int:
		return AppendInt(dst, *(*int)(p))
	case reflect.Uint8:
		return AppendUint8(dst, *(*uint8)(p))
	case reflect.Uint16:
		return AppendUint16(dst, *(*uint16)(p))
	case reflect.Uint32:
		return AppendUint32(dst, *(*uint32)(p))
	case reflect.Uint64:
		return AppendUint64(dst, *(*uint64)(p))
	case reflect.Uint:
		return AppendUint(dst, *(*uint)(p))
	}
	return AppendUint64(dst, uint64(*(*uintptr)(p)))
}
