package persist

import (
	"fmt"
	"io"
)

// WriteSnapshot writes a snapshot of the named tables (every table of the
// catalog, in name order, if none is named) to w, in the format of
// WriteSnapshot, from the stored records: objects are not decoded, so no
// Go type is needed. Each table's records are its objects' revisions and
// stored encodings, in primary key order; its header entry has its
// revision as Register restores it, its schema, and the codec version of
// its values. So when a table's values are of its codec's current version,
// the file is the one WriteSnapshot writes of the table loaded from the
// store, byte for byte.
//
// A snapshot records one codec version per table: a table whose values were
// written by several versions of its codec (a Versioned codec's older
// values, which Register migrates in memory but does not rewrite) fails;
// the application, whose codec migrates them, exports it with
// WriteSnapshot. An unknown table fails with ErrTableUnknown, a malformed
// value with ErrCorrupt. The store is read twice (the header counts the
// objects). On error, throw away what was written to w.
func (r *Reader) WriteSnapshot(w io.Writer, tables ...string) error {
	if len(tables) == 0 {
		for _, t := range r.tables {
			tables = append(tables, t.Name)
		}
	}
	stored := make([]StoredTable, len(tables))
	entries := make([]snapshotEntry, len(tables))
	for i, name := range tables {
		t, err := r.Table(name)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		for _, prev := range tables[:i] {
			if prev == name {
				return fmt.Errorf("snapshot: table %q given twice", name)
			}
		}
		stored[i] = t
		if entries[i], err = r.snapshotEntry(t); err != nil {
			return fmt.Errorf("snapshot: table %q: %w", name, err)
		}
	}
	return writeSnapFrame(w, entries, func(i int, ow *snapObjectWriter) error {
		for obj, err := range r.Objects(stored[i].Name, nil, nil) {
			if err == nil {
				err = ow.add(obj.Revision, obj.Value)
			}
			if err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
		return nil
	})
}

// snapshotEntry returns the header entry of table t: its objects counted,
// its revision and the codec version of its values, which must be one.
func (r *Reader) snapshotEntry(t StoredTable) (snapshotEntry, error) {
	e := snapshotEntry{name: t.Name, revision: t.Revision}
	if t.Schema != nil {
		e.codec, e.typ, e.codecVersion = t.Schema.Codec, t.Schema.Type, t.Schema.Version
	}
	versions := map[uint32]bool{}
	for obj, err := range r.Objects(t.Name, nil, nil) {
		if err != nil {
			return e, err
		}
		e.objects++
		e.revision = max(e.revision, obj.Revision)
		versions[obj.Version] = true
	}
	switch {
	case len(versions) > 1:
		return e, fmt.Errorf("values of %d codec versions: a snapshot holds one; write it from the application, whose codec migrates the older ones (WriteSnapshot)", len(versions))
	case len(versions) == 1:
		for v := range versions {
			e.codecVersion = v
		}
	}
	return e, nil
}

// WriteSnapshotFile writes a snapshot of the named tables, as
// Reader.WriteSnapshot does, to the file at path, replacing it atomically
// as the function WriteSnapshotFile does.
func (r *Reader) WriteSnapshotFile(path string, tables ...string) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return r.WriteSnapshot(w, tables...) })
}
