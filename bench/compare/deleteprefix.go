package main

import (
	"errors"
	"fmt"
	"testing"

	statedbindex "github.com/cilium/statedb/index"
	"github.com/strata-db/strata/index"
)

// The delete-by-prefix workloads: one op deletes the 1000 objects of one
// group of a 10,000-object table in a write transaction and commits;
// putting them back is not timed. Object j of group g has ID g<<32 | j and
// name "g<g>-<j>" (unique "name" index), so a group is both a name prefix
// and a 4-byte primary-key prefix.
//
//   - DeletePrefix: by name prefix, each database the way its users would:
//     Strata's DeletePrefix, go-memdb's DeletePrefix on "name_prefix";
//     statedb v0.9.4 has no delete by prefix (or by query), so Prefix to
//     collect the objects and a Delete each.
//   - DeletePrefix_Baseline: the same deletes one by one in every database,
//     Prefix then a Delete each, as a user without a delete by prefix does.
//     The line under the table gives each database's gain from its own
//     call, round by round.
//   - DeletePrefix_Primary / _Primary_Baseline: the same on the primary
//     index, where Strata cuts the subtree of the prefix out of the tree in
//     one operation (BenchmarkDB_DeletePrefix at the root). go-memdb's
//     UintFieldIndex has no prefix form: n/a.
const (
	dpGroups = 10
	dpGroupN = 1000
	dpGroup  = 3 // the group deleted
)

func dpName(g, j int) string { return fmt.Sprintf("g%02d-%04d", g, j) }

// dpPrefix is the name prefix of group dpGroup, and dpHi its ID prefix.
var (
	dpPrefix = fmt.Sprintf("g%02d-", dpGroup)
	dpHi     = uint32(dpGroup)
)

// prefixDeleter is the write transaction of a database that the
// delete-by-prefix workloads drive. Each method returns the number of
// objects deleted, or -1 where the database's call does not say
// (go-memdb's DeletePrefix reports only whether it deleted any); the
// workload checks the table afterwards in every case.
type prefixDeleter interface {
	// DeleteNamePrefix deletes the objects whose name starts with prefix
	// by the database's own delete by prefix, if it has one.
	DeleteNamePrefix(prefix string) (int, error)
	// DeleteNamePrefixOneByOne deletes them with Prefix and a Delete each.
	DeleteNamePrefixOneByOne(prefix string) (int, error)
	// DeleteIDPrefix deletes the objects whose ID has hi in its top 32
	// bits, a 4-byte prefix of the primary key.
	DeleteIDPrefix(hi uint32) (int, error)
	// DeleteIDPrefixOneByOne deletes them with Prefix and a Delete each.
	DeleteIDPrefixOneByOne(hi uint32) (int, error)
}

// dpBuf collects the objects a one-by-one delete reads before it deletes
// them, reused across ops (the workloads run on one goroutine), so that
// the three databases pay for collecting alike.
var dpBuf []*Object

func idPrefixKey(hi uint32) index.Key { return index.Uint64(uint64(hi) << 32)[:4] }

// ---- Strata ----

func (w *strataW) DeleteNamePrefix(prefix string) (int, error) {
	return w.a.tbl.DeletePrefix(w.wtxn, strataName.Query(prefix))
}

func (w *strataW) DeleteNamePrefixOneByOne(prefix string) (int, error) {
	dpBuf = dpBuf[:0]
	for o := range w.a.tbl.Prefix(w.wtxn, strataName.Query(prefix)) {
		dpBuf = append(dpBuf, o)
	}
	return w.deleteEach(dpBuf)
}

func (w *strataW) DeleteIDPrefix(hi uint32) (int, error) {
	return w.a.tbl.DeletePrefix(w.wtxn, strataID.QueryKey(idPrefixKey(hi)))
}

func (w *strataW) DeleteIDPrefixOneByOne(hi uint32) (int, error) {
	dpBuf = dpBuf[:0]
	for o := range w.a.tbl.Prefix(w.wtxn, strataID.QueryKey(idPrefixKey(hi))) {
		dpBuf = append(dpBuf, o)
	}
	return w.deleteEach(dpBuf)
}

func (w *strataW) deleteEach(objs []*Object) (int, error) {
	for _, o := range objs {
		if _, _, err := w.a.tbl.Delete(w.wtxn, o); err != nil {
			return 0, err
		}
	}
	return len(objs), nil
}

// ---- statedb: no delete by prefix, so both ways are one by one ----

func (w *statedbW) DeleteNamePrefix(prefix string) (int, error) {
	return w.DeleteNamePrefixOneByOne(prefix)
}

func (w *statedbW) DeleteNamePrefixOneByOne(prefix string) (int, error) {
	dpBuf = dpBuf[:0]
	for o := range w.a.tbl.Prefix(w.wtxn, statedbName.Query(prefix)) {
		dpBuf = append(dpBuf, o)
	}
	return w.deleteEach(dpBuf)
}

func (w *statedbW) DeleteIDPrefix(hi uint32) (int, error) { return w.DeleteIDPrefixOneByOne(hi) }

