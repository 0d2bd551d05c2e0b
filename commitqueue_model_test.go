package strata

// The model test of the commit queue (early lock release, commitqueue.go).
// Every hand-off between the goroutines that commit through the queue
// passes through a hold point (commitqueue_holds.go); so do the test
// journal's Wait, once the test decided the record's fate, and each
// writer's own work between its begin and its Commit. A scheduler holds
// each goroutine that reaches one, and the test, alone running while all
// the others are held or durably blocked (testing/synctest), chooses by a
// seeded random source what happens next: one held goroutine goes on, a
// new writer begins, the journal makes a prefix of its pending records
// durable (or fails one), or a reader takes a snapshot and watches an
// object. Each seed is one order of events; a failing seed replays
// exactly with -strata.cq.seed.
//
// What must hold, whatever the order (the numbers of the issue, not of
// commitqueue.go's invariants):
//
//  1. db.root holds only durable states: no published object of a durable
//     table was written by a record that is not durable (checked after
//     every step, and on each reader's snapshot); the published revision
//     of a table never goes back; a reader's watch channel closes only
//     once the object it watched changed in the published root.
//  2. Commit returns nil only once its record is durable and its states
//     are published: the snapshot it returns holds its writes at its
//     revisions.
//  3. Once a record fails, every commit queued after it before the queue
//     drains fails (ErrEarlierCommitFailed, or the journal's own failure
//     of its record), and nothing of a failed commit is ever visible; a
//     transaction that began from the tip of a commit that failed fails.
//  4. Nothing is lost: replaying the acknowledged commits of each table
//     in revision order gives the final state, and each of them began
//     from exactly the state its predecessor left (its view is the
//     replay's state before it).
//  5. Every writer returns (no deadlock, no lost wake-up); the queue is
//     empty at the end, every tip cleared or failed; watches of objects
//     that changed are closed; no goroutine outlives the test (synctest).
//
// Run: go test -run TestCommitQueueModel . (150 seeds per variant by
// default, a few seconds); -strata.cq.long for 20x the seeds;
// -strata.cq.seeds N for N; -strata.cq.seed S -run 'TestCommitQueueModel/VARIANT'
// to replay one seed, with -v to see its history.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/strata-db/strata/internal/holdtest"
	"github.com/strata-db/strata/metrics"
)

var (
	cqSeeds = flag.Int("strata.cq.seeds", 150, "seeds of each commit queue model test variant")
	cqSeed  = flag.Int64("strata.cq.seed", -1, "run the commit queue model test with this seed only")
	cqLong  = flag.Bool("strata.cq.long", false, "run the commit queue model test with 20x the seeds")
)

// cqScheduler holds the goroutines that reach a hold point until the test
// lets them go, one at a time. Held goroutines are told apart by who:
// a writer's number once it is known, 100 plus the position of the first
// table it locked before that (at begin and drop-tip, where no other
// writer holds that table), 1000 plus a record's number for the journal's
// Wait.
type cqScheduler = holdtest.Scheduler[string]

// cqJournal is a Journal whose records queue (QueuedBatch). Enqueue
// appends a record to pending; the test decides, in order, which records
// become durable and which fail (sync); a record's Wait then returns at a
// hold point of its own ("journal-wait"), so the order in which the
// writers learn their records' fates is the scheduler's too.
type cqJournal struct {
	s *cqScheduler
	// lax: a failed record fails alone, and the records enqueued after it
	// may still become durable: a journal that breaks QueuedBatch's rule,
	// which the database keeps on its side regardless (commitqueue.go,
	// invariant 4). Otherwise a failure fails every pending record.
	lax bool
	// refuse reports whether Enqueue refuses the record holding values,
	// and whether it panics rather than return an error.
	refuse func(values []int) (refuse, panics bool)

	mu      sync.Mutex
	nextID  int
	pending []*cqRecord
	// durable holds the values written by durable records.
	durable map[int]bool
}

type cqRecord struct {
	j      *cqJournal
	id     int
	values []int
	done   chan error
}

