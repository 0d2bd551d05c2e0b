package strata

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// queuedJournal is a Journal whose records queue (QueuedBatch): Enqueue
// appends a record to pending, and the test makes the pending records
// durable, or fails them, in order (sync). Durable records are applied to
// objects and revision.
type queuedJournal struct {
	mu       sync.Mutex
	cond     sync.Cond
	pending  []*queuedRecord
	objects  map[string]int // primary key -> Value, of the durable records
	revision Revision
	// maxPending is the most records that were pending at once.
	maxPending int
	// settled are the records whose commits the database settled, in
	// the order it settled them.
	settled []*queuedRecord
}

func newQueuedJournal() *queuedJournal {
	j := &queuedJournal{objects: map[string]int{}}
	j.cond.L = &j.mu
	return j
}

type queuedRecord struct {
	memBatch
	queue *queuedJournal
	done  chan error
	// settled is what the database's Settled said of the record's commit
	// (SettledBatch), set once.
	settled error
	settles int
}

// Settled records how the database settled the record's commit.
func (r *queuedRecord) Settled(err error) {
	r.queue.mu.Lock()
	defer r.queue.mu.Unlock()
	r.settled = err
	r.settles++
	r.queue.settled = append(r.queue.settled, r)
}

func (j *queuedJournal) Begin() JournalBatch {
	return &queuedRecord{memBatch: memBatch{upserts: map[string]int{}}, queue: j, done: make(chan error, 1)}
}

func (r *queuedRecord) Commit() error { return errors.New("Commit of a record that queues") }
func (r *queuedRecord) Queues() bool  { return true }
func (r *queuedRecord) Wait() error   { return <-r.done }

func (r *queuedRecord) Enqueue() error { return r.queue.enqueue(r) }

func (j *queuedJournal) enqueue(r *queuedRecord) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, r)
	j.maxPending = max(j.maxPending, len(j.pending))
	j.cond.Broadcast()
	return nil
}

// waitPending waits until n records are pending.
func (j *queuedJournal) waitPending(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for len(j.pending) < n {
		j.cond.Wait()
	}
}

// sync completes the first n pending records (all with n < 0), in order:
// applied, if err is nil, and their Wait returns err.
func (j *queuedJournal) sync(n int, err error) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n < 0 || n > len(j.pending) {
		n = len(j.pending)
	}
	for _, r := range j.pending[:n] {
		if err == nil {
			b := &r.memBatch
			if b.truncate {
				clear(j.objects)
			}
			for _, k := range b.deletes {
				delete(j.objects, k)
			}
			maps.Copy(j.objects, b.upserts)
			j.revision = b.revision
		}
		r.done <- err
	}
	j.pending = j.pending[n:]
	return n
}

func (j *queuedJournal) durable() (map[string]int, Revision) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return maps.Clone(j.objects), j.revision
}

// queuedTableJournal is memTableJournal for queuedJournal's records.
type queuedTableJournal struct{}

func (queuedTableJournal) batch(b JournalBatch) JournalBatch { return &b.(*queuedRecord).memBatch }

func (tj queuedTableJournal) Upsert(b JournalBatch, pk []byte, obj *testObject, rev Revision) error {
	return memTableJournal{}.Upsert(tj.batch(b), pk, obj, rev)
}

func (tj queuedTableJournal) Delete(b JournalBatch, pk []byte) error {
	return memTableJournal{}.Delete(tj.batch(b), pk)
}

func (tj queuedTableJournal) DeleteAll(b JournalBatch) error {
	return memTableJournal{}.DeleteAll(tj.batch(b))
}

func (tj queuedTableJournal) SetRevision(b JournalBatch, rev Revision) error {
	return memTableJournal{}.SetRevision(tj.batch(b), rev)
}

// commitResult is what an asynchronous Commit returned.
type commitResult struct {
	root ReadTxn
	err  error
}

func commitAsync(txn WriteTxn) <-chan commitResult {
	ch := make(chan commitResult, 1)
	go func() {
		root, err := txn.Commit()
		ch <- commitResult{root, err}
	}()
	return ch
}

// durableTable returns a database with the table "durable" attached to a
// new queuedJournal, holding objects, committed and durable.
func durableTable(t *testing.T, objs ...*testObject) (*DB, RWTable[*testObject], *queuedJournal) {
	t.Helper()
	db := New()
	tbl := newTestTable(t, db, "durable")
	j := newQueuedJournal()
	txn := db.WriteTxn(tbl)
	must(t, SetJournal(txn, tbl, j, queuedTableJournal{}))
	mustInsert(t, tbl, txn, objs...)
	r := commitAsync(txn)
	if len(objs) > 0 {
		j.waitPending(1)
		j.sync(1, nil)
	}
	must(t, (<-r).err)
	return db, tbl, j
}

