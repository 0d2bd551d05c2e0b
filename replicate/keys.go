package replicate

import (
	"encoding/binary"
	"math"
)

// The key space of a store's Pebble DB:
//
//	"f"                    the format: one byte, storeFormat
//	"l" + index (8 bytes)  a log entry, big-endian so that keys sort as
//	                       indexes do (record.go has the value)
//	"s" + key              a stable value (record.go)
const (
	formatKey    = "f"
	logPrefix    = 'l'
	stablePrefix = 's'
	storeFormat  = 1
)

var (
	logLower = []byte{logPrefix}     // the first log key, or before it
	logUpper = []byte{logPrefix + 1} // after every log key
)

// logKey returns the key of the entry at index.
func logKey(index uint64) []byte {
	k := make([]byte, 9)
	k[0] = logPrefix
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

// logKeyAfter returns the key that ends a range of entries up to index,
// inclusive.
func logKeyAfter(index uint64) []byte {
	if index == math.MaxUint64 {
		return logUpper
	}
	return logKey(index + 1)
}

// logIndex returns the index of a log key, and false if k is not one.
func logIndex(k []byte) (uint64, bool) {
	if len(k) != 9 || k[0] != logPrefix {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:]), true
}

// stableKey returns the Pebble key of a stable key.
func stableKey(key []byte) []byte {
	return append([]byte{stablePrefix}, key...)
}
