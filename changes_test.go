package strata

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

type changeRec struct {
	id      uint64
	value   int
	deleted bool
}

func drain(t *testing.T, it ChangeIterator[*testObject], txn ReadTxn) ([]changeRec, <-chan struct{}) {
	t.Helper()
	seq, watch := it.Next(txn)
	var out []changeRec
	var last Revision
	for c, rev := range seq {
		if rev <= last {
			t.Fatalf("changes out of revision order: %d after %d", rev, last)
		}
		last = rev
		out = append(out, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
	}
	return out, watch
}

func TestChangesBasic(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Value: 1})
	mustInsert(t, tbl, txn, &testObject{ID: 2, Value: 1})
	it, err := tbl.Changes(txn)
	if err != nil {
		t.Fatal(err)
	}
	rtxn := mustCommit(t, txn)

	got, watch := drain(t, it, rtxn)
	if want := []changeRec{{1, 1, false}, {2, 1, false}}; !slices.Equal(got, want) {
		t.Fatalf("first Next = %v, want %v", got, want)
	}
	if got, _ := drain(t, it, rtxn); len(got) != 0 {
		t.Fatalf("second Next on the same snapshot = %v", got)
	}
	select {
	case <-watch:
		t.Fatal("watch closed before any change")
	default:
	}

	// Update 1, delete 2, insert 3 and delete it again in one transaction.
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1, Value: 2})
	if _, _, err := tbl.Delete(txn, &testObject{ID: 2}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tbl, txn, &testObject{ID: 3})
	if _, _, err := tbl.Delete(txn, &testObject{ID: 3}); err != nil {
		t.Fatal(err)
	}
	rtxn = mustCommit(t, txn)
	<-watch
	got, _ = drain(t, it, rtxn)
	if want := []changeRec{{1, 2, false}, {2, 1, true}, {3, 0, true}}; !slices.Equal(got, want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}
	// Everything was seen: the graveyard is empty.
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 4})
	rtxn = mustCommit(t, txn)
	if n := mdlGraveyard(tbl.(*table[*testObject]), tbl.(*table[*testObject]).stateIn(rtxn.committed())); n != 0 {
		t.Fatalf("graveyard holds %d objects every feed has seen", n)
	}

	// Deleted and inserted again: only the newest state.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &testObject{ID: 4}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, txn)
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 4, Value: 9})
	rtxn = mustCommit(t, txn)
	got, _ = drain(t, it, rtxn)
	if want := []changeRec{{4, 9, false}}; !slices.Equal(got, want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}

	// A deleted object stays until the feed has seen it; closing the feed
	// lets it go.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	rtxn = mustCommit(t, txn)
	if n := mdlGraveyard(tbl.(*table[*testObject]), tbl.(*table[*testObject]).stateIn(rtxn.committed())); n != 1 {
		t.Fatalf("graveyard holds %d objects, want 1", n)
	}
	it.Close()
	if st := tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()); mdlGraveyard(tbl.(*table[*testObject]), st) != 0 || st.logged() {
		t.Fatalf("after the only feed closed: graveyard holds %d deletes, change log kept: %v",
			mdlGraveyard(tbl.(*table[*testObject]), st), st.logged())
	}
	// No feeds: deletes are not kept at all.
	txn = db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn, &testObject{ID: 4}); err != nil {
		t.Fatal(err)
	}
	rtxn = mustCommit(t, txn)
	if n := mdlGraveyard(tbl.(*table[*testObject]), tbl.(*table[*testObject]).stateIn(rtxn.committed())); n != 0 {
		t.Fatalf("graveyard holds %d objects without feeds", n)
	}
}

func TestInitializers(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	if ok, ch := tbl.Initialized(db.ReadTxn()); !ok {
		t.Fatal("table without initializers is not initialized")
	} else {
		<-ch
	}
	txn := db.WriteTxn(tbl)
	done1 := tbl.RegisterInitializer(txn, "one")
	done2 := tbl.RegisterInitializer(txn, "two")
	rtxn := mustCommit(t, txn)
	ok, ch := tbl.Initialized(rtxn)
	if ok {
		t.Fatal("initialized with pending initializers")
	}
	if got := tbl.PendingInitializers(rtxn); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("pending = %v", got)
	}
	txn = db.WriteTxn(tbl)
	done1(txn)
	rtxn = mustCommit(t, txn)
	if ok, _ := tbl.Initialized(rtxn); ok {
		t.Fatal("initialized with one pending initializer")
	}
	txn = db.WriteTxn(tbl)
	done2(txn)
	done2(txn)
	txn.Abort()
	select {
	case <-ch:
		t.Fatal("initialized channel closed by an aborted transaction")
	default:
	}
	txn = db.WriteTxn(tbl)
	done2(txn)
	rtxn = mustCommit(t, txn)
	<-ch
	if ok, _ := tbl.Initialized(rtxn); !ok {
		t.Fatal("not initialized after every initializer is done")
	}
}

