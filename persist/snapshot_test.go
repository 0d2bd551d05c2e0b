package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// snapObj is the object of the snapshot tests' tables. Identifiers of these
// tests begin with snap, to stay clear of the store's tests in the package.
type snapObj struct {
	ID    uint64
	Name  string
	Group string
	Data  []byte
}

func (o *snapObj) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, o.ID)
	b = binary.AppendUvarint(b, uint64(len(o.Name)))
	b = append(b, o.Name...)
	b = binary.AppendUvarint(b, uint64(len(o.Group)))
	b = append(b, o.Group...)
	b = binary.AppendUvarint(b, uint64(len(o.Data)))
	return append(b, o.Data...), nil
}

func (o *snapObj) UnmarshalBinary(b []byte) error {
	d := snapDecoder{p: b}
	o.ID = d.uvarint()
	o.Name = string(d.bytes())
	o.Group = string(d.bytes())
	if data := d.bytes(); len(data) > 0 {
		o.Data = slices.Clone(data)
	}
	if d.err != nil || len(d.p) != 0 {
		return errors.New("snapObj: malformed")
	}
	return nil
}

var (
	snapByID = strata.Index[*snapObj, uint64]{
		Name:       "id",
		FromObject: func(o *snapObj) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	snapByName = strata.Index[*snapObj, string]{
		Name:       "name",
		FromObject: func(o *snapObj) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	snapByGroup = strata.Index[*snapObj, string]{
		Name:       "group",
		FromObject: func(o *snapObj) index.KeySet { return index.NewKeySet(index.String(o.Group)) },
		FromKey:    index.String,
	}
)

// snapFuncs is a codec of version 2 made of functions, over the binary
// encoding.
var snapFuncs = Funcs[*snapObj]{
	V:   2,
	Enc: func(dst []byte, o *snapObj) ([]byte, error) { return o.AppendBinary(dst) },
	Dec: func(data []byte, _ uint32) (*snapObj, error) {
		o := new(snapObj)
		return o, o.UnmarshalBinary(data)
	},
}

// snapDB is a database with the three tables the tests snapshot, each
// with another codec, and a bystander table that snapshots leave alone.
type snapDB struct {
	db                  *strata.DB
	people, blobs, none strata.RWTable[*snapObj]
	bystander           strata.RWTable[*snapObj]
}

func newSnapDB(t testing.TB) *snapDB {
	t.Helper()
	s := &snapDB{db: strata.New()}
	var err error
	mk := func(name string, secondary ...strata.Indexer[*snapObj]) strata.RWTable[*snapObj] {
		tbl, e := strata.NewTable(s.db, name, snapByID, secondary...)
		err = errors.Join(err, e)
		return tbl
	}
	s.bystander = mk("bystander")
	s.people = mk("people", snapByName, snapByGroup)
	s.blobs = mk("blobs")
	s.none = mk("none")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tables returns the snapshot bindings of the three tables.
func (s *snapDB) tables() []TableBinding {
	return []TableBinding{
		Table(s.people, JSON[*snapObj]()),
		Table(s.blobs, Binary[snapObj]()),
		Table(s.none, Codec[*snapObj](snapFuncs)),
	}
}

func (s *snapDB) all() []strata.RWTable[*snapObj] {
	return []strata.RWTable[*snapObj]{s.people, s.blobs, s.none, s.bystander}
}

// write runs f in a write transaction over every table and commits it.
func (s *snapDB) write(t testing.TB, f func(strata.WriteTxn)) strata.ReadTxn {
	t.Helper()
	txn := s.db.WriteTxn(s.people, s.blobs, s.none, s.bystander)
	f(txn)
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return rtxn
}

func snapInsert(t testing.TB, txn strata.WriteTxn, tbl strata.RWTable[*snapObj], o *snapObj) {
	t.Helper()
	if _, _, err := tbl.Insert(txn, o); err != nil {
		t.Fatal(err)
	}
}

// fill gives the tables people objects, blobs of sizes up to several
// blocks, and none a revision but no objects; the revisions are made
// uneven by updates and deletes.
func (s *snapDB) fill(t testing.TB, people int, blobSizes ...int) {
	t.Helper()
	s.write(t, func(txn strata.WriteTxn) {
		for i := range people {
			snapInsert(t, txn, s.people, &snapObj{ID: uint64(i), Name: fmt.Sprintf("p%03d", i), Group: fmt.Sprintf("g%d", i%3)})
		}
		for i, n := range blobSizes {
			data := make([]byte, n)
			for j := range data {
				data[j] = byte(i*7 + j*13)
			}
			snapInsert(t, txn, s.blobs, &snapObj{ID: uint64(i), Data: data})
		}
		snapInsert(t, txn, s.none, &snapObj{ID: 1})
		snapInsert(t, txn, s.bystander, &snapObj{ID: 1, Name: "stays"})
	})
	s.write(t, func(txn strata.WriteTxn) {
		for i := 0; i < people; i += 4 {
			snapInsert(t, txn, s.people, &snapObj{ID: uint64(i), Name: fmt.Sprintf("p%03d", i), Group: "updated"})
		}
		if people > 1 {
			if _, _, err := s.people.Delete(txn, &snapObj{ID: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.none.Delete(txn, &snapObj{ID: 1}); err != nil {
			t.Fatal(err)
		}
	})
}

// snapRow is an object and its revision.
type snapRow struct {
	obj snapObj
	rev strata.Revision
}

// content is a table's objects and revision, as txn sees them.
type snapContent struct {
	rows     []snapRow
	revision strata.Revision
}

func contentOf(txn strata.ReadTxn, tbl strata.Table[*snapObj]) snapContent {
	c := snapContent{revision: tbl.Revision(txn)}
	for o, rev := range tbl.All(txn) {
		c.rows = append(c.rows, snapRow{*o, rev})
	}
	return c
}

func (c snapContent) equal(d snapContent) bool {
	return c.revision == d.revision && slices.EqualFunc(c.rows, d.rows, func(a, b snapRow) bool {
		return a.rev == b.rev && a.obj.ID == b.obj.ID && a.obj.Name == b.obj.Name &&
			a.obj.Group == b.obj.Group && bytes.Equal(a.obj.Data, b.obj.Data)
	})
}

// contents returns the content of every table, bystander last.
func (s *snapDB) contents(txn strata.ReadTxn) []snapContent {
	var cs []snapContent
	for _, tbl := range s.all() {
		cs = append(cs, contentOf(txn, tbl))
	}
	return cs
}

// requireUnchanged fails unless the snapshot tables are empty at revision 0
// and unlocked, and the bystander is as it was.
func (s *snapDB) requireUnchanged(t testing.TB, bystander snapContent) {
	t.Helper()
	txn := s.db.ReadTxn()
	for _, tbl := range []strata.RWTable[*snapObj]{s.people, s.blobs, s.none} {
		if n, rev := tbl.NumObjects(txn), tbl.Revision(txn); n != 0 || rev != 0 {
			t.Fatalf("table %s changed: %d objects, revision %d", tbl.Name(), n, rev)
		}
	}
	if !contentOf(txn, s.bystander).equal(bystander) {
		t.Fatal("bystander changed")
	}
	s.db.WriteTxn(s.people, s.blobs, s.none).Abort() // the locks were released
}

func snapWrite(t testing.TB, txn strata.ReadTxn, tables ...TableBinding) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, txn, tables...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := newSnapDB(t)
	src.fill(t, 50, 0, 10, 200<<10, 1<<20+3)
	txn := src.db.ReadTxn()
	data := snapWrite(t, txn, src.tables()...)

	dst := newSnapDB(t)
	info, err := ReadSnapshot(bytes.NewReader(data), dst.tables()...)
	if err != nil {
		t.Fatal(err)
	}
	restored := dst.db.ReadTxn()
	want := src.contents(txn)
	got := dst.contents(restored)
	for i, tbl := range dst.all()[:3] {
		if !got[i].equal(want[i]) {
			t.Errorf("table %s: restored content differs: got %d objects at revision %d, want %d at %d",
				tbl.Name(), len(got[i].rows), got[i].revision, len(want[i].rows), want[i].revision)
		}
	}
	if len(got[2].rows) != 0 || got[2].revision == 0 {
		t.Errorf("table none: want no objects at a revision above 0, got %+v", got[2])
	}
	if len(got[3].rows) != 0 {
		t.Error("bystander was restored")
	}

	// The info describes the file.
	wantInfo := SnapshotInfo{Version: snapshotVersion, Bytes: uint64(len(data)), Objects: uint64(49 + 4)}
	for i, tbl := range src.all()[:3] {
		wantInfo.Tables = append(wantInfo.Tables, SnapshotTableInfo{
			Name: tbl.Name(), CodecVersion: src.tables()[i].schema().version,
			Codec: src.tables()[i].schema().codec, Type: src.tables()[i].schema().typ,
			Revision: tbl.Revision(txn), Objects: uint64(tbl.NumObjects(txn)), Restored: true,
		})
	}
	if fmt.Sprint(info) != fmt.Sprint(wantInfo) {
		t.Errorf("info:\n got %+v\nwant %+v", info, wantInfo)
	}

	// Secondary indexes work, and answer as the source does.
	rtxn := restored
	for _, name := range []string{"p000", "p007", "p049"} {
		o, rev, found := dst.people.Get(rtxn, snapByName.Query(name))
		wo, wrev, _ := src.people.Get(txn, snapByName.Query(name))
		if !found || rev != wrev || o.ID != wo.ID {
			t.Errorf("name %s: got %v at %d, want %v at %d", name, o, rev, wo, wrev)
		}
	}
	for _, g := range []string{"g0", "g1", "g2", "updated"} {
		var got, want []uint64
		for o := range dst.people.List(rtxn, snapByGroup.Query(g)) {
			got = append(got, o.ID)
		}
		for o := range src.people.List(txn, snapByGroup.Query(g)) {
			want = append(want, o.ID)
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("group %s: got %v, want %v", g, got, want)
		}
	}

	// Revisions go on above the restored ones.
	wtxn := dst.db.WriteTxn(dst.none)
	snapInsert(t, wtxn, dst.none, &snapObj{ID: 9})
	if rtxn, err = wtxn.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, rev, _ := dst.none.Get(rtxn, snapByID.Query(9)); rev != want[2].revision+1 {
		t.Errorf("next revision %d, want %d", rev, want[2].revision+1)
	}

	// Writing the restored tables again gives the same bytes.
	if again := snapWrite(t, restored, dst.tables()...); !bytes.Equal(again, data) {
		t.Error("a snapshot of the restored tables differs from the original")
	}
}

// setBlockTarget makes blocks small for the test, so that small files have
// many of them.
func setBlockTarget(t testing.TB, n int) {
	old := snapBlockTarget
	snapBlockTarget = n
	t.Cleanup(func() { snapBlockTarget = old })
}

// slowWriter yields to other goroutines on every write, and before the
// first one runs first (if set).
type slowWriter struct {
	w      io.Writer
	writes int
	first  func()
}

func (s *slowWriter) Write(p []byte) (int, error) {
	if s.writes == 0 && s.first != nil {
		s.first()
	}
	s.writes++
	time.Sleep(50 * time.Microsecond)
	return s.w.Write(p)
}

func TestSnapshotConcurrentWriters(t *testing.T) {
	setBlockTarget(t, 256)
	src := newSnapDB(t)
	src.fill(t, 300, 10, 1000, 20)

	var commits atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				txn := src.db.WriteTxn(src.people, src.blobs)
				id := uint64((i*7 + w) % 400)
				var err error
				if i%5 == 0 {
					_, _, err = src.people.Delete(txn, &snapObj{ID: id})
				} else {
					_, _, err = src.people.Insert(txn, &snapObj{ID: id, Name: fmt.Sprintf("p%03d", id), Group: fmt.Sprintf("r%d", i%4)})
				}
				if err == nil {
					_, _, err = src.blobs.Insert(txn, &snapObj{ID: id % 5, Data: []byte{byte(i)}})
				}
				if err != nil {
					txn.Abort()
					t.Error(err)
					return
				}
				if _, err := txn.Commit(); err != nil {
					t.Error(err)
					return
				}
				commits.Add(1)
			}
		})
	}
	for commits.Load() < 10 {
		time.Sleep(time.Millisecond)
	}

	txn := src.db.ReadTxn()
	want := src.contents(txn)
	before := commits.Load()
	var buf bytes.Buffer
	// The export waits, at its first write, for a commit: commits come
	// during the export however the goroutines are scheduled.
	sw := &slowWriter{w: &buf, first: func() {
		deadline := time.Now().Add(time.Minute) // only a hang reaches it
		for commits.Load() == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}}
	err := WriteSnapshot(sw, txn, src.tables()...)
	during := commits.Load() - before
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commits during an export of %d blocks", during, sw.writes)
	if during == 0 {
		t.Error("no commit ran during the export: the test proves nothing")
	}

	dst := newSnapDB(t)
	if _, err := ReadSnapshot(&buf, dst.tables()...); err != nil {
		t.Fatal(err)
	}
	got := dst.contents(dst.db.ReadTxn())
	for i := range 3 {
		if !got[i].equal(want[i]) {
			t.Errorf("table %d: the snapshot differs from the transaction's view", i)
		}
	}
	if src.people.Revision(src.db.ReadTxn()) == want[0].revision {
		t.Error("writers did not change people")
	}
}

// snapCheckErr fails unless err is a corruption error, or a version error
// when allowed.
func snapCheckErr(t testing.TB, err error, versionOK bool, what string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s: no error", what)
	case errors.Is(err, ErrCorruptSnapshot):
	case versionOK && errors.Is(err, ErrSnapshotVersion):
	default:
		t.Fatalf("%s: unexpected error %v", what, err)
	}
}

