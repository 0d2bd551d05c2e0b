package strata

// The benchmark suite of PERFORMANCE.md. Benchmarks whose names also exist
// in cilium/statedb v0.9.4 (benchmarks_test.go) do the same work as those,
// so that the two can be compared name by name with benchstat.
//
// Run:
//
//	go test -run '^$' -bench 'DB_' -benchmem -count 10 . | tee new.txt
//	benchstat old.txt new.txt           # before/after a change
//
// Quick smoke run (CI): every benchmark once, with a smaller memory test:
//
//	go test -run '^$' -bench . -benchtime=1x . -strata.memobjects=100000
//
// Memory per object (1M objects by default; slow, run it alone):
//
//	go test -run '^$' -bench 'DB_MemoryPerObject' -benchtime=1x .
//
// ns/op is per object for the batch benchmarks (WriteTxn_10/100/1000),
// otherwise per transaction or per read as described on each benchmark;
// objects/sec, ns/object and allocs/object are extra metrics.

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

var benchMemObjects = flag.Int("strata.memobjects", 1_000_000,
	"number of objects inserted by BenchmarkDB_MemoryPerObject")

const (
	// numObjectsToInsert is the size of the write and lookup workloads.
	numObjectsToInsert = 1000
	// numObjectsIteration is the size of the FullIteration workloads (as
	// in statedb).
	numObjectsIteration = 100_000
)