// TestChangesLog checks that the change log exists only while the table
// has feeds, and that a feed given a snapshot from before its
// registration committed waits for that commit instead of missing objects.
func TestChangesLog(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	state := func(txn ReadTxn) *tableState[*testObject] {
		return tbl.(*table[*testObject]).stateIn(txn.committed())
	}
	txn := db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	mustInsert(t, tbl, txn, &testObject{ID: 2})
	before := mustCommit(t, txn)
	if state(before).logged() {
		t.Fatal("change log kept without feeds")
	}

	txn = db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	if err != nil {
		t.Fatal(err)
	}
	got, watch := drain(t, it, before)
	if len(got) != 0 {
		t.Fatalf("Next on a snapshot older than the feed returned %v", got)
	}
	after := mustCommit(t, txn)
	select {
	case <-watch:
	default:
		t.Fatal("registration commit did not close the old snapshot's watch")
	}
	if !state(after).logged() {
		t.Fatal("no change log after the registration")
	}
	if got, _ := drain(t, it, after); len(got) != 2 {
		t.Fatalf("first Next = %v, want both objects", got)
	}

	// The feed closes, dropping the log.
	it.Close()
	txn = db.WriteTxn(tbl)
	mustInsert(t, tbl, txn, &testObject{ID: 3})
	now := mustCommit(t, txn)
	if state(now).logged() {
		t.Fatal("change log kept after the last feed closed")
	}
}

// TestChangesRegisteredWithoutWrites checks that a feed registered in a
// transaction that writes nothing (the table already has a revision index)
// is usable once that transaction commits.
func TestChangesRegisteredWithoutWrites(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	txn := db.WriteTxn(tbl)
	first, _ := tbl.Changes(txn)
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	mustCommit(t, txn)
	defer first.Close()

	txn = db.WriteTxn(tbl)
	second, _ := tbl.Changes(txn) // nothing to write: the index exists
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	got, watch := drain(t, second, db.ReadTxn())
	if len(got) != 1 {
		t.Fatalf("first Next of the second feed = %v, want the object", got)
	}
	select {
	case <-watch:
		t.Fatal("drained feed returned a closed channel")
	default:
	}
}

// TestChangesRestore: objects restored into a table with a feed keep their
// own revisions, below those of the deletes before them in the log; the
// feed still delivers each object once, in its newest state.
func TestChangesRestore(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	txn := db.WriteTxn(tbl)
	it, err := tbl.Changes(txn)
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tbl, txn, &testObject{ID: 1})
	mustInsert(t, tbl, txn, &testObject{ID: 2})
	rtxn := mustCommit(t, txn)
	view := map[uint64]*testObject{}
	mdlFeedView(t, view, it, rtxn)

	txn = db.WriteTxn(tbl)
	must(t, tbl.DeleteAll(txn))
	restored := []*testObject{{ID: 1, Value: 7}, {ID: 3, Value: 8}}
	if err := Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
		for i, o := range restored {
			if !yield(o, Revision(i+1)) {
				return
			}
		}
	}, 0); err != nil {
		t.Fatal(err)
	}
	rtxn = mustCommit(t, txn)
	got, _ := mdlFeedView(t, view, it, rtxn)
	if want := []changeRec{{2, 0, true}, {1, 7, false}, {3, 8, false}}; !slices.Equal(got, want) {
		t.Errorf("Next after DeleteAll and Restore = %v, want %v", got, want)
	}
	if ids := mdlTableIDs(tbl, rtxn); len(view) != len(ids) || view[1] == nil || view[3] == nil {
		t.Errorf("the feed describes %v, the table has %v", view, ids)
	}
	it.Close()
}

