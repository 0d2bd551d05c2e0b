package strata

// Change feeds in the model-based test (model_test.go): observers of each
// table, registered at random moments in write transactions that locked
// the table, call Next at random moments with the latest ReadTxn, an older
// snapshot or a write transaction, consume what it returns at once, in
// part, later, or never, and are closed, or dropped without Close (the
// garbage collector then releases them), at random moments, also in the
// loop body of a range over one of their sequences, where they may range
// over a sequence again (consume, reenter). Every
// sequence must deliver exactly what the model says, and the graveyard
// (the deletes in the change log some live observer has not read) must be
// what the model says.
//
// The model of a feed (view semantics: what a feed has delivered in full
// always describes a state of the table). The table's history
// (mdlTable.hist) lists every change; a state has a place in it (logLen).
//   - A feed is where it delivered up to: a change log (chain), a place in
//     the history (pos) and the revision of the state there (rev). It
//     starts at the registering transaction's when Changes was called
//     (after that transaction's earlier writes to the table). If the
//     registering transaction aborts (or its Commit fails), the feed is
//     closed: Next returns nothing and a nil channel, and it holds nothing.
//   - A table keeps its change log only while it has feeds: started by
//     the registering transaction, dropped by the first write after the
//     last feed closed (or at once by the release of the last feed).
//   - While the registering transaction is open, Next returns nothing,
//     and a channel that closes when that transaction ends. After that,
//     Next on a snapshot without the change log, or older than the feed
//     (its revision below rev, or in the same log before pos), returns
//     nothing and a closed channel (the snapshot's primary index channel:
//     the table changed since).
//   - Otherwise Next on a snapshot S returns a batch, unless the feed
//     started and S is at pos (nothing new). The first batch is every
//     object of S and the objects deleted since pos that S does not have,
//     by revision; a later one is the newest change of each object in the
//     history from pos to S, in history order (which is revision order
//     but for restored objects). Delivering a batch in full moves the feed
//     to S. Its watch channel is open while the table's primary index is
//     S's, and closed once it changed.
//   - Only the sequence of the latest Next (or Close) delivers. A sequence
//     stopped early leaves the rest of its batch: the next Next returns
//     that rest, with a closed channel, whatever snapshot it is given.
//   - A change counts as delivered once yielded: a batch whose last change
//     was yielded is delivered in full, even while the range's loop body
//     runs. Only one range delivers at a time: a range whose loop body
//     calls Next or Close, or ranges over the feed's latest sequence
//     (which goes on after the change yielded last), yields nothing more.
//
// The model of the graveyard: deletes are logged while the table has live
// feeds (decided on the transaction's first write to the table, or when a
// feed registers in it); the graveyard is the logged deletes above the
// lowest revision the live feeds delivered up to (none without feeds).
// When the last feed is released, the change log is dropped: at once, in a
// transaction of its own, if the table is not locked, and otherwise at the
// end (commit or abort) of the transaction that held the lock.
//
// The model is single-threaded but for the cleanups of dropped feeds, which
// it waits for. Two races between goroutines are shown by the TestBug_
// tests at the end of this file.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// mdlFeedPercent is the share of steps that are change feed operations.
	mdlFeedPercent = 8
	// mdlMaxFeeds is the most live feeds a table has at once.
	mdlMaxFeeds = 4
)

// mdlFeed is an observer: a change feed and what the model knows of it.
type mdlFeed[Obj comparable, PK cmp.Ordered] struct {
	id int
	it ChangeIterator[Obj]
	// started: a first batch was delivered in full. chain, pos and rev
	// are where the feed is (see the file comment).
	started bool
	chain   int
	pos     int
	rev     Revision
	// start: the registration's revision; base is the committed revision
	// the registering transaction began from (for statistics).
	start, base Revision
	// seen is the feed's hold on the graveyard: start, then the revision
	// of each batch delivered in full.
	seen Revision
	// inTxn: registered in the open transaction. regCommit is the
	// committed state (mdlState.pub) the registration's commit left
	// (MaxInt until then).
	inTxn     bool
	regCommit int
	// dead: closed by the abort of the registering transaction.
	dead bool
	// view is the table as the changes delivered so far describe it: it
	// must equal the state of each batch delivered in full.
	view map[PK]mdlEnt[Obj]
	// gen numbers the calls of Next and Close: only the sequence of the
	// latest delivers.
	gen int
	// batch is the batch being delivered, once a sequence began it, until
	// it is delivered in full.
	batch *mdlBatch[Obj, PK]
	// withCreated: opened WithCreated, the feed sets Change.Created.
	withCreated bool
}

// mdlBatch is what a feed delivers for one state: the changes it has not
// delivered yet, and where the feed moves once it delivered them all.
type mdlBatch[Obj comparable, PK cmp.Ordered] struct {
	rest  []mdlChange[Obj]
	first bool
	began bool // a change was delivered (a first batch clears the view then)
	chain int
	pos   int
	rev   Revision
	objs  map[PK]mdlEnt[Obj] // the state's objects: the view once delivered
}

// mdlFeedSeq is a sequence Next returned, and what the model expects of
// it.
type mdlFeedSeq[Obj comparable, PK cmp.Ordered] struct {
	seq  iter.Seq2[Change[Obj], Revision]
	desc string
	gen  int
	// batch is the batch the sequence begins if it is the feed's latest
	// and the feed has none under way; nil if it has nothing to deliver.
	batch *mdlBatch[Obj, PK]
}

// mdlChange is a change as the feed delivers it.
type mdlChange[Obj any] struct {
	obj     Obj
	rev     Revision
	deleted bool
	created bool // for feeds opened WithCreated
}

