package main

import "testing"

// The read workloads on Strata and statedb go through their DB adapters
// (db_strata.go, db_statedb.go): the reads below are the one the DB
// interface lacks, a short scan of the primary index, written with each
// database's LowerBound the way its users write it.

type strataReads struct{ *strataDB }

func newStrataReads(b *testing.B, objs []*Object) Reads {
	return strataReads{loadDB(b, Factory{"strata", newStrata}, objs).(*strataDB)}
}

func (a strataReads) ReadTxn() Reader {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (r *strataR) ScanFrom(id uint64, n int) (res Result) {
	for o := range r.a.tbl.LowerBound(r.txn, strataID.Query(id)) {
		res.N++
		res.Sum += o.ID
		if res.N == n {
			break
		}
	}
	return res
}

type statedbReads struct{ *statedbDB }

func newStatedbReads(b *testing.B, objs []*Object) Reads {
	return statedbReads{loadDB(b, Factory{"statedb", newStatedb}, objs).(*statedbDB)}
}

func (a statedbReads) ReadTxn() Reader {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (r *statedbR) ScanFrom(id uint64, n int) (res Result) {
	for o := range r.a.tbl.LowerBound(r.txn, statedbID.Query(id)) {
		res.N++
		res.Sum += o.ID
		if res.N == n {
			break
		}
	}
	return res
}
