package main

import (
	"iter"
	"net/netip"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

var (
	statedbRouteID = statedb.Index[*Route, uint64]{
		Name:       "id",
		FromObject: func(r *Route) index.KeySet { return index.NewKeySet(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	statedbRoutePrefix = statedb.NetIPPrefixIndex[*Route]{
		Name:       "prefix",
		FromObject: func(r *Route) iter.Seq[netip.Prefix] { return statedb.Just(r.Prefix) },
		Unique:     true,
	}
)

type statedbLPM struct {
	db       *statedb.DB
	tbl      statedb.RWTable[*Route]
	prepared []statedb.Query[*Route]
	r        statedbLPMR
	w        statedbLPMW
}

type statedbLPMR struct {
	a   *statedbLPM
	txn statedb.ReadTxn
}

type statedbLPMW struct {
	a    *statedbLPM
	wtxn statedb.WriteTxn
}

func newStatedbLPM() (LPMDB, error) {
	a := &statedbLPM{db: statedb.New()}
	tbl, err := statedb.NewTable(a.db, "routes", statedbRouteID, statedbRoutePrefix)
	if err != nil {
		return nil, err
	}
	a.tbl = tbl
	a.r.a, a.w.a = a, a
	return a, nil
}

func (a *statedbLPM) ReadTxn() LPMRTxn {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (a *statedbLPM) WriteTxn() LPMWTxn {
	a.w.wtxn = a.db.WriteTxn(a.tbl)
	return &a.w
}

func (a *statedbLPM) Prepare(addrs []netip.Addr) {
	a.prepared = make([]statedb.Query[*Route], len(addrs))
	for i, addr := range addrs {
		a.prepared[i] = statedbRoutePrefix.Query(addr)
	}
}

func (r *statedbLPMR) Lookup(addr netip.Addr) (*Route, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, statedbRoutePrefix.Query(addr))
	return o, ok
}

func (r *statedbLPMR) LookupPrepared(i int) (*Route, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, r.a.prepared[i])
	return o, ok
}

func (r *statedbLPMR) Count() int { return r.a.tbl.NumObjects(r.txn) }

func (w *statedbLPMW) Insert(r *Route) error {
	_, _, err := w.a.tbl.Insert(w.wtxn, r)
	return err
}

func (w *statedbLPMW) Commit() { w.wtxn.Commit() }
func (w *statedbLPMW) Abort()  { w.wtxn.Abort() }
