package strata

// A model-based test: random sequences of operations over several tables,
// each checked after every step against a simple model made of Go maps and
// slices sorted by Go values (never by the index encodings). Change feeds
// and the graveyard are modelled in changes_model_test.go.
//
// The files of the model: model_index_test.go (indexes and the queries
// on them), model_table_test.go (one table: its states, writes and
// checks), model_tables_test.go (the tables a run registers); this file
// holds the run: transactions, snapshots, watch channels, the journal,
// the steps, and TestModel.
//
// Flags:
//
//	-strata.model.seed N   replay a run (the seed is logged)
//	-strata.model.steps N  number of operations (default 100k, 10k with -short)
//	-strata.model.long     ten times the default number of operations

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var (
	mdlSeedFlag  = flag.Uint64("strata.model.seed", 0, "seed of TestModel (0: random)")
	mdlStepsFlag = flag.Int("strata.model.steps", 0, "operations TestModel runs (0: default)")
	mdlLongFlag  = flag.Bool("strata.model.long", false, "run TestModel ten times longer")
)

// mdlWatch is a watch channel and the query it came from.
type mdlWatch struct {
	desc string
	ch   <-chan struct{}
	// exact: the channel must stay open while the result is unchanged.
	exact bool
	// changed reports whether the query's result on the latest committed
	// state differs from the result when the channel was taken.
	changed func() bool
	// owner, if set, is the change feed whose Next returned the channel:
	// the channel is forgotten when the feed is closed.
	owner any
	// throughTxn: taken through the open write transaction, on its
	// uncommitted state. Its channel may close at the transaction's end
	// without a change (its later writes replace what it watched), must
	// close if the transaction aborts and the result differs from the
	// committed one, and is never closed before the transaction ends.
	throughTxn bool
	txn        WriteTxn
}

// pending reports whether w was taken through the write transaction that
// is still open: it is checked once that ends.
func (m *mdlRun) pending(w *mdlWatch) bool { return w.throughTxn && m.txn != nil && w.txn == m.txn }

// mdlSnap is a read transaction kept for later checks, with the model
// state of every table it must see.
type mdlSnap struct {
	txn    ReadTxn
	states []any
	desc   string
}

// state returns the model state of table i in the snapshot: empty if the
// table was registered after it.
func (s *mdlSnap) state(m *mdlRun, i int) any {
	if i < len(s.states) {
		return s.states[i]
	}
	return m.tables[i].emptyState()
}

// mdlDeferred is an iterator kept to be run later: it must still return
// what the model said when it was created.
type mdlDeferred struct {
	run   func() error
	desc  string
	steps int
}

type mdlRun struct {
	t      *testing.T
	seed   uint64
	r      *rand.Rand
	step   int
	last   []string // the latest operations, for failure reports
	db     *DB
	tables []mdlTableI

	journal  *mdlJournal // some tables are attached to it
	txn      WriteTxn
	txnDesc  string
	txnSnap  mdlSnap // what the open transaction started from
	watches  []*mdlWatch
	snaps    []mdlSnap
	deferred []mdlDeferred
	// releasing: waitReleased is consuming the deferred sequences.
	releasing bool

	stats map[string]int
}

func (m *mdlRun) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d (rerun with -strata.model.seed=%d), step %d: %s\nlatest operations:\n  %s",
		m.seed, m.seed, m.step, fmt.Sprintf(format, args...), strings.Join(m.last, "\n  "))
}

func (m *mdlRun) log(op string) {
	kind := op
	if _, rest, ok := strings.Cut(op, ": "); ok {
		kind = rest // without the table's name
	}
	m.stats[strings.FieldsFunc(kind+" ", func(c rune) bool { return c == '(' || c == ' ' })[0]]++
	if len(m.last) == 12 {
		m.last = m.last[1:]
	}
	m.last = append(m.last, fmt.Sprintf("%d: %s", m.step, op))

}

func (m *mdlRun) addWatch(w *mdlWatch) {
	if w.ch == nil {
		m.fatalf("%s: nil watch channel", w.desc)
	}
	if w.throughTxn {
		if mdlClosed(w.ch) {
			m.fatalf("%s: watch taken through the open write transaction is closed", w.desc)
		}
		m.watches = append(m.watches, w)
		return
	}
	if w.changed() {
		// Taken on an old snapshot whose result is already out of date:
		// the channel must be closed already.
		if !mdlClosed(w.ch) {
			m.fatalf("%s: watch taken on an outdated snapshot is open", w.desc)
		}
		return
	}
	if mdlClosed(w.ch) {
		// Taken on an old snapshot whose nodes a later commit replaced.
		if w.exact {
			m.fatalf("%s: result unchanged but the watch channel is closed", w.desc)
		}
		return
	}
	m.watches = append(m.watches, w)
}

func mdlClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkWatchesCommitted checks every watch after a commit: closed if its
// query's result changed, open if it did not and the watch is exact.
func (m *mdlRun) checkWatchesCommitted() {
	kept := m.watches[:0]
	for _, w := range m.watches {
		if m.pending(w) {
			kept = append(kept, w)
			continue
		}
		closed, changed := mdlClosed(w.ch), w.changed()
		switch {
		case changed && !closed:
			m.fatalf("%s: result changed but the watch channel is open", w.desc)
		case !changed && closed && w.exact && !w.throughTxn:
			m.fatalf("%s: result unchanged but the watch channel was closed", w.desc)
		case !closed:
			kept = append(kept, w)
		}
	}
	clear(m.watches[len(kept):])
	m.watches = kept
}

// checkWatchesAborted checks every watch after an abort: closed exactly if
// its result changed (the feeds registered in the transaction ended, or the
// graveyard collection that followed changed the table), else open.
func (m *mdlRun) checkWatchesAborted() {
	kept := m.watches[:0]
	for _, w := range m.watches {
		if m.pending(w) {
			kept = append(kept, w)
			continue
		}
		closed, changed := mdlClosed(w.ch), w.changed()
		switch {
		case changed && !closed:
			m.fatalf("%s: result changed but the watch channel is open", w.desc)
		case !changed && closed && !w.throughTxn:
			m.fatalf("%s: watch channel closed by Abort", w.desc)
		case !closed:
			kept = append(kept, w)
		}
	}
	clear(m.watches[len(kept):])
	m.watches = kept
}

// checkWatchesOpen checks that no watch channel closed: nothing was
// committed since they were checked.
func (m *mdlRun) checkWatchesOpen(why string) {
	for _, w := range m.watches {
		if mdlClosed(w.ch) {
			m.fatalf("%s: watch channel closed by %s", w.desc, why)
		}
	}
}

func (m *mdlRun) states(view bool) []any {
	out := make([]any, len(m.tables))
	for i, mt := range m.tables {
		if view {
			out[i] = mt.viewState()
		} else {
			out[i] = mt.committedState()
		}
	}
	return out
}

func (m *mdlRun) addSnap(txn ReadTxn, states []any, desc string) {
	if len(m.snaps) == 8 {
		m.snaps = slices.Delete(m.snaps, 0, 1)
	}
	m.snaps = append(m.snaps, mdlSnap{txn, states, fmt.Sprintf("%s (step %d)", desc, m.step)})
}

// addDeferred keeps an All iterator of a random table on txn, to run it a
// few steps later.
func (m *mdlRun) addDeferred(txn ReadTxn, states []any) {
	i := m.r.IntN(len(m.tables))
	mt := m.tables[i]
	run := mt.(interface {
		deferredAll(txn ReadTxn, st any) func() error
	}).deferredAll(txn, states[i])
	m.deferred = append(m.deferred, mdlDeferred{run, fmt.Sprintf("%s All from step %d", mt.meta().Name(), m.step), 2 + m.r.IntN(20)})
}

func (mt *mdlTable[Obj, PK]) deferredAll(txn ReadTxn, sta any) func() error {
	st := sta.(*mdlState[Obj, PK])
	seq := mt.tbl.All(txn)
	want := slices.Clone(mt.all(st))
	return func() error {
		if got := mdlSeq(seq); !slices.Equal(got, want) {
			return fmt.Errorf("got %s, want %s", mt.fmtEnts(got), mt.fmtEnts(want))
		}
		return nil
	}
}

func (m *mdlRun) runDeferred() {
	// A run may defer more (a Next in the loop body of a range over a
	// feed's sequence): those are kept after the ones not due.
	due := m.deferred
	m.deferred = nil
	var kept []mdlDeferred
	for _, d := range due {
		if d.steps--; d.steps > 0 {
			kept = append(kept, d)
			continue
		}
		if err := d.run(); err != nil {
			m.fatalf("kept iterator %s: %v", d.desc, err)
		}
	}
	m.deferred = append(kept, m.deferred...) // what the others hold may be collected
}

// beginTxn opens a write transaction over random tables, or over table
// only if it is not negative.
func (m *mdlRun) beginTxn(only int) {
	r := m.r
	n := 1 + r.IntN(len(m.tables))
	perm := r.Perm(len(m.tables))[:n]
	if only >= 0 {
		n, perm = 1, []int{only}
	}
	var metas []TableMeta
	var names []string
	locked := make([]bool, len(m.tables))
	for _, i := range perm {
		locked[i] = true
		metas = append(metas, m.tables[i].meta())
		names = append(names, m.tables[i].meta().Name())
	}
	if r.IntN(5) == 0 { // a table twice
		i := perm[r.IntN(n)]
		metas = append(metas, m.tables[i].meta())
		names = append(names, m.tables[i].meta().Name())
	}
	r.Shuffle(len(metas), func(i, j int) { metas[i], metas[j] = metas[j], metas[i] })
	m.txn = m.db.WriteTxn(metas[0], metas[1:]...)
	m.txnSnap = mdlSnap{m.txn, m.states(false), fmt.Sprintf("open WriteTxn (step %d)", m.step)}
	for i, mt := range m.tables {
		mt.begin(locked[i])
	}
	m.txnDesc = strings.Join(names, ",")
	m.log("WriteTxn(" + m.txnDesc + ")")
}

