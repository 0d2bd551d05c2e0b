package strata

// The tables TestModel (model_test.go) runs: tables of testObject with
// several secondary indexes (unique, multi-key, prefix queries) and a
// key-value table, and the random values they are filled with.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// mdlTables builds the tables of a run: each with different indexes.
// The last one is registered later, while the database is in use.
func mdlTables(r *rand.Rand) []mdlTableI {
	tables := []mdlTableI{
		mdlObjTable("people", true, false, true),
		mdlObjTable("tagged", false, true, true),
		mdlKVTable("kv"),
		mdlObjTable("mixed", true, true, true),
	}
	r.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
	return tables
}

// register registers mt with the database of the run, which may have a
// write transaction open.
func (m *mdlRun) register(mt mdlTableI) {
	if err := mt.register(m.db); err != nil {
		m.fatalf("NewTable: %v", err)
	}
	mt.begin(false)
	m.tables = append(m.tables, mt)
	m.log("NewTable(" + mt.meta().Name() + ")")
	if m.r.IntN(2) == 0 {
		mt.attach(m)
		m.log("SetJournal(" + mt.meta().Name() + ")")
	}
}

var (
	mdlIDs = func() []uint64 {
		ids := []uint64{255, 256, 1 << 32, 1<<40 + 7, math.MaxUint64}
		for i := range uint64(40) {
			ids = append(ids, i)
		}
		return ids
	}()
	mdlHotNames    = []string{"", "a", "a\x00", "a\x00b", "ab", "abc", "b", "ba", "\x00", "\xff", "zz", "o1"}
	mdlNamePrefix  = []string{"", "a", "a\x00", "ab", "o", "o1", "o3", "b", "\x00", "\xff", "zzz"}
	mdlTags        = []string{"", "a", "a\x00", "a\x00b", "ab", "b", "blue", "red", "x\x00\x00"}
	mdlTagPrefixes = []string{"", "a", "a\x00", "ab", "b", "bl", "r", "x\x00", "z"}
	mdlValuesPool  = []int{-3, -2, -1, 0, 1, 2, 3, -256, 255, 256, 1000, -1000, math.MinInt, math.MaxInt}
)

func mdlPick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func mdlRandID(r *rand.Rand) uint64 {
	switch r.IntN(8) {
	case 0:
		return r.Uint64()
	case 1:
		return mdlPick(r, mdlIDs) + 1
	default:
		return mdlPick(r, mdlIDs)
	}
}

func mdlRandName(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return mdlPick(r, mdlHotNames)
	default:
		return fmt.Sprintf("o%d", mdlPick(r, mdlIDs))
	}
}

func mdlRandValue(r *rand.Rand) int {
	if r.IntN(8) == 0 {
		return int(r.Int64())
	}
	return mdlPick(r, mdlValuesPool)
}

func mdlFmtObj(o *testObject) string {
	if o == nil {
		return "nil"
	}
	return fmt.Sprintf("{%d %q %v %d}", o.ID, o.Name, slices.Collect(o.Tags.All()), o.Value)
}

// mdlObjTable returns the model of a table of testObjects keyed by id, with
// some of the secondary indexes of testobj_test.go: name (unique), tags
// (non-unique, several keys per object) and value (non-unique).
func mdlObjTable(name string, withName, withTags, withValue bool) mdlTableI {
	mt := &mdlTable[*testObject, uint64]{
		pointerObj: true,
		pkOf:       func(o *testObject) uint64 { return o.ID },
		pkGen:      mdlRandID,
		fmtObj:     mdlFmtObj,
	}
	mt.gen = func(r *rand.Rand, id uint64) *testObject {
		o := &testObject{ID: id}
		if withName {
			o.Name = mdlRandName(r)
		}
		if withTags {
			var tags []string
			for range r.IntN(4) {
				tags = append(tags, mdlPick(r, mdlTags))
			}
			o.Tags = part.NewSet(tags...)
		}
		if withValue {
			o.Value = mdlRandValue(r)
		}
		return o
	}
	mt.merge = func(old, new *testObject) *testObject {
		return &testObject{ID: old.ID, Name: new.Name, Tags: old.Tags.Union(new.Tags), Value: old.Value + new.Value}
	}
	mt.changePK = func(o *testObject) *testObject {
		c := *o
		c.ID++
		return &c
	}
	if withName {
		mt.stealUnique = func(o, victim *testObject) *testObject {
			c := *o
			c.Name = victim.Name
			return &c
		}
	}

	var secondary []Indexer[*testObject]
	mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, uint64]{
		tbl: mt, ix: idIndex,
		keysOf: func(o *testObject) []uint64 { return []uint64{o.ID} },
		keyGen: mdlRandID,
		fmtKey: func(k uint64) string { return fmt.Sprint(k) },
		prefix: func(r *rand.Rand) (Query[*testObject], func() string, uint64, func(uint64) bool) {
			// A prefix of the 8 big-endian bytes of an id: ids that agree
			// on their top n bytes.
			x := mdlRandID(r)
			n := mdlPick(r, []int{0, 4, 7, 8})
			shift := uint(64 - 8*n)
			mask := uint64(1)<<shift - 1
			if shift == 64 {
				mask = math.MaxUint64
			}
			return idIndex.QueryKey(index.Uint64(x)[:n]), func() string { return fmt.Sprintf("top %d bytes of %d", n, x) },
				x &^ mask, func(k uint64) bool { return k&^mask == x&^mask }
		},
	})
	if withName {
		secondary = append(secondary, nameIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, string]{
			tbl: mt, ix: nameIndex,
			keysOf:   func(o *testObject) []string { return []string{o.Name} },
			keyGen:   mdlRandName,
			fmtKey:   func(k string) string { return fmt.Sprintf("%q", k) },
			prefix:   mdlStringPrefix(nameIndex, mdlNamePrefix),
			emptyKey: new(string),
		})
	}
	if withTags {
		secondary = append(secondary, tagsIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, string]{
			tbl: mt, ix: tagsIndex, multi: true,
			keysOf: func(o *testObject) []string { return slices.Collect(o.Tags.All()) },
			keyGen: func(r *rand.Rand) string {
				if r.IntN(6) == 0 {
					return mdlPick(r, mdlTagPrefixes)
				}
				return mdlPick(r, mdlTags)
			},
			fmtKey:   func(k string) string { return fmt.Sprintf("%q", k) },
			prefix:   mdlStringPrefix(tagsIndex, mdlTagPrefixes),
			emptyKey: new(string),
		})
	}
	if withValue {
		secondary = append(secondary, valueIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, int]{
			tbl: mt, ix: valueIndex,
			keysOf: func(o *testObject) []int { return []int{o.Value} },
			keyGen: mdlRandValue,
			fmtKey: func(k int) string { return fmt.Sprint(k) },
			prefix: func(r *rand.Rand) (Query[*testObject], func() string, int, func(int) bool) {
				// A whole key is a prefix of itself only.
				v := mdlRandValue(r)
				return valueIndex.Query(v), func() string { return fmt.Sprint(v) }, v, func(k int) bool { return k == v }
			},
		})
	}
	for i, x := range mt.indexes {
		switch x := x.(type) {
		case *mdlIdx[*testObject, uint64, uint64]:
			x.pos = i
		case *mdlIdx[*testObject, uint64, string]:
			x.pos = i
		case *mdlIdx[*testObject, uint64, int]:
			x.pos = i
		}
	}
	mt.create = func(db *DB) (RWTable[*testObject], error) { return NewTable(db, name, idIndex, secondary...) }
	return mt
}