var (
	errCQInjected = errors.New("injected sync failure")
	errCQRefused  = errors.New("injected Enqueue failure")
	// errCQPanic makes Wait panic with it (the database turns that into
	// an error); errCQEnqueuePanic is Enqueue's panic (Commit aborts and
	// panics again with it).
	errCQPanic        = errors.New("injected Wait panic")
	errCQEnqueuePanic = errors.New("injected Enqueue panic")
	// errCQAborted is the model's result of a writer that aborted.
	errCQAborted = errors.New("aborted")
)

func (j *cqJournal) Begin() JournalBatch {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.nextID++
	return &cqRecord{j: j, id: j.nextID, done: make(chan error, 1)}
}

func (r *cqRecord) Commit() error { return errors.New("Commit of a record that queues") }
func (r *cqRecord) Discard()      {}
func (r *cqRecord) Queues() bool  { return true }

func (r *cqRecord) Enqueue() error {
	j := r.j
	if refuse, panics := j.refuse(r.values); refuse {
		j.s.Note("journal: record %d refused (panic: %v)", r.id, panics)
		if panics {
			panic(errCQEnqueuePanic)
		}
		return errCQRefused
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, r)
	return nil
}

func (r *cqRecord) Wait() error {
	err := <-r.done
	r.j.s.Hold(fmt.Sprintf("record %d wait-returns", r.id), 1000+r.id)
	if err == errCQPanic {
		panic(err)
	}
	return err
}

func (j *cqJournal) numPending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

// sync decides the fate of the first n pending records: durable, but for
// the last if fail is not nil, which fails with it (and, unless the
// journal is lax, every record pending after it, with errCQInjected).
func (j *cqJournal) sync(n int, fail error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	n = min(n, len(j.pending))
	for i, r := range j.pending[:n] {
		if fail != nil && i == n-1 {
			j.s.Note("journal: record %d fails: %v", r.id, fail)
			r.done <- fail
			continue
		}
		j.s.Note("journal: record %d durable %v", r.id, r.values)
		for _, v := range r.values {
			j.durable[v] = true
		}
		r.done <- nil
	}
	j.pending = j.pending[n:]
	if fail != nil && !j.lax {
		for _, r := range j.pending {
			j.s.Note("journal: record %d fails after the failed one", r.id)
			r.done <- errCQInjected
		}
		j.pending = nil
	}
}

func (j *cqJournal) isDurable(v int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.durable[v]
}

// cqTableJournal writes a table's upserts into cqRecords: the values are
// all the test needs (each write has a value of its own).
type cqTableJournal struct{}

func (cqTableJournal) Upsert(b JournalBatch, _ []byte, obj *testObject, _ Revision) error {
	r := b.(*cqRecord)
	r.values = append(r.values, obj.Value)
	return nil
}
func (cqTableJournal) Delete(JournalBatch, []byte) error        { return nil }
func (cqTableJournal) DeleteAll(JournalBatch) error             { return nil }
func (cqTableJournal) SetRevision(JournalBatch, Revision) error { return nil }

// cqConfig is a variant of the model test.
type cqConfig struct {
	name string
	// multi: the durable tables "a" and "b" and the in-memory table "m",
	// written alone and together; else "a" alone.
	multi    bool
	failures bool
	lax      bool
	metrics  bool // the database reports to metrics (other code paths)
	writers  int  // at most this many at once
	commits  int  // writers per seed
}

const cqObjects = 4 // IDs 0..3 in each table

func TestCommitQueueModel(t *testing.T) {
	for _, cfg := range []cqConfig{
		{name: "one-table", writers: 3, commits: 24},
		{name: "one-table-failures", writers: 3, commits: 24, failures: true},
		{name: "tables-failures", multi: true, writers: 4, commits: 30, failures: true},
		{name: "tables-lax-journal", multi: true, writers: 4, commits: 30, failures: true, lax: true},
		{name: "tables-metrics", multi: true, writers: 3, commits: 30, failures: true, metrics: true},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			seeds := *cqSeeds
			if *cqLong {
				seeds *= 20
			}
			if testing.Short() {
				seeds = max(1, seeds/5)
			}
			first := int64(0)
			if *cqSeed >= 0 {
				first, seeds = *cqSeed, 1
			}
			for seed := first; seed < first+int64(seeds); seed++ {
				var report, history string
				// synctest.Test ends the test at once if the bubble's test
				// failed: say which seed inside.
				synctest.Test(t, func(t *testing.T) {
					defer func() {
						if t.Failed() {
							t.Logf("seed %d (replay: -run 'TestCommitQueueModel/%s' -strata.cq.seed %d)", seed, cfg.name, seed)
						}
					}()
					report, history = runCQModel(t, cfg, seed)
				})
				if report != "" {
					t.Fatalf("seed %d (replay: -run 'TestCommitQueueModel/%s' -strata.cq.seed %d):\n%s\nhistory:\n%s",
						seed, cfg.name, seed, report, history)
				}
				if *cqSeed >= 0 {
					t.Logf("history:\n%s", history)
				}
			}
		})
	}
}

