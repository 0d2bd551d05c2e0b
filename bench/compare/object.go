package main

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Object is the row type of every database in the comparison. It is shared,
// so that the same pointers go into all three databases.
type Object struct {
	ID   uint64
	Name string   // unique secondary key, when the schema has it
	Tags []string // non-unique secondary keys, when the schema has them
}

// TableHeader and TableRow make *Object a statedb.TableWritable (used only by
// statedb's pretty-printing, never by a workload).
func (o *Object) TableHeader() []string { return []string{"ID", "Name", "Tags"} }

func (o *Object) TableRow() []string {
	return []string{strconv.FormatUint(o.ID, 10), o.Name, strings.Join(o.Tags, ",")}
}

// Fixed seeds: every run, and every database, sees the same data and order.
const (
	seedOrder = 0x5eed_0101 // order of IDs in random-order workloads
	seedKeys  = 0x5eed_0102 // radix tree keys
	seedProbe = 0x5eed_0103 // lookup order in Get workloads
)

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// shuffledIDs returns 0..n-1 in a fixed random order.
func shuffledIDs(n int, seed uint64) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	newRand(seed).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// generations returns two sets of n objects with IDs 0..n-1, indexed by ID,
// filled by fill. Write workloads alternate between the two sets from one
// transaction to the next, so that no object is ever replaced by the very
// pointer that is stored (which strata refuses with ErrObjectMutated, as a
// guard against objects changed in place), and so that the timed loops
// allocate no objects.
func generations(n int, fill func(o *Object)) [2][]*Object {
	var g [2][]*Object
	for k := range g {
		g[k] = make([]*Object, n)
		for i := range g[k] {
			o := &Object{ID: uint64(i)}
			if fill != nil {
				fill(o)
			}
			g[k][i] = o
		}
	}
	return g
}

// oddEven is the tag of RandomReplace's objects.
func oddEven(o *Object) {
	if o.ID%2 == 0 {
		o.Tags = tagEven
	} else {
		o.Tags = tagOdd
	}
}

var (
	tagEven = []string{"even"}
	tagOdd  = []string{"odd"}
	tagTest = []string{"test"}
)

// radixKeys returns n distinct random 8-byte keys.
func radixKeys(n int) [][]byte {
	r := newRand(seedKeys)
	buf := make([]byte, 8*n)
	keys := make([][]byte, 0, n)
	seen := make(map[uint64]struct{}, n)
	for len(keys) < n {
		v := r.Uint64()
		if _, dup := seen[v]; dup {
			continue
		}
		seen[v] = struct{}{}
		k := buf[8*len(keys) : 8*len(keys)+8 : 8*len(keys)+8]
		for j := range 8 {
			k[j] = byte(v >> (56 - 8*j))
		}
		keys = append(keys, k)
	}
	return keys
}