func mdlStringPrefix[Obj any](ix Index[Obj, string], prefixes []string) func(r *rand.Rand) (Query[Obj], func() string, string, func(string) bool) {
	return func(r *rand.Rand) (Query[Obj], func() string, string, func(string) bool) {
		p := mdlPick(r, prefixes)
		return ix.Query(p), func() string { return fmt.Sprintf("%q", p) }, p, func(k string) bool { return strings.HasPrefix(k, p) }
	}
}

// mdlKV is the object of the table with only a primary index: a value
// type, keyed by a string of any length and bytes.
type mdlKV struct {
	Key string
	Val int
}

var (
	mdlKVIndex = Index[mdlKV, string]{
		Name:       "key",
		FromObject: func(o mdlKV) index.KeySet { return index.NewKeySet(index.String(o.Key)) },
		FromKey:    index.String,
		Unique:     true,
	}
	mdlKVKeys = func() []string {
		keys := []string{"", "a", "a\x00", "a\x00\x00", "a\x00b", "ab", "abc", "abd", "b", "\x00", "\xff\xff",
			strings.Repeat("k", 300) + "1", strings.Repeat("k", 300) + "2", strings.Repeat("k", 301)}
		for i := range 30 {
			keys = append(keys, fmt.Sprintf("key%d", i))
		}
		return keys
	}()
	mdlKVPrefixes = []string{"", "a", "a\x00", "ab", "k", "kkkk", "key1", "key", "\x00", "z"}
)

func mdlKVTable(name string) mdlTableI {
	mt := &mdlTable[mdlKV, string]{
		pkOf:  func(o mdlKV) string { return o.Key },
		pkGen: func(r *rand.Rand) string { return mdlPick(r, mdlKVKeys) },
		gen: func(r *rand.Rand, k string) mdlKV {
			return mdlKV{k, r.IntN(4)}
		},
		merge:    func(old, new mdlKV) mdlKV { return mdlKV{old.Key, old.Val*7 + new.Val} },
		changePK: func(o mdlKV) mdlKV { return mdlKV{o.Key + "!", o.Val} },
		fmtObj:   func(o mdlKV) string { return fmt.Sprintf("{%q %d}", o.Key, o.Val) },
	}
	mt.indexes = []mdlIndex[mdlKV, string]{&mdlIdx[mdlKV, string, string]{
		tbl: mt, ix: mdlKVIndex,
		keysOf: func(o mdlKV) []string { return []string{o.Key} },
		keyGen: func(r *rand.Rand) string {
			if r.IntN(4) == 0 {
				return mdlPick(r, mdlKVPrefixes)
			}
			return mdlPick(r, mdlKVKeys)
		},
		fmtKey: func(k string) string {
			if len(k) > 20 {
				return fmt.Sprintf("%q...(%d bytes)", k[:10], len(k))
			}
			return fmt.Sprintf("%q", k)
		},
		prefix:   mdlStringPrefix(mdlKVIndex, mdlKVPrefixes),
		emptyKey: new(string),
	}}
	mt.create = func(db *DB) (RWTable[mdlKV], error) { return NewTable(db, name, mdlKVIndex) }
	return mt
}
