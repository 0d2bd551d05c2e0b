package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2/wal"
)

// walStoppedMessage is the text of the Info line by which Pebble reports
// where the recovery of a log stopped, with the position as a wal.Offset
// argument. The store relies on both (TestWALStoppedHook pins them).
const walStoppedMessage = "stopped reading at offset"

// walStopped warns if the recovery of a log stopped before the end of what
// the log holds. Pebble stops at the first record it cannot read, and in
// the newest log it cannot tell a torn tail (a crash while a record was
// written) from damage in the log's last block: either way it drops the
// rest silently, and reports only where it stopped (at Info level). What
// recovery dropped is what the file holds of the log after that point
// (walDropped); the operator must hear of it.
func (l *pebbleLogger) walStopped(off wal.Offset) {
	if l.fs == nil || off.PhysicalFile == "" {
		return
	}
	num, _, ok := wal.ParseLogFilename(l.fs.PathBase(off.PhysicalFile))
	if !ok {
		return
	}
	f, err := l.fs.Open(off.PhysicalFile)
	if err == nil {
		defer f.Close()
		var dropped int64
		dropped, err = walDropped(f, off.Physical, uint32(num))
		l.log.Debug("pebble: log recovery checked", "log", off.PhysicalFile, "offset", off.Physical, "dropped_bytes", dropped)
		if dropped > 0 {
			l.log.Warn("pebble: log recovery stopped before the end of the log; what follows is dropped: "+
				"a record torn by a crash, or damage (Pebble cannot tell them apart in the newest log), "+
				"in which case commits acknowledged before the crash may be lost",
				"log", off.PhysicalFile, "offset", off.Physical, "dropped_bytes", dropped)
		}
	}
	if err != nil {
		l.log.Warn("pebble: cannot check what log recovery dropped", "log", off.PhysicalFile, "offset", off.Physical, "err", err)
	}
}

// Pebble's log format (package record), as far as walDropped reads it. A
// log is a sequence of 32 KiB blocks; a block holds chunks, and a chunk
// never crosses a block's end (the rest of a block too short for a header
// is zeros). A chunk is a header and a payload; the header is a checksum
// (4 bytes, little endian), the payload's length (2), an encoding (1) and,
// in the recyclable and WAL sync encodings, the low 32 bits of the log's
// number (4) and, in the WAL sync ones, an offset (8). The checksum is a
// masked CRC-32C of the header from the encoding on and of the payload. A
// log closed cleanly ends with an EOF trailer: a recyclable header whose
// checksum and length are zero and whose log number is the log's plus one.
// A recycled log file holds, after what the new log wrote, the chunks of
// the log it was before.
const (
	walBlockSize        = 32 << 10
	walLegacyHeader     = 7
	walRecyclableHeader = walLegacyHeader + 4
	walSyncHeader       = walRecyclableHeader + 8
	walRecyclableFull   = 5 // the encoding of the EOF trailer
)

var walCRCTable = crc32.MakeTable(crc32.Castagnoli)

// walChunk is a chunk header as parseWALChunk read it.
type walChunk struct {
	size     int    // header and payload
	numbered bool   // the encoding carries a log number
	logNum   uint32 // if numbered
	intact   bool   // the checksum matches
	eof      bool   // the header is an EOF trailer (for logNum-1)
}

// parseWALChunk reads the chunk at the start of b, the rest of a block. It
// returns false if b does not begin with a chunk header whose chunk fits
// in b.
func parseWALChunk(b []byte) (walChunk, bool) {
	if len(b) < walLegacyHeader {
		return walChunk{}, false
	}
	enc, length := b[6], int(binary.LittleEndian.Uint16(b[4:6]))
	var hs int
	switch {
	case enc >= 1 && enc <= 4:
		hs = walLegacyHeader
	case enc >= 5 && enc <= 8:
		hs = walRecyclableHeader
	case enc >= 9 && enc <= 12:
		hs = walSyncHeader
	default:
		return walChunk{}, false
	}
	if hs+length > len(b) {
		return walChunk{}, false
	}
	c := walChunk{size: hs + length, numbered: hs > walLegacyHeader}
	if c.numbered {
		c.logNum = binary.LittleEndian.Uint32(b[7:11])
	}
	sum := binary.LittleEndian.Uint32(b[0:4])
	crc := crc32.Checksum(b[6:hs+length], walCRCTable)
	c.intact = sum == (crc>>15|crc<<17)+0xa282ead8
	c.eof = enc == walRecyclableFull && length == 0 && sum == 0
	return c, true
}

// walDropped returns how many bytes of chunks of log logNum the log file r
// holds at or after off, where recovery stopped: what recovery dropped.
//
// It walks the chunks from off on. They are not dropped, and the walk ends,
// at an EOF trailer (a clean close: nothing of the log follows it); the
// intact chunks of other logs (a recycled file's old contents) are skipped.
// The chunk at off, if it is of the log, is dropped, intact or not: a
// record whose end is missing (torn), or damaged. So is every later chunk
// of the log. Where the walk finds no chunk (zeros, which are preallocated
// space or a block's padding, the middle of an older chunk of a recycled
// file, or damage), it looks, at every offset up to the block's end, for an
// intact chunk of the log, and walks on from the next block's start, where
// a chunk begins.
//
// The chunk at off is the log's if its header carries the log's number,
// even if its length or encoding is damaged. What walDropped cannot see is
// a damaged log number in the header of the last chunk the log holds, when
// no intact chunk of the log follows.
func walDropped(r io.ReaderAt, off int64, logNum uint32) (int64, error) {
	var buf [walBlockSize]byte
	var dropped int64
	for start := off - off%walBlockSize; ; start += walBlockSize {
		n, err := r.ReadAt(buf[:], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return dropped, err
		}
		i := 0
		if start < off {
			i = int(off - start)
		}
		d, end := walBlockDropped(buf[:n], i, start <= off, logNum)
		dropped += int64(d)
		if end || n < len(buf) {
			return dropped, nil
		}
	}
}

// zeroBlock is a block of zeros, against which walBlockDropped compares.
var zeroBlock [walBlockSize]byte

// walBlockDropped is walDropped for one block from offset i on, which is
// where recovery stopped if atStop; it reports whether it found the log's
// EOF trailer.
func walBlockDropped(block []byte, i int, atStop bool, logNum uint32) (dropped int, end bool) {
	for first := atStop; i < len(block); first = false {
		c, ok := parseWALChunk(block[i:])
		switch {
		case !ok && first && len(block)-i >= walRecyclableHeader && binary.LittleEndian.Uint32(block[i+7:]) == logNum:
			// A chunk of the log whose length or encoding is damaged:
			// the rest of the block, up to its padding, is dropped.
			return len(bytes.TrimRight(block[i:], "\x00")), false
		case ok && c.eof && c.logNum == logNum+1:
			return dropped, true
		case ok && c.numbered && c.logNum == logNum:
			dropped += c.size
			i += c.size
		case ok && c.numbered && c.intact:
			i += c.size
		default:
			rest := block[i:]
			if bytes.Equal(rest, zeroBlock[:len(rest)]) {
				return dropped, false
			}
			for j := 1; j+walRecyclableHeader <= len(rest); j++ {
				if e := rest[j+6]; e < 5 || e > 12 || binary.LittleEndian.Uint32(rest[j+7:]) != logNum {
					continue
				}
				if c, ok := parseWALChunk(rest[j:]); ok && c.numbered && c.logNum == logNum && c.intact {
					dropped += c.size
					j += c.size - 1
				}
			}
			return dropped, false
		}
	}
	return dropped, false
}
