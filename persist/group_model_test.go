package persist

// The interleaving test of the group commit (group.go) and of Buffered
// mode's periodic sync (store.go). Every hand-off between their goroutines
// passes through a hold point (holds.go), and each writer of the test
// holds at "begin" before each transaction. A scheduler
// (internal/holdtest) holds every goroutine that reaches one; the test,
// alone running once every other goroutine is held or durably blocked,
// picks with a seeded source what happens next: a held goroutine goes on,
// fake time passes, a reader checks a snapshot, or the store's file system
// is cloned as a power loss would leave it and the clone is checked. A
// seed is one order of the hand-offs; a failing seed replays
// (-persist.interleavings.seed).
//
// The writers commit real strata write transactions to durable tables
// (Register): each to a table of its own, all to one table (their commits
// then build on each other's, unpublished, through early lock release),
// or some to two tables in one transaction. Some variants fail the N-th
// Pebble commit of a group on demand (groupCommit.failApply).
//
// What must hold, whatever the order:
//
//  1. A Sync commit returns nil only once its batch is synced: a power
//     loss at any later step keeps it; and no reader sees a commit before
//     that (a snapshot read at a step holds nothing a power loss at that
//     step would lose). In Buffered mode, a periodic sync keeps every
//     commit acknowledged before it started.
//  2. Batches become durable in enqueue order: what a power loss keeps is
//     a prefix of the enqueued batches (of the applied ones, in Buffered
//     mode), and each transaction whole (both tables or neither).
//  3. An injected error fails exactly the commit it hit, those of its
//     group and all enqueued after (the store fails): every commit
//     enqueued before it succeeds, none from it on does, none of the
//     failed ones is ever durable. Every writer returns: a follower is
//     never left waiting without a leader (lost wake-up).
//  4. After Close and a reopen, the store holds exactly the acknowledged
//     commits: each writer's last acknowledged value.
//  5. No goroutine is left behind: the synctest bubble ends empty, and
//     goleak finds none after the seeds.
//
// Pebble lives in the synctest bubble: on vfs.MemFS (here the crashable
// one) it does no file I/O, its goroutines (the log writer's flush loop,
// flushes, compactions) wait on channels, sync.Cond and WaitGroups, which
// synctest sees as durably blocked, and Close stops them all. Tried first
// (a store opened, written and closed in a bubble), then the whole test:
// synctest.Wait never hung. Fake time matters here: the leader's wait for
// members is bounded by half the last group's latency, measured with
// time.Now, and Buffered mode syncs on a ticker; the scheduler lets fake
// time pass while goroutines are held (a slow sync, a slow member).
//
// Running it: go test -run TestGroupInterleavings ./persist runs 30 seeds
// per variant (180 in all, about 5 seconds); -persist.interleavings=N
// runs N per variant; -persist.interleavings.seed=S -v runs seed S only,
// with its schedule on failure.

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/holdtest"
	"go.uber.org/goleak"
)

var (
	groupSeeds = flag.Int("persist.interleavings", 30, "seeds of each variant of TestGroupInterleavings")
	groupSeed  = flag.Int64("persist.interleavings.seed", -1, "run TestGroupInterleavings with this seed only")
)

// groupVariant is a variant of the interleaving test.
type groupVariant struct {
	name    string
	writers int
	// tables: writer i writes table i%tables; with both, the odd writers
	// write tables 0 and 1 in each transaction.
	tables   int
	both     bool
	rounds   int
	failures bool // fail the N-th Pebble commit of a group
	alone    bool // groups too large to merge (maxGroupBytes 0)
	buffered bool
}

var groupVariants = []groupVariant{
	{name: "sync/own-tables", writers: 3, tables: 3, rounds: 4},
	{name: "sync/one-table", writers: 3, tables: 1, rounds: 4},
	{name: "sync/two-tables", writers: 4, tables: 2, both: true, rounds: 3},
	{name: "sync/failures", writers: 4, tables: 2, both: true, rounds: 3, failures: true},
	{name: "sync/failures/one-table/alone", writers: 3, tables: 1, rounds: 4, failures: true, alone: true},
	{name: "buffered", writers: 3, tables: 3, rounds: 4, buffered: true},
}

