package main

import (
	"fmt"
	"testing"
)

// The primary-index read workloads (KindRead): what a controller does most,
// each op opening a read transaction first. They run against Strata,
// statedb and a bare go-immutable-radix/v2 tree doing the same work
// (reads_iradix.go): the floor for a database built on a tree.
//
// The table is the same in all of them: small objects with a uint64 ID as
// the primary key (index.Uint64, or the tree's own big-endian encoding) and
// the non-unique tags index, object i tagged readTags[i%readTagCount].

// Reads is a database loaded with the objects of a read workload.
type Reads interface {
	// ReadTxn returns a read snapshot (a handle reused by the next call,
	// as DB.ReadTxn's).
	ReadTxn() Reader
}

// Reader reads the objects table in one snapshot.
type Reader interface {
	// Get finds the object by primary key.
	Get(id uint64) (*Object, bool)
	// ScanFrom scans the objects with IDs at least id in ID order (a lower
	// bound on the primary index) and stops after n of them.
	ScanFrom(id uint64, n int) Result
	// All scans every object in primary key order.
	All() Result
	// ListByTag scans the objects that have the tag (non-unique index).
	ListByTag(tag string) Result
}

// ReadFactory loads objs into a new database of one kind, with the tags
// index.
type ReadFactory struct {
	Name string
	New  func(b *testing.B, objs []*Object) Reads
}

// Implementations of the read workloads in table order; Strata is the
// baseline of the ratio columns.
var readDBs = []ReadFactory{
	{"strata", newStrataReads},
	{"statedb", newStatedbReads},
	{"iradix", newIradixReads},
}

// loadDB is ReadFactory.New for a DB adapter: f's database with the tags
// index, holding objs.
func loadDB(b *testing.B, f Factory, objs []*Object) DB {
	return newFilled(b, f, Schema{Tags: true}, objs)
}

const (
	readScanN    = 10_000 // objects of the scans of the primary index
	readShortAt  = 5000   // first ID of the short scan
	readShortLen = 100    // objects the short scan reads
	readTagCount = 10     // tags of the read workloads' objects
)

var readTags = func() [][]string {
	t := make([][]string, readTagCount)
	for i := range t {
		t[i] = []string{fmt.Sprintf("tag-%d", i)}
	}
	return t
}()

// readObjects returns n objects with IDs 0..n-1, object i tagged
// readTags[i%readTagCount].
func readObjects(n int) []*Object {
	return generations(n, func(o *Object) { o.Tags = readTags[o.ID%readTagCount] })[0]
}

// idSum returns the sum of the IDs from..to-1.
func idSum(from, to uint64) uint64 { return (from + to - 1) * (to - from) / 2 }

// readShortScan: 10,000 objects; one op is a new read txn, a lower bound
// on the primary index at ID 5000, and the first 100 objects of it.
func readShortScan(b *testing.B, f ReadFactory) {
	d := f.New(b, readObjects(readScanN))
	want := Result{N: readShortLen, Sum: idSum(readShortAt, readShortAt+readShortLen)}
	for b.Loop() {
		if got := d.ReadTxn().ScanFrom(readShortAt, readShortLen); got != want {
			fatalf(b, "ScanFrom(%d, %d) = %+v, want %+v", readShortAt, readShortLen, got, want)
		}
	}
}

// readFullScan: 10,000 objects; one op is a new read txn and a scan of all
// of them in primary key order.
func readFullScan(b *testing.B, f ReadFactory) {
	d := f.New(b, readObjects(readScanN))
	want := Result{N: readScanN, Sum: idSum(0, readScanN)}
	for b.Loop() {
		if got := d.ReadTxn().All(); got != want {
			fatalf(b, "All = %+v, want %+v", got, want)
		}
	}
}

// readPointGets: 1000 objects; one op is a new read txn and a Get by ID of
// each object, in a shuffled order.
func readPointGets(b *testing.B, f ReadFactory) {
	d := f.New(b, readObjects(batchN))
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

// readPointGetsLarge: sizes.LargeN objects (1M; -objects sets it, 10M
// for the 10M row); one op is a new read txn and 1000 Gets by ID
// spread over the whole table, in a shuffled order: the same reads as
// PointGets_Primary in a tree whose path is longer and out of cache.
func readPointGetsLarge(b *testing.B, f ReadFactory) {
	n := sizes.LargeN
	d := f.New(b, readObjects(n))
	ids := shuffledIDs(batchN, seedProbe)
	for i := range ids {
		ids[i] = ids[i] * uint64(n/batchN)
	}
	for b.Loop() {
		r := d.ReadTxn()
		for _, id := range ids {
			if o, ok := r.Get(id); !ok || o.ID != id {
				fatalf(b, "Get(%d) = %v, %v", id, o, ok)
			}
		}
	}
}

// readListTag: 1000 objects; one op is a new read txn and a List of one
// tag, which 100 of them have.
func readListTag(b *testing.B, f ReadFactory) {
	const tag = 3
	d := f.New(b, readObjects(batchN))
	var want Result
	for id := uint64(tag); id < batchN; id += readTagCount {
		want.N++
		want.Sum += id
	}
	for b.Loop() {
		if got := d.ReadTxn().ListByTag(readTags[tag][0]); got != want {
			fatalf(b, "ListByTag(%s) = %+v, want %+v", readTags[tag][0], got, want)
		}
	}
}

func readWorkloads() []Workload {
	return []Workload{
		{Name: "ShortScan_Primary", Op: "ReadTxn + LowerBound ID 5000 of 10k, read 100, stop", Group: "reads",
			Kind: KindRead, Read: readShortScan},
		{Name: "FullScan_Primary", Op: "ReadTxn + scan all 10k objects, ID order", Group: "reads",
			Kind: KindRead, Read: readFullScan},
		{Name: "PointGets_Primary", Op: "ReadTxn + 1000 Get by ID, shuffled; 1000 objects", Group: "reads",
			Kind: KindRead, Read: readPointGets},
		{Name: "List_Tag", Op: "ReadTxn + List 1 tag: 100 of 1000 objects", Group: "reads",
			Kind: KindRead, Read: readListTag},
		{Name: "PointGets_Large", Op: fmt.Sprintf("ReadTxn + 1000 Get by ID, shuffled; %dk objects", sizes.LargeN/1000), Group: "reads",
			Kind: KindRead, Read: readPointGetsLarge},
	}
}