// cqCommit is what the model knows of one writer's transaction.
type cqCommit struct {
	id     int
	tables []string // locked
	// writes are the writes per table, in order; views the contents of
	// each written table when the transaction began; revs its revision
	// of each written table.
	writes map[string][]cqWrite
	views  map[string]map[uint64]int
	revs   map[string]Revision
	// tipOf are the commits whose tips the transaction began from.
	tipOf []int
	// abort: the writer aborts rather than commits; refuse: the journal
	// refuses its record at Enqueue, by a panic with refusePanic.
	abort, refuse, refusePanic bool
	// detached: the writer turns table a's journaling off for its
	// transaction (SetJournal nil), as a replicated node's FSM does to
	// apply a change set the log holds already: its commit has no
	// record, and its values are durable once published (the journal
	// has them). It goes through the queue only if it began from a tip.
	detached bool
	done     bool
	err      error
}

type cqWrite struct {
	id      uint64
	value   int
	deleted bool
}

type cqWatch struct {
	table string
	id    uint64
	value int
	ch    <-chan struct{}
}

// cqRig is a database, the test journal, the scheduler and the model.
// Its methods run in the synctest bubble's main goroutine, but for
// writer, which runs on a goroutine of its own.
type cqRig struct {
	t      *testing.T
	cfg    cqConfig
	rng    *rand.Rand
	s      *cqScheduler
	j      *cqJournal
	db     *DB
	tables map[string]RWTable[*testObject]
	names  []string // all tables; "a" and "b" durable
	// detachedCommits counts the detached writers started.
	detachedCommits int

	wg sync.WaitGroup

	mu         sync.Mutex
	commits    []*cqCommit
	active     int
	nextValue  int
	byTxn      map[*txnCore]int
	stateOwner map[*tableStateHeader]int
	valueOwner map[int]int
	violations []string

	// Observed by the main goroutine after every step.
	order   []int // commits in the order they entered the queue
	epochOf map[int]int
	epoch   int
	inQueue bool
	lastRev map[string]Revision
	visible map[int]bool // every value ever published
	watches []cqWatch
}

func (g *cqRig) violate(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	g.mu.Lock()
	g.violations = append(g.violations, v)
	g.mu.Unlock()
	g.s.Note("VIOLATION %s", v)
}

func newCQRig(t *testing.T, cfg cqConfig, seed int64) *cqRig {
	s := &cqScheduler{}
	j := &cqJournal{s: s, lax: cfg.lax, durable: map[int]bool{}}
	var opts []Option
	if cfg.metrics {
		opts = append(opts, WithMetrics(metrics.NewExpVar("", false)))
	}
	db := New(opts...)
	g := &cqRig{
		t: t, cfg: cfg, rng: rand.New(rand.NewPCG(uint64(seed), 0xc0ffee)),
		s: s, j: j, db: db, tables: map[string]RWTable[*testObject]{},
		byTxn: map[*txnCore]int{}, stateOwner: map[*tableStateHeader]int{}, valueOwner: map[int]int{},
		epochOf: map[int]int{}, lastRev: map[string]Revision{}, visible: map[int]bool{},
	}
	g.names = []string{"a"}
	if cfg.multi {
		g.names = []string{"a", "b", "m"}
	}
	for _, name := range g.names {
		g.tables[name] = newTestTable(t, db, name)
	}
	txn := db.WriteTxn(g.tables["a"])
	must(t, SetJournal(txn, g.tables["a"], j, cqTableJournal{}))
	must(t, commitErr(txn))
	if cfg.multi {
		txn := db.WriteTxn(g.tables["b"])
		must(t, SetJournal(txn, g.tables["b"], j, cqTableJournal{}))
		must(t, commitErr(txn))
	}
	j.refuse = func(values []int) (bool, bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(values) == 0 {
			return false, false
		}
		c := g.commits[g.valueOwner[values[0]]]
		return c.refuse, c.refusePanic
	}
	db.hold = func(p cqPoint, w *txnCore) {
		if p == cqBegin || p == cqDropTip {
			// The writer's transaction is not known yet (and the pool
			// may hand it the state of an earlier one).
			s.Hold("new writer "+p.String(), 100+w.lockedTables[0].meta.pos)
			return
		}
		g.mu.Lock()
		id := g.byTxn[w]
		g.mu.Unlock()
		s.Hold(fmt.Sprintf("w%d %s", id, p), id)
	}
	return g
}

