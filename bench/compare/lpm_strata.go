package main

import (
	"net/netip"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

var (
	strataRouteID = strata.Index[*Route, uint64]{
		Name:       "id",
		FromObject: func(r *Route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	strataRoutePrefix = strata.LPMIndex[*Route]{
		Name:       "prefix",
		FromObject: func(r *Route) strata.PrefixSet { return strata.PrefixSetOf(r.Prefix) },
		Unique:     true,
	}
)

type strataLPM struct {
	db       *strata.DB
	tbl      strata.RWTable[*Route]
	prepared []strata.Query[*Route]
	r        strataLPMR
	w        strataLPMW
}

type strataLPMR struct {
	a   *strataLPM
	txn strata.ReadTxn
}

type strataLPMW struct {
	a    *strataLPM
	wtxn strata.WriteTxn
}

func newStrataLPM() (LPMDB, error) {
	a := &strataLPM{db: strata.New()}
	tbl, err := strata.NewTable(a.db, "routes", strataRouteID, strataRoutePrefix)
	if err != nil {
		return nil, err
	}
	a.tbl = tbl
	a.r.a, a.w.a = a, a
	return a, nil
}

func (a *strataLPM) ReadTxn() LPMRTxn {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (a *strataLPM) WriteTxn() LPMWTxn {
	a.w.wtxn = a.db.WriteTxn(a.tbl)
	return &a.w
}

func (a *strataLPM) Prepare(addrs []netip.Addr) {
	a.prepared = make([]strata.Query[*Route], len(addrs))
	for i, addr := range addrs {
		a.prepared[i] = strataRoutePrefix.Containing(addr)
	}
}

func (r *strataLPMR) Lookup(addr netip.Addr) (*Route, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, strataRoutePrefix.Containing(addr))
	return o, ok
}

func (r *strataLPMR) LookupPrepared(i int) (*Route, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, r.a.prepared[i])
	return o, ok
}

func (r *strataLPMR) Count() int { return r.a.tbl.NumObjects(r.txn) }

func (w *strataLPMW) Insert(r *Route) error {
	_, _, err := w.a.tbl.Insert(w.wtxn, r)
	return err
}

func (w *strataLPMW) Commit() {
	if _, err := w.wtxn.Commit(); err != nil {
		panic(err) // only ErrTransactionClosed without persistence: a workload bug
	}
}

func (w *strataLPMW) Abort() { w.wtxn.Abort() }
