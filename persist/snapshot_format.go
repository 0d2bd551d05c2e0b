package persist

// The snapshot file format, version 2.
//
// A snapshot is a prelude followed by checksummed blocks. All fixed-size
// integers are little endian; "uvarint" is encoding/binary's unsigned
// varint.
//
//	file    = prelude header objects* footer   (nothing after the footer)
//	prelude = magic[8] version:uint32          magic "\x89STRATA\n", version 2
//	block   = kind:byte length:uint32 payload[length] crc:uint32
//	          crc is CRC-32C (Castagnoli) of kind, length and payload
//
//	header  = block of kind 'H', exactly one, right after the prelude:
//	          uvarint tables, then per table:
//	          uvarint len(name), name, uvarint codec version,
//	          uvarint table revision, uvarint object count,
//	          uvarint len(codec), codec, uvarint len(type), type
//	          (the codec's name and the object type's identity: schema.go;
//	          version 1 had neither)
//	objects = block of kind 'O':
//	          uvarint table (its position in the header), then one or more
//	          records: uvarint revision, uvarint len(value), value
//	          (the value is the table codec's encoding of the object)
//	footer  = block of kind 'F', exactly one, last:
//	          uvarint tables, uvarint objects, uvarint offset, fileCRC:uint32
//	          offset is the footer's position in the file; fileCRC is
//	          CRC-32C of every byte before it except the blocks' CRCs
//	          (the prelude, and each block's kind, length and payload)
//
// Tables come in header order, each as its object blocks in primary key
// order, with exactly as many records as the header counts; a table without
// objects has no block. A block's records belong to one table and fill up
// to 64 KiB of payload; a record larger on its own gets a block of its own.
// No payload exceeds snapMaxPayload (1 GiB).
//
// What is detected: a block CRC catches every change of up to 32 bits in
// its block, so every single changed byte, wherever it is, fails a block
// CRC, the magic, or the version check. A truncation anywhere ends the file
// inside a block or before the footer. Blocks dropped, repeated or swapped
// whole (each still intact) break the header's counts, the table order, or
// the footer's offset and file CRC. The file CRC leaves the block CRCs out
// because with them it would be blind: the CRC register after any data
// followed by its own CRC depends only on the data's length, so blocks of
// equal length could be swapped unseen.
//
// The file CRC is CRC-32C rather than a cryptographic hash: it guards
// against accidents, not an adversary (who could recompute any unkeyed hash
// anyway), and CRC-32C runs at memory speed with the CPU's instruction
// while SHA-256 would cost more than the encoding.
//
// Compatibility: a reader refuses versions it does not know
// (ErrSnapshotVersion). A version that adds block kinds or fields must
// change the version number. This reader reads versions 1 and 2; a version
// 1 table is restored without the schema check, which it has nothing for.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

const (
	snapshotMagic   = "\x89STRATA\n"
	snapshotVersion = 2
	// snapshotOldest is the oldest version a reader reads.
	snapshotOldest  = 1
	snapPreludeSize = len(snapshotMagic) + 4 // magic and version

	snapKindHeader  = 'H'
	snapKindObjects = 'O'
	snapKindFooter  = 'F'

	// snapBlockHeader is kind and length; snapBlockTrailer the CRC.
	snapBlockHeader  = 5
	snapBlockTrailer = 4

	// snapMaxPayload bounds a block's payload, and so the largest
	// object a snapshot can hold (its encoding, a little less).
	snapMaxPayload = 1 << 30
	// snapReadChunk is how much of a block the reader reads at once beyond
	// what its buffer holds, so that a corrupt length cannot make it
	// allocate much more than the file holds.
	snapReadChunk = 1 << 20
)

var snapCRCTable = crc32.MakeTable(crc32.Castagnoli)

// snapBlockTarget is the payload size a block is filled up to. A variable
// only so that tests can make small files of many blocks.
var snapBlockTarget = 64 << 10

// Errors of snapshot files. They are returned wrapped with what was wrong;
// test for them with errors.Is.
var (
	// ErrCorruptSnapshot: the data is not an intact snapshot: a checksum
	// does not match, it is truncated, or its structure is broken.
	ErrCorruptSnapshot = errors.New("corrupt snapshot")
	// ErrSnapshotVersion: the snapshot was written in a format version
	// this package does not know (a newer one).
	ErrSnapshotVersion = errors.New("unknown snapshot format version")
	// ErrSnapshotTableMissing: a table to restore is not in the snapshot.
	ErrSnapshotTableMissing = errors.New("table not in snapshot")
)

func snapCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
}

// snapshotEntry is a table's entry in the header.
type snapshotEntry struct {
	name         string
	codec, typ   string // the schema; empty in version 1
	codecVersion uint32
	revision     uint64
	objects      uint64
}

// snapBlockWriter writes blocks to w, keeping the file CRC and offset.
type snapBlockWriter struct {
	w io.Writer
	// buf is the block being built: its kind and length placeholder, then
	// the payload so far.
	buf []byte
	// scratch is reused for encoding one object at a time.
	scratch []byte
	// sum is the file CRC of what was written so far; off its length.
	sum uint32
	off uint64
}

func (bw *snapBlockWriter) write(p []byte) error {
	if _, err := bw.w.Write(p); err != nil {
		return err
	}
	bw.off += uint64(len(p))
	return nil
}

func (bw *snapBlockWriter) writePrelude() error {
	var p [snapPreludeSize]byte
	copy(p[:], snapshotMagic)
	binary.LittleEndian.PutUint32(p[len(snapshotMagic):], snapshotVersion)
	bw.sum = crc32.Update(bw.sum, snapCRCTable, p[:])
	return bw.write(p[:])
}

// begin starts a block of the given kind.
func (bw *snapBlockWriter) begin(kind byte) {
	bw.buf = append(bw.buf[:0], kind, 0, 0, 0, 0)
}

// payloadLen returns the length of the open block's payload.
func (bw *snapBlockWriter) payloadLen() int { return len(bw.buf) - snapBlockHeader }

// end finishes the open block and writes it in one Write.
func (bw *snapBlockWriter) end() error {
	n := bw.payloadLen()
	if n > snapMaxPayload {
		return fmt.Errorf("snapshot block of %d bytes exceeds the limit of %d (object too large?)", n, snapMaxPayload)
	}
	binary.LittleEndian.PutUint32(bw.buf[1:snapBlockHeader], uint32(n))
	bw.sum = crc32.Update(bw.sum, snapCRCTable, bw.buf)
	bw.buf = binary.LittleEndian.AppendUint32(bw.buf, crc32.Checksum(bw.buf, snapCRCTable))
	return bw.write(bw.buf)
}

func (bw *snapBlockWriter) writeHeader(entries []snapshotEntry) error {
	bw.begin(snapKindHeader)
	b := binary.AppendUvarint(bw.buf, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = binary.AppendUvarint(b, uint64(e.codecVersion))
		b = binary.AppendUvarint(b, e.revision)
		b = binary.AppendUvarint(b, e.objects)
		b = binary.AppendUvarint(b, uint64(len(e.codec)))
		b = append(b, e.codec...)
		b = binary.AppendUvarint(b, uint64(len(e.typ)))
		b = append(b, e.typ...)
	}
	bw.buf = b
	return bw.end()
}

func (bw *snapBlockWriter) writeFooter(tables int, objects uint64) error {
	offset, sum := bw.off, bw.sum
	bw.begin(snapKindFooter)
	b := binary.AppendUvarint(bw.buf, uint64(tables))
	b = binary.AppendUvarint(b, objects)
	b = binary.AppendUvarint(b, offset)
	bw.buf = binary.LittleEndian.AppendUint32(b, sum)
	return bw.end()
}

// snapObjectWriter writes the records of one table into object blocks.
type snapObjectWriter struct {
	bw    *snapBlockWriter
	table int
	open  bool // a block of the table is open
	n     uint64
}

// add appends one record, closing the open block first if the record would
// take it over snapBlockTarget.
func (ow *snapObjectWriter) add(rev uint64, value []byte) error {
	bw := ow.bw
	size := 2*binary.MaxVarintLen64 + len(value)
	if ow.open && bw.payloadLen()+size > snapBlockTarget {
		if err := bw.end(); err != nil {
			return err
		}
		ow.open = false
	}
	if !ow.open {
		bw.begin(snapKindObjects)
		bw.buf = binary.AppendUvarint(bw.buf, uint64(ow.table))
		ow.open = true
	}
	b := binary.AppendUvarint(bw.buf, rev)
	b = binary.AppendUvarint(b, uint64(len(value)))
	bw.buf = append(b, value...)
	ow.n++
	return nil
}