// groupCoverage counts the releases at each hold point, and the outcomes
// seen, over every seed of TestGroupInterleavings.
var groupCoverage = &holdtest.Coverage{}

var errInjected = errors.New("injected apply error")

func TestGroupInterleavings(t *testing.T) {
	groupCoverage.Reset()
	ran := 0
	defer func() {
		if t.Failed() || *groupSeed >= 0 || ran < len(groupVariants) {
			return // a failure, one seed or some variants: no coverage to check
		}
		want := []string{"begin", "enqueued", "woken", "lead", "member-wait", "gathered", "apply",
			"synced", "hand-over", "sync-start", "sync-end",
			"merged-group", "failed-group", "durable-clone", "sync-checked"}
		t.Logf("coverage: %s", groupCoverage)
		least := 10
		if testing.Short() {
			least = 2
		}
		if missing := groupCoverage.Missing(want, least); len(missing) > 0 {
			t.Errorf("reached fewer than %d times over every seed: %v (all: %s)", least, missing, groupCoverage)
		}
	}()
	defer func(old int) { maxGroupBytes = old }(maxGroupBytes)
	for _, v := range groupVariants {
		t.Run(v.name, func(t *testing.T) {
			ran++
			maxGroupBytes = 64 << 20
			if v.alone {
				maxGroupBytes = 0
			}
			seeds := *groupSeeds
			if testing.Short() {
				seeds = max(1, seeds/4)
			}
			first := int64(0)
			if *groupSeed >= 0 {
				first, seeds = *groupSeed, 1
			}
			for seed := first; seed < first+int64(seeds); seed++ {
				var report string
				// synctest.Test ends the test at once if the bubble's test
				// failed: say which seed inside.
				synctest.Test(t, func(t *testing.T) {
					defer func() {
						if t.Failed() {
							t.Logf("seed %d (replay: -run 'TestGroupInterleavings/%s' -persist.interleavings.seed=%d)", seed, v.name, seed)
						}
					}()
					report = runGroupModel(t, v, seed)
				})
				if report != "" {
					t.Fatalf("seed %d (replay: -run 'TestGroupInterleavings/%s' -persist.interleavings.seed=%d):\n%s",
						seed, v.name, seed, report)
				}
			}
		})
	}
	goleak.VerifyNone(t)
}

// commitID is a writer's commit: its number and the value it writes.
type commitID struct {
	who int
	v   int64
}

// groupRig is a store, a database with durable tables and the writers,
// whose goroutines the scheduler holds.
type groupRig struct {
	t     *testing.T
	v     groupVariant
	rng   *rand.Rand
	sched *holdtest.Scheduler[string]
	fs    *vfs.MemFS
	s     *Store
	db    *strata.DB
	tbls  []strata.RWTable[*item]
	// cur is the writer that runs between its "begin" and its Begin: the
	// who Begin gives the batch.
	cur atomic.Int64

	mu sync.Mutex
	// enqueued lists the commits in enqueue order; applied, in Buffered
	// mode, in apply order (the order of their acknowledgements: a
	// Buffered commit applies and returns with no hold between).
	enqueued []commitID
	applied  []commitID
	round    []int64 // each writer's current commit
	acked    []int64 // each writer's last acknowledged commit
	waited   []int64 // each writer's last commit whose Wait returned nil
	results  map[commitID]error
	visible  []int64 // each writer's value in the last snapshot read
	done     int     // writers returned
	// applies counts the Pebble commits of groups; failAt fails that one
	// (0: none); failed is the commit it failed.
	applies int
	failAt  int
	failed  *commitID
	// syncAcked, in Buffered mode, is what was acknowledged when the
	// periodic sync held at sync-end started; syncCheck is set when it
	// reaches sync-end, for the scheduler to check a clone then.
	syncAcked []int64
	syncCheck []int64

	vmu        sync.Mutex
	violations []string
}

