package main

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

var (
	statedbID = statedb.Index[*Object, uint64]{
		Name:       "id",
		FromObject: func(o *Object) index.KeySet { return index.NewKeySet(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	statedbName = statedb.Index[*Object, string]{
		Name:       "name",
		FromObject: func(o *Object) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	statedbTags = statedb.Index[*Object, string]{
		Name:       "tags",
		FromObject: statedbTagKeys,
		FromKey:    index.String,
	}
)

// statedbTagKeys is strataTagKeys written with statedb's index package
// (statedb's own index.StringSlice would allocate a slice even for one tag).
func statedbTagKeys(o *Object) index.KeySet {
	switch len(o.Tags) {
	case 0:
		return index.EmptyKeySet
	case 1:
		return index.NewKeySet(index.String(o.Tags[0]))
	}
	keys := make([]index.Key, len(o.Tags)-1)
	for i, t := range o.Tags[1:] {
		keys[i] = index.String(t)
	}
	return index.NewKeySet(index.String(o.Tags[0]), keys...)
}

// statedbDB drives cilium/statedb v0.9.4. The DB is Start()ed only by
// Changes: Start runs the graveyard garbage collector, which matters only
// for Changes iterators (delete trackers); without them deleted objects
// never enter the graveyard.
type statedbDB struct {
	db  *statedb.DB
	tbl statedb.RWTable[*Object]
	r   statedbR
	w   statedbW
}

type statedbR struct {
	a   *statedbDB
	txn statedb.ReadTxn
}

type statedbW struct {
	statedbR
	wtxn statedb.WriteTxn
}

func newStatedb(s Schema) (DB, error) {
	a := &statedbDB{db: statedb.New()}
	for i := range s.ExtraTables {
		if _, err := statedb.NewTable(a.db, fmt.Sprintf("other%d", i), statedbID); err != nil {
			return nil, err
		}
	}
	var sec []statedb.Indexer[*Object]
	if s.Name {
		sec = append(sec, statedbName)
	}
	if s.Tags {
		sec = append(sec, statedbTags)
	}
	tbl, err := statedb.NewTable(a.db, "objects", statedbID, sec...)
	if err != nil {
		return nil, err
	}
	a.tbl = tbl
	a.r.a, a.w.a = a, a
	return a, nil
}

func (a *statedbDB) ReadTxn() RTxn {
	a.r.txn = a.db.ReadTxn()
	return &a.r
}

func (a *statedbDB) WriteTxn() WTxn {
	a.w.wtxn = a.db.WriteTxn(a.tbl)
	a.w.txn = a.w.wtxn
	return &a.w
}

func (r *statedbR) Get(id uint64) (*Object, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, statedbID.Query(id))
	return o, ok
}

func (r *statedbR) GetByName(name string) (*Object, bool) {
	o, _, ok := r.a.tbl.Get(r.txn, statedbName.Query(name))
	return o, ok
}

func (r *statedbR) ListByTag(tag string) (res Result) {
	for o := range r.a.tbl.List(r.txn, statedbTags.Query(tag)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *statedbR) PrefixByTag(prefix string) (res Result) {
	for o := range r.a.tbl.Prefix(r.txn, statedbTags.Query(prefix)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *statedbR) LowerBoundByTag(tag string) (res Result) {
	for o := range r.a.tbl.LowerBound(r.txn, statedbTags.Query(tag)) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *statedbR) All() (res Result) {
	for o := range r.a.tbl.All(r.txn) {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *statedbR) Count() int { return r.a.tbl.NumObjects(r.txn) }

func (w *statedbW) Insert(o *Object) error {
	_, _, err := w.a.tbl.Insert(w.wtxn, o)
	return err
}

func (w *statedbW) Modify(o *Object) error {
	_, _, err := w.a.tbl.Modify(w.wtxn, o, keepNew)
	return err
}

func (w *statedbW) Delete(o *Object) (bool, error) {
	_, had, err := w.a.tbl.Delete(w.wtxn, o)
	return had, err
}

func (w *statedbW) Commit() { w.wtxn.Commit() }
func (w *statedbW) Abort()  { w.wtxn.Abort() }

func (w *statedbW) DeleteAll() error { return w.a.tbl.DeleteAll(w.wtxn) }

// statedbGCInterval is the rate limit of statedb's graveyard collector
// that statedb's own benchmarks set (newTestDBWithMetrics:
// db.setGCRateLimitInterval(50ms)); its default is 1s.
const statedbGCInterval = 50 * time.Millisecond

// Changes starts the DB's graveyard collector, as statedb's DB_Changes
// benchmark has it (its hive starts the DB), with the interval statedb's
// tests use, then opens the iterator. The interval has no exported setter:
// it is set through reflect, and fails loudly if the field is gone.
func (a *statedbDB) Changes() (Feed, error) {
	f := reflect.ValueOf(a.db).Elem().FieldByName("gcRateLimitInterval")
	if !f.IsValid() || f.Type() != reflect.TypeFor[time.Duration]() {
		return nil, fmt.Errorf("statedb.DB has no gcRateLimitInterval field of type time.Duration")
	}
	*(*time.Duration)(unsafe.Pointer(f.UnsafeAddr())) = statedbGCInterval
	if err := a.db.Start(); err != nil {
		return nil, err
	}
	w := a.db.WriteTxn(a.tbl)
	it, err := a.tbl.Changes(w)
	if err != nil {
		w.Abort()
		a.db.Stop()
		return nil, err
	}
	w.Commit()
	return &statedbFeed{a: a, it: it}, nil
}

type statedbFeed struct {
	a  *statedbDB
	it statedb.ChangeIterator[*Object]
}

func (f *statedbFeed) Next() (r FeedResult, watch <-chan struct{}) {
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

func (f *statedbFeed) Close() {
	f.it.Close()
	f.a.db.Stop()
}
