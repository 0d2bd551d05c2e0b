package main

import (
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

var (
	strataID = strata.Index[*Object, uint64]{
		Name:       "id",
		FromObject: func(o *Object) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	strataName = strata.Index[*Object, string]{
		Name:       "name",
		FromObject: func(o *Object) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	strataTags = strata.Index[*Object, string]{
		Name:       "tags",
		FromObject: strataTagKeys,
		FromKey:    index.String,
	}
)

func strataTagKeys(o *Object) index.KeySet {
	switch len(o.Tags) {
	case 0:
		return index.KeySet{}
	case 1:
		return index.NewKeySet(index.String(o.Tags[0]))
	}
	keys := make([]index.Key, len(o.Tags))
	for i, t := range o.Tags {
		keys[i] = index.String(t)
	}
	return index.NewKeySet(keys...)
}

type strataDB struct {
	db  *strata.DB
	tbl strata.RWTable[*Object]
	r   strataR
	w   strataW
}

type strataR struct {
	a   *strataDB
	txn strata.ReadTxn
}

type strataW struct {
	strataR
	wtxn strata.WriteTxn
}

func newStrata(s Schema) (DB, error) {
	a := &strataDB{db: strata.New()}
	for i := range s.ExtraTables {
		if _, err := strata.NewTable(a.db, fmt.Sprintf("other%d", i), strataID); err != nil {
			return nil, err
		}
	}
	var sec []strata.Indexer[*Object]
	if s.Name {
		sec = append(sec, strataName)
	}
	if s.Tags {
		sec = append(sec, strataTags)
	}
	if s.ByRevision {
		sec = append(sec, strata.RevisionIndex[*Object]())
	}
	tbl, err := strata.NewTable(a.db, "objects", strataID, sec...)
	if err != nil {
		return nil, err
	}
	a.tbl = tbl
	a.r.a, a.w.a = a, a
	return a, nil
}

func (a *strataDB) ReadTxn() RTxn {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (a *strataDB) WriteTxn() WTxn {
	a.w.wtxn = a.db.WriteTxn(a.tbl)
	a.w.txn = a.w.wtxn
	return &a.w
}

func (r *strataR) Get(id uint64) (*Object, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, strataID.Query(id))
	return o, ok
}

func (r *strataR) GetByName(name string) (*Object, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, strataName.Query(name))
	return o, ok
}

func (r *strataR) ListByTag(tag string) (res Result) {
	for o := range r.a.tbl.List(r.txn, strataTags.Query(tag)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *strataR) PrefixByTag(prefix string) (res Result) {
	for o := range r.a.tbl.Prefix(r.txn, strataTags.Query(prefix)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *strataR) LowerBoundByTag(tag string) (res Result) {
	for o := range r.a.tbl.LowerBound(r.txn, strataTags.Query(tag)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *strataR) All() (res Result) {
	for o := range r.a.tbl.All(r.txn) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *strataR) Count() int { return r.a.tbl.NumObjects(r.txn) }

func (w *strataW) Insert(o *Object) error {
	_, _, err := w.a.tbl.Insert(w.wtxn, o)
	return err
}

func keepNew(_, new *Object) *Object { return new }

func (w *strataW) Modify(o *Object) error {
	_, _, err := w.a.tbl.Modify(w.wtxn, o, keepNew)
	return err
}

func (w *strataW) Delete(o *Object) (bool, error) {
	_, had, err := w.a.tbl.Delete(w.wtxn, o)
	return had, err
}

func (w *strataW) Commit() {
	if _, err := w.wtxn.Commit(); err != nil {
		panic(err) // only ErrTransactionClosed without persistence: a workload bug
	}
}

func (w *strataW) Abort() { w.wtxn.Abort() }

func (w *strataW) DeleteAll() error { return w.a.tbl.DeleteAll(w.wtxn) }

func (a *strataDB) Changes() (Feed, error) {
	w := a.db.WriteTxn(a.tbl)
	it, err := a.tbl.Changes(w)
	if err != nil {
		w.Abort()
		return nil, err
	}
	if _, err := w.Commit(); err != nil {
		return nil, err
	}
	return &strataFeed{a: a, it: it}, nil
}

type strataFeed struct {
	a  *strataDB
	it strata.ChangeIterator[*Object]
}

func (f *strataFeed) Next() (r FeedResult, watch <-chan struct{}) {
	changes, watch := f.it.Next(f.a.db.ReadTxn())
	for c := range changes {
		if c.Deleted {
			r.Deletes++
		} else {
			r.Upserts++
		}
		r.Sum += c.Object.ID
	}
	return r, watch
}

func (f *strataFeed) Close() { f.it.Close() }