// TestRevSet: revisions inside the bitmap's span and outside it (below,
// above, or a span too wide for a bitmap) are all kept.
func TestRevSet(t *testing.T) {
	for _, span := range []Revision{100, maxRevSetSpan + 1} {
		s := revSet{base: 1000, span: span}
		in := []Revision{1000, 1063, 1064, 1099, 5, 999, 1000 + span, 1 << 62}
		for _, r := range in {
			s.add(r)
		}
		for _, r := range in {
			if !s.has(r) {
				t.Errorf("span %d: %d added, not in the set", span, r)
			}
		}
		for _, r := range []Revision{1001, 1065, 998, 1000 + span + 1, 0} {
			if s.has(r) {
				t.Errorf("span %d: %d in the set, never added", span, r)
			}
		}
	}
}

// logSegments returns the segments of tbl's change log that its writer
// keeps, oldest first (no transaction may be open on tbl).
func logSegments(tbl RWTable[*testObject]) []*logSegment[*testObject] {
	var out []*logSegment[*testObject]
	for s := tbl.(*table[*testObject]).txn.log.head; s != nil; s = s.next {
		out = append(out, s)
	}
	return out
}

// insertAndRead commits n inserts to tbl, one per transaction (IDs from
// 0 to 9, values from v on), and has each feed of readers read after each.
func insertAndRead(t *testing.T, db *DB, tbl RWTable[*testObject], n, v int, readers ...ChangeIterator[*testObject]) {
	t.Helper()
	for i := range n {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(i % 10), Value: v + i}); err != nil {
			t.Fatal(err)
		}
		rtxn, err := txn.Commit()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range readers {
			got, _ := drain(t, r, rtxn)
			if len(got) != 1 || got[0].value != v+i {
				t.Fatalf("feed read %+v after inserting value %d", got, v+i)
			}
		}
	}
}

// TestChangesLogReused: the change log reuses the segments every feed has
// read, so a log that its feeds follow stays a few segments long; a feed
// that has not read them keeps them as they are, until it is closed.
func TestChangesLogReused(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	txn := db.WriteTxn(tbl)
	reader, _ := tbl.Changes(txn)
	idle, _ := tbl.Changes(txn) // never reads
	mustCommit(t, txn)
	drain(t, reader, db.ReadTxn())

	insertAndRead(t, db, tbl, 4*changeLogSegment, 0, reader)
	segs := logSegments(tbl)
	if len(segs) < 4 {
		t.Fatalf("the log has %d segments with a feed that read none of %d changes", len(segs), 4*changeLogSegment)
	}
	first := segs[0]
	if first.seq != 0 || first.entries[0].obj.Value != 0 {
		t.Fatalf("the first segment changed while a feed that has not read it is open")
	}

	idle.Close()
	seen := map[*logSegment[*testObject]]bool{}
	for range 20 {
		insertAndRead(t, db, tbl, changeLogSegment/2, 1000, reader)
		// At most: two that wait for reuse (trimLog), the one the
		// feed read to, and the one written to.
		segs := logSegments(tbl)
		if len(segs) > 4 {
			t.Fatalf("the log has %d segments with its only feed reading every change", len(segs))
		}
		for _, s := range segs {
			seen[s] = true
		}
	}
	if !seen[first] {
		t.Fatal("the first segment was not reused after every feed read past it")
	}
	if len(seen) > 8 {
		t.Fatalf("the log went through %d segments for 10 segments of changes: not reused", len(seen))
	}
	reader.Close()
}