// finish closes the open block.
func (ow *snapObjectWriter) finish() error {
	if !ow.open {
		return nil
	}
	ow.open = false
	return ow.bw.end()
}

// snapBlockReader reads and verifies blocks, keeping the file CRC and offset.
type snapBlockReader struct {
	r io.Reader
	// version is the file's format version, read from the prelude.
	version uint32
	hdr     [snapBlockHeader]byte
	// buf holds the last block's payload and CRC. Reused: what was
	// read from it dies at the next block.
	buf []byte
	// sum is the file CRC of what was read so far; off its length.
	// sumBefore and offBefore are the same before the last block.
	sum, sumBefore uint32
	off, offBefore uint64
}

// readFull reads exactly len(p) bytes; running out of data is corruption.
func (br *snapBlockReader) readFull(p []byte, what string) error {
	if _, err := io.ReadFull(br.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return snapCorrupt("truncated in %s at offset %d", what, br.off)
		}
		return fmt.Errorf("reading snapshot: %w", err)
	}
	return nil
}

func (br *snapBlockReader) readPrelude() error {
	var p [snapPreludeSize]byte
	if err := br.readFull(p[:], "prelude"); err != nil {
		return err
	}
	if string(p[:len(snapshotMagic)]) != snapshotMagic {
		return snapCorrupt("not a Strata snapshot (bad magic)")
	}
	v := binary.LittleEndian.Uint32(p[len(snapshotMagic):])
	if v < snapshotOldest || v > snapshotVersion {
		return fmt.Errorf("%w: version %d, this reader knows versions %d to %d", ErrSnapshotVersion, v, snapshotOldest, snapshotVersion)
	}
	br.version = v
	br.sum = crc32.Update(0, snapCRCTable, p[:])
	br.off = uint64(snapPreludeSize)
	return nil
}

// readBlock reads the next block, verifies its CRC and returns its kind and
// payload, valid until the next call.
func (br *snapBlockReader) readBlock() (byte, []byte, error) {
	if err := br.readFull(br.hdr[:], "block header"); err != nil {
		return 0, nil, err
	}
	kind := br.hdr[0]
	n := binary.LittleEndian.Uint32(br.hdr[1:])
	if n > snapMaxPayload {
		return 0, nil, snapCorrupt("block at offset %d: length %d over the limit", br.off, n)
	}
	if err := br.readBody(int(n) + snapBlockTrailer); err != nil {
		return 0, nil, err
	}
	payload := br.buf[:n]
	want := binary.LittleEndian.Uint32(br.buf[n:])
	got := crc32.Update(crc32.Update(0, snapCRCTable, br.hdr[:]), snapCRCTable, payload)
	if got != want {
		return 0, nil, snapCorrupt("block at offset %d: checksum mismatch", br.off)
	}
	br.sumBefore, br.offBefore = br.sum, br.off
	br.sum = crc32.Update(crc32.Update(br.sum, snapCRCTable, br.hdr[:]), snapCRCTable, payload)
	br.off += uint64(snapBlockHeader + n + snapBlockTrailer)
	return kind, payload, nil
}

// readBody reads n bytes into buf. Beyond buf's capacity it grows buf by at
// most snapReadChunk (or doubling) per read, so a corrupt length in a short
// file fails at the end of the file, not in a giant allocation.
func (br *snapBlockReader) readBody(n int) error {
	if n <= cap(br.buf) {
		br.buf = br.buf[:n]
		return br.readFull(br.buf, "block")
	}
	buf := br.buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(len(buf), snapReadChunk))
		have := len(buf)
		buf = append(buf, make([]byte, step)...)
		if err := br.readFull(buf[have:], "block"); err != nil {
			return err
		}
	}
	br.buf = buf
	return nil
}

// expectEOF checks that nothing follows the footer.
func (br *snapBlockReader) expectEOF() error {
	var b [1]byte
	n, err := io.ReadFull(br.r, b[:])
	switch {
	case n > 0:
		return snapCorrupt("data after the snapFooter at offset %d", br.off)
	case errors.Is(err, io.EOF):
		return nil
	default:
		return fmt.Errorf("reading snapshot: %w", err)
	}
}