func (mt *mdlTable[Obj, PK]) fmtChanges(cs []mdlChange[Obj]) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.deleted {
			b.WriteString("-")
		}
		if c.created {
			b.WriteString("+")
		}
		fmt.Fprintf(&b, "%s@%d", mt.fmtObj(c.obj), c.rev)
	}
	b.WriteByte(']')
	return b.String()
}

func (mt *mdlTable[Obj, PK]) impl() *table[Obj] { return mt.tbl.(*table[Obj]) }

// checkFeedCount checks that the table counts as many open feeds as the
// model.
func (mt *mdlTable[Obj, PK]) checkFeedCount(m *mdlRun) {
	if n := mt.impl().meta.feeds.live(); n != len(mt.feeds) {
		m.fatalf("%s: %d open change feeds, want %d", mt.tbl.Name(), n, len(mt.feeds))
	}
}

func (mt *mdlTable[Obj, PK]) feedOp(m *mdlRun, i int) {
	r := m.r
	switch n := r.IntN(100); {
	case n < 14 && len(mt.feeds) < mdlMaxFeeds:
		mt.feedRegister(m, i)
	case n < 17:
		mt.feedErrors(m)
	case n < 27 && len(mt.feeds) > 0:
		mt.feedClose(m, mt.feeds[r.IntN(len(mt.feeds))])
	case n < 29 && len(mt.feeds) > 0:
		mt.feedDrop(m, r.IntN(len(mt.feeds)))
	case n < 35 && len(mt.dead) > 0:
		f := mt.dead[r.IntN(len(mt.dead))]
		if r.IntN(3) == 0 {
			mt.feedClose(m, f)
		} else {
			mt.feedNext(m, i, f, 0)
		}
	case len(mt.feeds) > 0:
		mt.feedNext(m, i, mt.feeds[r.IntN(len(mt.feeds))], 0)
	default:
		mt.feedRegister(m, i)
	}
}

// feedRegister registers a feed in the open transaction, or in one of its
// own (i is the table's position), which it may commit at once.
func (mt *mdlTable[Obj, PK]) feedRegister(m *mdlRun, i int) {
	name := mt.tbl.Name()
	own := false
	if m.txn == nil {
		if m.r.IntN(2) == 0 {
			m.log(name + ": FeedNop")
			return
		}
		m.beginTxn(i)
		own = true
	}
	if !mt.locked {
		if _, err := mt.tbl.Changes(m.txn); !errors.Is(err, ErrTableNotLockedForWriting) {
			m.fatalf("%s: Changes on a table not locked: err = %v", name, err)
		}
		m.log(name + ": Changes(not locked)")
		return
	}
	var opts []FeedOption
	withCreated := m.r.IntN(2) == 0
	if withCreated {
		opts = append(opts, WithCreated())
	}
	it, err := mt.tbl.Changes(m.txn, opts...)
	if err != nil {
		m.fatalf("%s: Changes: %v", name, err)
	}
	mt.touch()
	mt.observed = true
	if !mt.view().indexed {
		mt.setIndexed(true)
	}
	mt.feedSeq++
	rev := mt.view().rev
	f := &mdlFeed[Obj, PK]{
		id: mt.feedSeq, it: it,
		chain: mt.view().chain, pos: len(mt.hist), rev: rev,
		start: rev, base: mt.committed.rev, seen: rev,
		inTxn: true, regCommit: math.MaxInt,
		view: map[PK]mdlEnt[Obj]{}, withCreated: withCreated,
	}
	mt.feeds = append(mt.feeds, f)
	mt.checkFeedCount(m)
	if rev > mt.committed.rev {
		m.stats["Changes.afterWrites"]++
	}
	m.log(fmt.Sprintf("%s: Changes -> feed %d at %d", name, f.id, f.start))
	if own && m.r.IntN(2) == 0 {
		// A transaction that only registers a feed.
		m.commit()
	}
}

// feedErrors registers feeds with transactions that cannot take them.
func (mt *mdlTable[Obj, PK]) feedErrors(m *mdlRun) {
	name := mt.tbl.Name()
	if _, err := mt.tbl.Changes(nil); !errors.Is(err, ErrTransactionClosed) {
		m.fatalf("%s: Changes(nil): err = %v", name, err)
	}
	for _, s := range m.snaps {
		if w, ok := s.txn.(WriteTxn); ok {
			if _, err := mt.tbl.Changes(w); !errors.Is(err, ErrTransactionClosed) {
				m.fatalf("%s: Changes on %s: err = %v", name, s.desc, err)
			}
			break
		}
	}
	mt.checkFeedCount(m)
	m.log(name + ": Changes(closed)")
}