// benchRand returns a deterministic random source, so runs are comparable.
func benchRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// shuffledIDs returns 0..n-1 in a random order.
func shuffledIDs(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	r := benchRand()
	r.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// fillTable inserts n objects made by mk in one transaction.
func fillTable(b *testing.B, db *DB, tbl RWTable[*testObject], n int, mk func(i int) *testObject) ReadTxn {
	b.Helper()
	txn := db.WriteTxn(tbl)
	for i := range n {
		if _, _, err := tbl.Insert(txn, mk(i)); err != nil {
			b.Fatalf("Insert: %s", err)
		}
	}
	rtxn, err := txn.Commit()
	if err != nil {
		b.Fatalf("Commit: %s", err)
	}
	if got := tbl.NumObjects(rtxn); got != n {
		b.Fatalf("NumObjects = %d, want %d", got, n)
	}
	return rtxn
}

func reportObjectsPerSec(b *testing.B, objects int) {
	b.ReportMetric(float64(objects)/b.Elapsed().Seconds(), "objects/sec")
}

func reportNsPerObject(b *testing.B, objects int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(objects), "ns/object")
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// --- Write transactions ---

// BenchmarkDB_WriteTxn_1: one insert per transaction.
func BenchmarkDB_WriteTxn_1(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &testObject{ID: 123}); err != nil {
			b.Fatalf("Insert: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	if got := tbl.NumObjects(db.ReadTxn()); got != 1 {
		b.Fatalf("NumObjects = %d, want 1", got)
	}
	reportObjectsPerSec(b, n)
}

// benchmarkWriteTxnBatch inserts b.N objects in transactions of batchSize
// (IDs 0..batchSize-1, so every batch after the first replaces): ns/op is
// per object.
func benchmarkWriteTxnBatch(b *testing.B, batchSize int, secondary bool, more ...Indexer[*testObject]) {
	db := New()
	var tbl RWTable[*testObject]
	var tags part.Set[string]
	if secondary {
		tbl = newTestTable(b, db, "test", append([]Indexer[*testObject]{tagsIndex}, more...)...)
		tags = part.NewSet("test")
	} else {
		tbl = newTestTable(b, db, "test", more...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := b.N; n > 0; {
		txn := db.WriteTxn(tbl)
		batch := min(n, batchSize)
		for i := range batch {
			if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(i), Tags: tags}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n -= batch
	}
	b.StopTimer()
	if got, want := tbl.NumObjects(db.ReadTxn()), min(b.N, batchSize); got != want {
		b.Fatalf("NumObjects = %d, want %d", got, want)
	}
	reportObjectsPerSec(b, b.N)
}

func BenchmarkDB_WriteTxn_10(b *testing.B)   { benchmarkWriteTxnBatch(b, 10, false) }
func BenchmarkDB_WriteTxn_100(b *testing.B)  { benchmarkWriteTxnBatch(b, 100, false) }
func BenchmarkDB_WriteTxn_1000(b *testing.B) { benchmarkWriteTxnBatch(b, 1000, false) }

// BenchmarkDB_WriteTxn_100_SecondaryIndex: batches of 100 into a table with
// the tags index, every object tagged "test".
func BenchmarkDB_WriteTxn_100_SecondaryIndex(b *testing.B) { benchmarkWriteTxnBatch(b, 100, true) }

// BenchmarkDB_WriteTxn_100_ByRevision: as _SecondaryIndex, in a table that
// keeps the revision index too (RevisionIndex): what it costs a write.
func BenchmarkDB_WriteTxn_100_ByRevision(b *testing.B) {
	benchmarkWriteTxnBatch(b, 100, true, RevisionIndex[*testObject]())
}

// benchmarkCommitOnly times WriteTxn(table).Commit() with nothing written,
// with others tables registered before the table.
func benchmarkCommitOnly(b *testing.B, others int) {
	db := New()
	for i := range others {
		newTestTable(b, db, fmt.Sprintf("other%d", i))
	}
	tbl := newTestTable(b, db, "test", tagsIndex)
	b.ReportAllocs()
	for b.Loop() {
		if rtxn, err := db.WriteTxn(tbl).Commit(); err != nil || rtxn == nil {
			b.Fatalf("Commit: %v, %v", rtxn, err)
		}
	}
	if rev := tbl.Revision(db.ReadTxn()); rev != 0 {
		b.Fatalf("Revision = %d, want 0", rev)
	}
}

func BenchmarkDB_WriteTxn_CommitOnly_100Tables(b *testing.B) { benchmarkCommitOnly(b, 99) }
func BenchmarkDB_WriteTxn_CommitOnly_1Table(b *testing.B)    { benchmarkCommitOnly(b, 0) }

// BenchmarkDB_WriteTxn_1_256Tables: one insert per transaction into one of
// 256 tables: a commit publishes a root of 256 table states (past the
// sizes newRoot has types for; a replica with a table per client).
func BenchmarkDB_WriteTxn_1_256Tables(b *testing.B) {
	db := New()
	for i := range 255 {
		newTestTable(b, db, fmt.Sprintf("other%d", i))
	}
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	id := uint64(0)
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &testObject{ID: id % 1024}); err != nil {
			b.Fatal(err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
		id++
	}
}

// BenchmarkDB_NewWriteTxn: create a write transaction and abort it.
func BenchmarkDB_NewWriteTxn(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test", tagsIndex)
	b.ReportAllocs()
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if txn == nil {
			b.Fatal("WriteTxn returned nil")
		}
		txn.Abort()
	}
	// The table must be unlocked again.
	if _, err := db.WriteTxn(tbl).Commit(); err != nil {
		b.Fatalf("Commit: %s", err)
	}
}

// BenchmarkDB_WriteTxnCommit100: 100 tables registered, commit a transaction
// on the last one with nothing written. This is statedb's workload of the
// same name (it inserts nothing); BenchmarkDB_WriteTxnCommit100_Insert adds
// one insert.
func BenchmarkDB_WriteTxnCommit100(b *testing.B) {
	db := New()
	tables := make([]RWTable[*testObject], 100)
	for i := range tables {
		tables[i] = newTestTable(b, db, fmt.Sprintf("test%d", i))
	}
	tbl := tables[len(tables)-1]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.WriteTxn(tbl).Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
	}
	if rev := tbl.Revision(db.ReadTxn()); rev != 0 {
		b.Fatalf("Revision = %d, want 0", rev)
	}
}

// BenchmarkDB_WriteTxnCommit100_Insert: 100 tables registered, one insert
// into the last one per transaction.
func BenchmarkDB_WriteTxnCommit100_Insert(b *testing.B) {
	db := New()
	tables := make([]RWTable[*testObject], 100)
	for i := range tables {
		tables[i] = newTestTable(b, db, fmt.Sprintf("test%d", i))
	}
	tbl := tables[len(tables)-1]
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &testObject{ID: 123}); err != nil {
			b.Fatalf("Insert: %s", err)
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	if rev := tbl.Revision(db.ReadTxn()); rev != Revision(n) {
		b.Fatalf("Revision = %d, want %d", rev, n)
	}
	reportObjectsPerSec(b, n)
}

// benchmarkModifyOrGetInsert: 1000 objects; per op one transaction that
// updates all of them (in random order), incrementing Value, by Modify or by
// Get and Insert of a copy.
func benchmarkModifyOrGetInsert(b *testing.B, getInsert bool) {
	db := New()
	tbl := newTestTable(b, db, "test")
	ids := shuffledIDs(numObjectsToInsert)
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: ids[i]} })
	merge := func(old, new *testObject) *testObject {
		new.Value = old.Value + 1 // new is ours and not yet stored
		return new
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for _, id := range ids {
			if getInsert {
				old, _, found := tbl.Get(txn, idIndex.Query(id))
				if !found {
					b.Fatalf("object %d not found", id)
				}
				obj := *old
				obj.Value++
				if _, _, err := tbl.Insert(txn, &obj); err != nil {
					b.Fatalf("Insert: %s", err)
				}
			} else {
				if _, _, err := tbl.Modify(txn, &testObject{ID: id}, merge); err != nil {
					b.Fatalf("Modify: %s", err)
				}
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	rtxn := db.ReadTxn()
	if got := tbl.NumObjects(rtxn); got != numObjectsToInsert {
		b.Fatalf("NumObjects = %d", got)
	}
	if o, _, found := tbl.Get(rtxn, idIndex.Query(ids[0])); !found || o.Value != n {
		b.Fatalf("Get = %v, %v; want Value %d", o, found, n)
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
	reportNsPerObject(b, n*numObjectsToInsert)
}

func BenchmarkDB_Modify(b *testing.B)    { benchmarkModifyOrGetInsert(b, false) }
func BenchmarkDB_GetInsert(b *testing.B) { benchmarkModifyOrGetInsert(b, true) }

// BenchmarkDB_RandomInsert: per op, one transaction inserting IDs 0..999 in
// random order (replacing from the second op on, as in statedb).
func BenchmarkDB_RandomInsert(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	ids := shuffledIDs(numObjectsToInsert)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for _, id := range ids {
			if _, _, err := tbl.Insert(txn, &testObject{ID: id, Tags: part.Set[string]{}}); err != nil {
				b.Fatalf("Insert: %s", err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	if got := tbl.NumObjects(db.ReadTxn()); got != numObjectsToInsert {
		b.Fatalf("NumObjects = %d", got)
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// BenchmarkDB_RandomReplace: 1000 objects in a table with the tags index
// (tag "even" or "odd"); per op, one transaction replacing all of them in
// random order.
func BenchmarkDB_RandomReplace(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test", tagsIndex)
	tag := func(id uint64) string {
		if id%2 == 0 {
			return "even"
		}
		return "odd"
	}
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject {
		return &testObject{ID: uint64(i), Tags: part.NewSet(tag(uint64(i)))}
	})
	ids := shuffledIDs(numObjectsToInsert)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		txn := db.WriteTxn(tbl)
		for _, id := range ids {
			_, had, err := tbl.Insert(txn, &testObject{ID: id, Tags: part.NewSet(tag(id))})
			if err != nil || !had {
				b.Fatalf("Insert: %v, %v", had, err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			b.Fatalf("Commit: %s", err)
		}
		n++
	}
	count := 0
	for range tbl.List(db.ReadTxn(), tagsIndex.Query("even")) {
		count++
	}
	if count != numObjectsToInsert/2 {
		b.Fatalf("List(even) = %d objects", count)
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// BenchmarkDB_SequentialInsert: per op, one transaction inserting IDs
// 0..999 in order.
func BenchmarkDB_SequentialInsert(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		insertIDs(b, db, tbl)
		n++
	}
	if got := tbl.NumObjects(db.ReadTxn()); got != numObjectsToInsert {
		b.Fatalf("NumObjects = %d", got)
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// BenchmarkDB_Delete: per op, one transaction deleting 1000 objects one by
// one in random order, and its commit. Only that transaction is timed: the
// insert of the 1000 objects before it is not.
func BenchmarkDB_Delete(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	ids := shuffledIDs(numObjectsToInsert)
	keys := make([]*testObject, len(ids))
	for i, id := range ids {
		keys[i] = &testObject{ID: id}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		b.StopTimer()
		fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i)} })
		b.StartTimer()

		txn := db.WriteTxn(tbl)
		for _, k := range keys {
			if _, had, err := tbl.Delete(txn, k); err != nil || !had {
				b.Fatalf("Delete(%d): %v, %v", k.ID, had, err)
			}
		}
		rtxn, err := txn.Commit()
		if err != nil {
			b.Fatalf("Commit: %s", err)
		}
		if got := tbl.NumObjects(rtxn); got != 0 {
			b.Fatalf("NumObjects = %d after delete", got)
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// BenchmarkDB_DeletePrefix: one DeletePrefix on the primary index removes
// 1000 of 10,000 objects (those whose ID has 3 in its top 32 bits), in a
// table with a secondary index; the _OneByOne variant deletes the same
// objects with a Delete each, as a user without DeletePrefix would,
// reading them with Prefix first.
func BenchmarkDB_DeletePrefix(b *testing.B)          { benchDeletePrefix(b, false) }
func BenchmarkDB_DeletePrefix_OneByOne(b *testing.B) { benchDeletePrefix(b, true) }

func benchDeletePrefix(b *testing.B, oneByOne bool) {
	db := New()
	tbl := newTestTable(b, db, "test", valueIndex)
	const total, count = 10_000, 1000
	q := idIndex.QueryKey(index.Uint64(3 << 32)[:4])
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		b.StopTimer()
		fillTable(b, db, tbl, total, func(i int) *testObject {
			return &testObject{ID: uint64(i/count)<<32 | uint64(i%count), Value: i % 100}
		})
		b.StartTimer()

		txn := db.WriteTxn(tbl)
		if oneByOne {
			var objs []*testObject
			for o := range tbl.Prefix(txn, q) {
				objs = append(objs, o)
			}
			for _, o := range objs {
				if _, had, err := tbl.Delete(txn, o); err != nil || !had {
					b.Fatalf("Delete(%d): %v, %v", o.ID, had, err)
				}
			}
		} else if got, err := tbl.DeletePrefix(txn, q); err != nil || got != count {
			b.Fatalf("DeletePrefix = %d, %v; want %d", got, err, count)
		}
		rtxn, err := txn.Commit()
		if err != nil {
			b.Fatalf("Commit: %s", err)
		}
		if got := tbl.NumObjects(rtxn); got != total-count {
			b.Fatalf("NumObjects = %d after delete, want %d", got, total-count)
		}
		n++
	}
	reportObjectsPerSec(b, n*count)
}

// --- Reads ---

// BenchmarkDB_NewReadTxn: db.ReadTxn(), which must not allocate.
func BenchmarkDB_NewReadTxn(b *testing.B) {
	db := New()
	newTestTable(b, db, "test", tagsIndex)
	var sink ReadTxn
	if a := testing.AllocsPerRun(100, func() { sink = db.ReadTxn() }); a != 0 {
		b.Fatalf("ReadTxn allocates %v times", a)
	}
	b.ReportAllocs()
	for b.Loop() {
		if sink = db.ReadTxn(); sink == nil {
			b.Fatal("nil ReadTxn")
		}
	}
}

// benchmarkLookup: 1000 objects; per op, a Get of each of them, in random
// order (that of shuffledIDs) or in ID order, through a new ReadTxn per op
// if txnPerOp (as statedb's RandomLookup has it).
func benchmarkLookup(b *testing.B, random, txnPerOp bool) {
	db := New()
	tbl := newTestTable(b, db, "test")
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i)} })
	queries := make([]Query[*testObject], numObjectsToInsert)
	for i := range queries {
		queries[i] = idIndex.Query(uint64(i))
	}
	if random {
		benchRand().Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	}
	txn := db.ReadTxn()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if txnPerOp {
			txn = db.ReadTxn()
		}
		for _, q := range queries {
			if _, _, found := tbl.Get(txn, q); !found {
				b.Fatal("object not found")
			}
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
	reportNsPerObject(b, n*numObjectsToInsert)
}

// BenchmarkDB_RandomLookup: per op, 1000 Gets by primary key in random
// order (ns/object is the cost of one Get).
func BenchmarkDB_RandomLookup(b *testing.B) { benchmarkLookup(b, true, true) }

// BenchmarkDB_GetFloor puts a Get by primary key beside its floor: a bare
// go-immutable-radix/v2 lookup of the same key in a tree of the same 1000
// objects. Per op, 1000 Gets in random order through one snapshot, the
// query keys encoded beforehand for both. Compare the two with
// benchstat -col /impl.
func BenchmarkDB_GetFloor(b *testing.B) {
	b.Run("impl=strata", func(b *testing.B) { benchmarkLookup(b, true, false) })
	b.Run("impl=iradix", func(b *testing.B) {
		txn := iradix.New[*testObject]().Txn()
		for i := range numObjectsToInsert {
			txn.Insert(index.Uint64(uint64(i)), &testObject{ID: uint64(i)})
		}
		tree := txn.Commit()
		ids := shuffledIDs(numObjectsToInsert) // the order of benchmarkLookup's
		keys := make([][]byte, len(ids))
		for i, id := range ids {
			keys[i] = index.Uint64(id)
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for _, k := range keys {
				if _, found := tree.Get(k); !found {
					b.Fatal("object not found")
				}
			}
			n++
		}
		reportNsPerObject(b, n*numObjectsToInsert)
	})
}

// BenchmarkDB_SequentialLookup: per op, 1000 Gets by primary key in order.
func BenchmarkDB_SequentialLookup(b *testing.B) { benchmarkLookup(b, false, false) }

// BenchmarkDB_Get_SecondaryUnique: 1000 objects with unique names; per op,
// 1000 Gets by name in random order.
func BenchmarkDB_Get_SecondaryUnique(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test", nameIndex)
	name := func(i int) string { return fmt.Sprintf("object-%04d", i) }
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i), Name: name(i)} })
	queries := make([]Query[*testObject], numObjectsToInsert)
	for i := range queries {
		queries[i] = nameIndex.Query(name(i))
	}
	benchRand().Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	txn := db.ReadTxn()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, q := range queries {
			if _, _, found := tbl.Get(txn, q); !found {
				b.Fatal("object not found")
			}
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
	reportNsPerObject(b, n*numObjectsToInsert)
}

// BenchmarkDB_List_SecondaryNonUnique: 1000 objects, Value = ID % 100 in
// the non-unique value index; per op, one List of a value (10 objects).
func BenchmarkDB_List_SecondaryNonUnique(b *testing.B) {
	const values = 100
	db := New()
	tbl := newTestTable(b, db, "test", valueIndex)
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i), Value: i % values} })
	queries := make([]Query[*testObject], values)
	for i := range queries {
		queries[i] = valueIndex.Query(i)
	}
	benchRand().Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	txn := db.ReadTxn()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		count := 0
		for range tbl.List(txn, queries[i%values]) {
			count++
		}
		if count != numObjectsToInsert/values {
			b.Fatalf("List = %d objects, want %d", count, numObjectsToInsert/values)
		}
		i++
	}
	reportObjectsPerSec(b, i*numObjectsToInsert/values)
}

