package persist

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-db/strata"
)

// write is the export's hot loop (BenchmarkSnapshotExport): one codec call
// into a reused buffer and one copy into the block per object, no
// allocation.
func (b *binding[Obj]) write(ow *snapObjectWriter, txn strata.ReadTxn) error {
	var (
		value = ow.bw.scratch
		err   error
	)
	for obj, rev := range b.tbl.All(txn) {
		if value, err = b.codec.Append(value[:0], obj); err != nil {
			return fmt.Errorf("table %q: encoding the object at revision %d: %w", b.tbl.Name(), rev, err)
		}
		if err = ow.add(rev, value); err != nil {
			return err
		}
	}
	ow.bw.scratch = value
	return nil
}

// restore is the import's hot loop (BenchmarkSnapshotImport): the records
// are decoded as strata.Restore pulls them, straight from the block buffer.
func (b *binding[Obj]) restore(txn strata.WriteTxn, or *snapObjectReader, e *snapshotEntry) error {
	objects := func(yield func(Obj, strata.Revision) bool) {
		for {
			rev, value, ok := or.next()
			if !ok {
				return
			}
			obj, err := b.codec.Decode(value, e.codecVersion)
			if err != nil {
				or.err = fmt.Errorf("table %q: decoding the object at revision %d: %w", e.name, rev, err)
				return
			}
			if !yield(obj, rev) {
				return
			}
		}
	}
	if err := strata.Restore(txn, b.tbl, objects, e.revision); err != nil {
		return fmt.Errorf("restoring snapshot: %w", err)
	}
	return or.done()
}

// SnapshotInfo describes a snapshot that ReadSnapshot read.
type SnapshotInfo struct {
	// Version is the file format version.
	Version uint32
	// Tables lists every table in the snapshot, in file order.
	Tables []SnapshotTableInfo
	// Objects is the number of objects in the snapshot, of all its tables.
	Objects uint64
	// Bytes is the snapshot's size.
	Bytes uint64
}

// SnapshotTableInfo describes one table of a snapshot.
type SnapshotTableInfo struct {
	Name         strata.TableName
	CodecVersion uint32 // the version of the codec that wrote the objects
	// Codec and Type are the name of the codec that wrote the objects and
	// the identity of their type (see Table); empty in a snapshot of
	// format version 1, which did not record them.
	Codec, Type string
	Revision    strata.Revision // the table's revision when written
	Objects     uint64
	// Restored is false for a table that is in the snapshot but was not
	// given to ReadSnapshot: its contents were verified and skipped.
	Restored bool
}

// Skipped returns the names of the tables in the snapshot that were not
// restored.
func (info SnapshotInfo) Skipped() []strata.TableName {
	var names []strata.TableName
	for _, t := range info.Tables {
		if !t.Restored {
			names = append(names, t.Name)
		}
	}
	return names
}

// WriteSnapshot writes a snapshot of tables, as txn sees them, to w: every
// object with its revision, and each table's revision. Since a ReadTxn
// never changes, the snapshot is consistent and point in time while writers
// go on; WriteSnapshot takes no lock. (A WriteTxn passed as txn must not be
// written to meanwhile.) Tables need no persistent store: in-memory
// databases can be snapshotted too.
//
// The tables must have distinct names. WriteSnapshot makes one Write per
// block of at most about 64 KiB, so w needs no buffering. On error, throw
// away what was written to w. The format is described in
// snapshot_format.go; WriteSnapshotFile writes a file safely.
func WriteSnapshot(w io.Writer, txn strata.ReadTxn, tables ...TableBinding) error {
	entries := make([]snapshotEntry, len(tables))
	for i, st := range tables {
		t, sc := st.meta(), st.schema()
		entries[i] = snapshotEntry{
			name:         t.Name(),
			codecVersion: sc.version,
			codec:        sc.codec,
			typ:          sc.typ,
			revision:     t.Revision(txn),
			objects:      uint64(t.NumObjects(txn)),
		}
		for _, prev := range entries[:i] {
			if prev.name == entries[i].name {
				return fmt.Errorf("snapshot: table %q given twice", prev.name)
			}
		}
	}
	// A count that does not match: the transaction changed under us (a
	// WriteTxn in use).
	return writeSnapFrame(w, entries, func(i int, ow *snapObjectWriter) error {
		return tables[i].write(ow, txn)
	})
}

