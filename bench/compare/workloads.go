package main

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Kind tells which implementations a workload runs against.
type Kind int

const (
	KindDB     Kind = iota // strata, statedb, memdb through DB
	KindRadix              // part, statedb/part, iradix through Radix
	KindMemory             // strata, statedb, memdb: heap bytes per object
	KindRead               // strata, statedb, bare iradix through Reads (reads.go)
	KindLPM                // strata, statedb through LPMDB (lpm.go)
)

// Workload is one comparison, written once for every implementation.
type Workload struct {
	Name  string
	Op    string // what one op is
	Group string // write, read, radix, memory: caches live within a group
	Kind  Kind
	DB    func(b *testing.B, f Factory)
	// NA lists the implementations that lack what the workload measures:
	// not run, shown as n/a.
	NA    []string
	Radix func(b *testing.B, f RadixFactory)
	Read  func(b *testing.B, f ReadFactory)
	LPM   func(b *testing.B, f LPMFactory)
	// Memory builds the data set and returns the heap bytes per object.
	Memory func(f Factory) (float64, error)
}

// Sizes of the large data sets; smoke mode shrinks them.
type Sizes struct {
	IterN     int // objects of FullIteration_All
	RadixBigN int // keys in the large radix trees
	MemN      int // objects in the memory workload
	AndN      int // objects of the And workloads (and.go)
	DeleteN   int // objects of the DeleteMatches and ModifyMatches workloads (bulk.go)
	LargeN    int // objects of PointGets_Large (reads.go)
}

var (
	fullSizes  = Sizes{IterN: 100_000, RadixBigN: 1_000_000, MemN: 1_000_000, AndN: 1_000_000, DeleteN: 1_000_000, LargeN: 1_000_000}
	smokeSizes = Sizes{IterN: 10_000, RadixBigN: 10_000, MemN: 10_000, AndN: 10_000, DeleteN: 10_000, LargeN: 10_000}
)

// batchN is the number of objects of the write and lookup workloads, as in
// the root suite (numObjectsToInsert).
const batchN = 1000

// ---- failure reporting ---------------------------------------------------

// testing.Benchmark discards a benchmark's log, so workloads report
// failures here; the driver prints them and exits non-zero.
var failures struct {
	sync.Mutex
	msgs []string
}

func fatalf(b *testing.B, format string, args ...any) {
	failures.Lock()
	failures.msgs = append(failures.msgs, fmt.Sprintf(format, args...))
	failures.Unlock()
	b.FailNow()
}

func takeFailures() []string {
	failures.Lock()
	defer failures.Unlock()
	m := failures.msgs
	failures.msgs = nil
	return m
}

// ---- helpers -------------------------------------------------------------

func mustNew(b *testing.B, f Factory, s Schema) DB {
	d, err := f.New(s)
	if err != nil {
		fatalf(b, "%s: new: %v", f.Name, err)
	}
	return d
}

// insertAll inserts objs in transactions of batchN.
func insertAll(b *testing.B, d DB, objs []*Object) {
	for i := 0; i < len(objs); i += batchN {
		w := d.WriteTxn()
		for _, o := range objs[i:min(i+batchN, len(objs))] {
			if err := w.Insert(o); err != nil {
				w.Abort()
				fatalf(b, "setup insert %d: %v", o.ID, err)
			}
		}
		w.Commit()
	}
}

func expectCount(b *testing.B, d DB, want int) {
	if n := d.ReadTxn().Count(); n != want {
		fatalf(b, "table has %d objects, want %d", n, want)
	}
}

func insertOrFail(b *testing.B, w WTxn, o *Object) {
	if err := w.Insert(o); err != nil {
		fatalf(b, "Insert(%d): %v", o.ID, err)
	}
}

// ---- write workloads -----------------------------------------------------

// writeTxn1: one insert of the same ID per transaction.
func writeTxn1(b *testing.B, f Factory) {
	d := mustNew(b, f, Schema{})
	objs := [2]*Object{{ID: 123}, {ID: 123}}
	i := 0
	for b.Loop() {
		w := d.WriteTxn()
		insertOrFail(b, w, objs[i&1])
		w.Commit()
		i++
	}
	expectCount(b, d, 1)
}

