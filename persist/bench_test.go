package persist

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// The benchmarks run on the operating system's file system, in temporary
// directories: syncs are real. README.md has the figures and the commands.

var recoveryObjects = flag.Int("persist.recovery", 1_000_000, "objects of BenchmarkRecovery")

// benchName is 90 bytes: with the ID and the value, an item's encoding is
// 100 bytes.
var benchName = strings.Repeat("n", 90)

// benchKeySpace is how many distinct objects the commit benchmarks cycle
// through, so that the table stays the same size.
const benchKeySpace = 10_000

func benchItem(id uint64) *item { return &item{ID: id, Name: benchName, Value: int64(id)} }

func benchOpen(b *testing.B, mode SyncMode) *Store {
	s, err := Open(b.TempDir(), Options{Sync: mode, Logger: quietLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

var benchModes = []struct {
	name string
	mode SyncMode
}{
	{"Sync", Sync{}},
	{"Buffered", Buffered{Interval: 100 * time.Millisecond}},
}

// BenchmarkCommit compares a commit of n objects to a persisted table
// (persisted: a write transaction, n inserts, Commit through the store)
// with a raw Pebble batch of the same keys and values written the same way
// (raw: the same encoding, SetDeferred into a reused batch, one Commit with
// the same sync option), with the store's own calls alone (journal: what
// the layer adds to raw), and with the same transaction on a table that
// is not persisted (memory): persisted costs about memory + journal.
func BenchmarkCommit(b *testing.B) {
	for _, m := range benchModes {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/objects=%d/persisted", m.name, n), func(b *testing.B) {
				s := benchOpen(b, m.mode)
				db := strata.New()
				tbl := itemTable(b, s, db, "items", nil)
				benchCommits(b, db, tbl, n)
			})
			b.Run(fmt.Sprintf("%s/objects=%d/raw", m.name, n), func(b *testing.B) {
				s := benchOpen(b, m.mode)
				benchRawCommits(b, s, n)
			})
			b.Run(fmt.Sprintf("%s/objects=%d/journal", m.name, n), func(b *testing.B) {
				s := benchOpen(b, m.mode)
				benchJournalCommits(b, s, n)
			})
			b.Run(fmt.Sprintf("%s/objects=%d/memory", m.name, n), func(b *testing.B) {
				db := strata.New()
				tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
				benchCommits(b, db, tbl, n)
			})
		}
	}
}

