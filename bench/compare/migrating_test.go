package main

// The differences between cilium/statedb v0.9.4 and Strata that
// MIGRATING.md (at the repository root) lists as compiling unchanged and
// then behaving otherwise, each checked here on both databases: if either
// changes, the test fails and the guide must change with it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"testing"

	"github.com/cilium/statedb"
	sindex "github.com/cilium/statedb/index"
	spart "github.com/cilium/statedb/part"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// migratingDBs returns a Strata and a statedb database, each with the
// table "objects" (id and unique name indexes) and the table "other".
func migratingDBs(t *testing.T) (*strata.DB, strata.RWTable[*Object], strata.RWTable[*Object], *statedb.DB, statedb.RWTable[*Object], statedb.RWTable[*Object]) {
	t.Helper()
	db := strata.New()
	objs, err := strata.NewTable(db, "objects", strataID, strataName)
	if err != nil {
		t.Fatal(err)
	}
	other, err := strata.NewTable(db, "other", strataID)
	if err != nil {
		t.Fatal(err)
	}
	sdb := statedb.New()
	sobjs, err := statedb.NewTable(sdb, "objects", statedbID, statedbName)
	if err != nil {
		t.Fatal(err)
	}
	sother, err := statedb.NewTable(sdb, "other", statedbID)
	if err != nil {
		t.Fatal(err)
	}
	return db, objs, other, sdb, sobjs, sother
}