func valueOf(t *testing.T, txn ReadTxn, tbl Table[*testObject], id uint64) int {
	t.Helper()
	o, _, found := tbl.Get(txn, idIndex.Query(id))
	if !found {
		return -1
	}
	return o.Value
}

// TestEarlyLockReleaseChain: a commit of a durable table unlocks the table
// once its record is enqueued; the next writer builds on it, reading it;
// neither is visible to readers, nor closes a watch channel, until its
// record is durable; they are published, and return, in order.
func TestEarlyLockReleaseChain(t *testing.T) {
	db, tbl, j := durableTable(t, &testObject{ID: 0})
	before := db.ReadTxn()
	_, _, watch0, _ := tbl.GetWatch(before, idIndex.Query(0))

	txn1 := db.WriteTxn(tbl)
	_, _, ch1, err := tbl.InsertWatch(txn1, &testObject{ID: 0, Value: 1})
	must(t, err)
	r1 := commitAsync(txn1)
	j.waitPending(1)

	// The table is unlocked although txn1 is not durable.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txn2, err := db.WriteTxnContext(ctx, tbl)
	if err != nil {
		t.Fatalf("the table stayed locked: %v", err)
	}
	if v := valueOf(t, txn2, tbl, 0); v != 1 {
		t.Fatalf("the next writer reads %d, want txn1's 1", v)
	}
	mustInsert(t, tbl, txn2, &testObject{ID: 0, Value: 2}, &testObject{ID: 1, Value: 2})
	r2 := commitAsync(txn2)
	j.waitPending(2)

	now := db.ReadTxn()
	if v := valueOf(t, now, tbl, 0); v != 0 || tbl.Revision(now) != tbl.Revision(before) {
		t.Fatalf("a reader sees %d at revision %d before any record is durable", v, tbl.Revision(now))
	}
	if isClosedChan(watch0) || isClosedChan(ch1) {
		t.Fatal("a watch channel closed before its commit was published")
	}

	j.sync(1, nil)
	res1 := <-r1
	must(t, res1.err)
	if v := valueOf(t, res1.root, tbl, 0); v != 1 || valueOf(t, res1.root, tbl, 1) != -1 {
		t.Fatalf("txn1's snapshot holds %d", v)
	}
	if !isClosedChan(watch0) {
		t.Fatal("txn1 returned, but the watch channel of the object it replaced is open")
	}
	if v := valueOf(t, db.ReadTxn(), tbl, 0); v != 1 {
		t.Fatalf("after txn1 a reader sees %d", v)
	}
	select {
	case res := <-r2:
		t.Fatalf("txn2 returned (%v) before its record was durable", res.err)
	default:
	}
	if isClosedChan(ch1) {
		t.Fatal("txn2's watch channel closed before txn2 was published")
	}

	j.sync(1, nil)
	res2 := <-r2
	must(t, res2.err)
	j.mu.Lock()
	for i, r := range j.settled {
		if r.settles != 1 || r.settled != nil {
			t.Errorf("published record %d: settled %d times, with %v", i, r.settles, r.settled)
		}
	}
	if len(j.settled) < 2 {
		t.Errorf("%d records settled, want txn1's and txn2's", len(j.settled))
	}
	j.mu.Unlock()
	if v := valueOf(t, db.ReadTxn(), tbl, 0); v != 2 {
		t.Fatalf("after txn2 a reader sees %d", v)
	}
	if !isClosedChan(ch1) {
		t.Fatal("txn2 was published, but the channel of the object it replaced is open")
	}
	objects, rev := j.durable()
	if want := tableContents(db.ReadTxn(), tbl); !maps.Equal(objects, want) || rev != tbl.Revision(db.ReadTxn()) {
		t.Fatalf("durable %v at %d, table %v at %d", objects, rev, want, tbl.Revision(db.ReadTxn()))
	}
}

