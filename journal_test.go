package strata

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
)

// memJournal is a Journal that keeps records in maps, and can be told to
// fail.
type memJournal struct {
	objects  map[string]int // primary key -> Value
	revision Revision
	commits  int
	fail     error
}

type memBatch struct {
	j        *memJournal
	truncate bool
	upserts  map[string]int
	deletes  []string
	revision Revision
}

func (j *memJournal) Begin() JournalBatch { return &memBatch{j: j, upserts: map[string]int{}} }

func (b *memBatch) Commit() error {
	if b.j.fail != nil {
		return b.j.fail
	}
	if b.truncate {
		clear(b.j.objects)
	}
	for _, k := range b.deletes {
		delete(b.j.objects, k)
	}
	maps.Copy(b.j.objects, b.upserts)
	b.j.revision = b.revision
	b.j.commits++
	return nil
}

func (b *memBatch) Discard() {}

type memTableJournal struct{}

func (memTableJournal) Upsert(b JournalBatch, pk []byte, obj *testObject, rev Revision) error {
	mb := b.(*memBatch)
	if _, dup := mb.upserts[string(pk)]; dup {
		return errors.New("object written twice in one record")
	}
	mb.upserts[string(pk)] = obj.Value
	return nil
}

func (memTableJournal) Delete(b JournalBatch, pk []byte) error {
	mb := b.(*memBatch)
	if _, up := mb.upserts[string(pk)]; up {
		return errors.New("delete after upsert of the same key")
	}
	mb.deletes = append(mb.deletes, string(pk))
	return nil
}

func (memTableJournal) DeleteAll(b JournalBatch) error {
	b.(*memBatch).truncate = true
	return nil
}

func (memTableJournal) SetRevision(b JournalBatch, rev Revision) error {
	b.(*memBatch).revision = rev
	return nil
}

// tableContents returns primary key -> Value of every object in tbl.
func tableContents(txn ReadTxn, tbl Table[*testObject]) map[string]int {
	out := map[string]int{}
	for o := range tbl.All(txn) {
		out[string(idIndex.FromKey(o.ID))] = o.Value
	}
	return out
}

func TestJournal(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "journaled", nameIndex)
	plain := newTestTable(t, db, "plain")
	j := &memJournal{objects: map[string]int{}}

	txn := db.WriteTxn(tbl, plain)
	mustInsert(t, tbl, txn, &testObject{ID: 100, Name: "before"}) // before attaching: not journaled
	if err := SetJournal(txn, tbl, j, memTableJournal{}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, plain, txn, &testObject{ID: 1})
	for i := range uint64(10) {
		mustInsert(t, tbl, txn, &testObject{ID: i, Name: strconv.Itoa(int(i)), Value: 1})
	}
	mustInsert(t, tbl, txn, &testObject{ID: 3, Name: "3", Value: 2}) // last write wins
	if _, _, err := tbl.Delete(txn, &testObject{ID: 4}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tbl.Delete(txn, &testObject{ID: 5}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tbl, txn, &testObject{ID: 5, Name: "5", Value: 3}) // deleted, then back
	mustInsert(t, tbl, txn, &testObject{ID: 11, Name: "11"})
	if _, _, err := tbl.Delete(txn, &testObject{ID: 11}); err != nil { // inserted, then deleted
		t.Fatal(err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	want := tableContents(rtxn, tbl)
	delete(want, string(idIndex.FromKey(100)))
	if !maps.Equal(j.objects, want) {
		t.Fatalf("journal holds %v, table %v", j.objects, want)
	}
	if j.revision != tbl.Revision(rtxn) || j.commits != 1 {
		t.Fatalf("journal revision %d after %d commits; table revision %d", j.revision, j.commits, tbl.Revision(rtxn))
	}

	// A commit of the plain table alone writes no record.
	txn = db.WriteTxn(plain)
	mustInsert(t, plain, txn, &testObject{ID: 2})
	mustCommit(t, txn)
	if j.commits != 1 {
		t.Fatalf("a commit of an unjournaled table wrote a record")
	}

	// A failing journal fails the commit, and nothing changes: contents,
	// revision, the other table in the transaction, watch channels.
	_, _, watch, _ := tbl.GetWatch(db.ReadTxn(), idIndex.Query(1))
	before := db.ReadTxn()
	j.fail = errors.New("disk on fire")
	txn = db.WriteTxn(tbl, plain)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Name: "1", Value: 9})
	must(t, tbl.DeleteAll(txn))
	mustInsert(t, plain, txn, &testObject{ID: 3})
	if _, err := txn.Commit(); !errors.Is(err, j.fail) {
		t.Fatalf("Commit with a failing journal: %v", err)
	}
	now := db.ReadTxn()
	if !maps.Equal(tableContents(now, tbl), tableContents(before, tbl)) ||
		tbl.Revision(now) != tbl.Revision(before) || plain.NumObjects(now) != plain.NumObjects(before) {
		t.Fatalf("failed commit changed the database")
	}
	select {
	case <-watch:
		t.Fatalf("failed commit closed a watch channel")
	default:
	}
	if !maps.Equal(j.objects, want) {
		t.Fatalf("failed commit changed the journal")
	}

	// DeleteAll then inserts: the record truncates first.
	j.fail = nil
	txn = db.WriteTxn(tbl)
	must(t, tbl.DeleteAll(txn))
	mustInsert(t, tbl, txn, &testObject{ID: 7, Name: "seven", Value: 7})
	rtxn, err = txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Collect(maps.Values(j.objects)); !slices.Equal(got, []int{7}) || j.revision != tbl.Revision(rtxn) {
		t.Fatalf("after DeleteAll the journal holds %v at revision %d", j.objects, j.revision)
	}

	// A second, different journal is refused.
	txn = db.WriteTxn(plain)
	if err := SetJournal(txn, plain, &memJournal{}, memTableJournal{}); !errors.Is(err, ErrJournalConflict) {
		t.Fatalf("second journal: %v", err)
	}
	txn.Abort()
}