// feedNext calls Next on a random snapshot, checks its channel, and
// consumes the sequence at once, in part, later or never. depth is the
// number of ranges over f's sequences in whose loop bodies it runs
// (consume).
func (mt *mdlTable[Obj, PK]) feedNext(m *mdlRun, i int, f *mdlFeed[Obj, PK], depth int) {
	r := m.r
	name := mt.tbl.Name()
	var txn ReadTxn
	var st *mdlState[Obj, PK]
	var desc string
	switch k := r.IntN(20); {
	case k < 5 && len(m.snaps) > 0:
		s := m.snaps[r.IntN(len(m.snaps))]
		txn, st, desc = s.txn, s.state(m, i).(*mdlState[Obj, PK]), s.desc
	case k < 8 && m.txn != nil:
		// Next with a write transaction reads the snapshot it began from.
		txn, st, desc = m.txn, m.txnSnap.state(m, i).(*mdlState[Obj, PK]), "open WriteTxn("+m.txnDesc+")"
	default:
		txn, st, desc = m.db.ReadTxn(), mt.committed, "db.ReadTxn"
	}
	R := st.rev
	fdesc := fmt.Sprintf("%s: feed %d (start %d, at %d/%d/%d, started %v)", name, f.id, f.start, f.chain, f.pos, f.rev, f.started)
	fdesc += fmt.Sprintf(": Next(%s at %d/%d/%d)", desc, st.chain, st.logLen, R)

	f.gen++
	s := &mdlFeedSeq[Obj, PK]{desc: fdesc, gen: f.gen}
	// What the watch channel is: nil (a closed feed), closed already, the
	// snapshot's primary index channel (closed once the index changed), or
	// one that closes when the registering transaction ends.
	regWatch, closedNow, nilWatch := false, false, false
	sameLog := st.indexed && st.chain == f.chain
	switch {
	case f.dead:
		nilWatch = true
		m.stats["FeedNext.dead"]++
	case f.batch != nil:
		closedNow = true
		m.stats["FeedNext.rest"]++
	case f.inTxn:
		// Nothing until the registration commits.
		regWatch = true
		m.stats["FeedNext.registering"]++
	case !st.indexed || R < f.rev || (sameLog && st.logLen < f.pos):
		// A snapshot from before the feed's registration committed.
		if !st.indexed && st.pub >= f.regCommit {
			m.fatalf("%s: model: snapshot from after the registration committed has no change log", fdesc)
		}
		closedNow = true
		m.stats["FeedNext.older"]++
	case f.started && (!sameLog || st.logLen == f.pos):
		m.stats["FeedNext.notNewer"]++
	default:
		s.batch = mt.feedBatch(m, f, st, sameLog)
	}

	seq, watch := f.it.Next(txn)
	s.seq = seq
	switch {
	case nilWatch:
		if watch != nil {
			m.fatalf("%s: a closed feed's Next returned a channel", fdesc)
		}
	case watch == nil:
		m.fatalf("%s: nil watch channel", fdesc)
	case closedNow:
		if !mdlClosed(watch) {
			m.fatalf("%s: the watch channel is open (a snapshot older than the feed, whose registration ended, or the rest of a batch)", fdesc)
		}
	case regWatch:
		// Closed when the registering transaction ends.
		m.addWatch(&mdlWatch{
			desc:    fdesc + " watch (registering)",
			ch:      watch,
			exact:   true,
			changed: func() bool { return !f.inTxn },
			owner:   f,
		})
	default:
		// Never a busy loop: the channel is open while nothing changed.
		m.addWatch(&mdlWatch{
			desc:    fdesc + " watch",
			ch:      watch,
			exact:   true,
			changed: func() bool { return mt.committed.revRoot != st.revRoot },
			owner:   f,
		})
	}

	limit := -1 // all
	if r.IntN(4) == 0 {
		limit = 1 + r.IntN(8)
	}
	switch k := r.IntN(10); {
	case k < 6:
		if err := mt.consume(m, i, f, s, limit, depth); err != nil {
			m.fatalf("%s: %v", fdesc, err)
		}
	case k < 9:
		// Consumed a few steps later, when the feed may have gone on.
		m.deferred = append(m.deferred, mdlDeferred{func() error { return mt.consume(m, i, f, s, limit, 0) }, fdesc, 1 + r.IntN(10)})
		m.stats["FeedNext.deferred"]++
	default:
		m.stats["FeedNext.unconsumed"]++ // never consumed
	}
	m.log(fmt.Sprintf("%s: FeedNext(%d, %s) -> batch %v, consumed %d", name, f.id, desc, s.batch != nil, limit))
}

// feedBatch returns the batch a feed delivers for the state st (see the
// file comment).
func (mt *mdlTable[Obj, PK]) feedBatch(m *mdlRun, f *mdlFeed[Obj, PK], st *mdlState[Obj, PK], sameLog bool) *mdlBatch[Obj, PK] {
	b := &mdlBatch[Obj, PK]{first: !f.started, chain: st.chain, pos: st.logLen, rev: st.rev, objs: st.objs}
	if !sameLog {
		// The log the table dropped before the feed's began: the state is
		// the registration's, and the feed stays where it is.
		b.chain, b.pos, b.rev = f.chain, f.pos, f.rev
	}
	hist := mt.hist[min(f.pos, st.logLen):st.logLen]
	if !sameLog {
		hist = nil
	}
	if !b.first {
		newest := map[PK]int{}
		created := map[PK]bool{} // the object's first change of the batch made it
		for i, e := range hist {
			newest[e.pk] = i
			if _, seen := created[e.pk]; !seen {
				created[e.pk] = e.created
			}
		}
		for i, e := range hist {
			if newest[e.pk] == i {
				b.rest = append(b.rest, mdlChange[Obj]{e.obj, e.rev, e.deleted, f.withCreated && created[e.pk]})
			}
		}
		m.stats["FeedNext.batch"]++
		return b
	}
	m.stats["FeedNext.first"]++
	for _, e := range mt.all(st) {
		b.rest = append(b.rest, mdlChange[Obj]{e.obj, e.rev, false, f.withCreated})
	}
	lastDel := map[PK]int{}
	for i, e := range hist {
		if _, in := st.objs[e.pk]; e.deleted && !in {
			lastDel[e.pk] = i
		}
	}
	for i, e := range hist {
		if j, ok := lastDel[e.pk]; ok && j == i {
			b.rest = append(b.rest, mdlChange[Obj]{e.obj, e.rev, true, f.withCreated})
		}
	}
	slices.SortStableFunc(b.rest, func(a, b mdlChange[Obj]) int { return cmp.Compare(a.rev, b.rev) })
	return b
}

