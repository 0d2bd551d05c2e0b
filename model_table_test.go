package strata

// The model of one table for TestModel (model_test.go): its committed
// and pending states, the writes of every kind with the errors each must
// return, Restore, the change history the change-feed model reads, and
// the checks of every query against the model after each step.

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// mdlLogEnt is a change in a table's history.
type mdlLogEnt[Obj any, PK any] struct {
	pk      PK
	obj     Obj
	rev     Revision
	deleted bool
	created bool // an insert under a new key, or a restore
}

// mdlInsertWatch is a channel from InsertWatch in the open transaction.
type mdlInsertWatch[Obj any] struct {
	ch  <-chan struct{}
	ent mdlEnt[Obj]
}

// mdlTable is the model of one table: its committed state, and its pending
// state in the open write transaction.
type mdlTable[Obj comparable, PK cmp.Ordered] struct {
	create     func(*DB) (RWTable[Obj], error)
	tbl        RWTable[Obj]
	pointerObj bool // Obj is a pointer: reinserting the stored one fails
	pkOf       func(Obj) PK
	pkGen      func(r *rand.Rand) PK
	gen        func(r *rand.Rand, pk PK) Obj
	// merge combines two objects with the same primary key into a new one.
	merge func(old, new Obj) Obj
	// changePK returns a copy of obj with another primary key.
	changePK func(obj Obj) Obj
	// stealUnique, if set, returns a copy of obj that takes victim's keys
	// in the unique secondary indexes.
	stealUnique func(obj, victim Obj) Obj
	fmtObj      func(Obj) string
	indexes     []mdlIndex[Obj, PK] // the primary first

	committed *mdlState[Obj, PK]
	pending   *mdlState[Obj, PK] // nil until the open transaction writes
	// hist is every change made to the table, in order: the committed
	// ones (up to committed.logLen), then the open transaction's.
	hist   []mdlLogEnt[Obj, PK]
	chains int // numbers the change logs
	// journaled: the table is attached to the run's journal; written: the
	// open transaction changed the table's objects or revision, which
	// the journal records.
	journaled, written bool
	locked             bool // locked by the open transaction
	insWatch           map[PK]mdlInsertWatch[Obj]
	buf                []mdlEnt[Obj] // scratch space for query results

	// Change feeds (changes_model_test.go).
	feeds []*mdlFeed[Obj, PK] // the live ones
	// touched: the open transaction called a write method of the table
	// (which begins its write state); observed: deletes in the open
	// transaction go to the change log (the table had feeds when it was
	// first touched, or one was registered in the transaction).
	touched, observed bool
	// gy lists the revisions of the deletes logged in the committed
	// state, gyPending in the open transaction (nil while unchanged): the
	// graveyard is those some live feed has not passed.
	gy, gyPending []Revision
	// dead lists the feeds closed by the abort of their registering
	// transaction and not closed since (kept reachable, so that their
	// cleanup does not run at a random moment).
	dead []*mdlFeed[Obj, PK]
	// dropLogAtUnlock: the last feed was released while the open
	// transaction held the table's lock; the change log (and the
	// graveyard in it) is dropped when the transaction unlocks it.
	// wasLocked: the transaction that just ended locked the table; ended
	// says how it ended.
	dropLogAtUnlock bool
	wasLocked       bool
	ended           string
	// lastFeedGone is the length of hist when the last feed was released
	// in the open transaction after it began the table's write state with
	// a change log (the trial's case 1, changes_model_test.go), or -1.
	lastFeedGone int
	feedSeq      int // numbers the feeds, for messages
	revRoots     int // numbers the primary index roots
	pubs         int // numbers the committed states
}

func (mt *mdlTable[Obj, PK]) meta() TableMeta { return mt.tbl }
func (mt *mdlTable[Obj, PK]) isLocked() bool  { return mt.locked }

func (mt *mdlTable[Obj, PK]) register(db *DB) error {
	tbl, err := mt.create(db)
	if err != nil {
		return err
	}
	mt.tbl = tbl
	mt.committed = mt.emptyState().(*mdlState[Obj, PK])
	mt.insWatch = map[PK]mdlInsertWatch[Obj]{}
	mt.feeds, mt.dead, mt.gy, mt.gyPending, mt.dropLogAtUnlock = nil, nil, nil, nil, false
	mt.hist, mt.chains, mt.journaled = nil, 0, false
	return nil
}