// snapSmall returns a small snapshot of many blocks and a database to read
// it into, with a bystander object.
func snapSmall(t testing.TB) ([]byte, *snapDB, snapContent) {
	setBlockTarget(t, 64)
	src := newSnapDB(t)
	src.fill(t, 8, 0, 30, 150)
	data := snapWrite(t, src.db.ReadTxn(), src.tables()...)
	dst := newSnapDB(t)
	dst.write(t, func(txn strata.WriteTxn) { snapInsert(t, txn, dst.bystander, &snapObj{ID: 5, Name: "keep"}) })
	return data, dst, contentOf(dst.db.ReadTxn(), dst.bystander)
}

func TestSnapshotEveryByteFlip(t *testing.T) {
	data, dst, bystander := snapSmall(t)
	blocks := snapBlocks(t, data)
	t.Logf("%d bytes, %d blocks", len(data), len(blocks))
	corrupted := make([]byte, len(data))
	for pos := range data {
		for _, x := range []byte{0x01, 0xff} {
			copy(corrupted, data)
			corrupted[pos] ^= x
			_, err := ReadSnapshot(bytes.NewReader(corrupted), dst.tables()...)
			inVersion := pos >= len(snapshotMagic) && pos < snapPreludeSize
			snapCheckErr(t, err, inVersion, fmt.Sprintf("byte %d ^ %#x", pos, x))
			dst.requireUnchanged(t, bystander)
		}
	}
}