// TestEarlyLockReleaseFailedChain: when a record fails, the commits built
// on it fail too, whether their own records are durable (txn2) or they
// have none (txn3, which read the durable table and wrote an in-memory
// one): nothing of them is published, feeds deliver none of it, the
// channels readers watch stay open, the failed writes' own channels
// close; the next writer begins from the published state.
func TestEarlyLockReleaseFailedChain(t *testing.T) {
	db, tbl, j := durableTable(t, &testObject{ID: 0}, &testObject{ID: 9})
	plain := newTestTable(t, db, "plain")
	txn := db.WriteTxn(tbl)
	feed, err := tbl.Changes(txn)
	must(t, err)
	r := commitAsync(txn)
	must(t, (<-r).err) // no record: nothing journaled changed
	changes, _ := feed.Next(db.ReadTxn())
	for range changes {
	}
	before := db.ReadTxn()
	baseRev := tbl.Revision(before)
	_, _, watch0, _ := tbl.GetWatch(before, idIndex.Query(0))

	txn1 := db.WriteTxn(tbl)
	_, _, ch1, err := tbl.InsertWatch(txn1, &testObject{ID: 0, Value: 1})
	must(t, err)
	mustInsert(t, tbl, txn1, &testObject{ID: 5, Value: 1})
	r1 := commitAsync(txn1)
	j.waitPending(1)

	txn2 := db.WriteTxn(tbl)
	if _, _, err := tbl.Delete(txn2, &testObject{ID: 9}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, tbl, txn2, &testObject{ID: 6, Value: 2})
	r2 := commitAsync(txn2)
	j.waitPending(2)

	// txn3 reads txn2's state and writes an in-memory table; it commits
	// once the queue has settled the failure.
	txn3 := db.WriteTxn(tbl, plain)
	mustInsert(t, plain, txn3, &testObject{ID: 5, Value: valueOf(t, txn3, tbl, 5)})

	errSync := errors.New("sync failed")
	j.mu.Lock()
	rec1, rec2 := j.pending[0], j.pending[1]
	j.mu.Unlock()
	j.sync(1, errSync)
	j.sync(1, nil) // the journal makes txn2 durable; the database must not publish it
	if res := <-r1; !errors.Is(res.err, errSync) {
		t.Fatalf("txn1: %v", res.err)
	}
	if res := <-r2; !errors.Is(res.err, ErrEarlierCommitFailed) || !errors.Is(res.err, errSync) {
		t.Fatalf("txn2: %v", res.err)
	}
	// SettledBatch: the journal learns that txn2's durable record was
	// not published, and why.
	j.mu.Lock()
	order := slices.Index(j.settled, rec1) < slices.Index(j.settled, rec2)
	if !order || rec1.settles != 1 || !errors.Is(rec1.settled, errSync) ||
		rec2.settles != 1 || !errors.Is(rec2.settled, ErrEarlierCommitFailed) {
		t.Fatalf("txn1's record settled %d times with %v, txn2's %d times with %v, in order: %v",
			rec1.settles, rec1.settled, rec2.settles, rec2.settled, order)
	}
	j.mu.Unlock()
	if _, err := txn3.Commit(); !errors.Is(err, ErrEarlierCommitFailed) || !errors.Is(err, errSync) {
		t.Fatalf("txn3: %v", err)
	}

	now := db.ReadTxn()
	if got, want := tableContents(now, tbl), tableContents(before, tbl); !maps.Equal(got, want) || tbl.Revision(now) != baseRev {
		t.Fatalf("after the failed chain the table holds %v at %d, want %v at %d", got, tbl.Revision(now), want, baseRev)
	}
	if plain.NumObjects(now) != 0 {
		t.Fatal("txn3's write of the in-memory table was published")
	}
	if isClosedChan(watch0) {
		t.Fatal("the failed chain closed a reader's watch channel")
	}
	if !isClosedChan(ch1) {
		t.Fatal("the channel of txn1's never-stored object is open")
	}
	changes, _ = feed.Next(now)
	for c := range changes {
		t.Fatalf("the feed delivered %+v of the failed chain", c)
	}

	// The next writer begins from the published state.
	txn4 := db.WriteTxn(tbl)
	if v := valueOf(t, txn4, tbl, 5); v != -1 {
		t.Fatalf("the next writer sees the failed chain's object 5 (%d)", v)
	}
	mustInsert(t, tbl, txn4, &testObject{ID: 0, Value: 4})
	r4 := commitAsync(txn4)
	j.waitPending(1)
	j.sync(1, nil)
	res4 := <-r4
	must(t, res4.err)
	if rev := tbl.Revision(res4.root); rev != baseRev+1 {
		t.Fatalf("revision %d after the failed chain and one commit, want %d", rev, baseRev+1)
	}
	var got []Change[*testObject]
	changes, _ = feed.Next(res4.root)
	for c := range changes {
		got = append(got, c)
	}
	if len(got) != 1 || got[0].Object.ID != 0 || got[0].Object.Value != 4 || got[0].Revision != baseRev+1 {
		t.Fatalf("the feed delivered %+v, want object 0 at revision %d", got, baseRev+1)
	}
	feed.Close()
}