// writeBatch: b.N objects with IDs 0..batch-1 in transactions of batch; one
// op is one object. After the first transaction the inserts replace.
func writeBatch(batch int, schema Schema, tags []string) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := mustNew(b, f, schema)
		gens := generations(batch, func(o *Object) { o.Tags = tags })
		b.ResetTimer()
		for n, g := b.N, 0; n > 0; g++ {
			k := min(n, batch)
			w := d.WriteTxn()
			for _, o := range gens[g&1][:k] {
				insertOrFail(b, w, o)
			}
			w.Commit()
			n -= k
		}
		b.StopTimer()
		expectCount(b, d, min(b.N, batch))
		if schema.Tags {
			if r := d.ReadTxn().ListByTag(tags[0]); r.N != min(b.N, batch) {
				fatalf(b, "tag %q lists %d objects, want %d", tags[0], r.N, min(b.N, batch))
			}
		}
	}
}

// commitOnly: a write transaction with no writes, committed.
func commitOnly(extra int) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := mustNew(b, f, Schema{Tags: true, ExtraTables: extra})
		for b.Loop() {
			d.WriteTxn().Commit()
		}
		expectCount(b, d, 0)
	}
}

func newWriteTxnAbort(b *testing.B, f Factory) {
	d := mustNew(b, f, Schema{Tags: true})
	for b.Loop() {
		d.WriteTxn().Abort()
	}
	expectCount(b, d, 0)
}

// txnOf1000 runs ops that each are one transaction over batchN objects,
// visiting IDs in order. populate inserts generation 0 first; each op writes
// the other generation than the previous op did. body does the per-object
// work.
func txnOf1000(schema Schema, fill func(*Object), order []uint64, populate bool,
	body func(b *testing.B, w WTxn, id uint64, o *Object),
	check func(b *testing.B, d DB, last []*Object)) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := mustNew(b, f, schema)
		gens := generations(batchN, fill)
		if populate {
			insertAll(b, d, gens[0])
		}
		g := 1
		for b.Loop() {
			w := d.WriteTxn()
			objs := gens[g&1]
			for _, id := range order {
				body(b, w, id, objs[id])
			}
			w.Commit()
			g++
		}
		expectCount(b, d, batchN)
		if check != nil {
			check(b, d, gens[(g-1)&1])
		}
	}
}

func sequentialIDs(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	return ids
}

func insertBody(b *testing.B, w WTxn, _ uint64, o *Object) { insertOrFail(b, w, o) }

func modifyBody(b *testing.B, w WTxn, _ uint64, o *Object) {
	if err := w.Modify(o); err != nil {
		fatalf(b, "Modify(%d): %v", o.ID, err)
	}
}

func getInsertBody(b *testing.B, w WTxn, id uint64, o *Object) {
	old, ok := w.Get(id)
	if !ok || old.ID != id {
		fatalf(b, "Get(%d) = %v, %v", id, old, ok)
	}
	insertOrFail(b, w, o)
}

// checkLatest: every object is the one the last op wrote.
func checkLatest(b *testing.B, d DB, last []*Object) {
	r := d.ReadTxn()
	for _, o := range last {
		if got, ok := r.Get(o.ID); !ok || got != o {
			fatalf(b, "Get(%d) is not the last written object", o.ID)
		}
	}
}

func checkOddEven(b *testing.B, d DB, last []*Object) {
	checkLatest(b, d, last)
	if r := d.ReadTxn().ListByTag("even"); r.N != batchN/2 {
		fatalf(b, "tag even lists %d objects, want %d", r.N, batchN/2)
	}
}

// deleteWorkload: one op deletes batchN objects in random order and commits;
// putting them back is not timed.
func deleteWorkload(b *testing.B, f Factory) {
	d := mustNew(b, f, Schema{})
	objs := generations(batchN, nil)[0]
	order := shuffledIDs(batchN, seedOrder)
	insertAll(b, d, objs)
	for b.Loop() {
		w := d.WriteTxn()
		for _, id := range order {
			if ok, err := w.Delete(objs[id]); !ok || err != nil {
				fatalf(b, "Delete(%d) = %v, %v", id, ok, err)
			}
		}
		w.Commit()
		b.StopTimer()
		expectCount(b, d, 0)
		insertAll(b, d, objs)
		b.StartTimer()
	}
	expectCount(b, d, batchN)
}