// consume ranges over the sequence s of feed f, stopping after limit
// changes (all if limit is negative), and checks each change it delivers
// as it comes: if s is the feed's latest, the next of the batch under
// way, or else of the batch s begins; nothing if s is not the latest. A
// change counts as delivered once yielded: the model's feed moves when
// the last change of its batch is yielded.
//
// At times the loop body, after a random change, does what ends the
// range's turn (reenter): Next, a range over s again, or Close; the range
// must yield nothing more after it, and goes on until it stops. depth is
// the number of ranges of f's sequences in whose loop bodies it runs; i is
// the table's position.
func (mt *mdlTable[Obj, PK]) consume(m *mdlRun, i int, f *mdlFeed[Obj, PK], s *mdlFeedSeq[Obj, PK], limit, depth int) error {
	var b *mdlBatch[Obj, PK]
	switch {
	case s.gen != f.gen:
		m.stats["FeedConsume.stale"]++
	case f.batch != nil:
		b = f.batch
		m.stats["FeedConsume.rest"]++
	case s.batch != nil:
		b, f.batch, s.batch = s.batch, s.batch, nil
	}
	var rest []mdlChange[Obj] // what is to come, for messages
	reenter := 0              // the change after which the loop body reenters (0: none)
	if b != nil && len(b.rest) == 0 {
		// A batch without changes is delivered in full by any range.
		if err := mt.batchDelivered(f, b); err != nil {
			return err
		}
		b = nil
	}
	if b != nil {
		rest = b.rest
		if limit >= 0 && limit < len(b.rest) {
			m.stats["FeedConsume.part"]++
		}
		n := len(b.rest)
		if limit >= 0 {
			n = min(n, limit)
		}
		if n > 0 && depth < mdlMaxReentry && f.it != nil && !m.releasing && m.r.IntN(4) == 0 {
			reenter = 1 + m.r.IntN(n)
		}
	}
	var got []mdlChange[Obj]
	ended := "" // what the loop body did that ended the range's turn
	var err error
	for c, rev := range s.seq {
		ch := mdlChange[Obj]{c.Object, c.Revision, c.Deleted, c.Created}
		switch {
		case ended != "":
			err = fmt.Errorf("delivered %s, then %s after %s in its loop body, want nothing more", mt.fmtChanges(got), mt.fmtChanges([]mdlChange[Obj]{ch}), ended)
		case rev != c.Revision:
			err = fmt.Errorf("yielded revision %d with a change at %d", rev, c.Revision)
		case b == nil || len(b.rest) == 0:
			err = fmt.Errorf("delivered %s, then %s, want nothing more", mt.fmtChanges(got), mt.fmtChanges([]mdlChange[Obj]{ch}))
		case ch != b.rest[0]:
			err = fmt.Errorf("\n got  %s\n want %s (of %s)", mt.fmtChanges(append(got, ch)), mt.fmtChanges(append(got, b.rest[0])), mt.fmtChanges(rest))
		}
		if err != nil {
			break
		}
		got = append(got, ch)
		if err = mt.delivered(f, b, ch); err != nil {
			break
		}
		if len(got) == reenter {
			if ended, err = mt.reenter(m, i, f, s, depth); err != nil {
				err = fmt.Errorf("delivered %s, then %s in its loop body: %w", mt.fmtChanges(got), ended, err)
				break
			}
			continue // to check that it yields nothing more
		}
		if len(got) == limit {
			break
		}
	}
	if err == nil && ended == "" && len(got) != limit && b != nil && len(b.rest) > 0 {
		// The range ended by itself, before the batch did.
		want := b.rest
		if limit >= 0 {
			want = want[:min(len(want), limit-len(got))]
		}
		err = fmt.Errorf("\n got  %s\n want %s (of %s)", mt.fmtChanges(got), mt.fmtChanges(append(got, want...)), mt.fmtChanges(rest))
	}
	return err
}

// mdlMaxReentry bounds the nesting of ranges over a feed's sequences in
// the loop bodies of others (consume).
const mdlMaxReentry = 3

// delivered models the delivery of ch, the next change of the batch b of
// feed f: the feed's view takes it, and the feed moves if it was the last.
func (mt *mdlTable[Obj, PK]) delivered(f *mdlFeed[Obj, PK], b *mdlBatch[Obj, PK], ch mdlChange[Obj]) error {
	if b.first && !b.began {
		clear(f.view)
	}
	b.began = true
	if ch.deleted {
		delete(f.view, mt.pkOf(ch.obj))
	} else {
		f.view[mt.pkOf(ch.obj)] = mdlEnt[Obj]{ch.obj, ch.rev}
	}
	b.rest = b.rest[1:]
	if len(b.rest) > 0 {
		return nil
	}
	return mt.batchDelivered(f, b)
}

// batchDelivered models the delivery in full of the batch b of feed f:
// the feed moves to its end.
func (mt *mdlTable[Obj, PK]) batchDelivered(f *mdlFeed[Obj, PK], b *mdlBatch[Obj, PK]) error {
	if b.first && !b.began {
		clear(f.view)
	}
	if !maps.Equal(f.view, b.objs) {
		return fmt.Errorf("model: the feed's view is not the state it delivered up to")
	}
	f.batch = nil
	f.started, f.chain, f.pos, f.rev = true, b.chain, b.pos, b.rev
	f.seen = max(f.seen, b.rev)
	return nil
}