// writeSnapFrame writes a snapshot of the tables entries describes to w:
// the prelude, the header, each table's objects, which each writes into
// its object writer, and the footer. A table that wrote another number of
// objects than its entry counted fails the snapshot (its source changed
// while it was written). WriteSnapshot and Reader.WriteSnapshot share it.
func writeSnapFrame(w io.Writer, entries []snapshotEntry, each func(i int, ow *snapObjectWriter) error) error {
	bw := &snapBlockWriter{w: w, buf: make([]byte, 0, snapBlockTarget+1024)}
	if err := bw.writePrelude(); err != nil {
		return err
	}
	if err := bw.writeHeader(entries); err != nil {
		return err
	}
	var total uint64
	for i := range entries {
		ow := snapObjectWriter{bw: bw, table: i}
		if err := each(i, &ow); err != nil {
			return err
		}
		if err := ow.finish(); err != nil {
			return err
		}
		if ow.n != entries[i].objects {
			return fmt.Errorf("snapshot: table %q: %d objects written, %d counted: the table changed while it was written",
				entries[i].name, ow.n, entries[i].objects)
		}
		total += ow.n
	}
	return bw.writeFooter(len(entries), total)
}

// ReadSnapshot reads a snapshot written by WriteSnapshot from r and
// restores the given tables from it, in one write transaction: each
// table gets the objects it had, at their revisions, and its revision; its
// secondary indexes are built as the objects go in. The tables must be
// empty (strata.ErrTableNotEmpty otherwise) and are locked until
// ReadSnapshot returns. Tables of the snapshot that are not given are
// verified and skipped, and reported in the SnapshotInfo; a given table that
// is not in the snapshot is an error (ErrSnapshotTableMissing). The tables
// must belong to one database (ErrForeignTable otherwise). With no tables
// at all, ReadSnapshot only verifies the snapshot.
//
// A table of the snapshot written with another codec or for another object
// type than the given binding names (Table) is refused before anything is
// decoded, with ErrSchemaMismatch, unless the binding's codec version is
// higher (it then decodes the snapshot's values as older versions: the
// Versioned codec's migration).
//
// ReadSnapshot changes nothing unless it succeeds. It reads r once,
// decoding objects block by block into the open transaction as each
// block's checksum is verified (so a codec never sees damaged bytes), and
// commits only after the footer's counts and whole-file checksum are
// verified; on any error the transaction is aborted. So memory holds the
// restored tables and one block, never the file; the price is that damage
// near the end is found only after decoding what precedes it. r must end
// with the snapshot: trailing bytes are corruption.
//
// A damaged, truncated or foreign file fails with ErrCorruptSnapshot, a
// newer format with ErrSnapshotVersion, objects written by a newer codec
// version than the table's codec with ErrUnknownVersion, a table of
// another type or codec with ErrSchemaMismatch. On error the
// SnapshotInfo is zero.
//
// Tables registered with a persistent store (through strata.SetJournal)
// are written to the store as well, by the commit, like any change: a
// snapshot can fill a fresh store.
func ReadSnapshot(r io.Reader, tables ...TableBinding) (SnapshotInfo, error) {
	br := &snapBlockReader{r: r}
	if err := br.readPrelude(); err != nil {
		return SnapshotInfo{}, err
	}
	kind, p, err := br.readBlock()
	if err != nil {
		return SnapshotInfo{}, err
	}
	if kind != snapKindHeader {
		return SnapshotInfo{}, snapCorrupt("first block is of kind %q, not the header", kind)
	}
	entries, err := parseSnapHeader(p, br.version)
	if err != nil {
		return SnapshotInfo{}, err
	}
	byEntry, err := matchSnapTables(entries, tables)
	if err != nil {
		return SnapshotInfo{}, err
	}
	var txn strata.WriteTxn
	if len(tables) > 0 {
		metas := make([]strata.TableMeta, len(tables))
		for i, st := range tables {
			metas[i] = st.meta()
			if metas[i].DB() != metas[0].DB() {
				return SnapshotInfo{}, fmt.Errorf("restoring snapshot: table %q: not of table %q's database: %w", metas[i].Name(), metas[0].Name(), ErrForeignTable)
			}
		}
		txn = metas[0].DB().WriteTxn(metas[0], metas[1:]...)
		defer txn.Abort() // after Commit, does nothing
		for _, m := range metas {
			if m.NumObjects(txn) != 0 {
				return SnapshotInfo{}, fmt.Errorf("restoring snapshot: table %q: %w", m.Name(), strata.ErrTableNotEmpty)
			}
		}
	}
	info, err := readSnapTables(br, txn, entries, byEntry)
	if err != nil {
		return SnapshotInfo{}, err
	}
	if txn != nil {
		if _, err := txn.Commit(); err != nil {
			return SnapshotInfo{}, fmt.Errorf("restoring snapshot: %w", err)
		}
	}
	return info, nil
}