func (g *groupRig) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.vmu.Lock()
	g.violations = append(g.violations, msg)
	g.vmu.Unlock()
	g.sched.Note("VIOLATION %s", msg)
}

// tablesOf returns the tables writer i writes in each transaction.
func (g *groupRig) tablesOf(i int) []strata.RWTable[*item] {
	if g.v.both && i%2 == 1 {
		return g.tbls[:2]
	}
	return g.tbls[i%g.v.tables : i%g.v.tables+1]
}

func runGroupModel(t *testing.T, v groupVariant, seed int64) string {
	g := &groupRig{
		t: t, v: v,
		rng:     rand.New(rand.NewPCG(uint64(seed), 0x9c0)),
		sched:   &holdtest.Scheduler[string]{Coverage: groupCoverage},
		fs:      vfs.NewCrashableMem(),
		round:   make([]int64, v.writers),
		acked:   make([]int64, v.writers),
		waited:  make([]int64, v.writers),
		visible: make([]int64, v.writers),
		results: map[commitID]error{},
	}
	if v.failures {
		g.failAt = 1 + g.rng.IntN(3*v.rounds)
	}
	opts := Options{FS: g.fs, Logger: slog.New(slog.DiscardHandler)}
	if v.buffered {
		opts.Sync = Buffered{Interval: time.Millisecond}
	}
	// The hooks are set before the store starts its goroutines, and hold
	// nothing until the tables are registered (armed).
	var armed atomic.Bool
	testHookOpen = func(s *Store) {
		testHookOpen = nil // the store of the seed, not the clones'
		s.group.who = func() int { return int(g.cur.Load()) }
		s.group.failApply = func(who, n int) error {
			if !armed.Load() {
				return nil
			}
			return g.failApply(who, n)
		}
		s.group.hold = func(p holdPoint, who int, err error) {
			if armed.Load() {
				g.hold(p, who, err)
			}
		}
	}
	s, err := Open("/db", opts)
	testHookOpen = nil
	if err != nil {
		t.Fatal(err)
	}
	g.s = s
	g.db = strata.New()
	for n := range v.tables {
		g.tbls = append(g.tbls, itemTable(t, s, g.db, fmt.Sprint("t", n), nil))
	}
	armed.Store(true)

	var wg sync.WaitGroup
	for i := range v.writers {
		wg.Go(func() { g.writer(i) })
	}

	steps := 40 + g.rng.IntN(40)
	for range steps {
		synctest.Wait()
		g.checkSync()
		if g.allDone() {
			break
		}
		switch x := g.rng.IntN(20); {
		case x < 14:
			g.sched.Release(g.rng)
		case x < 17:
			time.Sleep(time.Duration(1+g.rng.IntN(20)) * 100 * time.Microsecond)
		case x < 19:
			g.read()
		default:
			g.cloneCheck()
		}
	}
	// Let everything run to the end. Time passes now and then, so that the
	// leader's wait for members ends by its deadline too.
	for n := 0; ; n++ {
		if n == 100_000 {
			g.sched.FreeAll()
			t.Fatalf("seed %d: the writers never finished", seed)
		}
		synctest.Wait()
		g.checkSync()
		if g.allDone() {
			break
		}
		if g.sched.IsHeld("member-wait") && g.rng.IntN(3) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		if !g.sched.Release(g.rng) {
			if g.v.buffered {
				time.Sleep(time.Millisecond) // writers never wait for the sync
				continue
			}
			g.violate("3: writers blocked with none held: a lost wake-up (%d of %d returned)", g.doneCount(), v.writers)
			if !g.rescue() {
				g.sched.FreeAll()
				t.Fatalf("seed %d: writers blocked, none in the queue to wake:\n%s", seed, g.sched.History())
			}
		}
	}
	g.read()
	g.cloneCheck()
	g.sched.FreeAll()
	wg.Wait()
	g.checkErrors()

	err = s.Close()
	switch {
	case g.failed != nil && !errors.Is(err, ErrStoreFailed):
		g.violate("Close of a failed store: %v", err)
	case g.failed == nil && err != nil:
		g.violate("Close: %v", err)
	}
	// 4: after Close, the store holds exactly the acknowledged commits.
	durable, err := g.readDurable(g.fs.CrashClone(vfs.CrashCloneCfg{}))
	if err != nil {
		g.violate("reopen after Close: %v", err)
	} else {
		for i, d := range durable {
			if d != g.acked[i] {
				g.violate("after Close, writer %d holds %d; %d was its last acknowledged commit", i, d, g.acked[i])
			}
		}
	}

	if len(g.violations) == 0 {
		return ""
	}
	return strings.Join(g.violations, "\n") + "\nschedule (latest events):\n" + g.sched.History()
}

