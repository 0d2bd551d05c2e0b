package persist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-db/strata"
)

// snapRecords reads every record of a snapshot with a SnapshotReader, by
// table, and returns the reader's error.
func snapRecords(data []byte) (*SnapshotReader, [][]SnapshotRecord, error) {
	sr, err := NewSnapshotReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	out := make([][]SnapshotRecord, len(sr.Tables()))
	for sr.Next() {
		r := sr.Record()
		r.Value = slices.Clone(r.Value)
		out[r.Table] = append(out[r.Table], r)
	}
	return sr, out, sr.Err()
}

// TestSnapshotReader: the reader returns every record of every table, in
// primary key order, as the tables' codecs encoded them, and the header's
// description of each table.
func TestSnapshotReader(t *testing.T) {
	setBlockTarget(t, 256) // many blocks
	src := newSnapDB(t)
	src.fill(t, 40, 0, 10, 3000)
	txn := src.db.ReadTxn()
	data := snapWrite(t, txn, src.tables()...)

	sr, got, err := snapRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Version() != snapshotVersion || sr.Offset() != uint64(len(data)) {
		t.Fatalf("version %d, offset %d of %d", sr.Version(), sr.Offset(), len(data))
	}
	tables := sr.Tables()
	codecs := []Codec[*snapObj]{JSON[*snapObj](), Binary[snapObj](), Codec[*snapObj](snapFuncs)}
	for i, tbl := range []strata.RWTable[*snapObj]{src.people, src.blobs, src.none} {
		info := tables[i]
		want := SnapshotTableInfo{
			Name: tbl.Name(), CodecVersion: codecs[i].Version(), Codec: codecName(codecs[i]),
			Type: "*github.com/strata-db/strata/persist.snapObj", Revision: tbl.Revision(txn),
			Objects: uint64(tbl.NumObjects(txn)),
		}
		if info != want {
			t.Errorf("table %d: %+v, want %+v", i, info, want)
		}
		var wantRecs []SnapshotRecord
		for o, rev := range tbl.All(txn) {
			v, err := codecs[i].Append(nil, o)
			if err != nil {
				t.Fatal(err)
			}
			wantRecs = append(wantRecs, SnapshotRecord{Table: i, Revision: rev, Value: v})
		}
		if !slices.EqualFunc(got[i], wantRecs, func(a, b SnapshotRecord) bool {
			return a.Table == b.Table && a.Revision == b.Revision && bytes.Equal(a.Value, b.Value)
		}) {
			t.Errorf("table %s: %d records differ from the table's %d objects", tbl.Name(), len(got[i]), len(wantRecs))
		}
	}
	if sr.Next() || sr.Err() != nil {
		t.Fatal("Next after the end")
	}
}

// TestSnapshotReaderDamage: every flipped byte and every truncation fails,
// in NewSnapshotReader or at the end of Next, with ErrCorruptSnapshot (or
// ErrSnapshotVersion in the version field); so do whole blocks dropped.
func TestSnapshotReaderDamage(t *testing.T) {
	data, _, _ := snapSmall(t)
	check := func(what string, file []byte, versionOK bool) {
		t.Helper()
		_, _, err := snapRecords(file)
		snapCheckErr(t, err, versionOK, what)
	}
	c := make([]byte, len(data))
	for pos := range data {
		copy(c, data)
		c[pos] ^= 0x10
		check(fmt.Sprintf("byte %d flipped", pos), c, pos >= len(snapshotMagic) && pos < snapPreludeSize)
	}
	for n := range len(data) {
		check(fmt.Sprintf("truncated to %d", n), data[:n], false)
	}
	check("a byte appended", append(slices.Clone(data), 0), false)
	blocks := snapBlocks(t, data)
	for i := range blocks {
		file := slices.Concat(append([][]byte{data[:snapPreludeSize]}, slices.Delete(slices.Clone(blocks), i, i+1)...)...)
		check(fmt.Sprintf("block %d dropped", i), file, false)
	}
}

// TestSnapshotReaderVersion1 reads the golden file of format version 1,
// which has no schemas.
func TestSnapshotReaderVersion1(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "snapshot", "v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	sr, got, err := snapRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Version() != 1 {
		t.Fatalf("version %d", sr.Version())
	}
	var n uint64
	for i, info := range sr.Tables() {
		if info.Codec != "" || info.Type != "" || uint64(len(got[i])) != info.Objects {
			t.Errorf("table %+v: %d records", info, len(got[i]))
		}
		n += info.Objects
	}
	if n == 0 {
		t.Fatal("no records in the golden file")
	}
}

// TestSnapshotReaderNotASnapshot: foreign data and newer versions are
// refused by NewSnapshotReader.
func TestSnapshotReaderNotASnapshot(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("PK\x03\x04 a zip file"), []byte(snapshotMagic)} {
		if _, err := NewSnapshotReader(bytes.NewReader(data)); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%q: %v", data, err)
		}
	}
	newer := append([]byte(snapshotMagic), snapshotVersion+1, 0, 0, 0)
	if _, err := NewSnapshotReader(bytes.NewReader(newer)); !errors.Is(err, ErrSnapshotVersion) {
		t.Errorf("newer version: %v", err)
	}
}