// reenter does, in the loop body of a range over the sequence s of feed
// f, what ends the range's turn: Next (whose sequence it consumes at once,
// in part, later or never, as feedNext does), a range over s again (to the
// end or in part), or Close. It returns what it did.
func (mt *mdlTable[Obj, PK]) reenter(m *mdlRun, i int, f *mdlFeed[Obj, PK], s *mdlFeedSeq[Obj, PK], depth int) (string, error) {
	m.log(fmt.Sprintf("%s: FeedReenter(%d, depth %d)", mt.tbl.Name(), f.id, depth))
	switch k := m.r.IntN(10); {
	case k < 5:
		m.stats["FeedReenter.Next"]++
		mt.feedNext(m, i, f, depth+1)
		return "a Next", nil
	case k < 8:
		m.stats["FeedReenter.range"]++
		limit := -1
		if m.r.IntN(2) == 0 {
			limit = 1 + m.r.IntN(8)
		}
		return "a range over its sequence", mt.consume(m, i, f, s, limit, depth+1)
	default:
		m.stats["FeedReenter.Close"]++
		mt.feedClose(m, f)
		return "Close", nil
	}
}

// feedClose closes a feed (live, or closed by an abort).
func (mt *mdlTable[Obj, PK]) feedClose(m *mdlRun, f *mdlFeed[Obj, PK]) {
	name := mt.tbl.Name()
	if f.dead {
		mt.dead = slices.DeleteFunc(mt.dead, func(g *mdlFeed[Obj, PK]) bool { return g == f })
	} else {
		mt.feeds = slices.DeleteFunc(mt.feeds, func(g *mdlFeed[Obj, PK]) bool { return g == f })
	}
	f.it.Close()
	f.gen++
	f.batch = nil
	if m.r.IntN(4) == 0 {
		f.it.Close() // again: does nothing
	}
	seq, w := f.it.Next(m.db.ReadTxn())
	f.gen++
	if w != nil {
		m.fatalf("%s: Next on a closed feed returned a channel", name)
	}
	for c := range seq {
		m.fatalf("%s: Next on a closed feed returned %s", name, mt.fmtChanges([]mdlChange[Obj]{{c.Object, c.Revision, c.Deleted, c.Created}}))
	}
	mt.checkFeedCount(m)
	m.dropWatches(f)
	if f.dead {
		m.stats["FeedClose.dead"]++
	}
	m.log(fmt.Sprintf("%s: FeedClose(%d)", name, f.id))
	mt.feedReleased(m, fmt.Sprintf("Close of feed %d", f.id))
}

// feedReleased models dropUnobservedLog, which Close and the cleanup of a
// dropped feed call: if no feed is left, the change log is dropped at once
// in a transaction of its own if the table is not locked, else when the
// transaction holding the lock ends.
func (mt *mdlTable[Obj, PK]) feedReleased(m *mdlRun, where string) {
	if len(mt.feeds) > 0 {
		if !mt.locked { // else a feed's registration may be pending
			mt.checkGraveyard(m, where)
		}
		return
	}
	if mt.locked {
		mt.dropLogAtUnlock = true
		m.stats["DropLog.atUnlock"]++
		if mt.touched && mt.observed && mt.lastFeedGone < 0 {
			mt.lastFeedGone = len(mt.hist)
			if m.r.IntN(2) == 0 {
				mt.longTxnAfterLastFeed(m)
			}
		}
		return
	}
	mt.dropLogTxn()
	mt.checkGraveyard(m, where)
	m.checkWatchesCommitted()
}

// longTxnAfterLastFeed plays the trial's case 1 in the open transaction,
// which began the table's write state while it had feeds, the last of
// which was just released: more than two log segments of writes, then an
// abort, or a commit that the journal fails.
func (mt *mdlTable[Obj, PK]) longTxnAfterLastFeed(m *mdlRun) {
	op := mt.bulk(m, m.txn, 2*changeLogSegment+1+m.r.IntN(2*changeLogSegment))
	m.log(mt.tbl.Name() + ": " + op + " after the last feed")
	if mt.journaled && m.r.IntN(2) == 0 {
		m.commitJournal(true)
	} else {
		m.abort()
	}
}

// dropLogTxn models dropUnobservedLog's transaction on the table, which
// the open transaction (if any) does not lock: it begins (dropping the
// change log if the table has no feeds) and commits.
func (mt *mdlTable[Obj, PK]) dropLogTxn() {
	mt.touch()
	mt.publish()
	mt.touched, mt.observed = false, false
}

func (m *mdlRun) dropWatches(owner any) {
	m.watches = slices.DeleteFunc(m.watches, func(w *mdlWatch) bool { return w.owner == owner })
}

func (mt *mdlTable[Obj, PK]) dropDeadWatches(m *mdlRun) {
	for _, f := range mt.dead {
		m.dropWatches(f)
	}
}

// feedDrop forgets a feed without closing it: the garbage collector
// releases its hold, and its cleanup drops the change log if it was the
// last.
func (mt *mdlTable[Obj, PK]) feedDrop(m *mdlRun, k int) {
	f := mt.feeds[k]
	m.dropWatches(f)
	f.it = nil
	mt.feeds = slices.Delete(mt.feeds, k, k+1)
	mt.waitReleased(m)
	if mt.locked {
		m.stats["FeedDrop.locked"]++
	}
	m.log(fmt.Sprintf("%s: FeedDrop(%d)", mt.tbl.Name(), f.id))
	mt.feedReleased(m, fmt.Sprintf("cleanup of dropped feed %d", f.id))
}