func (w *statedbW) DeleteIDPrefixOneByOne(hi uint32) (int, error) {
	dpBuf = dpBuf[:0]
	key := statedbindex.Uint64(uint64(hi) << 32)[:4]
	for o := range w.a.tbl.Prefix(w.wtxn, statedbID.QueryFromKey(key)) {
		dpBuf = append(dpBuf, o)
	}
	return w.deleteEach(dpBuf)
}

func (w *statedbW) deleteEach(objs []*Object) (int, error) {
	for _, o := range objs {
		if _, _, err := w.a.tbl.Delete(w.wtxn, o); err != nil {
			return 0, err
		}
	}
	return len(objs), nil
}

// ---- go-memdb ----

var errMemdbNoIDPrefix = errors.New("memdb: the uint id index has no prefix form")

func (w *memdbW) DeleteNamePrefix(prefix string) (int, error) {
	if _, err := w.txn.DeletePrefix(memdbTable, "name_prefix", prefix); err != nil {
		return 0, err
	}
	return -1, nil
}

func (w *memdbW) DeleteNamePrefixOneByOne(prefix string) (int, error) {
	if err := w.collect("name_prefix", prefix); err != nil {
		return 0, err
	}
	for _, o := range dpBuf {
		if err := w.txn.Delete(memdbTable, o); err != nil {
			return 0, err
		}
	}
	return len(dpBuf), nil
}

// collect reads into dpBuf the objects go-memdb's Get(index, arg)
// returns, as a user who deletes or replaces them afterwards must.
func (w *memdbW) collect(index, arg string) error {
	it, err := w.txn.Get(memdbTable, index, arg)
	if err != nil {
		return err
	}
	dpBuf = dpBuf[:0]
	for v := it.Next(); v != nil; v = it.Next() {
		dpBuf = append(dpBuf, v.(*Object))
	}
	return nil
}

func (w *memdbW) DeleteIDPrefix(uint32) (int, error)         { return 0, errMemdbNoIDPrefix }
func (w *memdbW) DeleteIDPrefixOneByOne(uint32) (int, error) { return 0, errMemdbNoIDPrefix }

// ---- the workload ----

// deletePrefixWorkload returns the workload that deletes group dpGroup with
// del, checking what it reports and what the table holds after the commit.
func deletePrefixWorkload(del func(prefixDeleter) (int, error)) func(*testing.B, Factory) {
	return func(b *testing.B, f Factory) {
		d := mustNew(b, f, Schema{Name: true})
		var all, group []*Object
		for g := range dpGroups {
			for j := range dpGroupN {
				o := &Object{ID: uint64(g)<<32 | uint64(j), Name: dpName(g, j)}
				all = append(all, o)
				if g == dpGroup {
					group = append(group, o)
				}
			}
		}
		insertAll(b, d, all)
		for b.Loop() {
			w := d.WriteTxn()
			pd, ok := w.(prefixDeleter)
			if !ok {
				fatalf(b, "%s: its write transaction is no prefixDeleter", f.Name)
			}
			n, err := del(pd)
			if err != nil || n != dpGroupN && n != -1 {
				fatalf(b, "delete by prefix = %d, %v; want %d", n, err, dpGroupN)
			}
			w.Commit()
			b.StopTimer()
			r := d.ReadTxn()
			if _, found := r.Get(group[0].ID); found {
				fatalf(b, "object %d of the deleted group is still there", group[0].ID)
			}
			if o, found := r.GetByName(dpName(dpGroup+1, 0)); !found || o.ID != uint64(dpGroup+1)<<32 {
				fatalf(b, "object %s of the next group is gone", dpName(dpGroup+1, 0))
			}
			expectCount(b, d, len(all)-len(group))
			insertAll(b, d, group)
			b.StartTimer()
		}
		expectCount(b, d, len(all))
		b.ReportMetric(float64(b.N*dpGroupN)/b.Elapsed().Seconds(), "objects/sec")
	}
}

func deletePrefixWorkloads() []Workload {
	names := func(pd prefixDeleter) (int, error) { return pd.DeleteNamePrefix(dpPrefix) }
	namesOneByOne := func(pd prefixDeleter) (int, error) { return pd.DeleteNamePrefixOneByOne(dpPrefix) }
	ids := func(pd prefixDeleter) (int, error) { return pd.DeleteIDPrefix(dpHi) }
	idsOneByOne := func(pd prefixDeleter) (int, error) { return pd.DeleteIDPrefixOneByOne(dpHi) }
	return []Workload{
		{Name: "DeletePrefix", Op: "txn: delete 1000 of 10k by name prefix (statedb: Prefix + Delete each)", Group: "write",
			DB: deletePrefixWorkload(names)},
		{Name: "DeletePrefix_Baseline", Op: "as DeletePrefix, all one by one: Prefix + Delete each", Group: "write",
			DB: deletePrefixWorkload(namesOneByOne)},
		{Name: "DeletePrefix_Primary", Op: "txn: delete 1000 of 10k by ID prefix (statedb: Prefix + Delete each)", Group: "write",
			DB: deletePrefixWorkload(ids), NA: []string{"memdb"}},
		{Name: "DeletePrefix_Primary_Baseline", Op: "as DeletePrefix_Primary, all one by one", Group: "write",
			DB: deletePrefixWorkload(idsOneByOne), NA: []string{"memdb"}},
	}
}