// commit commits the open transaction, which now and then the journal
// fails.
func (m *mdlRun) commit() { m.commitJournal(m.r.IntN(10) == 0) }

// commitJournal commits the open transaction, with a journal that fails
// it if fail is set: then nothing is published, as after Abort, if the
// transaction wrote a table attached to it.
func (m *mdlRun) commitJournal(fail bool) {
	txn := m.txn
	wantErr := false
	for _, mt := range m.tables {
		wantErr = wantErr || (fail && mt.journalWrite())
	}
	m.journal.fail = fail
	rtxn, err := txn.Commit()
	m.journal.fail = false
	if wantErr {
		if !errors.Is(err, errMdlJournal) {
			m.fatalf("Commit with a failing journal: err = %v", err)
		}
		m.log("Commit(" + m.txnDesc + ") -> journal failed")
		m.stats["Commit.journalFailed"]++
		// The transaction reads the latest committed state from now on:
		// of the tables it did not lock, what committed since it began
		// (a change log dropped when their last feed closed).
		m.aborted(txn, m.states(false))
		return
	}
	if err != nil {
		m.fatalf("Commit: %v", err)
	}
	for _, mt := range m.tables {
		mt.commit(m)
	}
	states := m.states(false) // what Commit published
	for _, mt := range m.tables {
		mt.released(m)
	}
	m.txn = nil
	m.log("Commit(" + m.txnDesc + ")")
	for i, mt := range m.tables {
		mt.check(m, rtxn, states[i], "ReadTxn from Commit", true)
	}
	m.checkWatchesCommitted()
	m.addSnap(txn, states, "committed WriteTxn")
	if _, err := txn.Commit(); !errors.Is(err, ErrTransactionClosed) {
		m.fatalf("second Commit: err = %v", err)
	}
}

func (m *mdlRun) abort() {
	m.txn.Abort()
	m.log("Abort(" + m.txnDesc + ")")
	m.aborted(m.txn, nil)
}

// aborted models the end of the open transaction txn without a commit: by
// Abort, or by a Commit that the journal failed. states is what txn reads
// after that, if not what it started from.
func (m *mdlRun) aborted(txn WriteTxn, states []any) {
	snap := m.txnSnap // what the transaction started from
	if states != nil {
		snap.states = states
	}
	for _, mt := range m.tables {
		mt.abort(m)
	}
	for _, mt := range m.tables {
		mt.released(m)
	}
	m.txn = nil
	m.checkWatchesAborted()
	for _, mt := range m.tables {
		mt.dropDeadWatches(m)
	}
	m.addSnap(txn, snap.states, "aborted WriteTxn")
	txn.Abort() // again: does nothing
	for i, mt := range m.tables {
		mt.check(m, txn, snap.state(m, i), "aborted WriteTxn", false)
	}
}

// errMdlJournal is the error of the model's journal when told to fail.
var errMdlJournal = errors.New("model journal fails")

// mdlJournal is a Journal that records nothing, and fails commits while
// fail is set.
type mdlJournal struct{ fail bool }

type mdlJournalBatch struct{ j *mdlJournal }

func (j *mdlJournal) Begin() JournalBatch { return mdlJournalBatch{j} }

func (b mdlJournalBatch) Commit() error {
	if b.j.fail {
		return errMdlJournal
	}
	return nil
}

func (b mdlJournalBatch) Discard() {}

// mdlTableJournal writes nothing.
type mdlTableJournal[Obj any] struct{}

func (mdlTableJournal[Obj]) Upsert(JournalBatch, []byte, Obj, Revision) error { return nil }
func (mdlTableJournal[Obj]) Delete(JournalBatch, []byte) error                { return nil }
func (mdlTableJournal[Obj]) DeleteAll(JournalBatch) error                     { return nil }
func (mdlTableJournal[Obj]) SetRevision(JournalBatch, Revision) error         { return nil }

