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

// walStopped reports what the recovery of a log dropped, if it stopped
// before the end of what the log holds. Pebble stops at the first record
// it cannot read, and in the newest log it cannot tell a torn tail (a
// crash while a record was written) from damage in the log's last block:
// either way it drops the rest silently, and reports only where it
// stopped (at Info level). What recovery dropped is what the file holds of
// the log after that point (walDropped).
//
// It warns only on evidence that what was dropped may hold acknowledged
// commits (walTailEvidence): the log had been synced beyond the stop, or
// the dropped bytes are not what a crash leaves (damage). A record torn by
// the crash, never synced, held no commit that Sync mode acknowledged: it
// is logged at Info level (Buffered mode's unsynced commits may be lost
// that way, as the mode allows). A warning that every ordinary kill -9
// raised would be ignored the day it is true.
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
		if err == nil && dropped > 0 {
			var ev walEvidence
			ev, err = walTailEvidence(f, off.Physical, uint32(num))
			switch {
			case err != nil:
			case ev.synced:
				l.log.Warn("pebble: log recovery stopped before the end of the log, in records that had been synced; "+
					"what follows is dropped: damage, and commits acknowledged before the crash are lost",
					"log", off.PhysicalFile, "offset", off.Physical, "dropped_bytes", dropped)
			case !ev.torn:
				l.log.Warn("pebble: log recovery stopped before the end of the log; what follows is dropped: "+
					"damage, not a record torn by a crash, in which case commits acknowledged before the crash may be lost",
					"log", off.PhysicalFile, "offset", off.Physical, "dropped_bytes", dropped)
			default:
				l.log.Info("pebble: log recovery dropped a record torn by the crash, never synced: "+
					"no commit acknowledged in Sync mode is lost (in Buffered mode, the commits after the last sync may be)",
					"log", off.PhysicalFile, "offset", off.Physical, "dropped_bytes", dropped)
			}
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

// walPage is the granule in which a write that a signal interrupts reaches
// the file: the kernel copies a write into the page cache page by page,
// and stops between two pages for a fatal signal (SIGKILL), so a write cut
// short by a crash of the process ends at a page boundary.
const walPage = 4 << 10

// walEvidence is what the rest of the newest log says about the commits
// its recovery dropped (walTailEvidence).
type walEvidence struct {
	// synced: an intact chunk of the log from the stop on records, as the
	// log's synced offset when it was written, an offset beyond the stop:
	// what recovery dropped had been synced, so it held commits Sync mode
	// acknowledged. Pebble takes the same sign as proof of corruption, but
	// looks for it only in the blocks after the one it stopped in.
	synced bool
	// torn: what recovery dropped is what a crash leaves where a record
	// was being written, and nothing else: intact chunks of the log (the
	// start of a record whose rest never reached the file), then at most
	// one chunk of the log cut short at a page boundary (zeros from there
	// to its end, or the end of the file), then nothing of the log.
	torn bool
}

// walTailEvidence reads the log file r from off, where recovery stopped,
// to its end, and returns what it says (walEvidence). It is called only
// when walDropped found something of the log there.
//
// A record is written to the file in one or more writes, and synced only
// after its last chunk was written (Sync mode acknowledges a commit only
// then), so a crash of the process alone, or a power loss, can leave the
// start of a record whose rest is missing: that record was never
// acknowledged in Sync mode. Damage to what was written before (a flipped
// byte, a lost block) leaves something else: a chunk whose bytes do not
// match its checksum although they are there, or chunks of the log after
// the gap, whose synced offsets then tell whether the dropped part had
// been synced.
func walTailEvidence(r io.ReaderAt, off int64, logNum uint32) (walEvidence, error) {
	var data []byte
	buf := make([]byte, walBlockSize)
	for pos := off; ; {
		n, err := r.ReadAt(buf, pos)
		data = append(data, buf[:n]...)
		pos += int64(n)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return walEvidence{}, err
		}
	}
	var ev walEvidence
	at := func(i int) int64 { return off + int64(i) } // file offset of data[i]
	blockEnd := func(i int) int { return min(len(data), i+int(walBlockSize-at(i)%walBlockSize)) }
	// syncedBeyond notes the synced offset of an intact WAL sync chunk of
	// the log at data[i:].
	syncedBeyond := func(i int) {
		if e := data[i+6]; e >= 9 && e <= 12 && int64(binary.LittleEndian.Uint64(data[i+11:i+19])) > off {
			ev.synced = true
		}
	}
	// The intact chunks of the log from the stop on: the start of the
	// torn record.
	i := 0
	for i < len(data) {
		end := blockEnd(i)
		if end-i < walSyncHeader && bytes.Equal(data[i:end], zeroBlock[:end-i]) {
			i = end // a block's padding
			continue
		}
		c, ok := parseWALChunk(data[i:end])
		if !ok || !c.numbered || c.logNum != logNum || !c.intact || c.eof {
			break
		}
		syncedBeyond(i)
		i += c.size
	}
	rest, damaged := i, false
	// At most one chunk of the log cut short: its header is there, and its
	// bytes are zeros from a page boundary on, or the file ends in it.
	if i+walRecyclableHeader <= len(data) && binary.LittleEndian.Uint32(data[i+7:i+11]) == logNum {
		c, ok := parseWALChunk(data[i:blockEnd(i)])
		switch {
		case ok && !c.intact:
			damaged = true
			for p := (at(i)/walPage + 1) * walPage; p < at(i+c.size); p += walPage {
				q := int(p - off)
				if bytes.Equal(data[q:i+c.size], make([]byte, i+c.size-q)) {
					damaged = false // cut at a page boundary
					break
				}
			}
			rest = i + c.size
		case !ok && blockEnd(i) == len(data):
			rest = len(data) // the file ends inside the chunk
		default:
			damaged = true // a damaged header
		}
	}
	// Nothing of the log after it: every intact chunk of the log there is
	// evidence against a torn tail (and its synced offset, of a synced one).
	ev.torn = !damaged
	for j := rest; j+walRecyclableHeader <= len(data); j++ {
		if e := data[j+6]; e < 1 || e > 12 || binary.LittleEndian.Uint32(data[j+7:j+11]) != logNum {
			continue
		}
		if c, ok := parseWALChunk(data[j:blockEnd(j)]); ok && c.numbered && c.logNum == logNum && c.intact && !c.eof {
			ev.torn = false
			syncedBeyond(j)
			j += c.size - 1
		}
	}
	return ev, nil
}