// TestEarlyLockReleaseConcurrent: eight writers commit to one durable
// table while the journal syncs what is pending now and then. Records
// queue up behind each other (the table is not held through a sync); a
// reader never sees a revision that is not durable; a feed delivers
// every change in revision order; in the end the table and the journal
// agree.
func TestEarlyLockReleaseConcurrent(t *testing.T) {
	db, tbl, j := durableTable(t)
	txn := db.WriteTxn(tbl)
	feed, err := tbl.Changes(txn)
	must(t, err)
	must(t, (<-commitAsync(txn)).err)

	const writers = 8
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { // the journal's syncs
		for {
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(100 * time.Microsecond)
			j.sync(-1, nil)
		}
	})
	var violations atomic.Int64
	bg.Go(func() { // a reader
		for {
			select {
			case <-stop:
				return
			default:
			}
			rev := tbl.Revision(db.ReadTxn())
			if _, durable := j.durable(); rev > durable {
				violations.Add(1)
				t.Errorf("a reader sees revision %d; durable: %d", rev, durable)
				return
			}
		}
	})
	seen := map[uint64]int{} // the feed's view: ID -> Value
	feedDone := make(chan struct{})
	bg.Go(func() { // the feed's consumer
		defer close(feedDone)
		last := Revision(0)
		for {
			changes, watch := feed.Next(db.ReadTxn())
			for c, rev := range changes {
				if rev <= last {
					t.Errorf("the feed delivered revision %d after %d", rev, last)
				}
				last = rev
				if c.Deleted {
					delete(seen, c.Object.ID)
				} else {
					seen[c.Object.ID] = c.Object.Value
				}
			}
			select {
			case <-watch:
			case <-stop:
				return
			}
		}
	})

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for k := range rounds {
				txn := db.WriteTxn(tbl)
				id := uint64(w*100 + k%10)
				mustInsert(t, tbl, txn, &testObject{ID: id, Value: k})
				if k%7 == 3 {
					if _, _, err := tbl.Delete(txn, &testObject{ID: uint64(w*100 + (k+5)%10)}); err != nil {
						t.Error(err)
					}
				}
				if _, err := txn.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()

	final := db.ReadTxn()
	objects, rev := j.durable()
	if want := tableContents(final, tbl); !maps.Equal(objects, want) || rev != tbl.Revision(final) {
		t.Fatalf("durable %d objects at %d, table %d at %d", len(objects), rev, len(want), tbl.Revision(final))
	}
	changes, _ := feed.Next(final)
	for c := range changes {
		if c.Deleted {
			delete(seen, c.Object.ID)
		} else {
			seen[c.Object.ID] = c.Object.Value
		}
	}
	for o := range tbl.All(final) {
		if v, ok := seen[o.ID]; !ok || v != o.Value {
			t.Fatalf("the feed holds %d for object %d (%v), the table %d", v, o.ID, ok, o.Value)
		}
	}
	if len(seen) != tbl.NumObjects(final) {
		t.Fatalf("the feed holds %d objects, the table %d", len(seen), tbl.NumObjects(final))
	}
	feed.Close()
	j.mu.Lock()
	maxPending := j.maxPending
	j.mu.Unlock()
	if maxPending < 2 {
		t.Fatalf("at most %d records pending at once: the table was held through the syncs", maxPending)
	}
	t.Logf("%d commits; up to %d records pending at once", writers*rounds, maxPending)
}

// TestQueuedCommitsLeaveNoChannelInPool: a commit of a durable table that
// another committer settles waits on a channel; that channel must not go
// back to the pool of transactions with it, where a commit in another
// testing/synctest bubble, or outside any, would draw it: receiving from
// a bubble's channel outside it is fatal. (The pool kept it, made in the
// first bubble that needed one: a program's tests running durable tables
// in synctest and then outside crashed.)
func TestQueuedCommitsLeaveNoChannelInPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, tbl, j := durableTable(t, &testObject{ID: 0})
		for i := range 20 {
			var results []<-chan commitResult
			for k := range 3 {
				txn := db.WriteTxn(tbl)
				mustInsert(t, tbl, txn, &testObject{ID: uint64(k), Value: i})
				results = append(results, commitAsync(txn))
				j.waitPending(k + 1)
			}
			synctest.Wait() // every committer waits for its record
			j.sync(3, nil)
			for _, r := range results {
				must(t, (<-r).err)
			}
		}
	})
	var drawn []*txnCore
	for range 1000 {
		w := txnCorePool.Get().(*txnCore)
		drawn = append(drawn, w)
		if w.done != nil {
			t.Errorf("a pooled transaction keeps a done channel")
			break
		}
	}
	for _, w := range drawn {
		txnCorePool.Put(w)
	}
}