func (mt *mdlTable[Obj, PK]) emptyState() any {
	return &mdlState[Obj, PK]{objs: map[PK]mdlEnt[Obj]{}, views: make([]any, len(mt.indexes))}
}

// view is the state reads through the open transaction see.
func (mt *mdlTable[Obj, PK]) view() *mdlState[Obj, PK] {
	if mt.pending != nil {
		return mt.pending
	}
	return mt.committed
}

func (mt *mdlTable[Obj, PK]) committedState() any { return mt.committed }
func (mt *mdlTable[Obj, PK]) viewState() any      { return mt.view() }

func (mt *mdlTable[Obj, PK]) begin(locked bool) {
	mt.pending, mt.locked, mt.written = nil, locked, false
	mt.touched, mt.observed, mt.gyPending = false, false, nil
	mt.lastFeedGone = -1
}

func (mt *mdlTable[Obj, PK]) commit(m *mdlRun) {
	mt.feedsCommit(m)
	mt.wasLocked = mt.locked
	mt.pending, mt.locked = nil, false
	for pk, iw := range mt.insWatch {
		m.addWatch(&mdlWatch{
			desc:  fmt.Sprintf("%s: InsertWatch(%v)", mt.tbl.Name(), pk),
			ch:    iw.ch,
			exact: true,
			changed: func() bool {
				e, ok := mt.committed.objs[pk]
				return !ok || e != iw.ent
			},
		})
	}
	clear(mt.insWatch)
}

func (mt *mdlTable[Obj, PK]) abort(m *mdlRun) {
	if mt.lastFeedGone >= 0 && len(mt.hist)-mt.lastFeedGone > 2*changeLogSegment {
		// The trial's case 1, ended by Abort or a failed commit.
		m.stats["Abort.afterLastFeedInLongTxn"]++
	}
	mt.wasLocked = mt.locked
	mt.pending, mt.locked = nil, false
	clear(mt.hist[mt.committed.logLen:])
	mt.hist = mt.hist[:mt.committed.logLen]
	// What InsertWatch watched was never committed: its channel closed.
	for pk, iw := range mt.insWatch {
		if !mdlClosed(iw.ch) {
			m.fatalf("%s: InsertWatch(%v) in an aborted transaction: the channel is open", mt.tbl.Name(), pk)
		}
	}
	clear(mt.insWatch)
	mt.feedsAborted(m)
}

// write returns the pending state, cloned from the committed one on the
// transaction's first write.
func (mt *mdlTable[Obj, PK]) write() *mdlState[Obj, PK] {
	if mt.pending == nil {
		mt.pending = mt.committed.clone()
	}
	mt.pending.touch()
	return mt.pending
}

func (mt *mdlTable[Obj, PK]) put(pk PK, obj Obj) {
	st := mt.write()
	st.rev++
	_, had := st.objs[pk]
	st.objs[pk] = mdlEnt[Obj]{obj, st.rev}
	mt.logChange(st, mdlLogEnt[Obj, PK]{pk, obj, st.rev, false, !had})
}

func (mt *mdlTable[Obj, PK]) del(pk PK) {
	st := mt.write()
	st.rev++
	obj := st.objs[pk].obj
	delete(st.objs, pk)
	mt.logChange(st, mdlLogEnt[Obj, PK]{pk, obj, st.rev, true, false})
	if mt.observed {
		mt.gyPending = append(mt.graveyard(), st.rev)
	}
}

// logChange appends a change of the pending state st to the history.
func (mt *mdlTable[Obj, PK]) logChange(st *mdlState[Obj, PK], e mdlLogEnt[Obj, PK]) {
	mt.hist = append(mt.hist, e)
	st.logLen, st.changed = len(mt.hist), true
	mt.written = true
}

