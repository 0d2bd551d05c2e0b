package persist

import (
	"io"
)

// SnapshotReader reads the records of a snapshot as they are stored, without
// decoding them: for tools that show, verify or compare snapshots of tables
// whose Go types they do not know (the strata command). Programs that know
// their tables' types restore a snapshot with ReadSnapshot.
//
// A record is an object's revision and its codec's encoding (see
// SnapshotTableInfo for the codec's name and version); snapshots do not
// store primary keys, which are computed from the decoded objects.
//
// The reader verifies what it returns: every record comes from a block
// whose checksum matched, and once Next returns false with Err nil, the
// whole snapshot was read and verified, footer, counts and whole-file
// checksum included, and nothing follows it. A caller that stops early has
// verified only the blocks it read.
//
// A SnapshotReader is not safe for concurrent use.
type SnapshotReader struct {
	br      snapBlockReader
	entries []snapshotEntry
	// table is the position of the table whose records are being read;
	// or reads them.
	table int
	or    snapObjectReader
	rec   SnapshotRecord
	err   error
	// done: the footer was read and verified, or err is set.
	done bool
}

// SnapshotRecord is a record of a snapshot, as SnapshotReader.Record returns
// it.
type SnapshotRecord struct {
	// Table is the position of the record's table in
	// SnapshotReader.Tables.
	Table int
	// Revision is the object's revision.
	Revision uint64
	// Value is the encoding of the object by the table's codec. It is only
	// valid until the next call of Next.
	Value []byte
}

// NewSnapshotReader reads the beginning of the snapshot in r (its format
// version and its header, which lists the tables) and returns a reader of
// its records. A file that is not an intact snapshot fails with
// ErrCorruptSnapshot, one of a newer format with ErrSnapshotVersion.
//
// The reader reads r as Next asks, one block (at most about 64 KiB, or one
// large object) at a time.
func NewSnapshotReader(r io.Reader) (*SnapshotReader, error) {
	sr := &SnapshotReader{br: snapBlockReader{r: r}}
	if err := sr.br.readPrelude(); err != nil {
		return nil, err
	}
	kind, p, err := sr.br.readBlock()
	if err != nil {
		return nil, err
	}
	if kind != snapKindHeader {
		return nil, snapCorrupt("first block is of kind %q, not the header", kind)
	}
	if sr.entries, err = parseSnapHeader(p, sr.br.version); err != nil {
		return nil, err
	}
	sr.startTable(0)
	return sr, nil
}

// Version returns the snapshot's format version.
func (sr *SnapshotReader) Version() uint32 { return sr.br.version }

// Tables describes the snapshot's tables, as its header lists them, in file
// order (Restored is false). The records of each table come in this order.
func (sr *SnapshotReader) Tables() []SnapshotTableInfo {
	infos := make([]SnapshotTableInfo, len(sr.entries))
	for i, e := range sr.entries {
		infos[i] = SnapshotTableInfo{
			Name:         e.name,
			CodecVersion: e.codecVersion,
			Codec:        e.codec,
			Type:         e.typ,
			Revision:     e.revision,
			Objects:      e.objects,
		}
	}
	return infos
}

// startTable starts reading the records of table i.
func (sr *SnapshotReader) startTable(i int) {
	sr.table = i
	if i < len(sr.entries) {
		sr.or = snapObjectReader{br: &sr.br, table: i, name: sr.entries[i].name, remaining: sr.entries[i].objects}
	}
}

// Next moves to the next record, of any table: the tables in the order of
// Tables, each table's records in the primary key order of its objects. It
// returns false after the last record, once the rest of the snapshot is
// read and verified, or on error; Err tells which.
func (sr *SnapshotReader) Next() bool {
	for !sr.done {
		if sr.table == len(sr.entries) {
			sr.err = readSnapFooter(&sr.br, sr.entries)
			sr.done = true
			return false
		}
		if rev, value, ok := sr.or.next(); ok {
			sr.rec = SnapshotRecord{Table: sr.table, Revision: rev, Value: value}
			return true
		}
		if err := sr.or.done(); err != nil {
			sr.err, sr.done = err, true
			return false
		}
		sr.startTable(sr.table + 1)
	}
	return false
}

// Record returns the record Next moved to.
func (sr *SnapshotReader) Record() SnapshotRecord { return sr.rec }

// Err returns the error that ended Next, or nil: once Next has returned
// false, nil means the snapshot was read to its end and verified whole.
// A damaged, truncated or foreign file gives ErrCorruptSnapshot.
func (sr *SnapshotReader) Err() error { return sr.err }

// Offset returns how many bytes of the snapshot have been read, each
// block's checksum verified: a measure of progress.
func (sr *SnapshotReader) Offset() uint64 { return sr.br.off }