// attach attaches the table to the run's journal, in a transaction of its
// own.
func (mt *mdlTable[Obj, PK]) attach(m *mdlRun) {
	txn := m.db.WriteTxn(mt.tbl)
	if err := SetJournal(txn, mt.tbl, Journal(m.journal), TableJournal[Obj](mdlTableJournal[Obj]{})); err != nil {
		m.fatalf("%s: SetJournal: %v", mt.tbl.Name(), err)
	}
	if _, err := txn.Commit(); err != nil {
		m.fatalf("%s: Commit of SetJournal: %v", mt.tbl.Name(), err)
	}
	mt.journaled = true
}

// journalWrite reports whether the open transaction's commit writes the
// table's changes to the journal: it is attached, and the transaction
// changed it.
func (mt *mdlTable[Obj, PK]) journalWrite() bool {
	return mt.journaled && mt.locked && mt.written
}

func (m *mdlRun) doStep() {
	r := m.r
	full := r.IntN(len(m.tables)) // the table to check fully
	if r.IntN(100) < mdlFeedPercent {
		full = r.IntN(len(m.tables))
		m.tables[full].feedOp(m, full)
	} else if m.txn == nil {
		switch n := r.IntN(100); {
		case n < 70:
			m.beginTxn(-1)
		case n < 85:
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.db.ReadTxn(), m.tables[i].committedState(), "watch")
			m.log("watch")
		case n < 92 && len(m.snaps) > 0:
			// A watch on an old snapshot: closed at once if outdated.
			s := m.snaps[r.IntN(len(m.snaps))]
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, s.txn, s.state(m, i), "watch on "+s.desc)
			m.log("watch(old)")
		default:
			m.addSnap(m.db.ReadTxn(), m.states(false), "ReadTxn")
			m.log("ReadTxn")
		}
	} else {
		switch n := r.IntN(100); {
		case n < 8:
			m.commit()
		case n < 10:
			m.abort()
		case n < 14:
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.db.ReadTxn(), m.tables[i].committedState(), "watch")
			m.log("watch")
		case n < 18:
			// Through the open transaction, on what it wrote.
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.txn, m.tables[i].viewState(), "WriteTxn")
			m.log("watch(WriteTxn)")
		default:
			mt := m.tables[full]
			for range 5 {
				// Mostly a table the transaction locked.
				if mt.isLocked() {
					break
				}
				full = r.IntN(len(m.tables))
				mt = m.tables[full]
			}
			op := mt.writeOp(m, m.txn)
			m.log(mt.meta().Name() + ": " + op)
			m.checkWatchesOpen("an uncommitted write")
		}
	}

	// The state the step changed: through the open transaction, or the
	// latest snapshot.
	var txn ReadTxn = m.txn
	where := "WriteTxn(" + m.txnDesc + ")"
	if m.txn == nil {
		txn, where = m.db.ReadTxn(), "db.ReadTxn"
	}
	// The table written (or a random one) is checked fully, the others
	// more briefly; Commit checked all of them fully.
	states := m.states(true)
	for i, mt := range m.tables {
		mt.check(m, txn, states[i], where, i == full)
	}
	if r.IntN(4) == 0 {
		m.addDeferred(txn, states)
	}
	m.runDeferred()
	// Uncommitted writes are not seen by new readers.
	if m.txn != nil && r.IntN(4) == 0 {
		i := r.IntN(len(m.tables))
		m.tables[i].check(m, m.db.ReadTxn(), m.tables[i].committedState(), "db.ReadTxn during WriteTxn", true)
	}
	// Old snapshots never see later commits.
	if len(m.snaps) > 0 && r.IntN(3) == 0 {
		s := m.snaps[r.IntN(len(m.snaps))]
		i := r.IntN(len(m.tables))
		m.tables[i].check(m, s.txn, s.state(m, i), s.desc, true)
	}
}

func TestModel(t *testing.T) {
	steps := 100_000
	if testing.Short() {
		steps = 10_000
	}
	if raceDetector {
		steps /= 10 // one goroutine: see race_on_test.go
	}
	if *mdlLongFlag {
		steps *= 10
	}
	if *mdlStepsFlag > 0 {
		steps = *mdlStepsFlag
	}
	seed := *mdlSeedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -strata.model.seed=%d), %d steps", seed, seed, steps)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))

	// Several rounds, each on a new database, so that tables also grow
	// from empty many times.
	const perRound = 5000
	stats := map[string]int{}
	for done := 0; done < steps; done += perRound {
		db := New()
		m := &mdlRun{t: t, seed: seed, r: r, db: db, stats: stats, journal: &mdlJournal{}}
		tables := mdlTables(r)
		for _, mt := range tables[:len(tables)-1] {
			m.register(mt)
		}
		late := done + r.IntN(perRound/2)
		for m.step = done; m.step < min(done+perRound, steps); m.step++ {
			if m.step == late {
				m.register(tables[len(tables)-1])
			}
			m.doStep()
		}
		if m.txn != nil {
			m.commit()
		}
		m.endFeeds()
	}
	t.Logf("operations: %v", stats)
}