// touch models the table's write state beginning in the open transaction
// (its first write, or Changes): deletes go to the graveyard if the table
// has feeds, and the change log is started or dropped to match.
func (mt *mdlTable[Obj, PK]) touch() {
	if mt.touched {
		return
	}
	mt.touched = true
	mt.observed = len(mt.feeds) > 0
	if mt.view().indexed != mt.observed {
		mt.setIndexed(mt.observed)
	}
}

func (mt *mdlTable[Obj, PK]) setIndexed(v bool) {
	st := mt.write()
	st.indexed, st.chain = v, 0
	if v {
		mt.chains++
		st.chain = mt.chains
	}
}

// publish makes the pending state and graveyard the committed ones.
func (mt *mdlTable[Obj, PK]) publish() {
	if mt.gyPending != nil {
		mt.gy, mt.gyPending = mt.gyPending, nil
	}
	p := mt.pending
	if p == nil {
		return
	}
	if p.changed {
		mt.revRoots++
		p.revRoot = mt.revRoots
	}
	p.changed = false
	mt.pubs++
	p.pub = mt.pubs
	mt.committed, mt.pending = p, nil
}

// graveyard is the model of the logged deletes the open transaction sees.
func (mt *mdlTable[Obj, PK]) graveyard() []Revision {
	if mt.gyPending != nil {
		return mt.gyPending
	}
	return slices.Clip(mt.gy)
}

// conflict reports whether obj (with primary key pk) clashes with another
// object in a unique secondary index.
func (mt *mdlTable[Obj, PK]) conflict(st *mdlState[Obj, PK], pk PK, obj Obj) bool {
	for _, x := range mt.indexes[1:] {
		if x.unique() && x.conflict(st, pk, obj) {
			return true
		}
	}
	return false
}

// upsertErr predicts the error of storing obj over old.
func (mt *mdlTable[Obj, PK]) upsertErr(st *mdlState[Obj, PK], pk PK, obj Obj, old mdlEnt[Obj], hadOld bool) error {
	if hadOld && mt.pointerObj && old.obj == obj {
		return ErrObjectMutated
	}
	if mt.conflict(st, pk, obj) {
		return ErrUniqueConstraint
	}
	return nil
}

// randomPK returns the primary key of an existing object most of the time.
func (mt *mdlTable[Obj, PK]) randomPK(r *rand.Rand, st *mdlState[Obj, PK]) PK {
	if len(st.objs) > 0 && r.IntN(3) != 0 {
		all := mt.all(st)
		return mt.pkOf(all[r.IntN(len(all))].obj)
	}
	return mt.pkGen(r)
}

func (mt *mdlTable[Obj, PK]) all(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
	if st.all == nil {
		pks := slices.Sorted(maps.Keys(st.objs))
		st.all = make([]mdlEnt[Obj], len(pks))
		for i, pk := range pks {
			st.all[i] = st.objs[pk]
		}
	}
	return st.all
}

func (mt *mdlTable[Obj, PK]) fmtEnts(es []mdlEnt[Obj]) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s@%d", mt.fmtObj(e.obj), e.rev)
	}
	b.WriteByte(']')
	return b.String()
}

// expectWrite checks the result of a write against the model's prediction.
func (mt *mdlTable[Obj, PK]) expectWrite(m *mdlRun, op string, wantErr error, wantOld mdlEnt[Obj], wantHad bool, gotOld Obj, gotHad bool, err error) {
	m.t.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			m.fatalf("%s: %s: err = %v, want %v", mt.tbl.Name(), op, err, wantErr)
		}
		return
	}
	if err != nil {
		m.fatalf("%s: %s: unexpected error %v", mt.tbl.Name(), op, err)
	}
	if gotHad != wantHad || (wantHad && gotOld != wantOld.obj) {
		m.fatalf("%s: %s: returned old (%s, %v), want (%s, %v)", mt.tbl.Name(), op,
			mt.fmtObj(gotOld), gotHad, mt.fmtObj(wantOld.obj), wantHad)
	}
}