func commitErr(txn WriteTxn) error {
	_, err := txn.Commit()
	return err
}

func durableTableName(name string) bool { return name != "m" }

// shapes are the sets of tables a writer locks, and which of them it
// writes.
var cqShapes = []struct{ lock, write []string }{
	{[]string{"a"}, []string{"a"}},
	{[]string{"b"}, []string{"b"}},
	{[]string{"a", "b"}, []string{"a", "b"}},
	{[]string{"a", "m"}, []string{"a", "m"}},
	{[]string{"m"}, []string{"m"}},
	{[]string{"a", "m"}, []string{"m"}}, // reads a, writes m alone
	{[]string{"b", "m"}, []string{"b"}}, // locks m without writing it: keeps its locks
	{[]string{"a", "b"}, []string{"b"}}, // the same, with a record
	{[]string{"a"}, nil},                // writes nothing (dependent if a has a tip)
}

// startWriter begins a writer of a random shape on a goroutine of its
// own.
func (g *cqRig) startWriter() {
	lock, write := []string{"a"}, []string{"a"}
	if g.cfg.multi {
		sh := cqShapes[g.rng.IntN(len(cqShapes))]
		lock, write = sh.lock, sh.write
	}
	c := &cqCommit{
		tables: lock, writes: map[string][]cqWrite{}, views: map[string]map[uint64]int{},
		revs: map[string]Revision{},
	}
	// The writes are chosen now, by the seed's source.
	for _, name := range write {
		n := 1 + g.rng.IntN(2)
		for range n {
			g.nextValue++
			c.writes[name] = append(c.writes[name], cqWrite{id: uint64(g.rng.IntN(cqObjects)), value: g.nextValue})
		}
		if g.rng.IntN(4) == 0 {
			c.writes[name] = append(c.writes[name], cqWrite{id: uint64(g.rng.IntN(cqObjects)), deleted: true})
		}
	}
	c.detached = g.cfg.multi && len(lock) == 1 && lock[0] == "a" && len(write) == 1 && g.rng.IntN(2) == 0
	if c.detached {
		g.detachedCommits++
	}
	c.abort = g.rng.IntN(8) == 0
	c.refuse = g.cfg.failures && g.rng.IntN(10) == 0
	c.refusePanic = c.refuse && g.rng.IntN(2) == 0
	g.mu.Lock()
	c.id = len(g.commits)
	g.commits = append(g.commits, c)
	g.active++
	for _, ws := range c.writes {
		for _, w := range ws {
			if !w.deleted {
				g.valueOwner[w.value] = c.id
			}
		}
	}
	g.mu.Unlock()
	g.s.Note("user: writer %d locks %v writes %v", c.id, lock, write)
	g.wg.Add(1)
	go g.writer(c)
}

