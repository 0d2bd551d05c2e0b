package strata

import (
	"encoding/binary"
	"unsafe"

	"github.com/strata-db/strata/index"
)

// queryKey is a query's encoded key, in two words, so that a Query (four
// words) is kept in registers from Index.Query to the read: a larger
// struct is copied through memory on the way, and those copies stall the
// processor (store forwarding), which doubled the cost of a Get.
//
// A key of up to 8 bytes that the query encodes itself (Index.Query with
// one of package index's fixed-width integer encoders, QueryFromObject) is
// kept in place: its bytes are x, and p points at inlineLen[n] for its
// length n. A point read or a scan from such a key allocates nothing for
// it (BenchmarkDB_RandomLookup, bench/compare's PointGets_Primary). Any
// other key is p[:x], p pointing at its first byte.
type queryKey struct {
	p unsafe.Pointer
	x uint64
}

// inlineLen marks keys kept in place: p is &inlineLen[n] for such a key of
// n bytes. Its elements are never read.
var inlineLen [9]byte

func sliceKey(b []byte) queryKey {
	return queryKey{p: unsafe.Pointer(unsafe.SliceData(b)), x: uint64(len(b))}
}

// inlined returns the length of a key kept in place, or -1.
func (k *queryKey) inlined() int {
	if off := uintptr(k.p) - uintptr(unsafe.Pointer(&inlineLen)); off < uintptr(len(inlineLen)) {
		return int(off)
	}
	return -1
}

// bytes returns the key. The slice may point into k: callers pass it down
// and do not keep it.
func (k *queryKey) bytes() []byte {
	if n := k.inlined(); n >= 0 {
		return (*[8]byte)(unsafe.Pointer(&k.x))[:n]
	}
	return unsafe.Slice((*byte)(k.p), k.x)
}

// set makes the key a copy of key.
func (k *queryKey) set(key []byte) {
	if n := len(key); n <= 8 {
		var b [8]byte
		copy(b[:], key)
		*k = queryKey{p: unsafe.Pointer(&inlineLen[n]), x: binary.NativeEndian.Uint64(b[:])}
		return
	}
	*k = sliceKey(append(index.Key(nil), key...))
}

// uint64Key returns index.Uint64(v) as a key kept in place.
func uint64Key(v uint64) queryKey {
	return queryKey{p: unsafe.Pointer(&inlineLen[8]), x: bigEndianNative(v)}
}

// The code pointers of package index's fixed-width integer encoders, which
// setFixed recognizes.
var (
	pcUint64 = codePointer(index.Uint64)
	pcUint   = codePointer(index.Uint)
	pcInt64  = codePointer(index.Int64)
	pcInt    = codePointer(index.Int)
	pcUint32 = codePointer(index.Uint32)
	pcInt32  = codePointer(index.Int32)
	pcUint16 = codePointer(index.Uint16)
	pcInt16  = codePointer(index.Int16)
)

// codePointer returns the address of the code of the function f, 0 for
// nil. Two func values with the same code pointer and no captured
// variables are the same function.
func codePointer[F any](f F) uintptr {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&f))
	if p == nil {
		return 0
	}
	return *(*uintptr)(p)
}

// fixedKey returns key encoded as FromKey, whose code pointer is pc, would
// encode it, if FromKey is one of package index's fixed-width integer
// encoders, as a key kept in place. It reports false for any other encoder. The encodings are package
// index's own (AppendUint64 and its kin), so the key is byte for byte the
// one the encoder returns (TestQueryKeyFixed).
//
// FromKey has the type func(Key) index.Key, so if it is index.Uint64, Key
// is uint64: the code pointer tells the key's type, and the key is read as
// that type (the size check is a guard, never false). The key comes back
// in registers.
func fixedKey[Key any](pc uintptr, key *Key) (queryKey, bool) {
	if pc == 0 {
		return queryKey{}, false
	}
	p := unsafe.Pointer(key)
	var b [8]byte
	var enc []byte
	switch size := unsafe.Sizeof(*key); {
	case size == 8 && pc == pcUint64:
		enc = index.AppendUint64(b[:0], *(*uint64)(p))
	case size == 8 && pc == pcInt64:
		enc = index.AppendInt64(b[:0], *(*int64)(p))
	case size == 8 && pc == pcUint:
		enc = index.AppendUint(b[:0], *(*uint)(p))
	case size == 8 && pc == pcInt:
		enc = index.AppendInt(b[:0], *(*int)(p))
	case size == 4 && pc == pcUint32:
		enc = index.AppendUint32(b[:0], *(*uint32)(p))
	case size == 4 && pc == pcInt32:
		enc = index.AppendInt32(b[:0], *(*int32)(p))
	case size == 2 && pc == pcUint16:
		enc = index.AppendUint16(b[:0], *(*uint16)(p))
	case size == 2 && pc == pcInt16:
		enc = index.AppendInt16(b[:0], *(*int16)(p))
	default:
		return queryKey{}, false
	}
	return queryKey{p: unsafe.Pointer(&inlineLen[len(enc)]), x: binary.NativeEndian.Uint64(b[:])}, true
}

// isUint64Encoder reports whether *f, a func(Key) index.Key, is
// index.Uint64.
func isUint64Encoder(f unsafe.Pointer) bool {
	p := *(**uintptr)(f)
	return p != nil && *p == pcUint64
}