// writeOp runs one random write on the table in txn and applies it to the
// model. If the table is not locked, the write must fail and change nothing.
func (mt *mdlTable[Obj, PK]) writeOp(m *mdlRun, txn WriteTxn) (op string) {
	r := m.r
	tbl := mt.tbl
	if !mt.locked {
		obj := mt.gen(r, mt.pkGen(r))
		var err error
		op := "Insert"
		switch r.IntN(3) {
		case 0:
			_, _, err = tbl.Insert(txn, obj)
		case 1:
			op = "Delete"
			_, _, err = tbl.Delete(txn, obj)
		case 2:
			op = "DeleteAll"
			err = tbl.DeleteAll(txn)
		}
		if !errors.Is(err, ErrTableNotLockedForWriting) {
			m.fatalf("%s: %s on a table not locked: err = %v", tbl.Name(), op, err)
		}
		return "NotLocked." + op
	}

	// Every operation but "nop" calls a write method of the table, which
	// begins its write state: the graveyard takes deletes if the table
	// has feeds then.
	if !mt.touched {
		mt.observed = len(mt.feeds) > 0
	}
	defer func() {
		if op != "nop" {
			mt.touch()
		}
	}()
	st := mt.view()
	n := r.IntN(100)
	switch {
	case n < 30: // Insert, new or replacing
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		wantErr := mt.upsertErr(st, pk, obj, old, had)
		var gotOld Obj
		var gotHad bool
		var err error
		var ch <-chan struct{}
		useWatch := r.IntN(8) == 0
		if useWatch {
			gotOld, gotHad, ch, err = tbl.InsertWatch(txn, obj)
		} else {
			gotOld, gotHad, err = tbl.Insert(txn, obj)
		}
		mt.expectWrite(m, "Insert", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
			if useWatch {
				if ch == nil {
					m.fatalf("%s: InsertWatch returned no channel", tbl.Name())
				}
				mt.insWatch[pk] = mdlInsertWatch[Obj]{ch, mt.pending.objs[pk]}
			}
		}
		return fmt.Sprintf("Insert(%s) -> %v", mt.fmtObj(obj), err)

	case n < 36: // Insert taking another object's unique keys
		if mt.stealUnique == nil || len(st.objs) < 2 {
			return "nop"
		}
		all := mt.all(st)
		victim := all[r.IntN(len(all))].obj
		pk := mt.randomPK(r, st)
		obj := mt.stealUnique(mt.gen(r, pk), victim)
		old, had := st.objs[pk]
		wantErr := mt.upsertErr(st, pk, obj, old, had)
		gotOld, gotHad, err := tbl.Insert(txn, obj)
		mt.expectWrite(m, "Insert(steal)", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
		return fmt.Sprintf("Insert(steal %s) -> %v", mt.fmtObj(obj), err)

	case n < 46: // Modify
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		changePK := r.IntN(8) == 0
		var merged Obj
		calls := 0
		merge := func(o, n Obj) Obj {
			calls++
			if o != old.obj || n != obj {
				m.fatalf("%s: Modify: merge called with (%s, %s), want (%s, %s)", tbl.Name(),
					mt.fmtObj(o), mt.fmtObj(n), mt.fmtObj(old.obj), mt.fmtObj(obj))
			}
			merged = mt.merge(o, n)
			if changePK {
				merged = mt.changePK(merged)
			}
			return merged
		}
		gotOld, gotHad, err := tbl.Modify(txn, obj, merge)
		if want := mdlB2i(had); calls != want {
			m.fatalf("%s: Modify: merge called %d times, want %d", tbl.Name(), calls, want)
		}
		stored := obj
		var wantErr error
		if had {
			stored = merged
			if changePK {
				wantErr = ErrPrimaryKeyChanged
			}
		}
		if wantErr == nil {
			wantErr = mt.upsertErr(st, pk, stored, old, had)
		}
		mt.expectWrite(m, "Modify", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, stored)
		}
		return fmt.Sprintf("Modify(%s) -> %v", mt.fmtObj(obj), err)

	case n < 58: // CompareAndSwap: right, wrong or missing
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		rev := old.rev
		if r.IntN(3) == 0 {
			rev = st.rev + 1 - Revision(r.IntN(3))
		}
		var wantErr error
		switch {
		case !had:
			wantErr = ErrObjectNotFound
		case rev != old.rev:
			wantErr = ErrRevisionNotEqual
		default:
			wantErr = mt.upsertErr(st, pk, obj, old, had)
		}
		gotOld, gotHad, err := tbl.CompareAndSwap(txn, rev, obj)
		mt.expectWrite(m, "CompareAndSwap", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
		return fmt.Sprintf("CompareAndSwap(%d, %s) -> %v", rev, mt.fmtObj(obj), err)

	case n < 72: // Delete, of the stored object or of a copy with its key
		pk := mt.randomPK(r, st)
		old, had := st.objs[pk]
		obj := mt.gen(r, pk)
		if had && r.IntN(2) == 0 {
			obj = old.obj
		}
		gotOld, gotHad, err := tbl.Delete(txn, obj)
		mt.expectWrite(m, "Delete", nil, old, had, gotOld, gotHad, err)
		if had {
			mt.del(pk)
		}
		return fmt.Sprintf("Delete(%v) -> %v", pk, had)

	case n < 82: // CompareAndDelete: right, wrong or missing
		pk := mt.randomPK(r, st)
		old, had := st.objs[pk]
		obj := mt.gen(r, pk)
		rev := old.rev
		if r.IntN(3) == 0 {
			rev = Revision(r.IntN(int(st.rev) + 2))
		}
		var wantErr error
		switch {
		case !had:
			wantErr = ErrObjectNotFound
		case rev != old.rev:
			wantErr = ErrRevisionNotEqual
		}
		gotOld, gotHad, err := tbl.CompareAndDelete(txn, rev, obj)
		mt.expectWrite(m, "CompareAndDelete", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.del(pk)
		}
		return fmt.Sprintf("CompareAndDelete(%d, %v) -> %v", rev, pk, err)

	case n < 84: // DeleteAll
		if r.IntN(3) != 0 {
			return "nop"
		}
		if err := tbl.DeleteAll(txn); err != nil {
			m.fatalf("%s: DeleteAll: %v", tbl.Name(), err)
		}
		// One revision per deleted object, in primary key order, as if
		// deleted one by one.
		for _, e := range slices.Clone(mt.all(st)) {
			mt.del(mt.pkOf(e.obj))
		}
		return "DeleteAll"

	case n < 88: // reinsert the stored object itself
		if !mt.pointerObj || len(st.objs) == 0 {
			return "nop"
		}
		all := mt.all(st)
		e := all[r.IntN(len(all))]
		_, _, err := tbl.Insert(txn, e.obj)
		mt.expectWrite(m, "Insert(stored)", ErrObjectMutated, e, true, e.obj, true, err)
		return "Insert(stored) -> " + fmt.Sprint(err)

	case n < 91: // a long run of inserts and deletes: several log segments
		return mt.bulk(m, txn, changeLogSegment+r.IntN(3*changeLogSegment))

	case n < 94: // Restore, into the table emptied first
		return mt.restoreOp(m, txn)

	case n < 97: // DeletePrefix, DeleteRange or DeleteMatches
		x := mt.indexes[r.IntN(len(mt.indexes))]
		var qs []mdlQuery[Obj, PK]
		x.queries(r, st, func(q mdlQuery[Obj, PK]) {
			if q.del != nil {
				qs = append(qs, q)
			}
		})
		q := qs[r.IntN(len(qs))]
		want := q.want(st)
		got, err := q.del(txn)
		if err != nil || got != len(want) {
			m.fatalf("%s: Delete of %s = (%d, %v), want %d (%s)", tbl.Name(), q.desc(), got, err, len(want), mt.fmtEnts(want))
		}
		for _, e := range want {
			mt.del(mt.pkOf(e.obj))
		}
		return fmt.Sprintf("Delete of %s -> %d", q.desc(), got)

	default: // reads through the transaction, checked below
		return "nop"
	}
}

// bulk makes k inserts and deletes in txn, which locked the table.
func (mt *mdlTable[Obj, PK]) bulk(m *mdlRun, txn WriteTxn, k int) string {
	r, tbl := m.r, mt.tbl
	for range k {
		pk := mt.pkGen(r)
		old, had := mt.view().objs[pk]
		if had && r.IntN(3) == 0 {
			gotOld, gotHad, err := tbl.Delete(txn, old.obj)
			mt.expectWrite(m, "Delete(bulk)", nil, old, true, gotOld, gotHad, err)
			mt.del(pk)
			continue
		}
		obj := mt.gen(r, pk)
		wantErr := mt.upsertErr(mt.view(), pk, obj, old, had)
		gotOld, gotHad, err := tbl.Insert(txn, obj)
		mt.expectWrite(m, "Insert(bulk)", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
	}
	return fmt.Sprintf("Bulk(%d writes)", k)
}

// restoreOp empties the table (DeleteAll) if it is not empty, and restores
// a few objects into it at revisions of their own, some below the table's.
func (mt *mdlTable[Obj, PK]) restoreOp(m *mdlRun, txn WriteTxn) string {
	r := m.r
	tbl := mt.tbl
	if st := mt.view(); len(st.objs) > 0 {
		if err := tbl.DeleteAll(txn); err != nil {
			m.fatalf("%s: DeleteAll: %v", tbl.Name(), err)
		}
		for _, e := range slices.Clone(mt.all(st)) {
			mt.del(mt.pkOf(e.obj))
		}
	}
	// Objects with distinct keys and revisions, none clashing in a unique
	// index (Restore refuses those, and then the transaction must abort).
	st := mt.write()
	trial := st.clone()
	var objs []mdlEnt[Obj]
	revs := map[Revision]bool{}
	for range 1 + r.IntN(5) {
		pk := mt.pkGen(r)
		obj := mt.gen(r, pk)
		rev := Revision(1 + r.IntN(int(st.rev)+10))
		if _, dup := trial.objs[pk]; dup || revs[rev] || mt.conflict(trial, pk, obj) {
			continue
		}
		revs[rev] = true
		trial.objs[pk] = mdlEnt[Obj]{obj, rev}
		trial.touch()
		objs = append(objs, mdlEnt[Obj]{obj, rev})
	}
	revision := Revision(r.IntN(int(st.rev) + 5))
	err := Restore(txn, tbl, func(yield func(Obj, Revision) bool) {
		for _, e := range objs {
			if !yield(e.obj, e.rev) {
				return
			}
		}
	}, revision)
	if err != nil {
		m.fatalf("%s: Restore: %v", tbl.Name(), err)
	}
	// The change log has them in revision order.
	slices.SortFunc(objs, func(a, b mdlEnt[Obj]) int { return cmp.Compare(a.rev, b.rev) })
	maxRev := revision
	for _, e := range objs {
		pk := mt.pkOf(e.obj)
		st.objs[pk] = e
		mt.logChange(st, mdlLogEnt[Obj, PK]{pk, e.obj, e.rev, false, true})
		maxRev = max(maxRev, e.rev)
	}
	st.rev = max(st.rev, maxRev)
	st.touch()
	mt.written = true
	return fmt.Sprintf("Restore(%d objects, revision %d)", len(objs), revision)
}

func mdlDesc(s string) func() string { return func() string { return s } }

func mdlB2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// check compares what the table returns through txn with the model state
// st: its size, revision and contents, and if full, random queries of
// every kind on every index.
func (mt *mdlTable[Obj, PK]) check(m *mdlRun, txn ReadTxn, sta any, where string, full bool) {
	st := sta.(*mdlState[Obj, PK])
	tbl := mt.tbl
	if n := tbl.NumObjects(txn); n != len(st.objs) {
		m.fatalf("%s: %s: NumObjects = %d, want %d", where, tbl.Name(), n, len(st.objs))
	}
	if rev := tbl.Revision(txn); rev != st.rev {
		m.fatalf("%s: %s: Revision = %d, want %d", where, tbl.Name(), rev, st.rev)
	}
	all := mt.all(st)
	mt.buf = mdlSeqTo(mt.buf, tbl.All(txn))
	mt.expect(m, where, mdlDesc("All"), mt.buf, all)
	if !full {
		return
	}
	mt.buf = mdlSeqTo(mt.buf, tbl.ReverseAll(txn))
	mt.expect(m, where, mdlDesc("ReverseAll"), mt.buf, slices.Backward(all))
	for _, x := range mt.indexes {
		x.queries(m.r, st, func(q mdlQuery[Obj, PK]) {
			mt.buf = q.run(txn, mt.buf)
			mt.expect(m, where, q.desc, mt.buf, q.want(st))
		})
	}
}

// expect compares a query result with the model's.
func (mt *mdlTable[Obj, PK]) expect(m *mdlRun, where string, desc func() string, got []mdlEnt[Obj], want any) {
	var w []mdlEnt[Obj]
	switch want := want.(type) {
	case []mdlEnt[Obj]:
		w = want
	case iter.Seq2[int, mdlEnt[Obj]]:
		for _, e := range want {
			w = append(w, e)
		}
	}
	if !slices.Equal(got, w) {
		m.fatalf("%s: %s: %s:\n got  %s\n want %s", where, mt.tbl.Name(), desc(), mt.fmtEnts(got), mt.fmtEnts(w))
	}
}

// takeWatch runs a random query with a watch channel on txn (whose model
// state is st) and registers the channel.
func (mt *mdlTable[Obj, PK]) takeWatch(m *mdlRun, txn ReadTxn, sta any, where string) {
	st := sta.(*mdlState[Obj, PK])
	r := m.r
	tbl := mt.tbl
	if r.IntN(8) == 0 {
		var seq iter.Seq2[Obj, Revision]
		var ch <-chan struct{}
		desc := "AllWatch"
		want := mt.all(st)
		base := want // the state's cache: replaced, never changed, by later writes
		if r.IntN(2) == 0 {
			seq, ch = tbl.AllWatch(txn)
		} else {
			desc = "ReverseAllWatch"
			seq, ch = tbl.ReverseAllWatch(txn)
			want = slices.Collect(mdlValues(slices.Backward(want)))
		}
		mt.expect(m, where, mdlDesc(desc), mdlSeq(seq), want)
		m.addWatch(&mdlWatch{
			desc:       fmt.Sprintf("%s: %s (%s)", tbl.Name(), desc, where),
			ch:         ch,
			throughTxn: txn == m.txn,
			txn:        m.txn,
			changed: func() bool {
				return !slices.Equal(mt.all(mt.committed), base)
			},
		})
		return
	}
	x := mt.indexes[r.IntN(len(mt.indexes))]
	var qs []mdlQuery[Obj, PK]
	x.queries(r, st, func(q mdlQuery[Obj, PK]) { qs = append(qs, q) })
	q := qs[r.IntN(len(qs))]
	got, ch := q.watch(txn)
	want := q.want(st)
	mt.expect(m, where, func() string { return q.desc() + " (watch)" }, got, want)
	m.addWatch(&mdlWatch{
		desc:       fmt.Sprintf("%s: %s (%s)", tbl.Name(), q.desc(), where),
		ch:         ch,
		exact:      q.exact && len(want) > 0,
		throughTxn: txn == m.txn,
		txn:        m.txn,
		changed: func() bool {
			return !slices.Equal(q.want(mt.committed), want)
		},
	})
}

func mdlValues[K, V any](seq iter.Seq2[K, V]) iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range seq {
			if !yield(v) {
				return
			}
		}
	}
}

// mdlTableI is a table model of any object type.
type mdlTableI interface {
	meta() TableMeta
	isLocked() bool
	register(db *DB) error
	emptyState() any
	committedState() any
	viewState() any
	begin(locked bool)
	commit(m *mdlRun)
	abort(m *mdlRun)
	// released follows commit or abort: the table is unlocked.
	released(m *mdlRun)
	writeOp(m *mdlRun, txn WriteTxn) string
	check(m *mdlRun, txn ReadTxn, st any, where string, full bool)
	takeWatch(m *mdlRun, txn ReadTxn, st any, where string)
	// attach attaches the table to the run's journal.
	attach(m *mdlRun)
	// journalWrite reports whether the open transaction's commit writes
	// the table to the journal.
	journalWrite() bool
	// feedOp runs a random change feed operation (changes_model_test.go).
	feedOp(m *mdlRun, i int)
	// endFeeds closes or drops every feed, and checks that the table
	// then keeps neither deleted objects nor its revision index.
	endFeeds(m *mdlRun)
	// dropDeadWatches forgets the watch channels of feeds closed by an
	// abort.
	dropDeadWatches(m *mdlRun)
}