// waitReleased runs the garbage collector until the table counts only the
// model's feeds as open, and the cleanups that released the others are
// done (they drop the change log, in a transaction of their own, after
// releasing the last hold).
func (mt *mdlTable[Obj, PK]) waitReleased(m *mdlRun) {
	// A sequence Next returned may keep its feed reachable: consume the
	// kept ones now (without closing feeds in their loop bodies: the model
	// would expect the table to drop its log before the dropped feed is
	// released).
	m.releasing = true
	defer func() { m.releasing = false }()
	for _, d := range m.deferred {
		if err := d.run(); err != nil {
			m.fatalf("kept iterator %s: %v", d.desc, err)
		}
	}
	clear(m.deferred)
	m.deferred = m.deferred[:0]
	fr := &mt.impl().meta.feeds
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; fr.live() != len(mt.feeds) || mdlFeedCleanupRunning(); i++ {
		if time.Now().After(deadline) {
			m.fatalf("%s: %d open change feeds 10s after dropping, want %d: a dropped feed was not released",
				mt.tbl.Name(), fr.live(), len(mt.feeds))
		}
		if i%100 == 0 {
			runtime.GC()
		}
		time.Sleep(20 * time.Microsecond)
	}
	mt.checkFeedCount(m)
}

var mdlStackBuf []byte

// mdlFeedCleanupRunning reports whether a goroutine is running the cleanup
// of a change feed (the function literal in Table.Changes).
func mdlFeedCleanupRunning() bool {
	if mdlStackBuf == nil {
		mdlStackBuf = make([]byte, 1<<16)
	}
	for {
		n := runtime.Stack(mdlStackBuf, true)
		if n < len(mdlStackBuf) {
			return bytes.Contains(mdlStackBuf[:n], []byte(").Changes.func"))
		}
		mdlStackBuf = make([]byte, 2*len(mdlStackBuf))
	}
}

// watermark is the lowest hold of the live feeds.
func (mt *mdlTable[Obj, PK]) watermark() Revision {
	w := Revision(math.MaxUint64)
	for _, f := range mt.feeds {
		w = min(w, f.seen)
	}
	return w
}

// feedsCommit models the commit of the open transaction on the table: it
// publishes and ends the registrations. released follows.
func (mt *mdlTable[Obj, PK]) feedsCommit(m *mdlRun) {
	mt.ended = "Commit"
	if mt.touched {
		mt.ended = "Commit (table written)"
	}
	mt.publish()
	for _, f := range mt.feeds {
		if f.inTxn {
			f.inTxn, f.regCommit = false, mt.committed.pub
		}
	}
	mt.touched, mt.observed = false, false
}

// feedsAborted models the abort of the open transaction on the table: the
// feeds registered in it are closed. released follows.
func (mt *mdlTable[Obj, PK]) feedsAborted(m *mdlRun) {
	mt.ended = "Abort"
	mt.gyPending = nil
	mt.touched, mt.observed = false, false
	mt.feeds = slices.DeleteFunc(mt.feeds, func(f *mdlFeed[Obj, PK]) bool {
		if f.inTxn {
			f.inTxn, f.dead = false, true
			mt.dead = append(mt.dead, f)
			m.stats["FeedAborted"]++
		}
		return f.dead
	})
	mt.checkFeedCount(m)
}

// released models the unlocking of the table at the end of the open
// transaction, after it published (the snapshot Commit returns is from
// before): the change log is dropped, in a transaction of its own, if the
// last feed was released while the table was locked.
func (mt *mdlTable[Obj, PK]) released(m *mdlRun) {
	if !mt.wasLocked {
		return
	}
	mt.wasLocked = false
	if mt.dropLogAtUnlock {
		mt.dropLogAtUnlock = false
		mt.dropLogTxn()
		m.stats["DropLog.after"+strings.Fields(mt.ended)[0]]++
	}
	mt.checkGraveyard(m, mt.ended)
}

// checkGraveyard compares the graveyard of the latest snapshot (the logged
// deletes some live feed has not read) with the model's, and checks that
// the change log exists exactly while the table has feeds.
func (mt *mdlTable[Obj, PK]) checkGraveyard(m *mdlRun, where string) {
	name := mt.tbl.Name()
	st := mt.impl().stateIn(m.db.ReadTxn().committed())
	got := mdlGraveyard(mt.impl(), st)
	want := 0
	if low := mt.watermark(); len(mt.feeds) > 0 {
		for _, rev := range mt.gy {
			if rev > low {
				want++
			}
		}
	}
	if got != want {
		m.fatalf("%s: %s: graveyard holds %d deletes, want %d (feeds hold %v)", where, name, got, want, mt.feedSeen())
	}
	if st.logged() != mt.committed.indexed || (len(mt.feeds) > 0 && !st.logged()) {
		m.fatalf("%s: %s: change log kept: %v, want %v (%d feeds)", where, name,
			st.logged(), mt.committed.indexed, len(mt.feeds))
	}
}

// mdlGraveyard returns the size of the graveyard of a table state: the
// deletes in its change log some live feed has not read.
func mdlGraveyard[Obj any](t *table[Obj], st *tableState[Obj]) int {
	_, _, n := t.meta.feeds.stats(st.revision, st.log.deletes())
	return n
}

func (mt *mdlTable[Obj, PK]) feedSeen() []Revision {
	var s []Revision
	for _, f := range mt.feeds {
		s = append(s, f.seen)
	}
	return s
}

// endFeeds closes or drops every feed, one at a time, with no transaction
// open: then the table keeps no change log.
func (mt *mdlTable[Obj, PK]) endFeeds(m *mdlRun) {
	for len(mt.dead) > 0 && m.r.IntN(3) != 0 {
		mt.feedClose(m, mt.dead[0])
	}
	for len(mt.feeds) > 0 {
		k := m.r.IntN(len(mt.feeds))
		if m.r.IntN(3) != 0 {
			mt.feedClose(m, mt.feeds[k])
		} else {
			mt.feedDrop(m, k)
		}
	}
	mt.checkGraveyard(m, "all feeds ended")
	st := mt.impl().stateIn(m.db.ReadTxn().committed())
	if st.logged() || st.log != (logPos[Obj]{}) {
		m.fatalf("%s: all feeds ended: change log kept", mt.tbl.Name())
	}
}