// changesWorkload is the root suite's DB_Changes (statedb's): one op inserts
// batchN objects in a transaction, consumes their batchN upserts from a
// change feed, deletes them all (DeleteAll) in a transaction, waits for the
// channel the feed returned and consumes the batchN deletes. Without a feed
// it is DB_Changes_Baseline: the same writes, nobody observing.
//
// With fresh, every insert allocates its object, as statedb's DB_Changes
// and the root suite's do. Without, the objects are the same pointers every
// op (the table is empty when they go in again): the writes are cheaper, so
// what the feed costs is a larger share of the op.
func changesWorkload(feed, fresh bool) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := mustNew(b, f, Schema{})
		objs := generations(batchN, nil)[0]
		sum := uint64(batchN * (batchN - 1) / 2)
		var fd Feed
		if feed {
			fr, ok := d.(Feeder)
			if !ok {
				b.Skipf("%s has no change feeds", f.Name)
			}
			var err error
			if fd, err = fr.Changes(); err != nil {
				fatalf(b, "Changes: %v", err)
			}
			defer fd.Close()
		}
		for b.Loop() {
			w := d.WriteTxn()
			for i, o := range objs {
				if fresh {
					o = &Object{ID: uint64(i)}
				}
				insertOrFail(b, w, o)
			}
			w.Commit()
			var watch <-chan struct{}
			if fd != nil {
				var r FeedResult
				if r, watch = fd.Next(); r != (FeedResult{Upserts: batchN, Sum: sum}) {
					fatalf(b, "Next after the inserts: %+v, want %d upserts", r, batchN)
				}
			}
			w = d.WriteTxn()
			if err := w.DeleteAll(); err != nil {
				fatalf(b, "DeleteAll: %v", err)
			}
			w.Commit()
			if fd != nil {
				<-watch
				if r, _ := fd.Next(); r != (FeedResult{Deletes: batchN, Sum: sum}) {
					fatalf(b, "Next after DeleteAll: %+v, want %d deletes", r, batchN)
				}
			}
		}
		b.StopTimer()
		expectCount(b, d, 0)
		if fd != nil {
			if r, _ := fd.Next(); r != (FeedResult{}) {
				fatalf(b, "Next on a drained feed: %+v", r)
			}
		}
		b.ReportMetric(float64(b.N*batchN)/b.Elapsed().Seconds(), "objects/sec")
	}
}

// ---- read workloads ------------------------------------------------------

// newFilled returns a new database of the schema holding objs.
func newFilled(b *testing.B, f Factory, s Schema, objs []*Object) DB {
	d := mustNew(b, f, s)
	insertAll(b, d, objs)
	expectCount(b, d, len(objs))
	return d
}

func newReadTxn(b *testing.B, f Factory) {
	d := mustNew(b, f, Schema{Tags: true})
	for b.Loop() {
		if d.ReadTxn() == nil {
			fatalf(b, "nil ReadTxn")
		}
	}
}

// randomLookup: 1000 objects; one op is a new ReadTxn and a Get by ID of
// each object, in random order.
func randomLookup(b *testing.B, f Factory) {
	d := newFilled(b, f, Schema{}, generations(batchN, nil)[0])
	ids := shuffledIDs(batchN, seedProbe)
	for b.Loop() {
		r := d.ReadTxn()
		for _, id := range ids {
			if o, ok := r.Get(id); !ok || o.ID != id {
				fatalf(b, "Get(%d) = %v, %v", id, o, ok)
			}
		}
	}
}

func objectName(i int) string { return fmt.Sprintf("object-%04d", i) }

// getSecondaryUnique: 1000 objects with unique names; one op is a Get by
// name of each object, in random order, through one ReadTxn.
func getSecondaryUnique(b *testing.B, f Factory) {
	objs := generations(batchN, func(o *Object) { o.Name = objectName(int(o.ID)) })[0]
	d := newFilled(b, f, Schema{Name: true}, objs)
	ids := shuffledIDs(batchN, seedProbe)
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = objectName(int(id))
	}
	r := d.ReadTxn()
	for b.Loop() {
		for i, name := range names {
			if o, ok := r.GetByName(name); !ok || o.ID != ids[i] {
				fatalf(b, "GetByName(%s) = %v, %v", name, o, ok)
			}
		}
	}
}