// TestRevisionSet: both ways of finding a revision given twice, the
// bitmap (revisions close together, in any order) and the sorted list (far
// apart, and after revisions that were close together), find it, and find
// none in distinct revisions.
func TestRevisionSet(t *testing.T) {
	seq := func(from, to Revision, step int) []Revision {
		var revs []Revision
		for r := from; r != to; r = Revision(int(r) + step) {
			revs = append(revs, r)
		}
		return revs
	}
	for _, c := range []struct {
		name   string
		revs   []Revision
		twice  Revision // 0: none
		sparse bool     // the set became a list
	}{
		{"none", nil, 0, false},
		{"one", []Revision{7}, 0, false},
		{"dense distinct", []Revision{5, 3, 4, 1, 2}, 0, false},
		{"dense twice", []Revision{5, 3, 4, 3, 2}, 3, false},
		{"dense ends", []Revision{1, 64, 65, 128, 1}, 1, false},
		{"descending distinct", seq(100_000, 0, -1), 0, false},
		{"descending with gaps", append(seq(100_000, 50_000, -1), seq(50_000, 2, -3)...), 0, false},
		{"descending, then one twice", append(seq(100_000, 1, -1), 77_777), 77_777, false},
		{"ascending from high, then low", append(seq(1<<20, 1<<20+5000, 1), seq(1, 5000, 1)...), 0, false},
		// The first revisions of objects in random revision order, far
		// apart, before there are many: still a bitmap.
		{"far apart first", []Revision{500_000, 3, 999_000, 250_000, 3}, 3, false},
		{"sparse distinct", []Revision{1 << 40, 1, 1 << 50}, 0, true},
		{"sparse twice", []Revision{1 << 40, 1, 1 << 50, 1 << 40}, 1 << 40, true},
		{"dense, then sparse, twice", append(seq(1, 200, 1), 1<<40, 150), 150, true},
		{"dense, then sparse, distinct", append(seq(1, 200, 1), 1<<40, 1<<41, 300), 0, true},
	} {
		var s revisionSet
		found := Revision(0)
		for _, r := range c.revs {
			if s.add(r) && found == 0 {
				found = r
			}
		}
		if rev, ok := s.repeated(); ok && found == 0 {
			found = rev
		}
		if found != c.twice || s.sparse != c.sparse {
			t.Errorf("%s: found %d twice, sparse %v; want %d, %v", c.name, found, s.sparse, c.twice, c.sparse)
		}
	}
}

// TestJournalAttachAborted checks that a SetJournal in a transaction that
// aborts leaves the table unattached.
func TestJournalAttachAborted(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	j := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(tbl)
	if err := SetJournal(txn, tbl, j, memTableJournal{}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	txn.Abort()
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 2})
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.commits != 0 || len(j.objects) != 0 {
		t.Fatalf("a table attached in an aborted transaction was journaled: %d commits, %v", j.commits, j.objects)
	}
}