var errLostWakeup = errors.New("woken by the test: lost wake-up")

// rescue fails the commits left in the group commit's queue with no
// leader, so that their writers return and the seed ends; it reports
// whether there were any.
func (g *groupRig) rescue() bool {
	gc := &g.s.group
	gc.mu.Lock()
	q := gc.queue
	gc.queue = nil
	gc.queued.Store(0)
	gc.leading = false
	gc.mu.Unlock()
	for _, jb := range q {
		jb.done <- errLostWakeup
	}
	return len(q) > 0
}

// hold is the store's hold hook: it records what the test checks at some
// points, and holds the goroutine.
func (g *groupRig) hold(p holdPoint, who int, err error) {
	switch p {
	case holdWoken, holdHandOver:
		if err == nil {
			// Wait returns nil next: the journal acknowledges it.
			g.mu.Lock()
			g.waited[who] = g.round[who]
			g.mu.Unlock()
		}
	case holdEnqueued:
		g.mu.Lock()
		g.enqueued = append(g.enqueued, commitID{who, g.round[who]})
		g.mu.Unlock()
	case holdSyncEnd:
		g.mu.Lock()
		g.syncCheck = g.syncAcked
		g.mu.Unlock()
	}
	g.sched.Hold(p.String(), who)
	if p == holdSyncStart {
		// Going on: what is acknowledged now must be durable once
		// this sync ends.
		g.mu.Lock()
		g.syncAcked = slices.Clone(g.acked)
		g.mu.Unlock()
	}
}

// writer i commits v.rounds transactions, holding at "begin" before
// each. It goes on after a failure: the later commits fail too.
func (g *groupRig) writer(i int) {
	defer func() {
		g.mu.Lock()
		g.done++
		g.mu.Unlock()
	}()
	tbls := g.tablesOf(i)
	for v := int64(1); v <= int64(g.v.rounds); v++ {
		g.sched.Hold("begin", i)
		g.cur.Store(int64(i))
		g.mu.Lock()
		g.round[i] = v
		g.mu.Unlock()
		var txn strata.WriteTxn
		if len(tbls) == 1 {
			txn = g.db.WriteTxn(tbls[0])
		} else {
			txn = g.db.WriteTxn(tbls[0], tbls[1])
		}
		for _, tbl := range tbls {
			if _, _, err := tbl.Insert(txn, &item{ID: uint64(i), Name: "w", Value: v}); err != nil {
				g.violate("writer %d: insert: %v", i, err)
			}
		}
		_, err := txn.Commit()
		c := commitID{i, v}
		g.mu.Lock()
		g.results[c] = err
		if err == nil {
			g.acked[i] = v
			if g.v.buffered {
				g.applied = append(g.applied, c)
			}
		}
		g.mu.Unlock()
		g.sched.Note("writer %d: commit %d: %v", i, v, err)
		if err != nil {
			continue
		}
		// Done only when done: the commit is visible once Commit returns.
		if got := g.valueIn(g.db.ReadTxn(), i); got < v {
			g.violate("writer %d: commit %d returned, a snapshot shows %d", i, v, got)
		}
	}
}