// newTaggedTable returns a table with the tags index holding 1000 objects
// all tagged "test".
func newTaggedTable(b *testing.B) (*DB, RWTable[*testObject], ReadTxn) {
	db := New()
	tbl := newTestTable(b, db, "test", tagsIndex)
	tags := part.NewSet("test")
	rtxn := fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i), Tags: tags} })
	return db, tbl, rtxn
}

// BenchmarkDB_Prefix_SecondaryIndex: per op, Prefix("test") over the tags
// index, yielding all 1000 objects.
func BenchmarkDB_Prefix_SecondaryIndex(b *testing.B) {
	_, tbl, rtxn := newTaggedTable(b)
	q := tagsIndex.Query("test")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		count := 0
		for range tbl.Prefix(rtxn, q) {
			count++
		}
		if count != numObjectsToInsert {
			b.Fatalf("Prefix = %d objects, want %d", count, numObjectsToInsert)
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// BenchmarkDB_LowerBound_SecondaryIndex: per op, LowerBound("t") over the
// tags index, yielding all 1000 objects.
func BenchmarkDB_LowerBound_SecondaryIndex(b *testing.B) {
	_, tbl, rtxn := newTaggedTable(b)
	q := tagsIndex.Query("t")
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		count := 0
		for range tbl.LowerBound(rtxn, q) {
			count++
		}
		if count != numObjectsToInsert {
			b.Fatalf("LowerBound = %d objects, want %d", count, numObjectsToInsert)
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsToInsert)
}

// benchmarkFullIteration: 100,000 objects (as in statedb); per op, one full
// pass with scan, which checks the IDs it sees (ascending, or descending if
// reverse). It reports ns/object and allocs/object, and fails if the pass
// allocates per object.
func benchmarkFullIteration(b *testing.B, reverse bool, scan func(tbl RWTable[*testObject], txn ReadTxn) iterSeq) {
	db := New()
	tbl := newTestTable(b, db, "test")
	fillTable(b, db, tbl, numObjectsIteration, func(i int) *testObject { return &testObject{ID: uint64(i)} })
	b.ReportAllocs()
	m0 := mallocs()
	n := 0
	for b.Loop() {
		next, step := uint64(0), uint64(1)
		if reverse {
			next, step = numObjectsIteration-1, ^uint64(0) // -1
		}
		count := 0
		for obj := range scan(tbl, db.ReadTxn()) {
			if obj.ID != next {
				b.Fatalf("got ID %d, want %d", obj.ID, next)
			}
			next += step
			count++
		}
		if count != numObjectsIteration {
			b.Fatalf("iterated %d objects, want %d", count, numObjectsIteration)
		}
		n++
	}
	allocs := float64(mallocs()-m0) / float64(n)
	reportObjectsPerSec(b, n*numObjectsIteration)
	reportNsPerObject(b, n*numObjectsIteration)
	b.ReportMetric(allocs/numObjectsIteration, "allocs/object")
	if allocs >= numObjectsIteration/1000 {
		b.Fatalf("a full iteration allocates %.0f times for %d objects", allocs, numObjectsIteration)
	}
}

type iterSeq = func(yield func(*testObject, Revision) bool)

// BenchmarkDB_FullIteration_All: All over 100,000 objects.
func BenchmarkDB_FullIteration_All(b *testing.B) {
	benchmarkFullIteration(b, false, func(tbl RWTable[*testObject], txn ReadTxn) iterSeq { return tbl.All(txn) })
}

// BenchmarkDB_FullIteration_ReverseAll: ReverseAll over 100,000 objects.
func BenchmarkDB_FullIteration_ReverseAll(b *testing.B) {
	benchmarkFullIteration(b, true, func(tbl RWTable[*testObject], txn ReadTxn) iterSeq { return tbl.ReverseAll(txn) })
}

// BenchmarkDB_FullIteration_Prefix: Prefix of the empty key of the primary
// index over 100,000 objects.
func BenchmarkDB_FullIteration_Prefix(b *testing.B) {
	q := idIndex.QueryKey(nil)
	benchmarkFullIteration(b, false, func(tbl RWTable[*testObject], txn ReadTxn) iterSeq { return tbl.Prefix(txn, q) })
}

// BenchmarkDB_FullIteration_Get: per op, a Get of each of 100,000 objects
// in order, through one ReadTxn.
func BenchmarkDB_FullIteration_Get(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	fillTable(b, db, tbl, numObjectsIteration, func(i int) *testObject { return &testObject{ID: uint64(i)} })
	queries := make([]Query[*testObject], numObjectsIteration)
	for i := range queries {
		queries[i] = idIndex.Query(uint64(i))
	}
	txn := db.ReadTxn()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, q := range queries {
			if _, _, found := tbl.Get(txn, q); !found {
				b.Fatal("object not found")
			}
		}
		n++
	}
	reportObjectsPerSec(b, n*numObjectsIteration)
	reportNsPerObject(b, n*numObjectsIteration)
}

// BenchmarkDB_Range: 1000 objects; per op, Range over IDs [400, 500), 100
// objects.
func BenchmarkDB_Range(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	rtxn := fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i)} })
	from, to := idIndex.Query(400), idIndex.Query(500)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		next := uint64(400)
		for obj := range tbl.Range(rtxn, from, to) {
			if obj.ID != next {
				b.Fatalf("got ID %d, want %d", obj.ID, next)
			}
			next++
		}
		if next != 500 {
			b.Fatalf("Range ended at %d, want 500", next)
		}
		n++
	}
	reportObjectsPerSec(b, n*100)
}