func benchCommits(b *testing.B, db *strata.DB, tbl strata.RWTable[*item], n int) {
	objs := make([]*item, benchKeySpace)
	for i := range objs {
		objs[i] = benchItem(uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	next := 0
	for range b.N {
		txn := db.WriteTxn(tbl)
		for range n {
			// A copy: an inserted object may not be inserted again.
			o := *objs[next]
			if _, _, err := tbl.Insert(txn, &o); err != nil {
				b.Fatal(err)
			}
			next = (next + 1) % benchKeySpace
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRawCommits(b *testing.B, s *Store, n int) {
	keys := makeTableKeys(1)
	codec := Binary[item]()
	objs := make([]*item, benchKeySpace)
	pks := make([][]byte, benchKeySpace)
	for i := range objs {
		objs[i] = benchItem(uint64(i))
		pks[i] = index.Uint64(uint64(i))
	}
	batch := s.db.NewBatch()
	var buf []byte
	var rev uint64
	b.ReportAllocs()
	b.ResetTimer()
	next := 0
	for range b.N {
		for range n {
			o := *objs[next]
			rev++
			buf = appendValueHeader(buf[:0], 1, rev)
			buf, _ = codec.Append(buf, &o)
			op := batch.SetDeferred(len(keys.prefix)+len(pks[next]), len(buf))
			copy(op.Key[copy(op.Key, keys.prefix):], pks[next])
			copy(op.Value, buf)
			if err := op.Finish(); err != nil {
				b.Fatal(err)
			}
			next = (next + 1) % benchKeySpace
		}
		if err := batch.Commit(s.writeOpts); err != nil {
			b.Fatal(err)
		}
		// Synced the same way: in Buffered mode by the store's sync loop.
		s.unsynced.Store(s.buffered)
		batch.Reset()
	}
}

// benchJournalCommits makes the store's own calls of a commit, as the
// database makes them (Begin, an Upsert per object, SetRevision, Commit),
// without the in-memory transaction: the layer's own cost, to compare
// with raw.
func benchJournalCommits(b *testing.B, s *Store, n int) {
	tj := &tableJournal[*item]{codec: Binary[item](), version: 1, keys: makeTableKeys(1)}
	objs := make([]*item, benchKeySpace)
	pks := make([][]byte, benchKeySpace)
	for i := range objs {
		objs[i] = benchItem(uint64(i))
		pks[i] = index.Uint64(uint64(i))
	}
	var rev uint64
	b.ReportAllocs()
	b.ResetTimer()
	next := 0
	for range b.N {
		jb := s.Begin()
		for range n {
			o := *objs[next]
			rev++
			if err := tj.Upsert(jb, pks[next], &o, rev); err != nil {
				b.Fatal(err)
			}
			next = (next + 1) % benchKeySpace
		}
		if err := tj.SetRevision(jb, rev); err != nil {
			b.Fatal(err)
		}
		if err := jb.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentWriters: writers commit one object each, in Sync
// mode: one writer, and eight at once, in alternating rounds of 200
// commits, so that both see the same machine load (b.N commits each). It
// reports commits/s of each, the speedup of eight over one, and the
// commits per log sync of the eight. Concurrent commits share syncs (group
// commit):
//
//   - tables=8: each writer commits to its own persisted table;
//   - tables=1: all of them to one persisted table (each its own keys),
//     whose lock each commit releases once its record is queued (early
//     lock release);
//   - raw: each writer commits a raw Pebble batch of the same bytes, the
//     baseline the other two are measured against.
func BenchmarkConcurrentWriters(b *testing.B) {
	for _, c := range []struct {
		name   string
		tables int
	}{{"tables=8", 8}, {"tables=1", 1}, {"raw", 0}} {
		b.Run(c.name, func(b *testing.B) { benchConcurrentWriters(b, c.tables) })
	}
}

// benchConcurrentWriters runs BenchmarkConcurrentWriters's writers on n
// tables (0: raw Pebble batches).
func benchConcurrentWriters(b *testing.B, n int) {
	const writers, round = 8, 200
	s := benchOpen(b, Sync{})
	db := strata.New()
	tables := make([]strata.RWTable[*item], n)
	for i := range tables {
		tables[i] = itemTable(b, s, db, fmt.Sprint("t", i), nil)
	}
	// commit writes writer i's j-th object.
	var commit func(i, j int) error
	if n == 0 {
		keys := makeTableKeys(1)
		codec := Binary[item]()
		commit = func(i, j int) error {
			batch := s.db.NewBatch()
			defer batch.Close()
			id := uint64(i*benchKeySpace + j%benchKeySpace)
			buf := appendValueHeader(nil, 1, uint64(j+1))
			buf, _ = codec.Append(buf, benchItem(id))
			pk := index.Uint64(id)
			op := batch.SetDeferred(len(keys.prefix)+len(pk), len(buf))
			copy(op.Key[copy(op.Key, keys.prefix):], pk)
			copy(op.Value, buf)
			if err := op.Finish(); err != nil {
				return err
			}
			return batch.Commit(pebble.Sync)
		}
	} else {
		commit = func(i, j int) error {
			tbl := tables[i%n]
			txn := db.WriteTxn(tbl)
			if _, _, err := tbl.Insert(txn, benchItem(uint64(i*benchKeySpace+j%benchKeySpace))); err != nil {
				txn.Abort()
				return err
			}
			_, err := txn.Commit()
			return err
		}
	}
	var committed atomic.Int64
	run := func(w, commits int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range w {
			count := commits / w
			if i < commits%w {
				count++
			}
			wg.Go(func() {
				for j := range count {
					if err := commit(i, j); err != nil {
						b.Error(err)
						return
					}
					committed.Add(1)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var one, eight time.Duration
	var syncs uint64 // by the rounds of eight
	runEight := func(n int) {
		before := s.Stats().WALSyncs
		eight += run(writers, n)
		syncs += s.Stats().WALSyncs - before
	}
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(round, b.N-done)
		if i%2 == 0 {
			one += run(1, n)
			runEight(n)
		} else {
			runEight(n)
			one += run(1, n)
		}
		done += n
	}
	b.StopTimer()
	if got := committed.Load(); got != 2*int64(b.N) {
		b.Fatalf("%d commits, want %d", got, 2*b.N)
	}
	b.ReportMetric(float64(b.N)/float64(syncs), "writers=8-commits/sync")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(b.N)/one.Seconds(), "writers=1-commits/s")
	b.ReportMetric(float64(b.N)/eight.Seconds(), "writers=8-commits/s")
	b.ReportMetric(one.Seconds()/eight.Seconds(), "speedup")
}

// recoveryDir is removed by TestMain.
var recoveryDir string

// recoveryStore is the directory of a closed store holding *recoveryObjects
// items in table "items", made once per run.
var recoveryStore = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "strata-persist-recovery-")
	if err != nil {
		return "", err
	}
	recoveryDir = dir
	s, err := Open(dir, Options{Sync: Buffered{}, Logger: quietLogger(nil)})
	if err != nil {
		return "", err
	}
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := Register(s, db, tbl, Binary[item]()); err != nil {
		return "", err
	}
	// The objects are written in a random order, so that their revisions
	// are not in key order, as in a table written over time.
	ids := rand.New(rand.NewPCG(1, 2)).Perm(*recoveryObjects)
	const batch = 10_000
	for i := 0; i < *recoveryObjects; i += batch {
		txn := db.WriteTxn(tbl)
		for _, id := range ids[i:min(i+batch, *recoveryObjects)] {
			// Names repeat every 1000 objects: a secondary index with
			// 1000 objects per key.
			if _, _, err := tbl.Insert(txn, &item{ID: uint64(id), Name: fmt.Sprintf("%090d", id%1000), Value: int64(id)}); err != nil {
				return "", err
			}
		}
		if _, err := txn.Commit(); err != nil {
			return "", err
		}
	}
	// Compact, so that both readers scan table files.
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return "", err
	}
	return dir, s.Close()
})

// BenchmarkRecovery loads *recoveryObjects objects (100-byte values, one
// secondary index) two ways, alternating in each iteration so that both
// see the same machine load: Open and Register (registered), and what a
// user of Pebble alone would write to load the same table (raw): open
// Pebble with the same options, scan the table's keys in order, decode each
// value with the same codec, and insert it into a primary and a secondary
// part.Tree in one part.Txn each, keyed as the table's indexes key it.
// Both opens are inside the timing; both closes outside. It reports each
// one's time per load, their ratio, the ratio of the process's CPU time
// during each (steadier than the time on a loaded machine; Unix only), the
// bytes each allocates per load and their ratio, and Register's objects
// per second.
func BenchmarkRecovery(b *testing.B) {
	dir, err := recoveryStore()
	if err != nil {
		b.Fatal(err)
	}
	var registered, raw recoveryCost
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			registered.add(measureRecovery(func() func() { return recoverRegistered(b, dir) }))
			raw.add(measureRecovery(func() func() { return recoverRaw(b, dir) }))
		} else {
			raw.add(measureRecovery(func() func() { return recoverRaw(b, dir) }))
			registered.add(measureRecovery(func() func() { return recoverRegistered(b, dir) }))
		}
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(registered.took.Seconds()/n, "registered-s/op")
	b.ReportMetric(raw.took.Seconds()/n, "raw-s/op")
	b.ReportMetric(float64(registered.took)/float64(raw.took), "registered/raw")
	if raw.cpu > 0 {
		b.ReportMetric(float64(registered.cpu)/float64(raw.cpu), "registered/raw-cpu")
	}
	b.ReportMetric(float64(registered.bytes)/n/1e6, "registered-MB/op")
	b.ReportMetric(float64(raw.bytes)/n/1e6, "raw-MB/op")
	b.ReportMetric(float64(registered.bytes)/float64(raw.bytes), "registered/raw-bytes")
	b.ReportMetric(float64(*recoveryObjects)*n/registered.took.Seconds(), "objects/s")
}

// recoveryCost sums the time, the process's CPU time and the bytes
// allocated of loads.
type recoveryCost struct {
	took, cpu time.Duration
	bytes     uint64
}

func (c *recoveryCost) add(d recoveryCost) { c.took += d.took; c.cpu += d.cpu; c.bytes += d.bytes }

// measureRecovery runs load, timing it and counting the CPU time and the
// bytes it allocates (the process's, which the other goroutines of the
// test binary barely add to), and then the function it returns (the
// close), untimed.
func measureRecovery(load func() func()) recoveryCost {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu, start := processCPU(), time.Now()
	closeIt := load()
	took, cpu := time.Since(start), processCPU()-cpu
	runtime.ReadMemStats(&after)
	closeIt()
	return recoveryCost{took: took, cpu: cpu, bytes: after.TotalAlloc - before.TotalAlloc}
}

// recoverRegistered opens the store and registers the table; it returns
// the function that closes the store.
func recoverRegistered(b *testing.B, dir string) func() {
	s, err := Open(dir, Options{Logger: quietLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := Register(s, db, tbl, Binary[item]()); err != nil {
		b.Fatal(err)
	}
	if n := tbl.NumObjects(db.ReadTxn()); n != *recoveryObjects {
		b.Fatalf("loaded %d objects", n)
	}
	return func() { s.Close() }
}

// revObj is an object and its revision, as the raw load keeps them.
type revObj[Obj any] struct {
	obj Obj
	rev strata.Revision
}

// recoverRaw loads the table with Pebble alone, as a user would: the
// primary tree keyed by the stored primary key, the secondary one by the
// escaped name followed by the primary key (as a non-unique index keys
// it). It returns the function that closes Pebble.
func recoverRaw(b *testing.B, dir string) func() {
	db, err := pebble.Open(dir, &pebble.Options{
		CacheSize:          defaultCacheSize,
		FormatMajorVersion: pebbleFormat,
		Logger:             &pebbleLogger{log: quietLogger(b), onFatal: func(error) {}, fs: vfs.Default},
	})
	if err != nil {
		b.Fatal(err)
	}
	keys := makeTableKeys(1)
	codec := Binary[item]()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: keys.prefix, UpperBound: keys.upper})
	if err != nil {
		b.Fatal(err)
	}
	primary := part.New[revObj[*item]]().Txn()
	byName := part.New[revObj[*item]]().Txn()
	var nameKey []byte
	for it.First(); it.Valid(); it.Next() {
		version, rev, data, err := parseValue(it.Value())
		if err != nil {
			b.Fatal(err)
		}
		o, err := codec.Decode(data, version)
		if err != nil {
			b.Fatal(err)
		}
		pk := it.Key()[len(keys.prefix):]
		primary.Insert(pk, revObj[*item]{o, rev})
		nameKey = append(index.AppendEscaped(nameKey[:0], index.String(o.Name)), pk...)
		byName.Insert(nameKey, revObj[*item]{o, rev})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		b.Fatal(err)
	}
	trees := [2]part.Tree[revObj[*item]]{primary.Commit(), byName.Commit()}
	if trees[0].Len() != *recoveryObjects || trees[1].Len() != *recoveryObjects {
		b.Fatalf("built %d and %d objects", trees[0].Len(), trees[1].Len())
	}
	return func() { db.Close() }
}