// failApply counts the Pebble commits of groups, fails the one the seed
// chose, and counts merged groups.
func (g *groupRig) failApply(who, n int) error {
	if n > 1 {
		g.sched.Coverage.Add("merged-group")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applies++
	if g.applies != g.failAt {
		return nil
	}
	g.failed = &commitID{who, g.round[who]}
	g.sched.Coverage.Add("failed-group")
	g.sched.Note("apply of %v (%d commits) fails", *g.failed, n)
	return errInjected
}

func (g *groupRig) allDone() bool { return g.doneCount() == g.v.writers }

func (g *groupRig) doneCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.done
}

// valueIn returns writer i's value in txn (0 if none), and reports a
// transaction seen in part (its two tables disagree).
func (g *groupRig) valueIn(txn strata.ReadTxn, i int) int64 {
	val := int64(-1)
	for _, tbl := range g.tablesOf(i) {
		o, _, found := tbl.Get(txn, itemByID.Query(uint64(i)))
		got := int64(0)
		if found {
			got = o.Value
		}
		if val >= 0 && got != val {
			g.violate("writer %d: a snapshot shows its commits %d and %d in its two tables", i, val, got)
		}
		val = got
	}
	return val
}

// read reads a snapshot, as a reader would: each writer's value never
// goes back.
func (g *groupRig) read() []int64 {
	txn := g.db.ReadTxn()
	vals := make([]int64, g.v.writers)
	for i := range vals {
		vals[i] = g.valueIn(txn, i)
		if vals[i] < g.visible[i] {
			g.violate("writer %d: a snapshot shows %d after one showed %d", i, vals[i], g.visible[i])
		}
	}
	g.visible = vals
	g.sched.Note("read %v", vals)
	return vals
}

// cloneCheck, with every other goroutine held or blocked, clones the
// file system as a power loss now would leave it and checks what the
// clone holds against what was acknowledged, seen and enqueued.
func (g *groupRig) cloneCheck() {
	vals := g.read()
	durable, err := g.readDurable(g.fs.CrashClone(vfs.CrashCloneCfg{}))
	if err != nil {
		g.violate("reopen a power-loss clone: %v", err)
		return
	}
	g.sched.Coverage.Add("durable-clone")
	g.sched.Note("durable %v", durable)
	g.mu.Lock()
	acked := slices.Clone(g.acked)
	waited := slices.Clone(g.waited)
	order := slices.Clone(g.enqueued)
	if g.v.buffered {
		order = slices.Clone(g.applied)
	}
	g.mu.Unlock()
	for i := range durable {
		if g.v.buffered {
			continue // acknowledged and seen before its sync
		}
		if durable[i] < acked[i] {
			g.violate("1: writer %d: commit %d acknowledged, a power loss keeps %d", i, acked[i], durable[i])
		}
		if durable[i] < waited[i] {
			g.violate("1: writer %d: the journal's Wait of commit %d returns nil, a power loss keeps %d", i, waited[i], durable[i])
		}
		if durable[i] < vals[i] {
			g.violate("1: writer %d: commit %d seen by a reader, a power loss keeps %d", i, vals[i], durable[i])
		}
	}
	g.checkPrefix(durable, order)
}