// Tags of List_SecondaryNonUnique: object i has tag listTags[i%100].
const listTagCount = 100

var listTags = func() [][]string {
	t := make([][]string, listTagCount)
	for i := range t {
		t[i] = []string{fmt.Sprintf("tag-%02d", i)}
	}
	return t
}()

// listSecondaryNonUnique: 1000 objects, object i tagged listTags[i%100];
// one op is a List of one tag (10 objects), cycling through the tags in
// random order.
func listSecondaryNonUnique(b *testing.B, f Factory) {
	objs := generations(batchN, func(o *Object) { o.Tags = listTags[o.ID%listTagCount] })[0]
	d := newFilled(b, f, Schema{Tags: true}, objs)
	order := shuffledIDs(listTagCount, seedProbe)
	want := make([]Result, listTagCount) // by tag
	for _, o := range objs {
		w := &want[o.ID%listTagCount]
		w.N++
		w.Sum += o.ID
	}
	r := d.ReadTxn()
	i := 0
	for b.Loop() {
		t := order[i]
		if got := r.ListByTag(listTags[t][0]); got != want[t] {
			fatalf(b, "List(%s) = %+v, want %+v", listTags[t][0], got, want[t])
		}
		if i++; i == len(order) {
			i = 0
		}
	}
}

// taggedScan: 1000 objects all tagged "test"; one op is the scan, which must
// yield all of them.
func taggedScan(scan func(r RTxn) Result) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := newFilled(b, f, Schema{Tags: true}, generations(batchN, func(o *Object) { o.Tags = tagTest })[0])
		want := Result{N: batchN, Sum: batchN * (batchN - 1) / 2}
		r := d.ReadTxn()
		for b.Loop() {
			if got := scan(r); got != want {
				fatalf(b, "scan = %+v, want %+v", got, want)
			}
		}
	}
}

// fullIterationAll: IterN objects; one op is a new ReadTxn and a scan of
// all objects in ID order.
func fullIterationAll(b *testing.B, f Factory) {
	n := sizes.IterN
	d := newFilled(b, f, Schema{}, generations(n, nil)[0])
	want := Result{N: n, Sum: uint64(n) * uint64(n-1) / 2}
	for b.Loop() {
		if got := d.ReadTxn().All(); got != want {
			fatalf(b, "All = %+v, want %+v", got, want)
		}
	}
}

// ---- radix workloads -----------------------------------------------------

var (
	radixKeyCache = map[int][][]byte{}
	radixCache    = map[string]Radix{}
)

func keysOf(n int) [][]byte {
	if k, ok := radixKeyCache[n]; ok {
		return k
	}
	k := radixKeys(n)
	radixKeyCache[n] = k
	return k
}

func radixInsert(n func() int) func(*testing.B, RadixFactory) {
	return func(b *testing.B, f RadixFactory) {
		keys := keysOf(n())
		r := f.New()
		for b.Loop() {
			r.Begin()
			for i, k := range keys {
				r.Insert(k, i)
			}
			if got := r.Commit(); got != len(keys) {
				fatalf(b, "tree has %d keys, want %d", got, len(keys))
			}
		}
	}
}

// bigTree returns the tree of RadixBigN keys, key i holding value i, built
// once per implementation and shared by the radix read workloads.
func bigTree(b *testing.B, f RadixFactory) (Radix, [][]byte) {
	keys := keysOf(sizes.RadixBigN)
	if r, ok := radixCache[f.Name]; ok {
		return r, keys
	}
	r := f.New()
	r.Begin()
	for i, k := range keys {
		r.Insert(k, i)
	}
	if got := r.Commit(); got != len(keys) {
		fatalf(b, "tree has %d keys, want %d", got, len(keys))
	}
	radixCache[f.Name] = r
	return r, keys
}