// BenchmarkDB_GetWatch: 1000 objects; per op, one GetWatch by primary key
// (random order), which must find the object and return a watch channel.
func BenchmarkDB_GetWatch(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	rtxn := fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i)} })
	queries := make([]Query[*testObject], numObjectsToInsert)
	for i, id := range shuffledIDs(numObjectsToInsert) {
		queries[i] = idIndex.Query(id)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _, watch, found := tbl.GetWatch(rtxn, queries[i%numObjectsToInsert])
		if !found || watch == nil {
			b.Fatalf("GetWatch: found %v, watch %v", found, watch)
		}
		i++
	}
}

// --- Memory ---

// BenchmarkDB_MemoryPerObject: heap bytes per object (the object itself
// included) of a table with one secondary index, the non-unique tags index,
// holding -strata.memobjects objects (default 1,000,000) that all have the
// one tag "test" (one shared Set, so the tags themselves cost nothing per
// object). The objects are inserted in transactions of 1000. Meant for
// -benchtime=1x; ns/op is the time to build the table.
func BenchmarkDB_MemoryPerObject(b *testing.B) {
	const batch = 1000
	total := *benchMemObjects
	if total <= 0 {
		b.Fatalf("-strata.memobjects=%d", total)
	}
	tags := part.NewSet("test")
	var ms runtime.MemStats
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var perObject float64
	for b.Loop() {
		b.StopTimer()
		h0 := heap()
		b.StartTimer()
		db := New()
		tbl := newTestTable(b, db, "test", tagsIndex)
		for start := 0; start < total; start += batch {
			txn := db.WriteTxn(tbl)
			for id := start; id < min(start+batch, total); id++ {
				if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(id), Tags: tags}); err != nil {
					b.Fatalf("Insert: %s", err)
				}
			}
			if _, err := txn.Commit(); err != nil {
				b.Fatalf("Commit: %s", err)
			}
		}
		b.StopTimer()
		h1 := heap()
		if got := tbl.NumObjects(db.ReadTxn()); got != total {
			b.Fatalf("NumObjects = %d, want %d", got, total)
		}
		runtime.KeepAlive(db)
		runtime.KeepAlive(tbl)
		perObject = (float64(h1) - float64(h0)) / float64(total)
		b.StartTimer()
	}
	b.ReportMetric(perObject, "B/object")
}