// checkPrefix checks that the commits durable holds (each writer's up to
// its value) are a prefix of order, and none failed.
func (g *groupRig) checkPrefix(durable []int64, order []commitID) {
	in := func(c commitID) bool { return c.v <= durable[c.who] }
	gap := -1
	for k, c := range order {
		switch {
		case !in(c) && gap < 0:
			gap = k
		case in(c) && gap >= 0:
			g.violate("2: %v is durable, %v enqueued before it is not", c, order[gap])
		}
	}
	for i, d := range durable {
		if d > 0 && !slices.Contains(order, commitID{i, d}) {
			g.violate("2: writer %d: commit %d is durable, never enqueued (applied)", i, d)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, err := range g.results {
		if err != nil && in(c) {
			g.violate("3: %v failed (%v), and is durable", c, err)
		}
	}
}

// checkSync checks, once the periodic sync reached sync-end, that a power
// loss keeps every commit acknowledged before it started.
func (g *groupRig) checkSync() {
	g.mu.Lock()
	want := g.syncCheck
	g.syncCheck = nil
	g.mu.Unlock()
	if want == nil || !g.sched.IsHeld("sync-end") {
		return
	}
	durable, err := g.readDurable(g.fs.CrashClone(vfs.CrashCloneCfg{}))
	if err != nil {
		g.violate("reopen a power-loss clone: %v", err)
		return
	}
	g.sched.Coverage.Add("sync-checked")
	for i := range durable {
		if durable[i] < want[i] {
			g.violate("1: writer %d: commit %d acknowledged before a periodic sync, after it a power loss keeps %d", i, want[i], durable[i])
		}
	}
}

// checkErrors checks property 3 on the writers' results.
func (g *groupRig) checkErrors() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.results) != g.v.writers*g.v.rounds {
		g.violate("3: %d commits returned, want %d", len(g.results), g.v.writers*g.v.rounds)
	}
	if g.failed == nil {
		for c, err := range g.results {
			if err != nil {
				g.violate("3: %v failed with no error injected: %v", c, err)
			}
		}
		return
	}
	k := slices.Index(g.enqueued, *g.failed)
	if k < 0 {
		g.violate("3: the failed commit %v was never enqueued", *g.failed)
		return
	}
	if err := g.results[*g.failed]; !errors.Is(err, errInjected) {
		g.violate("3: the commit whose apply failed, %v, returned %v", *g.failed, err)
	}
	for j, c := range g.enqueued {
		err := g.results[c]
		switch {
		case j < k && err != nil:
			g.violate("3: %v, enqueued before the failed %v, failed: %v", c, *g.failed, err)
		case j >= k && err == nil:
			g.violate("3: %v, enqueued after the failed %v, succeeded", c, *g.failed)
		}
	}
	// A commit that began after the failure fails before it is enqueued:
	// the store refuses it, or the database does, while commits queued
	// before it are still failing (strata's commit queue, invariant 4).
	for c, err := range g.results {
		if err != nil && !slices.Contains(g.enqueued, c) &&
			!errors.Is(err, ErrStoreFailed) && !errors.Is(err, strata.ErrEarlierCommitFailed) {
			g.violate("3: %v failed before it was enqueued, not as the store or an earlier commit failed: %v", c, err)
		}
	}
}

// readDurable opens a store on fs and returns each writer's value in it.
func (g *groupRig) readDurable(fs vfs.FS) ([]int64, error) {
	s, err := Open("/db", Options{FS: fs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	db := strata.New()
	var tbls []strata.RWTable[*item]
	for n := range g.v.tables {
		tbl, err := strata.NewTable(db, fmt.Sprint("t", n), itemByID, itemByName)
		if err != nil {
			return nil, err
		}
		if err := Register(s, db, tbl, Binary[item]()); err != nil {
			return nil, err
		}
		tbls = append(tbls, tbl)
	}
	txn := db.ReadTxn()
	vals := make([]int64, g.v.writers)
	for i := range vals {
		w := g.tablesOf(i)
		for n, tbl := range w {
			o, _, found := tbls[slices.Index(g.tbls, tbl)].Get(txn, itemByID.Query(uint64(i)))
			got := int64(0)
			if found {
				got = o.Value
			}
			if n > 0 && got != vals[i] {
				return nil, fmt.Errorf("2: writer %d: torn: its tables hold %d and %d", i, vals[i], got)
			}
			vals[i] = got
		}
	}
	return vals, nil
}