func (m *mdlRun) endFeeds() {
	for _, mt := range m.tables {
		mt.endFeeds(m)
	}
	// A transaction that locks every table and writes nothing changes
	// nothing.
	metas := make([]TableMeta, len(m.tables))
	for i, mt := range m.tables {
		metas[i] = mt.meta()
		mt.begin(true)
	}
	m.txn = m.db.WriteTxn(metas[0], metas[1:]...)
	m.txnSnap = mdlSnap{m.txn, m.states(false), "open WriteTxn (all tables)"}
	m.txnDesc = "all tables"
	m.log("WriteTxn(" + m.txnDesc + ")")
	if m.r.IntN(2) == 0 {
		m.abort()
	} else {
		m.commit()
	}
}

// ---- Regression tests of cases the model found ---------------------------

// mdlFeedView applies the changes of one Next to view.
func mdlFeedView(t *testing.T, view map[uint64]*testObject, it ChangeIterator[*testObject], txn ReadTxn) ([]changeRec, <-chan struct{}) {
	t.Helper()
	seq, watch := it.Next(txn)
	var got []changeRec
	for c := range seq {
		got = append(got, changeRec{c.Object.ID, c.Object.Value, c.Deleted})
		if c.Deleted {
			delete(view, c.Object.ID)
		} else {
			view[c.Object.ID] = c.Object
		}
	}
	return got, watch
}

func mdlTableIDs(tbl Table[*testObject], txn ReadTxn) map[uint64]bool {
	ids := map[uint64]bool{}
	for o := range tbl.All(txn) {
		ids[o.ID] = true
	}
	return ids
}

// TestChangesFirstNextOnOlderSnapshot: the first Next of a feed given a
// snapshot from before the feed's registration (here one that has a
// revision index, kept by another feed) returns nothing and does not move
// the feed, so that it never misses the deletes between that snapshot and
// the registration. Its watch channel is, while the registering
// transaction is open, closed when that ends; after that, closed already.
// Regression test: the feed once started from the old snapshot, skipping
// those deletes (the observer kept an object the table no longer had).
func TestChangesFirstNextOnOlderSnapshot(t *testing.T) {
	for _, ended := range []bool{true, false} {
		db := New()
		tbl := newTestTable(t, db, "test")
		txn := db.WriteTxn(tbl)
		other, _ := tbl.Changes(txn) // another feed: the table keeps its revision index
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		mustInsert(t, tbl, txn, &testObject{ID: 2})
		old := mustCommit(t, txn)

		txn = db.WriteTxn(tbl)
		if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)

		txn = db.WriteTxn(tbl)
		it, err := tbl.Changes(txn)
		if err != nil {
			t.Fatal(err)
		}
		if ended {
			mustCommit(t, txn)
		}
		view := map[uint64]*testObject{}
		first, watch := mdlFeedView(t, view, it, old) // a snapshot from before the registration
		if len(first) != 0 {
			t.Errorf("registration ended: %v: Next(older snapshot) = %v, want nothing", ended, first)
		}
		if closed := mdlClosed(watch); closed != ended {
			t.Errorf("registration ended: %v: Next(older snapshot): watch closed: %v", ended, closed)
		}
		if !ended {
			mustCommit(t, txn)
			if !mdlClosed(watch) {
				t.Errorf("Next(older snapshot) during the registration: watch open after its commit")
			}
		}
		later, _ := mdlFeedView(t, view, it, db.ReadTxn())
		want := slices.Sorted(maps.Keys(mdlTableIDs(tbl, db.ReadTxn())))
		if got := slices.Sorted(maps.Keys(view)); !slices.Equal(got, want) {
			t.Errorf("registration ended: %v: after Next(older snapshot) = %v and Next(latest) = %v the feed describes objects %v; the table has %v",
				ended, first, later, got, want)
		}
		it.Close()
		other.Close()
	}
}

// TestChangesDeletesBeforeRegistration: the first Next returns the deletes
// since the feed was created, which the registering transaction's deletes
// before Changes are not, whether or not the table already had a feed (and
// so kept them in its graveyard). Regression test: the feed once started at
// the revision the transaction began from, and delivered them when the table
// had another feed.
func TestChangesDeletesBeforeRegistration(t *testing.T) {
	for _, withOther := range []bool{false, true} {
		db := New()
		tbl := newTestTable(t, db, "test")
		txn := db.WriteTxn(tbl)
		var other ChangeIterator[*testObject]
		if withOther {
			other, _ = tbl.Changes(txn)
		}
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		mustInsert(t, tbl, txn, &testObject{ID: 2})
		mustInsert(t, tbl, txn, &testObject{ID: 3})
		mustCommit(t, txn)

		txn = db.WriteTxn(tbl)
		if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
			t.Fatal(err)
		}
		it, err := tbl.Changes(txn) // registered after the delete
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tbl.Delete(txn, &testObject{ID: 3}); err != nil { // and after it: delivered
			t.Fatal(err)
		}
		rtxn := mustCommit(t, txn)
		got, _ := mdlFeedView(t, map[uint64]*testObject{}, it, rtxn)
		it.Close()
		if want := []changeRec{{2, 0, false}, {3, 0, true}}; !slices.Equal(got, want) {
			t.Errorf("table with another feed: %v: first Next = %v, want %v", withOther, got, want)
		}
		if other != nil {
			other.Close()
		}
	}
}