func radixGet(b *testing.B, f RadixFactory) {
	r, keys := bigTree(b, f)
	order := shuffledIDs(len(keys), seedProbe)
	i := 0
	for b.Loop() {
		j := int(order[i])
		if v, ok := r.Get(keys[j]); !ok || v != j {
			fatalf(b, "Get(%x) = %d, %v; want %d", keys[j], v, ok, j)
		}
		if i++; i == len(order) {
			i = 0
		}
	}
}

func radixIterate(b *testing.B, f RadixFactory) {
	r, keys := bigTree(b, f)
	n := len(keys)
	for b.Loop() {
		if c, sum := r.Iterate(); c != n || sum != n*(n-1)/2 {
			fatalf(b, "scan saw %d keys (sum %d), want %d (sum %d)", c, sum, n, n*(n-1)/2)
		}
	}
}

// ---- memory --------------------------------------------------------------

// memoryPerObject, like the root suite's BenchmarkDB_MemoryPerObject:
// MemN objects, all tagged "test" (one shared slice, so tags cost nothing
// per object), inserted in transactions of batchN into a table with the
// tags index; the result is the growth of the live heap per object after a
// full GC, the object itself (48 bytes) included.
func memoryPerObject(f Factory) (float64, error) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	d, err := f.New(Schema{Tags: true})
	if err != nil {
		return 0, err
	}
	n := sizes.MemN
	for start := 0; start < n; start += batchN {
		w := d.WriteTxn()
		for id := start; id < min(start+batchN, n); id++ {
			if err := w.Insert(&Object{ID: uint64(id), Tags: tagTest}); err != nil {
				w.Abort()
				return 0, err
			}
		}
		w.Commit()
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if got := d.ReadTxn().Count(); got != n {
		return 0, fmt.Errorf("table has %d objects, want %d", got, n)
	}
	if r := d.ReadTxn().ListByTag("test"); r.N != n {
		return 0, fmt.Errorf("tag lists %d objects, want %d", r.N, n)
	}
	runtime.KeepAlive(d)
	return (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n), nil
}

// ---- the list ------------------------------------------------------------

var sizes = fullSizes