// --- Concurrency ---

// BenchmarkDB_ParallelReads: 1000 objects; readers (b.RunParallel, one per
// GOMAXPROCS) each do one Get by primary key per op through a fresh
// ReadTxn, while a background goroutine keeps committing transactions that
// replace 10 of the objects. Reports reads/sec and the writer's commits/sec.
func BenchmarkDB_ParallelReads(b *testing.B) {
	db := New()
	tbl := newTestTable(b, db, "test")
	fillTable(b, db, tbl, numObjectsToInsert, func(i int) *testObject { return &testObject{ID: uint64(i)} })

	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		commits  atomic.Int64
		writeErr atomic.Pointer[error]
		misses   atomic.Int64
		seed     atomic.Uint64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		id := uint64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			txn := db.WriteTxn(tbl)
			for range 10 {
				if _, _, err := tbl.Insert(txn, &testObject{ID: id, Value: int(commits.Load())}); err != nil {
					txn.Abort()
					writeErr.Store(&err)
					return
				}
				id = (id + 1) % numObjectsToInsert
			}
			if _, err := txn.Commit(); err != nil {
				writeErr.Store(&err)
				return
			}
			commits.Add(1)
		}
	}()

	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Each reader walks the IDs with its own start and an odd stride.
		id := seed.Add(387) % numObjectsToInsert
		for pb.Next() {
			if _, _, found := tbl.Get(db.ReadTxn(), idIndex.Query(id)); !found {
				misses.Add(1)
			}
			id = (id + 617) % numObjectsToInsert
		}
	})
	b.StopTimer()
	close(stop)
	wg.Wait()

	if err := writeErr.Load(); err != nil {
		b.Fatalf("writer: %s", *err)
	}
	if m := misses.Load(); m != 0 {
		b.Fatalf("%d reads did not find their object", m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/sec")
	b.ReportMetric(float64(commits.Load())/b.Elapsed().Seconds(), "commits/sec")
}
