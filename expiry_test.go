package strata

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata/index"
)

// session is the object of the expiry tests: it expires at Expires, or
// never if that is the zero time.
type session struct {
	ID      uint64
	Expires time.Time
	Value   int
}

var (
	sessionByID = Index[*session, uint64]{
		Name:       "id",
		FromObject: func(s *session) index.KeySet { return index.KeySetOf(index.Uint64(s.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	sessionByValue = Index[*session, int]{
		Name:       "value",
		FromObject: func(s *session) index.KeySet { return index.KeySetOf(index.Int(s.Value)) },
		FromKey:    index.Int,
	}
	sessionByExpiry = ExpiryIndex[*session]{
		Name:       "expires",
		FromObject: func(s *session) time.Time { return s.Expires },
	}
)

func newSessions(t testing.TB, db *DB, name string) RWTable[*session] {
	t.Helper()
	tbl, err := NewTable(db, name, sessionByID, sessionByValue, sessionByExpiry)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func insertSessions(t testing.TB, db *DB, tbl RWTable[*session], objs ...*session) {
	t.Helper()
	txn := db.WriteTxn(tbl)
	defer txn.Abort()
	for _, o := range objs {
		if _, _, err := tbl.Insert(txn, o); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, txn)
}

func sessionIDs(txn ReadTxn, tbl Table[*session]) []uint64 {
	var ids []uint64
	for s := range tbl.All(txn) {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestExpiryBadDeclarations: the ways to declare an ExpiryIndex wrongly
// fail NewTable with a typed error and register nothing.
func TestExpiryBadDeclarations(t *testing.T) {
	db := New()
	other := ExpiryIndex[*session]{Name: "other", FromObject: sessionByExpiry.FromObject}
	cases := []struct {
		name      string
		primary   Indexer[*session]
		secondary []Indexer[*session]
		want      error
	}{
		{"primary", sessionByExpiry, nil, ErrPrimaryIndexExpiry},
		{"two", sessionByID, []Indexer[*session]{sessionByExpiry, other}, ErrDuplicateExpiryIndex},
		{"nofrom", sessionByID, []Indexer[*session]{ExpiryIndex[*session]{Name: "e"}}, ErrNoFromObject},
		{"badname", sessionByID, []Indexer[*session]{ExpiryIndex[*session]{Name: "9e", FromObject: other.FromObject}}, ErrInvalidIndexName},
	}
	for _, c := range cases {
		if _, err := NewTable(db, c.name, c.primary, c.secondary...); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if n := len(db.Tables()); n != 0 {
		t.Fatalf("%d tables registered", n)
	}
}

// TestExpiryPastWrites: a user write of an object already expired fails
// with ErrExpired and changes nothing, whichever write it is.
func TestExpiryPastWrites(t *testing.T) {
	db := New()
	tbl := newSessions(t, db, "s")
	now := time.Now()
	insertSessions(t, db, tbl, &session{ID: 1, Expires: now.Add(time.Hour)}, &session{ID: 2})
	before := db.ReadTxn()
	past := &session{ID: 1, Expires: now.Add(-time.Second), Value: 9}
	txn := db.WriteTxn(tbl)
	defer txn.Abort()
	_, rev, _ := tbl.Get(txn, sessionByID.Query(1))
	writes := map[string]func() error{
		"Insert":      func() error { _, _, err := tbl.Insert(txn, past); return err },
		"InsertNew":   func() error { _, _, err := tbl.Insert(txn, &session{ID: 3, Expires: now}); return err },
		"InsertWatch": func() error { _, _, _, err := tbl.InsertWatch(txn, past); return err },
		"Modify": func() error {
			_, _, err := tbl.Modify(txn, &session{ID: 2}, func(old, _ *session) *session {
				return &session{ID: 2, Expires: time.Unix(1, 0)}
			})
			return err
		},
		"CompareAndSwap": func() error { _, _, err := tbl.CompareAndSwap(txn, rev, past); return err },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrExpired) {
			t.Errorf("%s: %v, want ErrExpired", name, err)
		}
	}
	mustCommit(t, txn)
	after := db.ReadTxn()
	if tbl.Revision(after) != tbl.Revision(before) || !slices.Equal(sessionIDs(after, tbl), []uint64{1, 2}) {
		t.Fatalf("refused writes changed the table: revision %d -> %d, ids %v",
			tbl.Revision(before), tbl.Revision(after), sessionIDs(after, tbl))
	}
	if s, _, _ := tbl.Get(after, sessionByID.Query(1)); s.Value != 0 {
		t.Fatalf("object 1 changed: %+v", s)
	}
}

// TestExpiryLoadsExpired: Restore and ApplyWrite, which load what a table
// held, take objects whatever their expiry, and ExpireBefore then deletes
// them.
func TestExpiryLoadsExpired(t *testing.T) {
	db := New()
	restored := newSessions(t, db, "restored")
	applied := newSessions(t, db, "applied")
	past := time.Now().Add(-time.Hour)
	objs := func(yield func(*session, Revision) bool) {
		_ = yield(&session{ID: 1, Expires: past}, 1) && yield(&session{ID: 2}, 2)
	}
	txn := db.WriteTxn(restored, applied)
	must(t, Restore(txn, restored, objs, 2))
	must(t, ApplyWrite(txn, applied, JournalWrite[*session]{Kind: WriteUpsert, Object: &session{ID: 1, Expires: past}, Revision: 5}))
	rtxn := mustCommit(t, txn)
	if restored.NumObjects(rtxn) != 2 || applied.NumObjects(rtxn) != 1 {
		t.Fatalf("loaded %d and %d objects, want 2 and 1", restored.NumObjects(rtxn), applied.NumObjects(rtxn))
	}
	n, err := ExpireBefore(db, time.Now(), 10)
	must(t, err)
	rtxn = db.ReadTxn()
	if n != 2 || !slices.Equal(sessionIDs(rtxn, restored), []uint64{2}) || applied.NumObjects(rtxn) != 0 {
		t.Fatalf("expired %d; left %v and %d objects", n, sessionIDs(rtxn, restored), applied.NumObjects(rtxn))
	}
}

// TestExpireBeforeBatches: ExpireBefore deletes exactly the objects due,
// the soonest first, in commits of at most batch objects, which watch
// channels and change feeds see.
func TestExpireBeforeBatches(t *testing.T) {
	db := New()
	tbl := newSessions(t, db, "s")
	plain := newTestTable(t, db, "plain")
	base := time.Now().Add(time.Hour)
	var objs []*session
	for i := range 10 {
		objs = append(objs, &session{ID: uint64(i), Expires: base.Add(time.Duration(i) * time.Second)})
	}
	objs = append(objs, &session{ID: 99}) // never expires
	insertSessions(t, db, tbl, objs...)
	mustInsertAll(t, db, plain, &testObject{ID: 1})

	wtxn := db.WriteTxn(tbl)
	feed, err := tbl.Changes(wtxn)
	must(t, err)
	defer feed.Close()
	rtxn := mustCommit(t, wtxn)
	changes, _ := feed.Next(rtxn)
	for range changes {
	}
	_, _, watch5, _ := tbl.GetWatch(rtxn, sessionByID.Query(5))
	_, _, watch7, _ := tbl.GetWatch(rtxn, sessionByID.Query(7))
	commits := db.Commits()

	n, err := ExpireBefore(db, base.Add(6*time.Second), 3)
	must(t, err)
	rtxn = db.ReadTxn()
	if n != 7 || !slices.Equal(sessionIDs(rtxn, tbl), []uint64{7, 8, 9, 99}) {
		t.Fatalf("expired %d, left %v; want 7, [7 8 9 99]", n, sessionIDs(rtxn, tbl))
	}
	if c := db.Commits() - commits; c != 3 {
		t.Fatalf("%d commits for 7 objects in batches of 3, want 3", c)
	}
	if plain.NumObjects(rtxn) != 1 {
		t.Fatal("a table without an expiry index lost objects")
	}
	select {
	case <-watch5:
	default:
		t.Fatal("the watch channel of an expired object is open")
	}
	select {
	case <-watch7:
		t.Fatal("the watch channel of an object not due closed")
	default:
	}
	changes, _ = feed.Next(rtxn)
	var deleted []uint64
	for c := range changes {
		if !c.Deleted {
			t.Fatalf("change %+v is not a delete", c)
		}
		deleted = append(deleted, c.Object.ID)
	}
	if !slices.Equal(deleted, []uint64{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("feed saw deletes %v", deleted)
	}
	if n, err := Count(rtxn, tbl.ToTable(), sessionByExpiry.Query(base.Add(8*time.Second))); err != nil || n != 1 {
		t.Fatalf("Count of one expiry: %d, %v", n, err)
	}
	if n, err := ExpireBefore(db, base, 0); n != 0 || !errors.Is(err, ErrExpiryBatch) {
		t.Fatalf("batch 0: %d, %v; want ErrExpiryBatch", n, err)
	}
	if n, err := ExpireBefore(db, base.Add(time.Hour), 100, plain); n != 0 || err != nil {
		t.Fatalf("expiry of a table without an expiry index: %d, %v", n, err)
	}
}

// TestExpirerOptionsErrors: bad options fail NewExpirer, and a second Run
// of a running Expirer fails.
func TestExpirerOptionsErrors(t *testing.T) {
	db, other := New(), New()
	plain := newTestTable(t, db, "plain")
	foreign := newSessions(t, other, "s")
	cases := []struct {
		opts ExpirerOptions
		want error
	}{
		{ExpirerOptions{Batch: -1}, ErrExpiryBatch},
		{ExpirerOptions{RetryInterval: -time.Second}, ErrExpiryOptions},
		{ExpirerOptions{Tables: []TableMeta{plain}}, ErrExpiryOptions},
		{ExpirerOptions{Tables: []TableMeta{foreign}}, ErrExpiryOptions},
	}
	for _, c := range cases {
		if e, err := NewExpirer(db, c.opts); e != nil || !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.opts, err, c.want)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		e, err := NewExpirer(db, ExpirerOptions{})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		if err := e.Run(ctx); !errors.Is(err, ErrExpirerRunning) {
			t.Errorf("second Run: %v, want ErrExpirerRunning", err)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	})
}

// TestExpirerWakes: under synctest's clock, the Expirer deletes each
// object at its expiry, not before; wakes early for an object that
// expires sooner than the one it sleeps for; and stops when its context
// ends.
func TestExpirerWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := New()
		tbl := newSessions(t, db, "s")
		start := time.Now()
		insertSessions(t, db, tbl, &session{ID: 1, Expires: start.Add(time.Minute)}, &session{ID: 2})
		e, err := NewExpirer(db, ExpirerOptions{Batch: 1})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()

		time.Sleep(30 * time.Second)
		synctest.Wait()
		if ids := sessionIDs(db.ReadTxn(), tbl); !slices.Equal(ids, []uint64{1, 2}) {
			t.Fatalf("at 30s: %v", ids)
		}
		// Sooner than the minute the Expirer sleeps for.
		insertSessions(t, db, tbl, &session{ID: 3, Expires: start.Add(40 * time.Second)})
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if ids := sessionIDs(db.ReadTxn(), tbl); !slices.Equal(ids, []uint64{1, 2, 3}) {
			t.Fatalf("just before 40s: %v", ids)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if ids := sessionIDs(db.ReadTxn(), tbl); !slices.Equal(ids, []uint64{1, 2}) {
			t.Fatalf("at 40s: %v", ids)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if ids := sessionIDs(db.ReadTxn(), tbl); !slices.Equal(ids, []uint64{2}) || e.Expired() != 2 || e.Err() != nil {
			t.Fatalf("at 60s: %v, %d expired, err %v", ids, e.Expired(), e.Err())
		}
		// A table registered while it runs is found (its registration
		// wakes the Expirer: TestExpirerFindsNewTables).
		late := newSessions(t, db, "late")
		insertSessions(t, db, late, &session{ID: 4, Expires: time.Now().Add(time.Hour)})
		insertSessions(t, db, tbl, &session{ID: 5, Expires: time.Now().Add(time.Second)})
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := late.NumObjects(db.ReadTxn()) + tbl.NumObjects(db.ReadTxn()); n != 1 {
			t.Fatalf("after an hour: %d objects, want 1", n)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v", err)
		}
	})
}

// failJournal is a Journal whose commits fail while fail is set.
type failJournal struct{ fail atomic.Bool }

var errDiskOnFire = errors.New("disk on fire")

func (j *failJournal) Begin() JournalBatch { return failBatch{j} }

type failBatch struct{ j *failJournal }

func (b failBatch) Commit() error {
	if b.j.fail.Load() {
		return errDiskOnFire
	}
	return nil
}
func (failBatch) Discard() {}

// sessionJournal is a TableJournal of sessions that records nothing.
type sessionJournal struct{}

func (sessionJournal) Upsert(JournalBatch, []byte, *session, Revision) error { return nil }
func (sessionJournal) Delete(JournalBatch, []byte) error                     { return nil }
func (sessionJournal) DeleteAll(JournalBatch) error                          { return nil }
func (sessionJournal) SetRevision(JournalBatch, Revision) error              { return nil }

// TestExpirerReportsErrors: a pass whose commit fails is reported to
// OnPass and by Err, deletes nothing, and is tried again after
// RetryInterval; once a pass succeeds, Err is nil again.
func TestExpirerReportsErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := New()
		tbl := newSessions(t, db, "s")
		j := &failJournal{}
		txn := db.WriteTxn(tbl)
		must(t, SetJournal(txn, tbl, j, sessionJournal{}))
		mustCommit(t, txn)
		insertSessions(t, db, tbl, &session{ID: 1, Expires: time.Now().Add(time.Second)})

		j.fail.Store(true)
		if n, err := ExpireBefore(db, time.Now().Add(time.Hour), 10); n != 0 || !errors.Is(err, errDiskOnFire) {
			t.Fatalf("ExpireBefore with a failing journal: %d, %v", n, err)
		}
		var reported atomic.Int32
		e, err := NewExpirer(db, ExpirerOptions{
			RetryInterval: time.Minute,
			OnPass: func(n int, err error) {
				switch {
				case err == nil:
				case n != 0 || !errors.Is(err, errDiskOnFire):
					t.Errorf("OnPass(%d, %v)", n, err)
				default:
					reported.Add(1)
				}
			},
		})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(time.Second)
		synctest.Wait()
		if reported.Load() != 1 || !errors.Is(e.Err(), errDiskOnFire) || tbl.NumObjects(db.ReadTxn()) != 1 {
			t.Fatalf("after a failed pass: %d reports, Err %v, %d objects", reported.Load(), e.Err(), tbl.NumObjects(db.ReadTxn()))
		}
		j.fail.Store(false)
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if tbl.NumObjects(db.ReadTxn()) != 1 {
			t.Fatal("tried again before RetryInterval")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if reported.Load() != 1 || e.Err() != nil || tbl.NumObjects(db.ReadTxn()) != 0 || e.Expired() != 1 {
			t.Fatalf("after the retry: %d reports, Err %v, %d objects", reported.Load(), e.Err(), tbl.NumObjects(db.ReadTxn()))
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v", err)
		}
	})
}

// TestExpirerFindsNewTables: an Expirer of every table, started before
// any table has an expiry index (the usual order in a program that starts
// it early), finds a table registered later without waiting for another
// wake: the registration wakes it.
func TestExpirerFindsNewTables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := New()
		e, err := NewExpirer(db, ExpirerOptions{})
		must(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()

		tbl := newSessions(t, db, "s")
		insertSessions(t, db, tbl, &session{ID: 1, Expires: time.Now().Add(time.Minute)}, &session{ID: 2})
		time.Sleep(time.Minute)
		synctest.Wait()
		if ids := sessionIDs(db.ReadTxn(), tbl); !slices.Equal(ids, []uint64{2}) || e.Expired() != 1 {
			t.Fatalf("a minute after the table's registration: %v, %d expired", ids, e.Expired())
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v", err)
		}
	})
}