// TestChangesLateSequence: a sequence delivers only while it is the
// feed's latest: consumed after a later Next, it yields nothing, and the
// later sequence delivers its changes; ranged again after stopping early,
// it goes on where it stopped. A sequence holds nothing of the log: one
// dropped unconsumed lets the log be reused at once.
func TestChangesLateSequence(t *testing.T) {
	db, tbl, it := changesFeed(t)
	drain(t, it, db.ReadTxn())

	insertAndRead(t, db, tbl, 10, 0)
	late, _ := it.Next(db.ReadTxn())
	insertAndRead(t, db, tbl, 3*changeLogSegment, 100)
	if got, _ := drain(t, it, db.ReadTxn()); len(got) != 10 {
		t.Fatalf("Next after an unconsumed one delivered %d changes, want the 10 objects", len(got))
	}
	for c := range late {
		t.Fatalf("a sequence consumed after a later Next delivered %+v", c)
	}

	// Ranged again, a sequence goes on.
	insertAndRead(t, db, tbl, 10, 0)
	seq, _ := it.Next(db.ReadTxn())
	var values []int
	for range 3 {
		for c := range seq {
			values = append(values, c.Object.Value)
			if len(values)%4 == 0 {
				break
			}
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(values, want) {
		t.Fatalf("a sequence ranged three times, stopping every 4 changes, delivered %v, want %v", values, want)
	}
	for c := range seq {
		t.Fatalf("a sequence delivered in full delivered %+v again", c)
	}

	// A sequence dropped unconsumed pins nothing: the feed's next Next
	// delivers its changes, and the log is reused.
	insertAndRead(t, db, tbl, 10, 0)
	dropped, _ := it.Next(db.ReadTxn())
	runtime.KeepAlive(dropped)
	insertAndRead(t, db, tbl, 3*changeLogSegment, 100)
	got, _ := drain(t, it, db.ReadTxn())
	if len(got) != 10 {
		t.Fatalf("after a dropped sequence, Next delivered %d changes, want the 10 objects", len(got))
	}
	insertAndRead(t, db, tbl, changeLogSegment, 100, it)
	if n := len(logSegments(tbl)); n > 4 {
		t.Fatalf("the log has %d segments after its only feed read everything", n)
	}
	it.Close()
}

// awaitLogReused collects garbage, writes and has reader read, until the
// log is down to the segments of a log that its feeds follow (at most 4,
// as in TestChangesLogReused), and fails if it is not soon. The collector
// runs cleanups on a goroutine of its own, some time after it found their
// objects unreachable.
func awaitLogReused(t *testing.T, db *DB, tbl RWTable[*testObject], reader ChangeIterator[*testObject], after string) {
	t.Helper()
	for i := 0; ; i++ {
		runtime.GC()
		insertAndRead(t, db, tbl, changeLogSegment, 100, reader)
		n := len(logSegments(tbl))
		if n <= 4 {
			return
		}
		if i == 500 {
			t.Fatalf("the log has %d segments after %s", n, after)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestChangesSealedSegments: a batch that spans many segments, some of
// which a feed skips by their summary (logSegment.supersedesNoneAfter)
// and some not: an
// update, a delete, a delete and insert again of one key, and a DeleteAll,
// each in a full segment in the middle of the batch, superseding changes
// segments before. Each object comes once, in its newest state.
func TestChangesSealedSegments(t *testing.T) {
	db, tbl, it := changesFeed(t)
	drain(t, it, db.ReadTxn())
	defer it.Close()

	write := func(f func(WriteTxn)) {
		t.Helper()
		txn := db.WriteTxn(tbl)
		f(txn)
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(from, to uint64, v int) {
		write(func(txn WriteTxn) {
			for id := from; id < to; id++ {
				mustInsert(t, tbl, txn, &testObject{ID: id, Value: v})
			}
		})
	}
	// check reads a batch and compares it with the table: every ID in ids
	// once, deleted if the table does not have it, else as the table has
	// it. It returns how many of the batch's segments it skips reading, as
	// their summaries say they supersede nothing after the feed's place.
	check := func(ids []uint64) int {
		t.Helper()
		rtxn := db.ReadTxn()
		from, fromRev := it.(*changeIterator[*testObject]).pos, it.(*changeIterator[*testObject]).rev
		st := tbl.(*table[*testObject]).stateIn(rtxn.committed())
		skipped := 0
		for sp := range from.spans(st.log) {
			if sp.seg != st.log.seg && sp.seg.supersedesNoneAfter(fromRev) {
				skipped++
			}
		}
		got, _ := drain(t, it, rtxn)
		seen := map[uint64]bool{}
		for _, c := range got {
			if seen[c.id] {
				t.Fatalf("object %d delivered twice", c.id)
			}
			seen[c.id] = true
			o, _, found := tbl.Get(rtxn, idIndex.Query(c.id))
			switch {
			case c.deleted && found:
				t.Fatalf("object %d delivered deleted, but the table has it", c.id)
			case !c.deleted && !found:
				t.Fatalf("object %d delivered, but the table does not have it", c.id)
			case found && o.Value != c.value:
				t.Fatalf("object %d delivered with value %d, the table has %d", c.id, c.value, o.Value)
			}
		}
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("object %d not delivered", id)
			}
		}
		if len(got) != len(ids) {
			t.Fatalf("%d changes delivered, want %d", len(got), len(ids))
		}
		return skipped
	}
	ids := func(ranges ...[2]uint64) []uint64 {
		var out []uint64
		for _, r := range ranges {
			for id := r[0]; id < r[1]; id++ {
				out = append(out, id)
			}
		}
		return out
	}

	// Each step fills more than a segment, so every supersession lies in
	// a full segment with more after it.
	insert(0, 200, 1)
	write(func(txn WriteTxn) { mustInsert(t, tbl, txn, &testObject{ID: 5, Value: 2}) })
	insert(200, 400, 1)
	write(func(txn WriteTxn) { _, _, err := tbl.Delete(txn, &testObject{ID: 10}); must(t, err) })
	insert(400, 600, 1)
	write(func(txn WriteTxn) { _, _, err := tbl.Delete(txn, &testObject{ID: 20}); must(t, err) })
	insert(600, 800, 1)
	write(func(txn WriteTxn) { mustInsert(t, tbl, txn, &testObject{ID: 20, Value: 3}) })
	insert(800, 1000, 1)
	if skipped := check(ids([2]uint64{0, 1000})); skipped == 0 {
		t.Fatal("no segment of a batch of inserts was skipped")
	}

	insert(0, 500, 4)
	write(func(txn WriteTxn) { must(t, tbl.DeleteAll(txn)) })
	insert(0, 100, 5)
	insert(2000, 2200, 5)
	check(ids([2]uint64{0, 1000}, [2]uint64{2000, 2200}))

	// Inserts only: every segment but the last is skipped.
	insert(3000, 3500, 6)
	if skipped := check(ids([2]uint64{3000, 3500})); skipped < 500/changeLogSegment-1 {
		t.Fatalf("%d segments of a batch of %d inserts skipped", skipped, 500)
	}

	// Restored objects, at revisions below the feed's, then one of them
	// updated: the update names the restored revision as the one it
	// supersedes, below the batch. The batch starts a segment, so that
	// only the summaries tell that Restore logged it.
	write(func(txn WriteTxn) { must(t, tbl.DeleteAll(txn)) })
	// One change per transaction until the log is at a segment's start
	// and the table empty.
	touched := [2]uint64{7000, 7000}
	for pad := false; ; pad = !pad {
		if tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()).log.seq%changeLogSegment == 0 && !pad {
			break
		}
		if pad {
			write(func(txn WriteTxn) { _, _, err := tbl.Delete(txn, &testObject{ID: 7000}); must(t, err) })
		} else {
			insert(7000, 7001, 10)
			touched[1] = 7001
		}
	}
	check(ids([2]uint64{0, 100}, [2]uint64{2000, 2200}, [2]uint64{3000, 3500}, touched))
	write(func(txn WriteTxn) {
		err := Restore(txn, tbl, func(yield func(*testObject, Revision) bool) {
			for id := uint64(5000); id < 5200; id++ {
				if !yield(&testObject{ID: id, Value: 7}, Revision(id-4999)) {
					return
				}
			}
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
	})
	write(func(txn WriteTxn) { mustInsert(t, tbl, txn, &testObject{ID: 5000, Value: 8}) })
	insert(6000, 6200, 9)
	check(ids([2]uint64{5000, 5200}, [2]uint64{6000, 6200}))
}

// TestChangesDroppedSequenceOfClosedFeed: a feed that is closed, or
// dropped, with a sequence it never consumed, lets go of the log (at
// once, or once collected), while another feed goes on reading.
func TestChangesDroppedSequenceOfClosedFeed(t *testing.T) {
	for _, closeFeed := range []bool{true, false} {
		db := New()
		tbl := newTestTable(t, db, "test")
		txn := db.WriteTxn(tbl)
		reader, _ := tbl.Changes(txn)
		other, _ := tbl.Changes(txn)
		mustCommit(t, txn)
		drain(t, reader, db.ReadTxn())
		drain(t, other, db.ReadTxn())

		insertAndRead(t, db, tbl, 10, 0, reader)
		dropped, _ := other.Next(db.ReadTxn()) // never consumed
		runtime.KeepAlive(dropped)
		dropped = nil
		if closeFeed {
			other.Close()
		}
		other = nil
		insertAndRead(t, db, tbl, 3*changeLogSegment, 100, reader)
		awaitLogReused(t, db, tbl, reader, fmt.Sprintf("the feed (closed: %v) and its unconsumed sequence were dropped", closeFeed))
		reader.Close()
	}
}
