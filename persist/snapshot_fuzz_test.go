package persist

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzReadSnapshot feeds the reader arbitrary bytes: it must never panic,
// and either fail, changing nothing, or restore exactly what the file
// holds. Each input is also read with its checksums repaired, so that the
// fuzzer gets past them to the parsing and decoding behind. The seeds
// (valid snapshots, and damaged ones) run as a normal test.
func FuzzReadSnapshot(f *testing.F) {
	setBlockTarget(f, 64)
	src := newSnapDB(f)
	src.fill(f, 6, 0, 20, 100)
	txn := src.db.ReadTxn()
	valid := snapWrite(f, txn, src.tables()...)
	reordered := snapWrite(f, txn, src.tables()[2], src.tables()[0], src.tables()[1])
	peopleOnly := snapWrite(f, txn, src.tables()[0])
	golden, err := os.ReadFile(filepath.Join("testdata", "snapshot", "v1.snap"))
	if err != nil {
		f.Fatal(err)
	}
	// renamed is valid once repaired: an object's name changed.
	renamed := bytes.Replace(valid, []byte("p002"), []byte("q002"), 1)
	for _, seed := range [][]byte{valid, reordered, peopleOnly, golden, renamed, nil, valid[:snapPreludeSize]} {
		f.Add(seed)
		for _, pos := range []int{0, 9, snapPreludeSize, snapPreludeSize + 2, len(seed) / 2, len(seed) - 1} {
			if pos >= 0 && pos < len(seed) {
				c := slices.Clone(seed)
				c[pos] ^= 0x10
				f.Add(c)
			}
		}
		f.Add(seed[:len(seed)/2])
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		snapFuzzRead(t, data)
		snapFuzzRead(t, snapRepair(data))
	})
}

// snapFuzzRead reads data into a fresh database: it fails, changing
// nothing, or restores what snapDecodeFile finds in it.
func snapFuzzRead(t *testing.T, data []byte) {
	{
		dst := newSnapDB(t)
		info, err := ReadSnapshot(bytes.NewReader(data), dst.tables()...)
		if err != nil {
			dst.requireUnchanged(t, snapContent{})
			return
		}
		if info.Bytes != uint64(len(data)) {
			t.Fatalf("info says %d bytes, read %d", info.Bytes, len(data))
		}
		want := snapDecodeFile(t, data)
		rtxn := dst.db.ReadTxn()
		for _, tbl := range dst.all()[:3] {
			if got := contentOf(rtxn, tbl); !got.equal(want[tbl.Name()]) {
				t.Fatalf("table %s: restored content differs from the file's", tbl.Name())
			}
		}
	}
}

// snapRepair returns data with every block CRC and the footer's file CRC
// made right, as far as the block lengths can be followed.
func snapRepair(data []byte) []byte {
	if len(data) < snapPreludeSize {
		return data
	}
	out := slices.Clone(data)
	sum := crc32.Update(0, snapCRCTable, out[:snapPreludeSize])
	for p := snapPreludeSize; p+snapBlockHeader+snapBlockTrailer <= len(out); {
		n := int(binary.LittleEndian.Uint32(out[p+1:]))
		end := p + snapBlockHeader + n
		if n > len(out)-p-snapBlockHeader-snapBlockTrailer {
			break
		}
		if out[p] == snapKindFooter && n >= 4 {
			binary.LittleEndian.PutUint32(out[end-4:], sum)
		}
		sum = crc32.Update(sum, snapCRCTable, out[p:end])
		binary.LittleEndian.PutUint32(out[end:], crc32.Checksum(out[p:end], snapCRCTable))
		p = end + snapBlockTrailer
	}
	return out
}

// snapDecodeFile decodes a valid snapshot of the tables of snapDB the
// simple way, for comparison: each table's objects in primary key order,
// and its revision as restored (at least that of every object).
func snapDecodeFile(t testing.TB, data []byte) map[string]snapContent {
	t.Helper()
	codecs := map[string]Codec[*snapObj]{
		"people": JSON[*snapObj](),
		"blobs":  Binary[snapObj](),
		"none":   snapFuncs,
	}
	payload := func(b []byte) []byte { return b[snapBlockHeader : len(b)-snapBlockTrailer] }
	blocks := snapBlocks(t, data)
	entries, err := parseSnapHeader(payload(blocks[0]), binary.LittleEndian.Uint32(data[len(snapshotMagic):]))
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string]snapContent{}
	for _, b := range blocks[1 : len(blocks)-1] {
		d := snapDecoder{p: payload(b)}
		e := entries[d.uvarint()]
		c := contents[e.name]
		for len(d.p) > 0 {
			rev := d.uvarint()
			o, err := codecs[e.name].Decode(d.bytes(), e.codecVersion)
			if err != nil || d.err != nil {
				t.Fatalf("a valid file holds a bad record: %v, %v", err, d.err)
			}
			c.rows = append(c.rows, snapRow{*o, rev})
		}
		contents[e.name] = c
	}
	for _, e := range entries {
		c := contents[e.name]
		c.revision = e.revision
		for _, r := range c.rows {
			c.revision = max(c.revision, r.rev)
		}
		slices.SortFunc(c.rows, func(a, b snapRow) int { return cmp.Compare(a.obj.ID, b.obj.ID) })
		contents[e.name] = c
	}
	return contents
}