// matchSnapTables returns, for each entry of the header, the given table of the
// same name or nil. It checks that every given table is in the snapshot and
// that its codec can read the snapshot's version.
func matchSnapTables(entries []snapshotEntry, tables []TableBinding) ([]TableBinding, error) {
	byEntry := make([]TableBinding, len(entries))
	for _, st := range tables {
		name := st.meta().Name()
		now := st.schema()
		i := 0
		for i < len(entries) && entries[i].name != name {
			i++
		}
		switch {
		case i == len(entries):
			return nil, fmt.Errorf("table %q: %w", name, ErrSnapshotTableMissing)
		case byEntry[i] != nil:
			return nil, fmt.Errorf("snapshot: table %q given twice", name)
		case entries[i].codecVersion > now.version:
			return nil, fmt.Errorf("table %q: snapshot written by codec version %d, the codec is version %d: %w",
				name, entries[i].codecVersion, now.version, ErrUnknownVersion)
		}
		if e := &entries[i]; e.codec != "" || e.typ != "" {
			if err := checkSchema(&schema{codec: e.codec, version: e.codecVersion, typ: e.typ}, now); err != nil {
				return nil, fmt.Errorf("table %q: snapshot %w", name, err)
			}
		}
		byEntry[i] = st
	}
	return byEntry, nil
}

// readSnapTables reads the tables' objects, restoring those with a table in
// byEntry into txn, then the footer.
//
// When a restore fails on content that passed its checksums (a codec that
// cannot decode it, a key twice), the rest of the file is verified still:
// if it is corrupt, that is the error to report, not its symptom.
func readSnapTables(br *snapBlockReader, txn strata.WriteTxn, entries []snapshotEntry, byEntry []TableBinding) (SnapshotInfo, error) {
	info := SnapshotInfo{Version: br.version, Tables: make([]SnapshotTableInfo, len(entries))}
	for i := range entries {
		e := &entries[i]
		or := snapObjectReader{br: br, table: i, name: e.name, remaining: e.objects}
		var err error
		if st := byEntry[i]; st != nil {
			err = st.restore(txn, &or, e)
		} else {
			err = or.skip()
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				or.err = nil
				if verr := verifySnapRest(br, &or, entries, i); errors.Is(verr, ErrCorruptSnapshot) {
					return info, verr
				}
			}
			return info, err
		}
		info.Tables[i] = SnapshotTableInfo{
			Name:         e.name,
			CodecVersion: e.codecVersion,
			Codec:        e.codec,
			Type:         e.typ,
			Revision:     e.revision,
			Objects:      e.objects,
			Restored:     byEntry[i] != nil,
		}
		info.Objects += e.objects
	}
	if err := readSnapFooter(br, entries); err != nil {
		return info, err
	}
	info.Bytes = br.off
	return info, nil
}

// verifySnapRest reads what is left of the snapshot after or, the reader of
// table i, failed: the rest of that table, the later tables and the footer.
func verifySnapRest(br *snapBlockReader, or *snapObjectReader, entries []snapshotEntry, i int) error {
	if err := or.skip(); err != nil {
		return err
	}
	for j := i + 1; j < len(entries); j++ {
		or := snapObjectReader{br: br, table: j, name: entries[j].name, remaining: entries[j].objects}
		if err := or.skip(); err != nil {
			return err
		}
	}
	return readSnapFooter(br, entries)
}

// readSnapFooter reads the footer, checks it against what was read, and
// checks that nothing follows.
func readSnapFooter(br *snapBlockReader, entries []snapshotEntry) error {
	kind, p, err := br.readBlock()
	if err != nil {
		return err
	}
	if kind != snapKindFooter {
		return snapCorrupt("block of kind %q after the last table, not the footer", kind)
	}
	f, err := parseSnapFooter(p)
	if err != nil {
		return err
	}
	var objects uint64
	for _, e := range entries {
		objects += e.objects
	}
	switch {
	case f.tables != uint64(len(entries)) || f.objects != objects:
		return snapCorrupt("footer counts %d tables and %d objects, the file holds %d and %d",
			f.tables, f.objects, len(entries), objects)
	case f.offset != br.offBefore:
		return snapCorrupt("footer at offset %d says %d", br.offBefore, f.offset)
	case f.sum != br.sumBefore:
		return snapCorrupt("file checksum mismatch")
	}
	return br.expectEOF()
}
