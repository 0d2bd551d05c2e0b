package replicate

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// The record of one log entry, the value under its log key (keys.go):
//
//	version   1 byte   recordVersion
//	index     8 bytes  big-endian, equal to the key's index
//	term      8 bytes  big-endian
//	type      1 byte   raft.LogType
//	appended  8 bytes  big-endian seconds since 1970 (two's complement)
//	          4 bytes  big-endian nanoseconds within the second
//	data      uvarint  0 for nil, else len+1; then the bytes
//	exts      uvarint  0 for nil, else len+1; then the bytes
//	crc       4 bytes  big-endian CRC-32C (Castagnoli) of all the above
//
// A record decodes only whole: the checksum must match, every field must
// fit, nothing may follow the checksum, and the index must be the key's.
// A newer version is refused, never guessed at.
const (
	recordVersion = 1
	recordFixed   = 1 + 8 + 8 + 1 + 8 + 4 // the fields before data
	crcSize       = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends the record of l to b.
func appendRecord(b []byte, l *raft.Log) []byte {
	start := len(b)
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(l.AppendedAt.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(l.AppendedAt.Nanosecond()))
	b = appendBytes(b, l.Data)
	b = appendBytes(b, l.Extensions)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// appendBytes appends p with its length; nil and empty stay apart, so that
// an entry reads back exactly as it was stored.
func appendBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(p))+1)
	return append(b, p...)
}

// decodeRecord decodes the record stored under index into l. The slices
// it sets are copies: rec may be Pebble's buffer. It returns a
// *CorruptLogError if the record is not whole.
func decodeRecord(index uint64, rec []byte, l *raft.Log) error {
	corrupt := func(reason string) error { return &CorruptLogError{Index: index, Reason: reason} }
	if len(rec) < recordFixed+2+crcSize {
		return corrupt("record too short")
	}
	body, sum := rec[:len(rec)-crcSize], binary.BigEndian.Uint32(rec[len(rec)-crcSize:])
	if crc32.Checksum(body, castagnoli) != sum {
		return corrupt("checksum mismatch")
	}
	if body[0] != recordVersion {
		return corrupt("unknown record version " + itoa(uint64(body[0])))
	}
	if got := binary.BigEndian.Uint64(body[1:]); got != index {
		return corrupt("record holds index " + itoa(got))
	}
	sec := int64(binary.BigEndian.Uint64(body[18:]))
	nsec := binary.BigEndian.Uint32(body[26:])
	if nsec >= 1e9 {
		return corrupt("nanoseconds out of range")
	}
	rest := body[recordFixed:]
	data, rest, ok := readBytes(rest)
	if !ok {
		return corrupt("data length out of range")
	}
	exts, rest, ok := readBytes(rest)
	if !ok || len(rest) != 0 {
		return corrupt("extensions length out of range")
	}
	*l = raft.Log{
		Index:      index,
		Term:       binary.BigEndian.Uint64(body[9:]),
		Type:       raft.LogType(body[17]),
		Data:       data,
		Extensions: exts,
		AppendedAt: time.Unix(sec, int64(nsec)).UTC(),
	}
	return nil
}

// readBytes reads a field written by appendBytes and returns a copy of it.
func readBytes(b []byte) (p, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, nil, false
	}
	b = b[w:]
	if n == 0 {
		return nil, b, true
	}
	if n-1 > uint64(len(b)) || n-1 > math.MaxInt {
		return nil, nil, false
	}
	size := int(n - 1)
	return append([]byte{}, b[:size]...), b[size:], true
}

// The record of a stable value, the value under its stable key:
//
//	version  1 byte  stableVersion
//	value    the bytes given to Set (8 big-endian bytes for SetUint64)
//	crc      4 bytes big-endian CRC-32C of the above
const stableVersion = 1

func appendStable(b, val []byte) []byte {
	start := len(b)
	b = append(b, stableVersion)
	b = append(b, val...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// decodeStable returns a copy of the value in rec, or a *CorruptStableError.
func decodeStable(key, rec []byte) ([]byte, error) {
	corrupt := func(reason string) error { return &CorruptStableError{Key: string(key), Reason: reason} }
	if len(rec) < 1+crcSize {
		return nil, corrupt("record too short")
	}
	body, sum := rec[:len(rec)-crcSize], binary.BigEndian.Uint32(rec[len(rec)-crcSize:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, corrupt("checksum mismatch")
	}
	if body[0] != stableVersion {
		return nil, corrupt("unknown record version " + itoa(uint64(body[0])))
	}
	return append([]byte{}, body[1:]...), nil
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