// parseSnapHeader decodes the header block's payload.
func parseSnapHeader(p []byte, version uint32) ([]snapshotEntry, error) {
	d := snapDecoder{p: p}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(p)) {
		return nil, snapCorrupt("header: bad table count")
	}
	entries := make([]snapshotEntry, n)
	for i := range entries {
		e := &entries[i]
		e.name = string(d.bytes())
		cv := d.uvarint()
		e.revision = d.uvarint()
		e.objects = d.uvarint()
		if version >= 2 {
			e.codec = string(d.bytes())
			e.typ = string(d.bytes())
		}
		if d.err != nil {
			return nil, snapCorrupt("header: table %d: %v", i, d.err)
		}
		if cv > uint64(^uint32(0)) {
			return nil, snapCorrupt("header: table %q: codec version %d", e.name, cv)
		}
		e.codecVersion = uint32(cv)
		for _, prev := range entries[:i] {
			if prev.name == e.name {
				return nil, snapCorrupt("header: table %q twice", e.name)
			}
		}
	}
	if len(d.p) != 0 {
		return nil, snapCorrupt("header: %d bytes after the tables", len(d.p))
	}
	return entries, nil
}

// snapFooter is the footer block's content.
type snapFooter struct {
	tables, objects, offset uint64
	sum                     uint32
}

func parseSnapFooter(p []byte) (snapFooter, error) {
	d := snapDecoder{p: p}
	f := snapFooter{tables: d.uvarint(), objects: d.uvarint(), offset: d.uvarint()}
	if d.err != nil || len(d.p) != 4 {
		return f, snapCorrupt("snapFooter: malformed")
	}
	f.sum = binary.LittleEndian.Uint32(d.p)
	return f, nil
}

// snapDecoder reads uvarints and length-prefixed bytes from a payload; the
// first failure sticks in err.
type snapDecoder struct {
	p   []byte
	err error
}

var errSnapShort = errors.New("malformed or short data")

func (d *snapDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = errSnapShort
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *snapDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.err = errSnapShort
		return nil
	}
	b := d.p[:n]
	d.p = d.p[n:]
	return b
}

// snapObjectReader reads the records of one table from its object blocks.
type snapObjectReader struct {
	br    *snapBlockReader
	table int    // the table's position in the header
	name  string // for errors
	// remaining counts the table's records not yet returned.
	remaining uint64
	// rest is the part of the current block's payload not yet read.
	rest []byte
	// err is the first failure; it stops the reader.
	err error
}

// next returns the next record: its revision and its value, valid until
// the following call. It returns false at the table's end or on error
// (then err is set).
func (or *snapObjectReader) next() (uint64, []byte, bool) {
	if or.err != nil || or.remaining == 0 {
		return 0, nil, false
	}
	if len(or.rest) == 0 {
		if or.err = or.nextBlock(); or.err != nil {
			return 0, nil, false
		}
	}
	d := snapDecoder{p: or.rest}
	rev := d.uvarint()
	value := d.bytes()
	if d.err != nil {
		or.err = snapCorrupt("table %q: malformed record at offset %d", or.name, or.br.offBefore)
		return 0, nil, false
	}
	or.rest = d.p
	or.remaining--
	if or.remaining == 0 && len(or.rest) != 0 {
		or.err = snapCorrupt("table %q: more records than the header counts", or.name)
		return 0, nil, false
	}
	return rev, value, true
}

func (or *snapObjectReader) nextBlock() error {
	kind, p, err := or.br.readBlock()
	if err != nil {
		return err
	}
	if kind != snapKindObjects {
		return snapCorrupt("table %q: block of kind %q where %d more objects were expected", or.name, kind, or.remaining)
	}
	d := snapDecoder{p: p}
	if t := d.uvarint(); d.err != nil || t != uint64(or.table) {
		return snapCorrupt("table %q: block at offset %d belongs to another table", or.name, or.br.offBefore)
	}
	if len(d.p) == 0 {
		return snapCorrupt("table %q: empty block at offset %d", or.name, or.br.offBefore)
	}
	or.rest = d.p
	return nil
}

// skip reads the table's records without decoding them.
func (or *snapObjectReader) skip() error {
	for {
		if _, _, ok := or.next(); !ok {
			return or.done()
		}
	}
}

// done returns the reader's error, or an error if records are left.
func (or *snapObjectReader) done() error {
	if or.err == nil && or.remaining != 0 {
		return snapCorrupt("table %q: %d objects missing", or.name, or.remaining)
	}
	return or.err
}