// written returns a function that fails t if a write's error is not nil:
// written(t)(tbl.Insert(txn, obj)).
func written(t *testing.T) func(*Object, bool, error) {
	return func(_ *Object, _ bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Commit returns an error in Strata; a second Commit is
// ErrTransactionClosed, where statedb's is a no-op.
func TestMigratingCommitTwice(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); !errors.Is(err, strata.ErrTransactionClosed) {
		t.Errorf("strata: second Commit = %v, want ErrTransactionClosed", err)
	}
	sw := sdb.WriteTxn(sobjs)
	sw.Commit()
	sw.Commit() // a no-op, no error to return
}

// CompareAndSwap's errors: statedb returns the sentinels themselves,
// Strata wraps them with the table (and the revisions): == on the
// sentinel is false, errors.Is true.
func TestMigratingWrappedErrors(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	defer w.Abort()
	_, _, err := objs.CompareAndSwap(w, 1, named(1))
	if err == strata.ErrObjectNotFound || !errors.Is(err, strata.ErrObjectNotFound) {
		t.Errorf("strata: CompareAndSwap of a missing object = %v: want ErrObjectNotFound wrapped", err)
	}
	written(t)(objs.Insert(w, named(1)))
	_, _, err = objs.CompareAndSwap(w, 100, named(1))
	if err == strata.ErrRevisionNotEqual || !errors.Is(err, strata.ErrRevisionNotEqual) {
		t.Errorf("strata: CompareAndSwap at another revision = %v: want ErrRevisionNotEqual wrapped", err)
	}

	sw := sdb.WriteTxn(sobjs)
	defer sw.Abort()
	if _, _, err := sobjs.CompareAndSwap(sw, 1, named(1)); err != statedb.ErrObjectNotFound {
		t.Errorf("statedb: CompareAndSwap of a missing object = %v, want the bare sentinel", err)
	}
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sobjs.CompareAndSwap(sw, 100, named(1)); err != statedb.ErrRevisionNotEqual {
		t.Errorf("statedb: CompareAndSwap at another revision = %v, want the bare sentinel", err)
	}
}

// named returns a new object with the ID and a name of its own (the
// objects table has a unique name index).
func named(id uint64) *Object { return &Object{ID: id, Name: fmt.Sprint("object-", id)} }

// CompareAndDelete of an object that is not there: ErrObjectNotFound in
// Strata, no error (and hadOld false) in statedb.
func TestMigratingCompareAndDeleteMissing(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	defer w.Abort()
	if _, had, err := objs.CompareAndDelete(w, 1, named(7)); had || !errors.Is(err, strata.ErrObjectNotFound) {
		t.Errorf("strata: CompareAndDelete of a missing object = %v, %v; want ErrObjectNotFound", had, err)
	}
	sw := sdb.WriteTxn(sobjs)
	defer sw.Abort()
	if _, had, err := sobjs.CompareAndDelete(sw, 1, named(7)); had || err != nil {
		t.Errorf("statedb: CompareAndDelete of a missing object = %v, %v; want false, nil", had, err)
	}
}

// index.NetIPPrefix keeps the host bits in Strata (10.1.2.3/8 is not
// 10.0.0.0/8); statedb masks them. index.NetIPAddr tells an IPv4 address
// from its IPv4-mapped IPv6 form in Strata; statedb encodes both as 16
// bytes, the same key.
func TestMigratingNetIPKeys(t *testing.T) {
	host, net := netip.MustParsePrefix("10.1.2.3/8"), netip.MustParsePrefix("10.0.0.0/8")
	if bytes.Equal(index.NetIPPrefix(host), index.NetIPPrefix(net)) {
		t.Error("strata: NetIPPrefix(10.1.2.3/8) == NetIPPrefix(10.0.0.0/8)")
	}
	if !bytes.Equal(sindex.NetIPPrefix(host), sindex.NetIPPrefix(net)) {
		t.Error("statedb: NetIPPrefix(10.1.2.3/8) != NetIPPrefix(10.0.0.0/8)")
	}
	v4, mapped := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.1")
	if bytes.Equal(index.NetIPAddr(v4), index.NetIPAddr(mapped)) {
		t.Error("strata: NetIPAddr(10.0.0.1) == NetIPAddr(::ffff:10.0.0.1)")
	}
	if !bytes.Equal(sindex.NetIPAddr(v4), sindex.NetIPAddr(mapped)) {
		t.Error("statedb: NetIPAddr(10.0.0.1) != NetIPAddr(::ffff:10.0.0.1)")
	}
}

// Signed integer keys: Strata flips the sign bit, so -1 sorts before 1;
// statedb encodes the two's complement bits, so -1 sorts after 1. Strata's
// index.Int is 8 bytes; statedb's is Int32 of the value (4 bytes,
// truncated).
func TestMigratingSignedIntKeys(t *testing.T) {
	if bytes.Compare(index.Int64(-1), index.Int64(1)) >= 0 {
		t.Error("strata: Int64(-1) does not sort before Int64(1)")
	}
	if bytes.Compare(sindex.Int64(-1), sindex.Int64(1)) <= 0 {
		t.Error("statedb: Int64(-1) does not sort after Int64(1)")
	}
	if n := len(index.Int(1)); n != 8 {
		t.Errorf("strata: len(Int(1)) = %d, want 8", n)
	}
	if !bytes.Equal(sindex.Int(1<<32), sindex.Int(0)) || len(sindex.Int(1)) != 4 {
		t.Error("statedb: Int is not a truncating Int32")
	}
}

// part: Txn.Commit closes the watch channels of what it replaced in
// Strata (statedb's CommitAndNotify); statedb's Txn.Commit does not
// (Strata's CommitOnly), until Notify.
func TestMigratingPartCommitNotifies(t *testing.T) {
	key := []byte("k")
	_, _, tree := part.New[int]().Insert(key, 1)
	_, watch, _ := tree.GetWatch(key)
	txn := tree.Txn()
	txn.Insert(key, 2)
	tree = txn.Commit()
	if !isClosed(watch) {
		t.Error("strata: part.Txn.Commit left the replaced key's channel open")
	}
	_, watch, _ = tree.GetWatch(key)
	txn = tree.Txn()
	txn.Insert(key, 3)
	txn.CommitOnly()
	if isClosed(watch) {
		t.Error("strata: part.Txn.CommitOnly closed a channel")
	}
	txn.Notify()
	if !isClosed(watch) {
		t.Error("strata: Notify after CommitOnly left the channel open")
	}

	sempty := spart.New[int]()
	stxn := sempty.Txn()
	stxn.Insert(key, 1)
	stree := stxn.CommitAndNotify()
	_, swatch, _ := stree.GetWatch(key)
	stxn = stree.Txn()
	stxn.Insert(key, 2)
	stxn.Commit()
	if isClosed(swatch) {
		t.Error("statedb: part.Txn.Commit closed a channel")
	}
	stxn.Notify()
	if !isClosed(swatch) {
		t.Error("statedb: Notify left the channel open")
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A Next that delivers changes returns a closed channel in statedb
// (always: the next Next returns nothing and the real channel); in Strata
// the channel of a drained feed is open until the table changes.
func TestMigratingFeedWatchAfterDelivery(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	feed, err := objs.Changes(w)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	written(t)(objs.Insert(w, named(1)))
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	changes, watch := feed.Next(rtxn)
	if n := len(collect2(changes)); n != 1 || isClosed(watch) {
		t.Errorf("strata: Next delivered %d changes, channel closed %v; want 1, open", n, isClosed(watch))
	}

	sw := sdb.WriteTxn(sobjs)
	sfeed, err := sobjs.Changes(sw)
	if err != nil {
		t.Fatal(err)
	}
	defer sfeed.Close()
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()
	schanges, swatch := sfeed.Next(srtxn)
	if n := len(collect2(schanges)); n != 1 || !isClosed(swatch) {
		t.Errorf("statedb: Next delivered %d changes, channel closed %v; want 1, closed", n, isClosed(swatch))
	}
	schanges, swatch = sfeed.Next(srtxn)
	if n := len(collect2(schanges)); n != 0 || isClosed(swatch) {
		t.Errorf("statedb: the Next after delivered %d changes, channel closed %v; want 0, open", n, isClosed(swatch))
	}
}

// After a sequence was read in part, Strata's next Next returns the rest
// of that batch only (with a closed channel), whatever newer snapshot it
// is given, and the Next after it the newer changes; statedb's next Next
// reads up to the snapshot it is given, the rest and the newer changes
// together.
func TestMigratingFeedPartialConsumption(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)

	w := db.WriteTxn(objs)
	feed, err := objs.Changes(w)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	written(t)(objs.Insert(w, named(1)))
	written(t)(objs.Insert(w, named(2)))
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	changes, _ := feed.Next(rtxn)
	for range changes {
		break // one change read
	}
	w = db.WriteTxn(objs)
	written(t)(objs.Insert(w, named(3)))
	if rtxn, err = w.Commit(); err != nil {
		t.Fatal(err)
	}
	changes, watch := feed.Next(rtxn)
	if got := ids(collect2(changes)); !equalIDs(got, 2) || !isClosed(watch) {
		t.Errorf("strata: Next after a partial read = %v (closed %v), want [2], closed", got, isClosed(watch))
	}
	changes, _ = feed.Next(rtxn)
	if got := ids(collect2(changes)); !equalIDs(got, 3) {
		t.Errorf("strata: the Next after that = %v, want [3]", got)
	}

	sw := sdb.WriteTxn(sobjs)
	sfeed, err := sobjs.Changes(sw)
	if err != nil {
		t.Fatal(err)
	}
	defer sfeed.Close()
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sobjs.Insert(sw, named(2)); err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()
	schanges, _ := sfeed.Next(srtxn)
	for range schanges {
		break
	}
	sw = sdb.WriteTxn(sobjs)
	if _, _, err := sobjs.Insert(sw, named(3)); err != nil {
		t.Fatal(err)
	}
	srtxn = sw.Commit()
	schanges, _ = sfeed.Next(srtxn)
	if got := ids(collect2(schanges)); !equalIDs(got, 2, 3) {
		t.Errorf("statedb: Next after a partial read = %v, want [2 3]", got)
	}
}

// A closed feed's Next returns a nil channel in Strata; statedb's returns
// the channel it returned last.
func TestMigratingClosedFeed(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	feed, err := objs.Changes(w)
	if err != nil {
		t.Fatal(err)
	}
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	feed.Next(rtxn)
	feed.Close()
	if changes, watch := feed.Next(db.ReadTxn()); watch != nil || len(collect2(changes)) != 0 {
		t.Errorf("strata: a closed feed's Next returned channel %v", watch)
	}

	sw := sdb.WriteTxn(sobjs)
	sfeed, err := sobjs.Changes(sw)
	if err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()
	schanges, _ := sfeed.Next(srtxn)
	for range schanges {
	}
	_, last := sfeed.Next(srtxn)
	sfeed.Close()
	if _, watch := sfeed.Next(sdb.ReadTxn()); watch == nil || watch != last {
		t.Errorf("statedb: a closed feed's Next returned %v, want the last channel %v", watch, last)
	}
}

// Change.Created is set only for feeds opened WithCreated.
func TestMigratingWithCreated(t *testing.T) {
	for _, opts := range [][]strata.FeedOption{nil, {strata.WithCreated()}} {
		db, objs, _, _, _, _ := migratingDBs(t)
		w := db.WriteTxn(objs)
		feed, err := objs.Changes(w, opts...)
		if err != nil {
			t.Fatal(err)
		}
		written(t)(objs.Insert(w, named(1)))
		rtxn, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		changes, _ := feed.Next(rtxn)
		for c := range changes {
			if c.Created != (len(opts) == 1) {
				t.Errorf("strata: with %d options, Created = %v", len(opts), c.Created)
			}
		}
		feed.Close()
	}
}

// ByRevision needs the table to keep the revision index (RevisionIndex)
// in Strata; querying a table without it panics (an index the table does
// not have). Every statedb table has one.
func TestMigratingByRevision(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("strata: ByRevision on a table without RevisionIndex did not panic")
			}
		}()
		for range objs.LowerBound(db.ReadTxn(), strata.ByRevision[*Object](0)) {
		}
	}()
	byRev, err := strata.NewTable(db, "byrev", strataID, strata.RevisionIndex[*Object]())
	if err != nil {
		t.Fatal(err)
	}
	w := db.WriteTxn(byRev)
	written(t)(byRev.Insert(w, named(2)))
	written(t)(byRev.Insert(w, named(1)))
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(strata.Collect(byRev.LowerBound(rtxn, strata.ByRevision[*Object](0)))); !equalIDs(got, 2, 1) {
		t.Errorf("strata: ByRevision = %v, want [2 1]", got)
	}

	sw := sdb.WriteTxn(sobjs)
	if _, _, err := sobjs.Insert(sw, named(2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()
	if got := ids(statedb.Collect(sobjs.LowerBound(srtxn, statedb.ByRevision[*Object](0)))); !equalIDs(got, 2, 1) {
		t.Errorf("statedb: ByRevision = %v, want [2 1]", got)
	}
}

// A second object with a key of a unique secondary index: Strata refuses
// it (ErrUniqueConstraint), statedb takes it. The very pointer that is
// stored, inserted again: Strata refuses it (ErrObjectMutated), statedb
// panics.
func TestMigratingRefusedWrites(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	defer w.Abort()
	a := &Object{ID: 1, Name: "a"}
	written(t)(objs.Insert(w, a))
	if _, _, err := objs.Insert(w, &Object{ID: 2, Name: "a"}); !errors.Is(err, strata.ErrUniqueConstraint) {
		t.Errorf("strata: a second object named a: %v, want ErrUniqueConstraint", err)
	}
	if _, _, err := objs.Insert(w, a); !errors.Is(err, strata.ErrObjectMutated) {
		t.Errorf("strata: the stored pointer again: %v, want ErrObjectMutated", err)
	}

	sw := sdb.WriteTxn(sobjs)
	defer sw.Abort()
	sa := &Object{ID: 1, Name: "a"}
	if _, _, err := sobjs.Insert(sw, sa); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sobjs.Insert(sw, &Object{ID: 2, Name: "a"}); err != nil {
		t.Errorf("statedb: a second object named a: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("statedb: inserting the stored pointer again did not panic")
		}
	}()
	if _, _, err := sobjs.Insert(sw, sa); err != nil {
		t.Fatal(err)
	}
}

// WriteTxn with a table given twice: Strata locks it once, statedb
// panics.
func TestMigratingWriteTxnSameTableTwice(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	db.WriteTxn(objs, objs).Abort()
	defer func() {
		if recover() == nil {
			t.Error("statedb: WriteTxn(t, t) did not panic")
		}
	}()
	sdb.WriteTxn(sobjs, sobjs).Abort()
}

// Index names: statedb takes any name that is not empty and does not
// begin with "__"; Strata's must match NamePattern.
func TestMigratingIndexNames(t *testing.T) {
	byName := strataName
	byName.Name = "by/name"
	if _, err := strata.NewTable(strata.New(), "objects", strataID, byName); !errors.Is(err, strata.ErrInvalidIndexName) {
		t.Errorf("strata: index name by/name: %v, want ErrInvalidIndexName", err)
	}
	sbyName := statedbName
	sbyName.Name = "by/name"
	if _, err := statedb.NewTable(statedb.New(), "objects", statedbID, sbyName); err != nil {
		t.Errorf("statedb: index name by/name: %v", err)
	}
}

func collect2[A, B any](seq func(func(A, B) bool)) []A {
	var out []A
	for a := range seq {
		out = append(out, a)
	}
	return out
}

func ids[T any](xs []T) []uint64 {
	var out []uint64
	for _, x := range xs {
		switch v := any(x).(type) {
		case *Object:
			out = append(out, v.ID)
		case strata.Change[*Object]:
			out = append(out, v.Object.ID)
		case statedb.Change[*Object]:
			out = append(out, v.Object.ID)
		}
	}
	return out
}

func equalIDs(got []uint64, want ...uint64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// part.Map's JSON: an object in Strata ({"a":1}), an array of key-value
// pairs in statedb ([{"k":"a","v":1}]).
func TestMigratingPartMapJSON(t *testing.T) {
	m := part.Map[string, int]{}.Set("a", 1)
	got, err := json.Marshal(m)
	if err != nil || string(got) != `{"a":1}` {
		t.Errorf("strata: Map JSON = %s, %v", got, err)
	}
	sm := spart.Map[string, int]{}.Set("a", 1)
	sgot, err := json.Marshal(sm)
	if err != nil || string(sgot) != `[{"k":"a","v":1}]` {
		t.Errorf("statedb: Map JSON = %s, %v", sgot, err)
	}
}

// Deleting an object that is not there: go-memdb returns ErrNotFound,
// Strata no error and hadOld false.
func TestMigratingMemdbDeleteMissing(t *testing.T) {
	db, objs, _, _, _, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	defer w.Abort()
	if _, had, err := objs.Delete(w, named(9)); had || err != nil {
		t.Errorf("strata: Delete of a missing object = %v, %v; want false, nil", had, err)
	}
	m, err := newMemdb(Schema{})
	if err != nil {
		t.Fatal(err)
	}
	mtxn := m.(*memdbDB).db.Txn(true)
	defer mtxn.Abort()
	if err := mtxn.Delete(memdbTable, named(9)); !errors.Is(err, memdb.ErrNotFound) {
		t.Errorf("memdb: Delete of a missing object = %v, want ErrNotFound", err)
	}
}

// An object for which the primary index yields no key: Strata refuses it
// (ErrPrimaryKey); statedb leaves it out without an error.
func TestMigratingNoPrimaryKey(t *testing.T) {
	byName := strata.Index[*Object, string]{
		Name: "name",
		FromObject: func(o *Object) index.KeySet {
			if o.Name == "" {
				return index.KeySet{}
			}
			return index.NewKeySet(index.String(o.Name))
		},
		FromKey: index.String,
		Unique:  true,
	}
	db := strata.New()
	tbl, err := strata.NewTable(db, "objects", byName)
	if err != nil {
		t.Fatal(err)
	}
	w := db.WriteTxn(tbl)
	defer w.Abort()
	if _, _, err := tbl.Insert(w, &Object{ID: 1}); !errors.Is(err, strata.ErrPrimaryKey) {
		t.Errorf("strata: an object without a primary key: %v, want ErrPrimaryKey", err)
	}

	sbyName := statedb.Index[*Object, string]{
		Name: "name",
		FromObject: func(o *Object) sindex.KeySet {
			if o.Name == "" {
				return sindex.EmptyKeySet
			}
			return sindex.NewKeySet(sindex.String(o.Name))
		},
		FromKey: sindex.String,
		Unique:  true,
	}
	sdb := statedb.New()
	stbl, err := statedb.NewTable(sdb, "objects", sbyName)
	if err != nil {
		t.Fatal(err)
	}
	sw := sdb.WriteTxn(stbl)
	defer sw.Abort()
	if _, _, err := stbl.Insert(sw, &Object{ID: 1}); err != nil || stbl.NumObjects(sw) != 0 {
		t.Errorf("statedb: an object without a primary key: %v, %d objects; want nil, 0", err, stbl.NumObjects(sw))
	}
}

// A feed read before the transaction that registered it commits: Strata
// delivers nothing (and a channel that closes when that transaction
// ends), and the feed of a transaction that aborts is closed (a nil
// channel). statedb delivers the table's objects at once, and goes on
// after an abort.
func TestMigratingFeedBeforeRegistrationCommits(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	written(t)(objs.Insert(w, named(1)))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w = db.WriteTxn(objs)
	feed, err := objs.Changes(w)
	if err != nil {
		t.Fatal(err)
	}
	changes, watch := feed.Next(db.ReadTxn())
	if n := len(collect2(changes)); n != 0 || isClosed(watch) {
		t.Errorf("strata: before the registration commits: %d changes, closed %v; want 0, open", n, isClosed(watch))
	}
	w.Abort()
	if !isClosed(watch) {
		t.Error("strata: the channel stayed open after the abort")
	}
	if _, watch := feed.Next(db.ReadTxn()); watch != nil {
		t.Error("strata: the feed of an aborted registration is not closed")
	}

	sw := sdb.WriteTxn(sobjs)
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	sw.Commit()
	sw = sdb.WriteTxn(sobjs)
	sfeed, err := sobjs.Changes(sw)
	if err != nil {
		t.Fatal(err)
	}
	schanges, _ := sfeed.Next(sdb.ReadTxn())
	if n := len(collect2(schanges)); n != 1 {
		t.Errorf("statedb: before the registration commits: %d changes, want 1", n)
	}
	sw.Abort()
	if _, swatch := sfeed.Next(sdb.ReadTxn()); swatch == nil {
		t.Error("statedb: the feed returned a nil channel after the abort")
	}
}

// WriteJSON, a method of statedb's ReadTxn and a function in Strata,
// writes the same shape ({"table": [objects...]}), but a table name that
// is not registered is an error in Strata (ErrTableNotFound, before
// anything is written) and skipped in statedb, and Strata writes the
// named tables in the order given, statedb in registration order.
func TestMigratingWriteJSON(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	written(t)(objs.Insert(w, &Object{ID: 1, Name: "a"}))
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	sw := sdb.WriteTxn(sobjs)
	if _, _, err := sobjs.Insert(sw, &Object{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()

	var out, sout bytes.Buffer
	if err := strata.WriteJSON(&out, rtxn, "nosuch"); !errors.Is(err, strata.ErrTableNotFound) || out.Len() != 0 {
		t.Errorf("strata: WriteJSON of an unknown table = %v, wrote %q", err, out.String())
	}
	if err := srtxn.WriteJSON(&sout, "nosuch"); err != nil {
		t.Errorf("statedb: WriteJSON of an unknown table = %v", err)
	}

	out.Reset()
	sout.Reset()
	if err := strata.WriteJSON(&out, rtxn, "other", "objects"); err != nil {
		t.Fatal(err)
	}
	if err := srtxn.WriteJSON(&sout, "other", "objects"); err != nil {
		t.Fatal(err)
	}
	before := func(data []byte, a, b string) bool {
		return json.Valid(data) && bytes.Index(data, []byte(`"`+a+`"`)) < bytes.Index(data, []byte(`"`+b+`"`))
	}
	if !before(out.Bytes(), "other", "objects") {
		t.Errorf("strata: tables not in the order given: %s", out.String())
	}
	if !before(sout.Bytes(), "objects", "other") {
		t.Errorf("statedb: tables not in registration order: %s", sout.String())
	}
}

// A second object with a key of a unique secondary index: go-memdb takes
// it and points the key at the newer object; Strata refuses it.
func TestMigratingMemdbUnique(t *testing.T) {
	db, objs, _, _, _, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	defer w.Abort()
	written(t)(objs.Insert(w, &Object{ID: 1, Name: "a"}))
	if _, _, err := objs.Insert(w, &Object{ID: 2, Name: "a"}); !errors.Is(err, strata.ErrUniqueConstraint) {
		t.Errorf("strata: a second object named a: %v, want ErrUniqueConstraint", err)
	}
	m, err := newMemdb(Schema{Name: true})
	if err != nil {
		t.Fatal(err)
	}
	mtxn := m.(*memdbDB).db.Txn(true)
	defer mtxn.Abort()
	for _, o := range []*Object{{ID: 1, Name: "a"}, {ID: 2, Name: "a"}} {
		if err := mtxn.Insert(memdbTable, o); err != nil {
			t.Fatalf("memdb: Insert(%d): %v", o.ID, err)
		}
	}
	if raw, err := mtxn.First(memdbTable, "name", "a"); err != nil || raw.(*Object).ID != 2 {
		t.Errorf("memdb: First by name a = %v, %v; want object 2", raw, err)
	}
}

// An object encoding/json cannot encode: Strata's WriteJSON stops with an
// error; statedb's writes the error into the dump and returns none.
func TestMigratingWriteJSONEncodeError(t *testing.T) {
	type bad struct {
		ID uint64
		F  func() // encoding/json refuses funcs
	}
	db := strata.New()
	tbl, err := strata.NewTable(db, "bad", strata.Index[*bad, uint64]{
		Name:       "id",
		FromObject: func(b *bad) index.KeySet { return index.KeySetOf(index.Uint64(b.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	w := db.WriteTxn(tbl)
	if _, _, err := tbl.Insert(w, &bad{ID: 1, F: func() {}}); err != nil {
		t.Fatal(err)
	}
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := strata.WriteJSON(io.Discard, rtxn); err == nil {
		t.Error("strata: WriteJSON of an object that does not encode returned no error")
	}

	sdb := statedb.New()
	stbl, err := statedb.NewTableAny(sdb, "bad", func() []string { return nil }, func(*bad) []string { return nil },
		statedb.Index[*bad, uint64]{
			Name:       "id",
			FromObject: func(b *bad) sindex.KeySet { return sindex.NewKeySet(sindex.Uint64(b.ID)) },
			FromKey:    sindex.Uint64,
			Unique:     true,
		})
	if err != nil {
		t.Fatal(err)
	}
	sw := sdb.WriteTxn(stbl)
	if _, _, err := stbl.Insert(sw, &bad{ID: 1, F: func() {}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sw.Commit().WriteJSON(&out); err != nil || !bytes.Contains(out.Bytes(), []byte("marshalling error")) {
		t.Errorf("statedb: WriteJSON = %v, %q; want no error and the error in the dump", err, out.String())
	}
}

// A sequence read after a newer Next: Strata's yields nothing; statedb's
// reads on from the feed's new position.
func TestMigratingStaleSequence(t *testing.T) {
	db, objs, _, sdb, sobjs, _ := migratingDBs(t)
	w := db.WriteTxn(objs)
	feed, err := objs.Changes(w)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	written(t)(objs.Insert(w, named(1)))
	rtxn, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	old, _ := feed.Next(rtxn)
	feed.Next(rtxn)
	if n := len(collect2(old)); n != 0 {
		t.Errorf("strata: a sequence read after a newer Next yielded %d changes", n)
	}

	sw := sdb.WriteTxn(sobjs)
	sfeed, err := sobjs.Changes(sw)
	if err != nil {
		t.Fatal(err)
	}
	defer sfeed.Close()
	if _, _, err := sobjs.Insert(sw, named(1)); err != nil {
		t.Fatal(err)
	}
	srtxn := sw.Commit()
	sold, _ := sfeed.Next(srtxn)
	sfeed.Next(srtxn)
	if n := len(collect2(sold)); n != 1 {
		t.Errorf("statedb: a sequence read after a newer Next yielded %d changes, want 1", n)
	}
}