// writer runs the transaction c.
func (g *cqRig) writer(c *cqCommit) {
	defer g.wg.Done()
	defer func() {
		g.mu.Lock()
		g.active--
		c.done = true
		g.mu.Unlock()
	}()
	first := g.tables[c.tables[0]]
	var rest []TableMeta
	for _, name := range c.tables[1:] {
		rest = append(rest, g.tables[name])
	}
	// WriteTxnContext waits for a lock on a channel: durably blocked,
	// where WriteTxn's sync.Mutex is not.
	txn, err := g.db.WriteTxnContext(context.Background(), first, rest...)
	if err != nil {
		g.violate("writer %d: WriteTxnContext: %v", c.id, err)
		return
	}
	w := txn.(*txnRef).w
	if c.detached {
		if err := SetJournal[*testObject](txn, g.tables["a"], nil, nil); err != nil {
			g.violate("writer %d: SetJournal(nil): %v", c.id, err)
		}
	}
	g.mu.Lock()
	g.byTxn[w] = c.id
	for i := range w.lockedTables {
		if tip := w.lockedTables[i].tip; tip != nil {
			owner, ok := g.stateOwner[tip]
			if !ok {
				g.mu.Unlock()
				g.violate("writer %d began from a tip of table %q that no queued commit set", c.id, w.lockedTables[i].meta.name)
				g.mu.Lock()
				continue
			}
			c.tipOf = append(c.tipOf, owner)
		}
	}
	g.mu.Unlock()
	// (The tables in lock order, not in the map's: a seed replays.)
	for _, name := range c.tables {
		if _, ok := c.writes[name]; ok {
			c.views[name] = cqContents(txn, g.tables[name])
		}
	}
	g.s.Note("writer %d began from tips of %v, view %v", c.id, c.tipOf, c.views)
	g.s.Hold(fmt.Sprintf("w%d work", c.id), c.id)

	for _, name := range c.tables {
		ws, ok := c.writes[name]
		if !ok {
			continue
		}
		tbl := g.tables[name]
		for _, wr := range ws {
			var err error
			if wr.deleted {
				_, _, err = tbl.Delete(txn, &testObject{ID: wr.id})
			} else {
				_, _, err = tbl.Insert(txn, &testObject{ID: wr.id, Value: wr.value})
			}
			if err != nil {
				g.violate("writer %d: write %q: %v", c.id, name, err)
			}
		}
		c.revs[name] = tbl.Revision(txn)
	}
	if c.abort {
		txn.Abort()
		g.mu.Lock()
		c.err = errCQAborted
		g.mu.Unlock()
		g.s.Note("writer %d: Abort", c.id)
		return
	}
	var panicked any
	root, err := func() (ReadTxn, error) {
		defer func() {
			if panicked = recover(); panicked != nil {
				// Commit aborted the transaction and panicked again
				// with the journal's panic.
				g.s.Note("writer %d: Commit panicked: %v", c.id, panicked)
			}
		}()
		return txn.Commit()
	}()
	if panicked != nil {
		err = fmt.Errorf("Commit panicked: %v", panicked)
		if panicked != errCQEnqueuePanic || !c.refusePanic {
			g.violate("writer %d: %v", c.id, err)
		}
	}
	g.mu.Lock()
	c.err = err
	g.mu.Unlock()
	g.s.Note("writer %d: Commit = %v", c.id, err)
	if err != nil {
		switch {
		case panicked != nil:
		case errors.Is(err, errCQRefused):
			if !c.refuse {
				g.violate("writer %d: Commit: %v, but its record was not refused", c.id, err)
			}
		case !cqRecordFailed(err) && !errors.Is(err, ErrEarlierCommitFailed):
			g.violate("writer %d: Commit: %v, neither the journal's failure nor ErrEarlierCommitFailed", c.id, err)
		}
		return
	}
	// Property 2: durable and published.
	published := g.db.ReadTxn()
	for _, name := range c.tables {
		ws, ok := c.writes[name]
		if !ok {
			continue
		}
		tbl := g.tables[name]
		if rev := tbl.Revision(root); rev != c.revs[name] {
			g.violate("writer %d: Commit returned a snapshot of table %q at revision %d, its revision is %d", c.id, name, rev, c.revs[name])
		}
		if rev := tbl.Revision(published); rev < c.revs[name] {
			g.violate("writer %d: Commit returned, but table %q is published at revision %d < its %d", c.id, name, rev, c.revs[name])
		}
		final := map[uint64]cqWrite{}
		for _, wr := range ws {
			final[wr.id] = wr
		}
		for id, wr := range final {
			o, _, found := tbl.Get(root, idIndex.Query(id))
			switch {
			case wr.deleted && found:
				g.violate("writer %d: its snapshot holds %q id=%d, which it deleted", c.id, name, id)
			case !wr.deleted && (!found || o.Value != wr.value):
				g.violate("writer %d: its snapshot holds %q id=%d %v %d, it wrote %d", c.id, name, id, found, o.Value, wr.value)
			}
			if !wr.deleted && durableTableName(name) && !g.durable(wr.value) {
				g.violate("writer %d: Commit returned nil, but its write %q id=%d %d is not durable", c.id, name, id, wr.value)
			}
		}
	}
}