func TestSnapshotEveryTruncation(t *testing.T) {
	data, dst, bystander := snapSmall(t)
	for n := range len(data) {
		_, err := ReadSnapshot(bytes.NewReader(data[:n]), dst.tables()...)
		snapCheckErr(t, err, false, fmt.Sprintf("truncated to %d bytes", n))
		dst.requireUnchanged(t, bystander)
	}
	for _, extra := range [][]byte{{0}, data} {
		_, err := ReadSnapshot(bytes.NewReader(slices.Concat(data, extra)), dst.tables()...)
		snapCheckErr(t, err, false, fmt.Sprintf("%d bytes appended", len(extra)))
		dst.requireUnchanged(t, bystander)
	}
}

// snapBlocks splits a snapshot into its blocks (after the prelude).
func snapBlocks(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var blocks [][]byte
	for p := data[snapPreludeSize:]; len(p) > 0; {
		n := snapBlockHeader + int(binary.LittleEndian.Uint32(p[1:])) + snapBlockTrailer
		blocks = append(blocks, p[:n])
		p = p[n:]
	}
	return blocks
}

// TestSnapshotBlockShuffles drops, repeats and swaps whole, intact blocks:
// the structure and the file checksum catch what block CRCs cannot.
func TestSnapshotBlockShuffles(t *testing.T) {
	data, dst, bystander := snapSmall(t)
	blocks := snapBlocks(t, data)
	prelude := data[:snapPreludeSize]
	join := func(bs ...[]byte) []byte { return slices.Concat(append([][]byte{prelude}, bs...)...) }
	try := func(what string, file []byte) {
		t.Helper()
		_, err := ReadSnapshot(bytes.NewReader(file), dst.tables()...)
		snapCheckErr(t, err, false, what)
		dst.requireUnchanged(t, bystander)
	}
	for i := range blocks {
		try(fmt.Sprintf("block %d dropped", i), join(slices.Delete(slices.Clone(blocks), i, i+1)...))
		try(fmt.Sprintf("block %d repeated", i), join(slices.Insert(slices.Clone(blocks), i, blocks[i])...))
		if i+1 < len(blocks) {
			swapped := slices.Clone(blocks)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			try(fmt.Sprintf("blocks %d and %d swapped", i, i+1), join(swapped...))
		}
	}
}