// TestChangesGraveyardCollectedAfterLastClose: once the last feed is
// closed, the change log (and the deleted objects in it) is gone without a
// later write to the table: at once if the table is not locked, else when
// the transaction holding the lock ends, even if it only locked the table
// (committed or aborted). A feed dropped without Close is released by the
// garbage collector, which then drops the log as well. Regression test:
// the graveyard was once kept until a later transaction wrote the table.
func TestChangesGraveyardCollectedAfterLastClose(t *testing.T) {
	for _, end := range []string{"unlocked", "Commit", "Abort", "dropped", "dropped/Commit"} {
		db := New()
		tbl := newTestTable(t, db, "test")
		txn := db.WriteTxn(tbl)
		it, _ := tbl.Changes(txn)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		mustCommit(t, txn)
		txn = db.WriteTxn(tbl)
		if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)
		state := func() *tableState[*testObject] {
			return tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed())
		}
		if n := mdlGraveyard(tbl.(*table[*testObject]), state()); n != 1 || !state().logged() {
			t.Fatalf("%s: before the close: graveyard holds %d deletes, want 1; change log kept: %v", end, n, state().logged())
		}

		var lockTxn WriteTxn
		if end != "unlocked" && end != "dropped" {
			lockTxn = db.WriteTxn(tbl) // locks the table, writes nothing
		}
		if strings.HasPrefix(end, "dropped") {
			it = nil
			deadline := time.Now().Add(10 * time.Second)
			for tbl.(*table[*testObject]).meta.feeds.live() != 0 || mdlFeedCleanupRunning() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the dropped feed was not released", end)
				}
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
		} else {
			it.Close()
		}
		switch {
		case lockTxn == nil:
		case end == "Abort":
			lockTxn.Abort()
		default:
			mustCommit(t, lockTxn)
		}
		if st := state(); st.logged() {
			t.Errorf("%s: after the last feed closed: change log kept", end)
		}
	}
}

// ---- Bugs: races between goroutines ---------------------------------------

// mdlRace runs a and b at once, on two goroutines started together (b after
// a busy loop of varying length, to sweep the interleavings), after setup on
// the test's goroutine, until bad reports the outcome of a bad interleaving
// (then it returns the number of rounds) or the time is up (then 0).
func mdlRace(budget time.Duration, setup, a, b func(), bad func() bool) int {
	var ready, done atomic.Int32
	fin := make(chan struct{}, 1)
	startA, startB := make(chan int), make(chan int)
	defer close(startA)
	defer close(startB)
	worker := func(start chan int, f func()) {
		for delay := range start {
			ready.Add(1)
			for ready.Load() < 2 {
			}
			for i := range delay {
				runtime.KeepAlive(i)
			}
			f()
			if done.Add(1) == 2 {
				fin <- struct{}{}
			}
		}
	}
	go worker(startA, a)
	go worker(startB, b)
	deadline := time.Now().Add(budget)
	for round := 1; time.Now().Before(deadline); round++ {
		setup()
		ready.Store(0)
		done.Store(0)
		startA <- 0
		startB <- round % 300
		<-fin
		if bad() {
			return round
		}
	}
	return 0
}

// TestChangesCollectWhenCloseRacesUnlock: a transaction that only locks
// the table ends while the last feed is closed on another goroutine; the
// change log must be dropped whichever comes first. Regression test:
// dropUnobservedLog once set its flag after a failed TryLock, and a release
// reading it in between lost the collection.
func TestChangesCollectWhenCloseRacesUnlock(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	var it ChangeIterator[*testObject]
	setup := func() {
		txn := db.WriteTxn(tbl)
		it, _ = tbl.Changes(txn)
		mustInsert(t, tbl, txn, &testObject{ID: 1})
		mustCommit(t, txn)
		txn = db.WriteTxn(tbl)
		if _, _, err := tbl.Delete(txn, &testObject{ID: 1}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)
	}
	lockOnly := func() { // on a worker goroutine: t.Error, not t.Fatal
		if _, err := db.WriteTxn(tbl).Commit(); err != nil {
			t.Error(err)
		}
	}
	bad := func() bool {
		return tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed()).logged()
	}
	if round := mdlRace(3*time.Second, setup, lockOnly, func() { it.Close() }, bad); round > 0 {
		st := tbl.(*table[*testObject]).stateIn(db.ReadTxn().committed())
		t.Errorf("round %d: the last feed closed while a transaction ended: change log kept: %v, drop-at-unlock flag: %v",
			round, st.logged(), tbl.(*table[*testObject]).meta.feeds.dropLogAtUnlock.Load())
	}
}

// TestChangesNextWatchAtRegistrationEnd: Next on a snapshot older than the
// feed's registration runs on another goroutine while the registering
// transaction commits; the channel it returns must close. Regression test:
// Next once read the registration's pending flag and took the channel in
// two steps, and a registration ending in between left it a channel nobody
// closed.
func TestChangesNextWatchAtRegistrationEnd(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "test")
	var (
		it    ChangeIterator[*testObject]
		txn   WriteTxn
		old   ReadTxn
		watch <-chan struct{}
		n     int
	)
	setup := func() {
		if it != nil {
			it.Close()
		}
		old = db.ReadTxn() // no revision index: the table has no feed
		txn = db.WriteTxn(tbl)
		n++
		mustInsert(t, tbl, txn, &testObject{ID: 1, Value: n})
		it, _ = tbl.Changes(txn)
	}
	next := func() { _, watch = it.Next(old) }
	bad := func() bool { return !mdlClosed(watch) }
	commit := func() { // on a worker goroutine: t.Error, not t.Fatal
		if _, err := txn.Commit(); err != nil {
			t.Error(err)
		}
	}
	if round := mdlRace(3*time.Second, setup, commit, next, bad); round > 0 {
		t.Errorf("round %d: Next(snapshot older than the feed) during the registering commit: "+
			"the registration ended, but the watch channel is open (and stays so)", round)
	}
	it.Close()
}