// cqRecordFailed reports whether err is the failure of a record (Wait
// returned an error, or panicked).
func cqRecordFailed(err error) bool {
	return errors.Is(err, errCQInjected) || strings.Contains(err.Error(), errCQPanic.Error())
}

// cqContents returns id -> value of the objects of tbl in txn.
func cqContents(txn ReadTxn, tbl Table[*testObject]) map[uint64]int {
	out := map[uint64]int{}
	for o := range tbl.All(txn) {
		out[o.ID] = o.Value
	}
	return out
}

// observe runs after every step, while every other goroutine is held or
// blocked: it records the queue's order and checks property 1 on the
// published root and the readers' watches.
func (g *cqRig) observe() {
	q := &g.db.queue
	q.mu.Lock()
	fifo := slices.Clone(q.fifo[q.head:])
	q.mu.Unlock()
	g.mu.Lock()
	if len(fifo) == 0 && g.inQueue {
		g.epoch++
		g.inQueue = false
	}
	for _, w := range fifo {
		g.inQueue = true
		id, ok := g.byTxn[w]
		if !ok {
			g.mu.Unlock()
			g.violate("the queue holds a transaction of no writer")
			g.mu.Lock()
			continue
		}
		if _, seen := g.epochOf[id]; !seen {
			g.epochOf[id] = g.epoch
			g.order = append(g.order, id)
			g.s.Note("queue: writer %d enters (run %d)", id, g.epoch)
		}
		for i := range w.lockedTables {
			if st := w.lockedTables[i].state; st != nil {
				g.stateOwner[st] = id
			}
		}
	}
	g.mu.Unlock()

	root := g.db.ReadTxn()
	g.checkSnapshot("the published root", root)
	for _, name := range g.names {
		rev := g.tables[name].Revision(root)
		if rev < g.lastRev[name] {
			g.violate("table %q: the published revision went back from %d to %d", name, g.lastRev[name], rev)
		}
		g.lastRev[name] = rev
		for o := range g.tables[name].All(root) {
			g.visible[o.Value] = true
		}
	}
	for _, w := range g.watches {
		if !isClosedChan(w.ch) {
			continue
		}
		if o, _, found := g.tables[w.table].Get(root, idIndex.Query(w.id)); found && o.Value == w.value {
			g.violate("a reader's watch of %q id=%d %d closed, but the published root still holds it", w.table, w.id, w.value)
		}
	}
}

