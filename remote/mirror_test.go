package remote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
)

// localUp is an index the local table has and the remote has not.
var localUp = strata.Index[*Host, bool]{
	Name:       "up",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.Bool(h.Up)) },
	FromKey:    index.Bool,
}

type local struct {
	db    *strata.DB
	hosts strata.RWTable[*Host]
	m     *Mirror[*Host]
	errc  chan error
}

// mirror runs a Mirror of the server's hosts into a new local database
// until the test ends.
func mirror(t *testing.T, s *server) *local {
	l := &local{db: strata.New(), errc: make(chan error, 1)}
	l.hosts = strata.MustNewTable(l.db, "hosts", hostByName, localUp)
	m, err := NewMirror(NewTable[*Host](s.client(t), "hosts"), l.db, l.hosts)
	if err != nil {
		t.Fatal(err)
	}
	l.m = m
	if ok, _ := l.hosts.Initialized(l.db.ReadTxn()); ok {
		t.Fatal("the local table is initialized before the mirror ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { l.errc <- l.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-l.errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return l
}

func (l *local) contents() map[string]Host {
	m := map[string]Host{}
	for h := range l.hosts.All(l.db.ReadTxn()) {
		m[h.Name] = *h
	}
	return m
}

func (l *local) holds(t *testing.T, want map[string]Host) {
	t.Helper()
	eventually(t, "the mirror to hold the server's hosts", func() bool { return maps.Equal(l.contents(), want) })
}

// TestMirror: the local table holds the remote one once initialized, with
// its own watch channels and indexes, and follows its changes.
func TestMirror(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.insert(sixHosts()...)
	l := mirror(t, s)
	_, initialized := l.hosts.Initialized(l.db.ReadTxn())
	<-initialized
	if got := l.contents(); !maps.Equal(got, s.contents()) {
		t.Fatalf("initialized with %v", got)
	}
	txn := l.db.ReadTxn()
	_, _, a1Watch, _ := l.hosts.GetWatch(txn, hostByName.Query("a1"))
	_, _, b1Watch, _ := l.hosts.GetWatch(txn, hostByName.Query("b1"))
	if n := len(strata.Collect(l.hosts.List(txn, localUp.Query(true)))); n != 0 {
		t.Fatalf("%d hosts up", n)
	}
	rev := s.insert(&Host{Name: "a1", Zone: "eu", Up: true})
	<-a1Watch
	select {
	case <-b1Watch:
		t.Fatal("b1's watch closed for a change of a1")
	default:
	}
	if up := strata.Collect(l.hosts.List(l.db.ReadTxn(), localUp.Query(true))); len(up) != 1 || up[0].Name != "a1" {
		t.Fatalf("hosts up: %v", up)
	}
	eventually(t, "the mirror's revision", func() bool { return l.m.Revision() >= rev })
	s.remove("b1")
	<-b1Watch
	l.holds(t, s.contents())
	if w := l.hosts.LastWriter(l.db.ReadTxn()); w != "db" {
		t.Fatalf("LastWriter %q", w)
	}
}

// TestMirrorRelist: after the server's ring moved on while the mirror was
// away, one listing makes the local table equal again: objects deleted
// meanwhile go, changed ones are replaced, unchanged ones are left alone
// (their watch channels stay open).
func TestMirrorRelist(t *testing.T) {
	s := newServer(t, httpapi.Options{RingSize: 4})
	s.insert(sixHosts()...)
	l := mirror(t, s)
	l.holds(t, s.contents())
	txn := l.db.ReadTxn()
	_, _, a3Watch, _ := l.hosts.GetWatch(txn, hostByName.Query("a3"))
	_, _, b3Watch, _ := l.hosts.GetWatch(txn, hostByName.Query("b3"))
	revBefore := l.hosts.Revision(txn)

	s.gate.Store(true)
	s.srv.CloseClientConnections()
	s.remove("a3")
	for i := range 10 {
		s.insert(&Host{Name: fmt.Sprint("c", i), Zone: "ap"})
	}
	s.ringTookAll(t)
	s.gate.Store(false)
	l.holds(t, s.contents())
	<-a3Watch
	select {
	case <-b3Watch:
		t.Fatal("the listing replaced b3, which did not change")
	default:
	}
	// One transaction for the listing: 10 inserts and a delete.
	if got := l.hosts.Revision(l.db.ReadTxn()); got != revBefore+11 {
		t.Fatalf("revision %d after the listing, want %d", got, revBefore+11)
	}

	// A restart to another database: the mirror follows it whole.
	s.restart()
	s.insert(&Host{Name: "z1", Zone: "new"})
	l.holds(t, s.contents())
}

// TestMirrorFails: a mirror of a table that does not exist returns the
// error; the local table stays not initialized.
func TestMirrorFails(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	m, err := NewMirror(NewTable[*Host](s.client(t), "nope"), db, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); !errors.Is(err, strata.ErrTableNotFound) {
		t.Fatalf("Run: %v", err)
	}
	if ok, _ := hosts.Initialized(db.ReadTxn()); ok {
		t.Fatal("initialized")
	}
	// Objects of another shape fail the mirror too.
	s.insert(&Host{Name: "a1"})
	type other struct{ Name int }
	byNum := strata.Index[*other, int]{Name: "name", FromObject: func(o *other) index.KeySet { return index.NewKeySet(index.Int(o.Name)) }, FromKey: index.Int, Unique: true}
	odb := strata.New()
	otbl := strata.MustNewTable(odb, "o", byNum)
	om, err := NewMirror(NewTable[*other](s.client(t), "hosts"), odb, otbl)
	if err != nil {
		t.Fatal(err)
	}
	if err := om.Run(t.Context()); !errors.Is(err, ErrObject) {
		t.Fatalf("Run with another type: %v", err)
	}
}

// TestNewMirrorCommitFails: NewMirror returns the error of the commit
// that registers its initializer, and the local table stays as it was: no
// initializer pending, nothing written. The commit fails here in the
// table's journal (a store that cannot write), which the registering
// transaction meets because the table writes an object when an
// initializer is registered (registeringWrites).
func TestNewMirrorCommitFails(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	errDisk := errors.New("disk full")
	wtxn := db.WriteTxn(hosts)
	if err := strata.SetJournal(wtxn, hosts, failingJournal{errDisk}, nopJournal{}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)

	m, err := NewMirror(NewTable[*Host](s.client(t), "hosts"), db, registeringWrites{hosts})
	if !errors.Is(err, errDisk) || m != nil {
		t.Fatalf("NewMirror = %v, %v; want no mirror and the journal's error", m, err)
	}
	rtxn := db.ReadTxn()
	if ok, _ := hosts.Initialized(rtxn); !ok || len(hosts.PendingInitializers(rtxn)) != 0 || hosts.NumObjects(rtxn) != 0 {
		t.Fatalf("after the failed commit: initialized %v, pending %v, %d objects; want the table as it was",
			ok, hosts.PendingInitializers(rtxn), hosts.NumObjects(rtxn))
	}
}

// registeringWrites is a table that writes an object, named after the
// initializer, into the transaction that registers one.
type registeringWrites struct{ strata.RWTable[*Host] }

func (r registeringWrites) RegisterInitializer(txn strata.WriteTxn, name string) func(strata.WriteTxn) {
	done := r.RWTable.RegisterInitializer(txn, name)
	if _, _, err := r.Insert(txn, &Host{Name: name}); err != nil {
		panic(err)
	}
	return done
}

// failingJournal is a journal whose records fail to commit with err.
type failingJournal struct{ err error }

func (j failingJournal) Begin() strata.JournalBatch { return failingBatch(j) }

type failingBatch struct{ err error }

func (b failingBatch) Commit() error { return b.err }
func (failingBatch) Discard()        {}

// nopJournal records nothing: the batch's Commit fails first.
type nopJournal struct{}

func (nopJournal) Upsert(strata.JournalBatch, []byte, *Host, strata.Revision) error { return nil }
func (nopJournal) Delete(strata.JournalBatch, []byte) error                         { return nil }
func (nopJournal) DeleteAll(strata.JournalBatch) error                              { return nil }
func (nopJournal) SetRevision(strata.JournalBatch, strata.Revision) error           { return nil }