func TestSnapshotVersions(t *testing.T) {
	src := newSnapDB(t)
	src.fill(t, 5, 10)
	data := snapWrite(t, src.db.ReadTxn(), src.tables()...)
	dst := newSnapDB(t)
	bystander := contentOf(dst.db.ReadTxn(), dst.bystander)

	for _, v := range []uint32{0, snapshotVersion + 1, 1 << 31} {
		c := slices.Clone(data)
		binary.LittleEndian.PutUint32(c[len(snapshotMagic):], v)
		_, err := ReadSnapshot(bytes.NewReader(c), dst.tables()...)
		if !errors.Is(err, ErrSnapshotVersion) {
			t.Errorf("version %d: got %v, want ErrSnapshotVersion", v, err)
		}
		dst.requireUnchanged(t, bystander)
	}
	for _, c := range [][]byte{nil, []byte("PK\x03\x04 not a snapshot at all"), slices.Concat([]byte("#"), data[1:])} {
		_, err := ReadSnapshot(bytes.NewReader(c), dst.tables()...)
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%.8q: got %v, want ErrCorruptSnapshot", c, err)
		}
	}

	// Objects of a newer codec version are refused before anything is read.
	newer := snapFuncs
	newer.V = 3
	data3 := snapWrite(t, src.db.ReadTxn(), Table(src.people, Codec[*snapObj](newer)))
	_, err := ReadSnapshot(bytes.NewReader(data3), Table(dst.people, Codec[*snapObj](snapFuncs)))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("newer codec: got %v, want ErrUnknownVersion", err)
	}
	dst.requireUnchanged(t, bystander)

	// Older versions go through the codec's migration.
	data1 := snapWrite(t, src.db.ReadTxn(), Table(src.people, JSON[*snapObj]()))
	migrated := 0
	codec := Versioned(Codec[*snapObj](snapFuncs), 2, func(data []byte, v uint32) (*snapObj, error) {
		migrated++
		return JSON[*snapObj]().Decode(data, v)
	})
	if _, err := ReadSnapshot(bytes.NewReader(data1), Table(dst.people, codec)); err != nil {
		t.Fatal(err)
	}
	if got, want := contentOf(dst.db.ReadTxn(), dst.people), contentOf(src.db.ReadTxn(), src.people); !got.equal(want) || migrated != len(want.rows) {
		t.Errorf("migration: %d objects migrated, content equal: %v", migrated, got.equal(want))
	}
}