// TestJournalAttachWithoutWrites checks that SetJournal in a transaction
// that writes nothing attaches the table once it commits.
func TestJournalAttachWithoutWrites(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	j := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(tbl)
	if err := SetJournal(txn, tbl, j, memTableJournal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 2})
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.commits != 1 || len(j.objects) != 1 {
		t.Fatalf("table attached in a transaction without writes: %d journal commits, %v", j.commits, j.objects)
	}
}

// panicTableJournal is a TableJournal whose Upsert panics, as a codec with
// a bug would.
type panicTableJournal struct{ memTableJournal }

func (panicTableJournal) Upsert(JournalBatch, []byte, *testObject, Revision) error {
	panic("codec bug")
}

// TestJournalPanic checks that a panic in the journal during Commit aborts
// the transaction and unlocks its tables before it goes on: the database
// is as before, the tables can be locked again at once, and the handle
// reports the transaction closed.
func TestJournalPanic(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	plain := newTestTable(t, db, "plain")
	j := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(tbl)
	if err := SetJournal(txn, tbl, j, panicTableJournal{}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	before := db.ReadTxn()

	txn = db.WriteTxn(tbl, plain)
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	mustInsert(t, plain, txn, &testObject{ID: 2})
	func() {
		defer func() {
			if r := recover(); r != "codec bug" {
				t.Fatalf("Commit recovered %v, want the journal's panic", r)
			}
		}()
		_, err := txn.Commit()
		t.Fatalf("Commit returned (error %v), want the journal's panic", err)
	}()
	if _, err := txn.Commit(); !errors.Is(err, ErrTransactionClosed) {
		t.Fatalf("Commit after the panic: %v", err)
	}
	txn.Abort() // does nothing: the transaction ended
	now := db.ReadTxn()
	if tbl.NumObjects(now) != 0 || plain.NumObjects(now) != 0 || tbl.Revision(now) != tbl.Revision(before) {
		t.Fatalf("the panicked commit changed the database")
	}
	// Both tables are unlocked: a transaction that waits for them would
	// hang, so take them with a context that is already done if they are
	// not free.
	locked, err := db.WriteTxnContext(canceledContext(), tbl, plain)
	if err != nil {
		t.Fatalf("tables still locked after the panic: %v", err)
	}
	locked.Abort()
}

// TestSetJournalNil checks that SetJournal with a nil TableJournal keeps
// a transaction's writes (a Restore) out of the journal, and that the
// table stays attached for later transactions.
func TestSetJournalNil(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t")
	j := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(tbl)
	if err := SetJournal(txn, tbl, j, memTableJournal{}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)

	txn = db.WriteTxn(tbl)
	if err := SetJournal[*testObject](txn, tbl, j, nil); err != nil {
		t.Fatal(err)
	}
	err := Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
		yield(&testObject{ID: 1}, 10)
	}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.commits != 0 || len(j.objects) != 0 {
		t.Fatalf("restore after SetJournal(nil) was journaled: %d commits, %v", j.commits, j.objects)
	}
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 2})
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.commits != 1 || len(j.objects) != 1 {
		t.Fatalf("table not attached after SetJournal(nil): %d commits, %v", j.commits, j.objects)
	}
}

func TestTableDB(t *testing.T) {
	db := New()
	if tbl := newTestTable(t, db, "t"); tbl.DB() != db {
		t.Fatal("DB() is not the table's database")
	}
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A regression the adversarial trial of the public API found (its case 6):
// an aborted SetJournal must not bind the database to that journal.
func TestRegressAbortedSetJournalDoesNotBind(t *testing.T) {
	db := New()
	a := newTestTable(t, db, "a")
	b := newTestTable(t, db, "b")
	j1 := &memJournal{objects: map[string]int{}}
	j2 := &memJournal{objects: map[string]int{}}
	txn := db.WriteTxn(a)
	must(t, SetJournal(txn, a, j1, memTableJournal{}))
	txn.Abort()
	txn = db.WriteTxn(b)
	if err := SetJournal(txn, b, j2, memTableJournal{}); err != nil {
		t.Fatalf("SetJournal with another journal after an aborted SetJournal: %v", err)
	}
	mustInsert(t, b, txn, &testObject{ID: 1})
	_, err := txn.Commit()
	must(t, err)
	if j2.commits != 1 || j1.commits != 0 {
		t.Fatalf("journal commits: first %d, second %d; want 0, 1", j1.commits, j2.commits)
	}
	// Now bound to j2: j1 conflicts, for any table.
	txn = db.WriteTxn(a)
	if err := SetJournal(txn, a, j1, memTableJournal{}); !errors.Is(err, ErrJournalConflict) {
		t.Fatalf("SetJournal of another journal once one is attached: %v", err)
	}
	txn.Abort()
}