// durable reports whether value v is durable: its record is, or its
// writer was detached (the log that a detached writer replays holds it).
func (g *cqRig) durable(v int) bool {
	if g.j.isDurable(v) {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	owner, ok := g.valueOwner[v]
	return ok && g.commits[owner].detached
}

// checkSnapshot checks property 1 on a snapshot: every object of a
// durable table was written by a durable record.
func (g *cqRig) checkSnapshot(what string, txn ReadTxn) {
	for _, name := range g.names {
		if !durableTableName(name) {
			continue
		}
		tbl := g.tables[name]
		for o := range tbl.All(txn) {
			if !g.durable(o.Value) {
				g.mu.Lock()
				owner := g.valueOwner[o.Value]
				g.mu.Unlock()
				g.violate("%s holds %q id=%d %d (writer %d) at revision %d, whose record is not durable", what, name, o.ID, o.Value, owner, tbl.Revision(txn))
			}
		}
	}
}

// read takes a snapshot, checks it and watches an object in it.
func (g *cqRig) read() {
	txn := g.db.ReadTxn()
	g.checkSnapshot("a reader's snapshot", txn)
	name := g.names[g.rng.IntN(len(g.names))]
	id := uint64(g.rng.IntN(cqObjects))
	o, _, ch, found := g.tables[name].GetWatch(txn, idIndex.Query(id))
	if found {
		g.watches = append(g.watches, cqWatch{table: name, id: id, value: o.Value, ch: ch})
		g.s.Note("user: reader watches %q id=%d %d", name, id, o.Value)
	}
}

// syncJournal makes a prefix of the pending records durable, or fails
// its last one.
func (g *cqRig) syncJournal(fail bool) {
	n := 1 + g.rng.IntN(g.j.numPending())
	var err error
	if fail {
		err = errCQInjected
		if g.rng.IntN(3) == 0 {
			err = errCQPanic
		}
	}
	g.j.sync(n, err)
}

// step does one random thing; it reports whether a writer began.
func (g *cqRig) step() bool {
	held := g.s.Len()
	pending := g.j.numPending()
	g.mu.Lock()
	active := g.active
	g.mu.Unlock()
	switch k := g.rng.IntN(12); {
	case held > 0 && k < 6:
		g.s.Release(g.rng)
	case pending > 0 && k < 9:
		g.syncJournal(g.cfg.failures && g.rng.IntN(5) == 0)
	case k < 10:
		g.read()
	case active < g.cfg.writers:
		g.startWriter()
		return true
	case held > 0:
		g.s.Release(g.rng)
	}
	return false
}

// settle lets every goroutine go and makes every record durable until
// every writer returned; it reports false if they never do.
func (g *cqRig) settle() bool {
	for range 100000 {
		synctest.Wait()
		g.observe()
		if held := g.s.Len(); held > 0 {
			g.s.Release(g.rng)
			continue
		}
		if g.j.numPending() > 0 {
			g.j.sync(g.j.numPending(), nil)
			continue
		}
		g.mu.Lock()
		active := g.active
		g.mu.Unlock()
		if active == 0 {
			return true
		}
		// Nothing held, nothing pending, yet writers are blocked.
		return false
	}
	return false
}

// finish checks properties 3 to 5, and returns what went wrong, or "".
func (g *cqRig) finish() string {
	g.wg.Wait()
	g.observe()
	q := &g.db.queue
	q.mu.Lock()
	if n := len(q.fifo) - q.head; n != 0 || q.err != nil {
		g.violations = append(g.violations, fmt.Sprintf("the queue holds %d commits (err %v) at the end", n, q.err))
	}
	q.mu.Unlock()
	for _, name := range g.names {
		m := g.tables[name].tableMeta()
		if m.tip.Load() != nil && m.tipFailed.Load() == nil {
			g.violate("table %q has a tip at the end", name)
		}
	}

	g.mu.Lock()
	commits := slices.Clone(g.commits)
	order := slices.Clone(g.order)
	epochOf := maps.Clone(g.epochOf)
	g.mu.Unlock()

	// Property 3: within a run of the queue, everything after a failure
	// fails; the first failure of a run is a record's.
	failedIn := map[int]int{} // epoch -> the first commit that failed
	for _, id := range order {
		c, e := commits[id], epochOf[id]
		first, failed := failedIn[e]
		switch {
		case c.abort:
			g.violate("writer %d aborted, but entered the queue", id)
		case failed && c.err == nil:
			g.violate("writer %d succeeded, queued after writer %d failed (%v) in the same run of the queue", id, first, commits[first].err)
		case !failed && c.err != nil:
			if !cqRecordFailed(c.err) || errors.Is(c.err, ErrEarlierCommitFailed) {
				g.violate("writer %d failed (%v), first of its run of the queue, but not by its record", id, c.err)
			}
			failedIn[e] = id
		}
	}
	for _, c := range commits {
		for _, tip := range c.tipOf {
			if commits[tip].err != nil && c.err == nil {
				g.violate("writer %d began from the tip of writer %d, which failed (%v), yet succeeded", c.id, tip, commits[tip].err)
			}
		}
	}
	g.mu.Lock()
	for v := range g.visible {
		if owner, ok := g.valueOwner[v]; ok && commits[owner].err != nil {
			g.violations = append(g.violations, fmt.Sprintf("value %d of writer %d, which failed (%v), was published", v, owner, commits[owner].err))
		}
	}
	g.mu.Unlock()

	// Property 4: replay the acknowledged commits.
	final := g.db.ReadTxn()
	for _, name := range g.names {
		var acked []*cqCommit
		for _, c := range commits {
			if _, wrote := c.writes[name]; wrote && c.done && c.err == nil {
				acked = append(acked, c)
			}
		}
		slices.SortFunc(acked, func(x, y *cqCommit) int { return int(x.revs[name]) - int(y.revs[name]) })
		state := map[uint64]int{}
		for i, c := range acked {
			if i > 0 && c.revs[name] == acked[i-1].revs[name] {
				g.violate("table %q: writers %d and %d both acknowledged at revision %d", name, acked[i-1].id, c.id, c.revs[name])
			}
			if !maps.Equal(c.views[name], state) {
				g.violate("table %q: writer %d (revision %d) began from %v, but the acknowledged commits before it leave %v",
					name, c.id, c.revs[name], c.views[name], state)
			}
			for _, wr := range c.writes[name] {
				if wr.deleted {
					delete(state, wr.id)
				} else {
					state[wr.id] = wr.value
				}
			}
		}
		if got := cqContents(final, g.tables[name]); !maps.Equal(got, state) {
			g.violate("table %q ends %v; the acknowledged commits give %v", name, got, state)
		}
	}

	// Property 5's watches: every watched object that changed closed its
	// channel.
	for _, w := range g.watches {
		now := valueOf(g.t, final, g.tables[w.table], w.id)
		if now != w.value && !isClosedChan(w.ch) {
			g.violate("%q id=%d %d changed (now %d), but a reader's watch of it is open", w.table, w.id, w.value, now)
		}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.violations, "\n")
}

// runCQModel runs one seed of cfg, and returns what went wrong, or "",
// and the history.
func runCQModel(t *testing.T, cfg cqConfig, seed int64) (string, string) {
	g := newCQRig(t, cfg, seed)
	for begun, steps := 0, 0; begun < cfg.commits && steps < 100000; steps++ {
		synctest.Wait()
		g.observe()
		if g.step() {
			begun++
		}
	}
	if !g.settle() {
		g.violate("writers never returned: deadlock or a lost wake-up")
		// Let the bubble end: fail every record still waited for, and
		// release whatever is held, until every writer returned.
		for range 1000 {
			g.s.Release(g.rng)
			g.j.sync(g.j.numPending(), errCQInjected)
			synctest.Wait()
		}
		return strings.Join(g.violations, "\n"), g.s.History()
	}
	// A last writer of each table begins from the published state (a
	// failed tip is dropped first).
	for _, name := range g.names {
		g.mu.Lock()
		g.nextValue++
		c := &cqCommit{
			tables: []string{name}, writes: map[string][]cqWrite{name: {{id: 0, value: g.nextValue}}},
			views: map[string]map[uint64]int{}, revs: map[string]Revision{},
		}
		c.id = len(g.commits)
		g.commits = append(g.commits, c)
		g.valueOwner[g.nextValue] = c.id
		g.active++
		g.mu.Unlock()
		g.wg.Add(1)
		go g.writer(c)
		if !g.settle() {
			g.violate("the last writer of %q never returned", name)
			return strings.Join(g.violations, "\n"), g.s.History()
		}
	}
	return g.finish(), g.s.History()
}

// TestCommitQueueModelLeavesPoolClean: the transactions a model run
// recycles hold no channel of its synctest bubble. A done channel that
// reached txnCorePool made a later commit outside the bubble that drew
// that txnCore die ("fatal error: receive on synctest channel from
// outside bubble"): the full test run failed, or not, by the pool's
// order. This test dies the same way if one is left there.
func TestCommitQueueModelLeavesPoolClean(t *testing.T) {
	cfg := cqConfig{name: "one-table", writers: 3, commits: 24}
	synctest.Test(t, func(t *testing.T) {
		if report, history := runCQModel(t, cfg, 1); report != "" {
			t.Fatalf("%s\nhistory:\n%s", report, history)
		}
	})
	// Outside the bubble, every pooled txnCore's done channel must be
	// usable.
	var drawn []*txnCore
	for range 1000 {
		w := txnCorePool.Get().(*txnCore)
		drawn = append(drawn, w)
		if w.done != nil {
			select {
			case <-w.done:
			default:
			}
		}
	}
	for _, w := range drawn {
		txnCorePool.Put(w)
	}
}