func TestSnapshotTables(t *testing.T) {
	src := newSnapDB(t)
	src.fill(t, 5, 10, 20)
	txn := src.db.ReadTxn()
	all := snapWrite(t, txn, src.tables()...)
	peopleOnly := snapWrite(t, txn, src.tables()[0])

	t.Run("missing", func(t *testing.T) {
		dst := newSnapDB(t)
		_, err := ReadSnapshot(bytes.NewReader(peopleOnly), dst.tables()...)
		if !errors.Is(err, ErrSnapshotTableMissing) || !strings.Contains(err.Error(), `"blobs"`) {
			t.Errorf("got %v, want ErrSnapshotTableMissing for blobs", err)
		}
		dst.requireUnchanged(t, snapContent{})
	})
	t.Run("skipped", func(t *testing.T) {
		dst := newSnapDB(t)
		info, err := ReadSnapshot(bytes.NewReader(all), dst.tables()[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Skipped(); !slices.Equal(got, []string{"people", "none"}) {
			t.Errorf("skipped %v", got)
		}
		rtxn := dst.db.ReadTxn()
		if dst.people.NumObjects(rtxn) != 0 || !contentOf(rtxn, dst.blobs).equal(contentOf(txn, src.blobs)) {
			t.Error("wrong tables restored")
		}
	})
	t.Run("verify only", func(t *testing.T) {
		info, err := ReadSnapshot(bytes.NewReader(all))
		if err != nil || info.Objects != 6 || len(info.Skipped()) != 3 || info.Bytes != uint64(len(all)) {
			t.Errorf("got %+v, %v", info, err)
		}
	})
	t.Run("not empty", func(t *testing.T) {
		dst := newSnapDB(t)
		dst.write(t, func(txn strata.WriteTxn) { snapInsert(t, txn, dst.none, &snapObj{ID: 1}) })
		_, err := ReadSnapshot(bytes.NewReader(all), dst.tables()...)
		if !errors.Is(err, strata.ErrTableNotEmpty) {
			t.Errorf("got %v, want ErrTableNotEmpty", err)
		}
		rtxn := dst.db.ReadTxn()
		if dst.people.NumObjects(rtxn) != 0 || dst.none.NumObjects(rtxn) != 1 {
			t.Error("tables changed")
		}
	})
	t.Run("twice", func(t *testing.T) {
		dst := newSnapDB(t)
		if st := src.tables()[0]; WriteSnapshot(io.Discard, txn, st, st) == nil {
			t.Error("WriteSnapshot took a table twice")
		}
		st := dst.tables()[0]
		if _, err := ReadSnapshot(bytes.NewReader(all), st, st); err == nil {
			t.Error("ReadSnapshot took a table twice")
		}
		dst.requireUnchanged(t, snapContent{})
	})
	t.Run("restore fails", func(t *testing.T) {
		// The objects violate a unique index of the table they go to.
		db := strata.New()
		blobs := strata.MustNewTable(db, "blobs", snapByID, snapByName)
		_, err := ReadSnapshot(bytes.NewReader(all), Table(blobs, Binary[snapObj]()))
		if !errors.Is(err, strata.ErrUniqueConstraint) {
			t.Errorf("got %v, want ErrUniqueConstraint", err)
		}
		if blobs.NumObjects(db.ReadTxn()) != 0 {
			t.Error("table changed")
		}
	})
	t.Run("decode fails", func(t *testing.T) {
		dst := newSnapDB(t)
		failing := snapFuncs
		failing.Dec = func(data []byte, v uint32) (*snapObj, error) {
			o, err := snapFuncs.Dec(data, v)
			if err == nil && o.ID == 3 {
				err = errors.New("no 3s")
			}
			return o, err
		}
		data := snapWrite(t, txn, Table(src.people, Codec[*snapObj](snapFuncs)), src.tables()[1])
		_, err := ReadSnapshot(bytes.NewReader(data), Table(dst.people, Codec[*snapObj](failing)), dst.tables()[1])
		if err == nil || !strings.Contains(err.Error(), "no 3s") {
			t.Errorf("got %v", err)
		}
		dst.requireUnchanged(t, snapContent{})
	})
	t.Run("encode fails", func(t *testing.T) {
		failing := snapFuncs
		failing.Enc = func(dst []byte, o *snapObj) ([]byte, error) {
			if o.ID == 3 {
				return dst, errors.New("no 3s")
			}
			return o.AppendBinary(dst)
		}
		err := WriteSnapshot(io.Discard, txn, Table(src.people, Codec[*snapObj](failing)))
		if err == nil || !strings.Contains(err.Error(), "no 3s") || !strings.Contains(err.Error(), `"people"`) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("writer fails", func(t *testing.T) {
		for n := range len(all) {
			w := &snapFaultWriter{w: io.Discard, left: n}
			if err := WriteSnapshot(w, txn, src.tables()...); !errors.Is(err, errSnapInjected) {
				t.Fatalf("failing after %d bytes: got %v", n, err)
			}
		}
	})
}

var errSnapInjected = errors.New("injected failure")

// snapFaultWriter writes left bytes, then fails. With crash set, it panics
// instead, as a process dying in the middle of the write.
type snapFaultWriter struct {
	w     io.Writer
	left  int
	crash bool
}

type snapCrash struct{}

func (f *snapFaultWriter) Write(p []byte) (int, error) {
	if len(p) <= f.left {
		f.left -= len(p)
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.left])
	f.left = 0
	if f.crash {
		panic(snapCrash{})
	}
	return n, errSnapInjected
}

// snapJournal records the commits of a restore, as a persistent store
// would write them.
type snapJournal struct {
	fail      bool
	committed []string
}

type snapBatch struct {
	j   *snapJournal
	ops []string
}

func (j *snapJournal) Begin() strata.JournalBatch { return &snapBatch{j: j} }

func (b *snapBatch) Commit() error {
	if b.j.fail {
		return errSnapInjected
	}
	b.j.committed = append(b.j.committed, b.ops...)
	return nil
}

func (b *snapBatch) Discard() {}

type snapTableJournal struct{ name string }

func (tj snapTableJournal) add(b strata.JournalBatch, format string, args ...any) error {
	sb := b.(*snapBatch)
	sb.ops = append(sb.ops, tj.name+" "+fmt.Sprintf(format, args...))
	return nil
}

func (tj snapTableJournal) Upsert(b strata.JournalBatch, _ []byte, o *snapObj, rev strata.Revision) error {
	return tj.add(b, "upsert %d@%d", o.ID, rev)
}
func (tj snapTableJournal) Delete(b strata.JournalBatch, pk []byte) error { return tj.add(b, "delete") }
func (tj snapTableJournal) DeleteAll(b strata.JournalBatch) error         { return tj.add(b, "delete all") }
func (tj snapTableJournal) SetRevision(b strata.JournalBatch, rev strata.Revision) error {
	return tj.add(b, "revision %d", rev)
}

// TestSnapshotJournal: a restore into journaled tables (a persistent
// store's) reaches the journal in one commit, or not at all.
func TestSnapshotJournal(t *testing.T) {
	src := newSnapDB(t)
	src.fill(t, 3, 10)
	data := snapWrite(t, src.db.ReadTxn(), src.tables()...)

	dst := newSnapDB(t)
	j := &snapJournal{}
	dst.write(t, func(txn strata.WriteTxn) {
		for _, tbl := range dst.all()[:3] {
			if err := strata.SetJournal(txn, tbl, j, strata.TableJournal[*snapObj](snapTableJournal{tbl.Name()})); err != nil {
				t.Fatal(err)
			}
		}
	})
	j.committed = nil

	c := slices.Clone(data)
	c[len(c)-10] ^= 1
	if _, err := ReadSnapshot(bytes.NewReader(c), dst.tables()...); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("got %v", err)
	}
	j.fail = true
	if _, err := ReadSnapshot(bytes.NewReader(data), dst.tables()...); !errors.Is(err, errSnapInjected) {
		t.Fatalf("failing journal: got %v", err)
	}
	dst.requireUnchanged(t, contentOf(dst.db.ReadTxn(), dst.bystander))
	if len(j.committed) != 0 {
		t.Fatalf("failed restores reached the journal: %q", j.committed)
	}

	j.fail = false
	if _, err := ReadSnapshot(bytes.NewReader(data), dst.tables()...); err != nil {
		t.Fatal(err)
	}
	var want []string
	rtxn := src.db.ReadTxn()
	for _, tbl := range src.all()[:3] {
		for o, rev := range tbl.All(rtxn) {
			want = append(want, fmt.Sprintf("%s upsert %d@%d", tbl.Name(), o.ID, rev))
		}
		want = append(want, fmt.Sprintf("%s revision %d", tbl.Name(), tbl.Revision(rtxn)))
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(j.committed))
	if !slices.Equal(got, want) {
		t.Errorf("journal:\n got %q\nwant %q", got, want)
	}
}