func workloads() []Workload {
	none, tags := Schema{}, Schema{Tags: true}
	random := shuffledIDs(batchN, seedOrder)
	seq := sequentialIDs(batchN)
	k := func(v int) string {
		switch {
		case v >= 1_000_000 && v%1_000_000 == 0:
			return fmt.Sprintf("%dM", v/1_000_000)
		case v >= 1000 && v%1000 == 0:
			return fmt.Sprintf("%dk", v/1000)
		}
		return fmt.Sprint(v)
	}
	ws := []Workload{
		{Name: "WriteTxn_1", Op: "txn: 1 insert (same ID) + commit", Group: "write", DB: writeTxn1},
		{Name: "WriteTxn_10", Op: "1 object; txns of 10", Group: "write", DB: writeBatch(10, none, nil)},
		{Name: "WriteTxn_100", Op: "1 object; txns of 100", Group: "write", DB: writeBatch(100, none, nil)},
		{Name: "WriteTxn_1000", Op: "1 object; txns of 1000", Group: "write", DB: writeBatch(1000, none, nil)},
		{Name: "WriteTxn_100_SecondaryIndex", Op: "1 object; txns of 100; tags index", Group: "write",
			DB: writeBatch(100, tags, tagTest)},
		{Name: "WriteTxn_CommitOnly_1Table", Op: "empty txn + commit", Group: "write", DB: commitOnly(0)},
		{Name: "WriteTxn_CommitOnly_100Tables", Op: "empty txn + commit; 100 tables", Group: "write", DB: commitOnly(99)},
		{Name: "NewWriteTxn", Op: "txn + abort", Group: "write", DB: newWriteTxnAbort},
		{Name: "RandomInsert", Op: "txn: 1000 inserts, random IDs", Group: "write",
			DB: txnOf1000(none, nil, random, false, insertBody, checkLatest)},
		{Name: "RandomReplace", Op: "txn: replace 1000, random; tags index", Group: "write",
			DB: txnOf1000(tags, oddEven, random, true, insertBody, checkOddEven)},
		{Name: "Modify", Op: "txn: 1000 Modify (memdb: First+Insert)", Group: "write",
			DB: txnOf1000(none, nil, random, true, modifyBody, checkLatest)},
		{Name: "GetInsert", Op: "txn: 1000 Get+Insert, random", Group: "write",
			DB: txnOf1000(none, nil, random, true, getInsertBody, checkLatest)},
		{Name: "SequentialInsert", Op: "txn: 1000 inserts, ID order", Group: "write",
			DB: txnOf1000(none, nil, seq, false, insertBody, checkLatest)},
		{Name: "Delete", Op: "txn: 1000 deletes, random", Group: "write", DB: deleteWorkload},
		{Name: "Changes", Op: "txn 1000 inserts (new objects); feed: 1000 upserts; txn DeleteAll; feed: 1000 deletes", Group: "write",
			DB: changesWorkload(true, true), NA: []string{"memdb"}},
		{Name: "Changes_Baseline", Op: "as Changes, without a feed", Group: "write", DB: changesWorkload(false, true)},
		{Name: "Changes_Reused", Op: "as Changes, inserting the same 1000 objects every op", Group: "write",
			DB: changesWorkload(true, false), NA: []string{"memdb"}},
		{Name: "Changes_Reused_Baseline", Op: "as Changes_Reused, without a feed", Group: "write", DB: changesWorkload(false, false)},

		{Name: "NewReadTxn", Op: "ReadTxn", Group: "read", DB: newReadTxn},
		{Name: "RandomLookup", Op: "ReadTxn + 1000 Get by ID, random", Group: "read", DB: randomLookup},
		{Name: "Get_SecondaryUnique", Op: "1000 Get by unique name, random", Group: "read", DB: getSecondaryUnique},
		{Name: "List_SecondaryNonUnique", Op: "List 1 tag: 10 of 1000 objects", Group: "read", DB: listSecondaryNonUnique},
		{Name: "Prefix_SecondaryIndex", Op: `Prefix "test" on tags: 1000 objects`, Group: "read",
			DB: taggedScan(func(r RTxn) Result { return r.PrefixByTag("test") })},
		{Name: "LowerBound_SecondaryIndex", Op: `LowerBound "t" on tags: 1000 objects`, Group: "read",
			DB: taggedScan(func(r RTxn) Result { return r.LowerBoundByTag("t") })},
		{Name: "FullIteration_All", Op: fmt.Sprintf("ReadTxn + scan all %s objects", k(sizes.IterN)), Group: "read",
			DB: fullIterationAll},

		{Name: "Radix_Insert_1000", Op: "new tree, 1 txn: 1000 random keys", Group: "radix", Kind: KindRadix,
			Radix: radixInsert(func() int { return 1000 })},
		{Name: "Radix_Insert_1M", Op: fmt.Sprintf("new tree, 1 txn: %s random keys", k(sizes.RadixBigN)),
			Group: "radix", Kind: KindRadix, Radix: radixInsert(func() int { return sizes.RadixBigN })},
		{Name: "Radix_Get_1M", Op: fmt.Sprintf("1 Get, random hit; %s keys", k(sizes.RadixBigN)),
			Group: "radix", Kind: KindRadix, Radix: radixGet},
		{Name: "Radix_Iterate_1M", Op: fmt.Sprintf("scan all %s keys", k(sizes.RadixBigN)),
			Group: "radix", Kind: KindRadix, Radix: radixIterate},

		{Name: "MemoryPerObject", Op: fmt.Sprintf("heap B/object incl. object; %s objects, tags index", k(sizes.MemN)),
			Group: "memory", Kind: KindMemory, Memory: memoryPerObject},
	}
	ws = append(ws, byRevisionWorkloads()...)
	ws = append(ws, deletePrefixWorkloads()...)
	ws = append(ws, deleteMatchesWorkloads()...)
	ws = append(ws, modifyMatchesWorkloads()...)
	ws = append(ws, andWorkloads()...)
	ws = append(ws, readWorkloads()...)
	return append(ws, lpmWorkloads()...)
}

// clearCaches drops the shared data sets of a finished group.
func clearCaches() {
	clear(radixCache)
	clear(radixKeyCache)
	runtime.GC()
}
