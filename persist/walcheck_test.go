package persist

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// walTestChunk returns a WAL sync full chunk of log logNum with payload p,
// as Pebble's log writer writes it.
func walTestChunk(logNum uint32, p string) []byte {
	b := make([]byte, walSyncHeader, walSyncHeader+len(p))
	binary.LittleEndian.PutUint16(b[4:6], uint16(len(p)))
	b[6] = 9 // WAL sync, full
	binary.LittleEndian.PutUint32(b[7:11], logNum)
	b = append(b, p...)
	crc := crc32.Checksum(b[6:], walCRCTable)
	binary.LittleEndian.PutUint32(b[0:4], (crc>>15|crc<<17)+0xa282ead8)
	return b
}

// walTestEOF returns the EOF trailer of log logNum.
func walTestEOF(logNum uint32) []byte {
	b := make([]byte, walRecyclableHeader)
	b[6] = walRecyclableFull
	binary.LittleEndian.PutUint32(b[7:11], logNum+1)
	return b
}

// TestWALDropped: what walDropped counts as dropped after the point where
// recovery of log 7 stopped, in files laid out as Pebble lays them out.
func TestWALDropped(t *testing.T) {
	const log = 7
	ours, stale := walTestChunk(log, "acknowledged"), walTestChunk(3, "an older log's")
	damaged := bytes.Clone(ours)
	damaged[len(damaged)-1] ^= 1
	badNum := bytes.Clone(ours)
	badNum[8] ^= 1
	badLen := bytes.Clone(ours)
	badLen[5] = 0xff
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	zeros := make([]byte, 100)

	for _, c := range []struct {
		name string
		tail []byte // the file from where recovery stopped
		// then, from the start of the next block, if not nil
		next []byte
		want int
	}{
		{"zeros (preallocated)", zeros, nil, 0},
		{"EOF trailer (clean close)", cat(walTestEOF(log), zeros), nil, 0},
		{"EOF trailer, then a recycled file's older chunks", cat(walTestEOF(log), stale, stale), nil, 0},
		{"a recycled file's older chunks", cat(stale, stale, zeros), nil, 0},
		{"the middle of an older chunk, then older chunks", cat(stale[5:], stale, zeros), nil, 0},
		{"a damaged chunk of the log", cat(damaged, zeros), nil, len(ours)},
		{"a damaged chunk, then intact ones", cat(damaged, ours, ours, walTestEOF(log)), nil, 3 * len(ours)},
		{"a damaged log number, then an intact chunk", cat(badNum, ours, zeros), nil, len(ours)},
		{"a damaged length, then an intact chunk", cat([]byte{0, 0, 0, 0, 0xff, 0xff, 9}, ours[7:], ours), nil, 2 * len(ours)},
		{"garbage, then an intact chunk of the log in the next block", stale[3:], ours, len(ours)},
		{"garbage, then older chunks in the next block", stale[3:], cat(stale, zeros), 0},
		{"a damaged length, last", cat(badLen, zeros), nil, len(ours)},
		{"a damaged log number, last (not seen)", cat(badNum, zeros), nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, at := range []int{0, 1000, walBlockSize - 200} {
				file := cat(bytes.Repeat([]byte{0xaa}, at), c.tail)
				if c.next != nil {
					file = cat(file, make([]byte, walBlockSize-len(file)%walBlockSize), c.next)
				}
				got, err := walDropped(bytes.NewReader(file), int64(at), log)
				if err != nil {
					t.Fatal(err)
				}
				if int(got) != c.want {
					t.Errorf("stopped at %d: dropped %d bytes, want %d", at, got, c.want)
				}
			}
		})
	}
}

// walTestSyncChunk returns a WAL sync chunk of log logNum with the given
// encoding (9 full, 10 first, 11 middle, 12 last), synced offset and
// payload, as Pebble's log writer writes it.
func walTestSyncChunk(logNum uint32, enc byte, synced uint64, p []byte) []byte {
	b := make([]byte, walSyncHeader, walSyncHeader+len(p))
	binary.LittleEndian.PutUint16(b[4:6], uint16(len(p)))
	b[6] = enc
	binary.LittleEndian.PutUint32(b[7:11], logNum)
	binary.LittleEndian.PutUint64(b[11:19], synced)
	b = append(b, p...)
	crc := crc32.Checksum(b[6:], walCRCTable)
	binary.LittleEndian.PutUint32(b[0:4], (crc>>15|crc<<17)+0xa282ead8)
	return b
}

// TestWALTailEvidence: what walTailEvidence makes of what follows the
// point where recovery of log 7 stopped (at offset stop, in a file whose
// bytes before it are the log's): a record torn by a crash (the start of
// a record, or a chunk cut at a page boundary, then nothing of the log),
// damage, and chunks whose synced offset says the dropped part was synced.
func TestWALTailEvidence(t *testing.T) {
	const log = 7
	const stop = 5000
	payload := func(n int) []byte { return bytes.Repeat([]byte{0x5a}, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	// first fills the block from stop: the first chunk of a record that
	// goes on in the next block.
	first := walTestSyncChunk(log, 10, stop, payload(walBlockSize-stop-walSyncHeader))
	middle := walTestSyncChunk(log, 11, stop, payload(walBlockSize-walSyncHeader))
	full := walTestSyncChunk(log, 9, stop, payload(10000))
	// cut is full with its bytes zeros from the first page boundary on.
	cut := bytes.Clone(full)
	clear(cut[walPage-stop%walPage:])
	flipped := bytes.Clone(full)
	flipped[len(flipped)-100] ^= 0x10
	laterSynced := walTestSyncChunk(log, 9, stop+100, payload(50))
	laterUnsynced := walTestSyncChunk(log, 9, stop, payload(50))
	zeros := make([]byte, 3*walBlockSize)

	for _, c := range []struct {
		name         string
		tail         []byte
		torn, synced bool
	}{
		{"the first chunk of a record, then zeros", cat(first, zeros), true, false},
		{"the first and a middle chunk, then zeros", cat(first, middle, zeros), true, false},
		{"the first chunk, then the end of the file", first, true, false},
		{"a chunk cut at a page boundary", cat(cut, zeros), true, false},
		{"a chunk cut by the end of the file", full[:walPage-stop%walPage], true, false},
		{"a flipped byte", cat(flipped, zeros), false, false},
		{"a flipped byte, then a chunk written after a sync beyond it", cat(flipped, laterSynced, zeros), false, true},
		{"a flipped byte, then a chunk not synced beyond it", cat(flipped, laterUnsynced, zeros), false, false},
		{"a cut chunk, then a chunk of the log", cat(cut[:len(cut)-60], laterUnsynced, zeros), false, false},
		{"the first chunk of a record, then a synced chunk later", cat(first, make([]byte, 500), laterSynced, zeros), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := cat(bytes.Repeat([]byte{0xaa}, stop), c.tail)
			ev, err := walTailEvidence(bytes.NewReader(file), stop, log)
			if err != nil {
				t.Fatal(err)
			}
			if ev.torn != c.torn || ev.synced != c.synced {
				t.Errorf("torn %v, synced %v; want torn %v, synced %v", ev.torn, ev.synced, c.torn, c.synced)
			}
		})
	}
}
