package persist

import (
	"errors"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// appliedItems creates a table of items in a new database and loads it as
// an applied table of s.
func appliedItems(t testing.TB, s *Store) (*Applied, *strata.DB, strata.RWTable[*item]) {
	t.Helper()
	db := strata.New()
	tbl, err := strata.NewTable(db, "items", itemByID, itemByName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.LoadApplied(Table(tbl, Binary[item]()))
	if err != nil {
		t.Fatalf("LoadApplied: %v", err)
	}
	return a, db, tbl
}

// appliedModel is the state of an applied table at each position: what a
// store that stopped there must load.
type appliedModel struct {
	rows []map[uint64]itemRow // by position
	revs []strata.Revision
}

func (m *appliedModel) at(p uint64) (map[uint64]itemRow, strata.Revision) {
	return m.rows[p], m.revs[p]
}

// writeRandomBatch writes a batch of random changes at position pos and
// records the state after it in m.
func writeRandomBatch(t testing.TB, a *Applied, m *appliedModel, pos uint64, rng *rand.Rand) {
	t.Helper()
	rows := maps.Clone(m.rows[len(m.rows)-1])
	rev := m.revs[len(m.revs)-1]
	b := a.NewBatch()
	for range 1 + rng.IntN(8) {
		switch r := rng.IntN(20); {
		case r == 0:
			if err := b.DeleteAll("items"); err != nil {
				t.Fatal(err)
			}
			clear(rows)
		case r < 6:
			id := uint64(rng.IntN(30))
			if _, ok := rows[id]; ok {
				if err := b.Delete("items", index.Uint64(id)); err != nil {
					t.Fatal(err)
				}
				delete(rows, id)
				rev++ // a deletion takes a revision too
			}
		default:
			rev++
			it := item{ID: uint64(rng.IntN(30)), Name: string(rune('a' + rng.IntN(5))), Value: rng.Int64N(1000)}
			v, _ := it.AppendBinary(nil)
			if err := b.Upsert("items", index.Uint64(it.ID), 1, rev, v); err != nil {
				t.Fatal(err)
			}
			rows[it.ID] = itemRow{it, rev}
		}
	}
	if err := b.SetRevision("items", rev); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pos); err != nil {
		t.Fatalf("Commit(%d): %v", pos, err)
	}
	for uint64(len(m.rows)) < pos {
		// Positions skipped (a log's entries that wrote no table): the
		// state of the one before.
		m.rows = append(m.rows, m.rows[len(m.rows)-1])
		m.revs = append(m.revs, m.revs[len(m.revs)-1])
	}
	m.rows = append(m.rows, rows)
	m.revs = append(m.revs, rev)
}

// checkApplied loads the applied table of the store in dir on fs and checks
// it against the model at the position loaded, which must be at least min.
func checkApplied(t testing.TB, fs vfs.FS, m *appliedModel, min uint64) uint64 {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	a, db, tbl := appliedItems(t, s)
	p := a.Position()
	if p < min || p >= uint64(len(m.rows)) {
		t.Fatalf("loaded position %d, want %d..%d", p, min, len(m.rows)-1)
	}
	txn := db.ReadTxn()
	wantRows, wantRev := m.at(p)
	if got := itemRows(txn, tbl); !maps.Equal(got, wantRows) {
		t.Fatalf("at position %d: loaded %v, want %v", p, got, wantRows)
	}
	if got := tbl.Revision(txn); got < wantRev {
		t.Fatalf("at position %d: table revision %d, want at least %d", p, got, wantRev)
	}
	checkNameIndex(t, txn, tbl)
	return p
}

// TestAppliedPowerLoss writes random batches of changes at growing
// positions and opens crash clones of the store between them: each must
// load exactly the state of the position it holds (invariant 1 of
// applied.go), a position no lower than the last synced write's.
func TestAppliedPowerLoss(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fs := vfs.NewCrashableMem()
	s := openStore(t, "/db", Options{FS: fs})
	a, _, _ := appliedItems(t, s)
	if p := a.Position(); p != 0 {
		t.Fatalf("a new store's position is %d", p)
	}
	m := &appliedModel{rows: []map[uint64]itemRow{{}}, revs: []strata.Revision{0}}
	clones, positions := 0, map[uint64]bool{}
	rounds := 150
	if testing.Short() {
		rounds = 60
	}
	synced := uint64(0)
	for pos := uint64(1); pos <= uint64(rounds); pos += 1 + uint64(rng.IntN(2)) {
		writeRandomBatch(t, a, m, pos, rng)
		if rng.IntN(8) == 0 {
			if err := a.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = pos
		}
		if rng.IntN(4) == 0 {
			clones++
			positions[checkApplied(t, crashClone(fs, rng), m, synced)] = true
		}
	}
	closeStore(t, s)
	// A store closed cleanly holds its last position.
	if p := checkApplied(t, fs, m, uint64(len(m.rows)-1)); p != uint64(len(m.rows)-1) {
		t.Fatalf("closed at position %d, loaded %d", len(m.rows)-1, p)
	}
	t.Logf("%d crash clones, at %d distinct positions", clones, len(positions))
	if clones > 10 && len(positions) < 2 {
		t.Fatalf("every crash clone loaded the same position: the test does not reach the unsynced batches")
	}
}

func TestAppliedRefusals(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	a, _, _ := appliedItems(t, s)

	// Positions only grow; a refused batch writes nothing.
	b := a.NewBatch()
	if err := b.SetRevision("items", 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(5); err != nil {
		t.Fatal(err)
	}
	b = a.NewBatch()
	v, _ := (&item{ID: 1}).AppendBinary(nil)
	if err := b.Upsert("items", index.Uint64(1), 1, 4, v); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(5); err == nil {
		t.Fatal("a batch at the same position was written")
	}
	if err := a.NewBatch().Upsert("other", index.Uint64(1), 1, 4, v); !errors.Is(err, ErrTableUnknown) {
		t.Fatalf("a write of a table not applied: %v, want ErrTableUnknown", err)
	}
	if _, err := s.LoadApplied(); err == nil {
		t.Fatal("LoadApplied of no table succeeded")
	}
	closeStore(t, s)

	// The applied table is refused by Register, and loads with its
	// position and nothing of the refused batch.
	s = openStore(t, dir, Options{})
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := Register(s, db, tbl, Binary[item]()); !errors.Is(err, ErrAppliedTable) {
		t.Fatalf("Register of an applied table: %v, want ErrAppliedTable", err)
	}
	a, db, tbl = appliedItems(t, s)
	if p := a.Position(); p != 5 {
		t.Fatalf("position %d, want 5", p)
	}
	txn := db.ReadTxn()
	if n := tbl.NumObjects(txn); n != 0 {
		t.Fatalf("%d objects: the refused batch was written", n)
	}
	if r := tbl.Revision(txn); r != 3 {
		t.Fatalf("revision %d, want 3", r)
	}
	closeStore(t, s)

	// A reader checks the store clean.
	rd, err := OpenReader(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var problems []error
	if err := rd.Check(func(err error) { problems = append(problems, err) }); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("check: %v", problems)
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}

	// Dropped, it registers again; written by its own commits, it is no
	// longer an applied table.
	s = openStore(t, dir, Options{})
	if err := s.Drop("items"); err != nil {
		t.Fatal(err)
	}
	db = strata.New()
	tbl = itemTable(t, s, db, "items", nil)
	txn2 := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(txn2, &item{ID: 9}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn2)
	closeStore(t, s)
	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	db = strata.New()
	tbl, _ = strata.NewTable(db, "items", itemByID, itemByName)
	if _, err := s.LoadApplied(Table(tbl, Binary[item]())); !errors.Is(err, ErrAppliedTable) {
		t.Fatalf("LoadApplied of a table written by its own commits: %v, want ErrAppliedTable", err)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("the refused load left %d objects", n)
	}
	// The name is free again after the refusal.
	itemTable(t, s, strata.New(), "items", nil)
}

// TestAppliedReplace: Replace installs the state of a ReadTxn, at a
// position that may be lower than the store's.
func TestAppliedReplace(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	a, _, _ := appliedItems(t, s)
	m := &appliedModel{rows: []map[uint64]itemRow{{}}, revs: []strata.Revision{0}}
	rng := rand.New(rand.NewPCG(1, 2))
	for pos := uint64(1); pos <= 20; pos++ {
		writeRandomBatch(t, a, m, pos, rng)
	}
	// LoadApplied refuses a table that is not empty.
	src := strata.New()
	stbl, _ := strata.NewTable(src, "items", itemByID, itemByName)
	txn := src.WriteTxn(stbl)
	if _, _, err := stbl.Insert(txn, &item{ID: 1}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	s2 := openStore(t, t.TempDir(), Options{})
	if _, err := s2.LoadApplied(Table(stbl, Binary[item]())); !errors.Is(err, strata.ErrTableNotEmpty) {
		t.Fatalf("LoadApplied of a table that is not empty: %v, want strata.ErrTableNotEmpty", err)
	}
	closeStore(t, s2)
	closeStore(t, s)

	// A snapshot's state, at position 7 (below the store's 20), replaces
	// the table's in memory, then in the store.
	s = openStore(t, dir, Options{})
	a, db, tbl := appliedItems(t, s)
	want := map[uint64]itemRow{}
	for i := range uint64(50) {
		want[100+i] = itemRow{item{ID: 100 + i, Name: "r", Value: int64(i)}, 1000 + i}
	}
	wtxn := db.WriteTxn(tbl)
	if err := strata.Replace(wtxn, tbl, func(yield func(*item, strata.Revision) bool) {
		for i := range uint64(50) {
			r := want[100+i]
			if !yield(&r.item, r.Rev) {
				return
			}
		}
	}, 1100); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	if err := a.Replace(7, db.ReadTxn()); err != nil {
		t.Fatal(err)
	}
	if p := a.Position(); p != 7 {
		t.Fatalf("position %d after Replace at 7", p)
	}
	closeStore(t, s)
	s = openStore(t, dir, Options{})
	defer closeStore(t, s)
	a, db, tbl = appliedItems(t, s)
	if p := a.Position(); p != 7 {
		t.Fatalf("loaded position %d, want 7", p)
	}
	rtxn := db.ReadTxn()
	if got := itemRows(rtxn, tbl); !maps.Equal(got, want) {
		t.Fatalf("loaded %d objects, want the %d replaced", len(got), len(want))
	}
	if r := tbl.Revision(rtxn); r != 1100 {
		t.Fatalf("loaded revision %d, want 1100", r)
	}
}
