package main

import (
	"errors"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"
)

// memdbDB drives hashicorp/go-memdb v1.3.5. Where it does not map exactly:
//   - One global write lock (MemDB.Txn(true)) instead of per-table locks;
//     single-goroutine workloads only pay for taking it.
//   - No revisions, no revision index and no Modify: the Modify workload is
//     First + Insert for memdb.
//   - Reads and scans go through its reflection indexers (UintFieldIndex,
//     StringFieldIndex, StringSliceFieldIndex) and box their arguments in
//     interface values, which is how go-memdb is used.
//   - Get is First() (it also tracks a watch channel internally; there is no
//     watch-free lookup); LowerBound scans run to the end of the index, as
//     the others do.
//   - Read transactions are allocated per Txn(false) call, unlike strata's
//     and statedb's, which are one atomic load.
type memdbDB struct {
	db *memdb.MemDB
	r  memdbR
	w  memdbW
}

type memdbR struct{ txn *memdb.Txn }

type memdbW struct{ memdbR }

const memdbTable = "objects"

func newMemdb(s Schema) (DB, error) {
	id := &memdb.IndexSchema{Name: "id", Unique: true, Indexer: &memdb.UintFieldIndex{Field: "ID"}}
	schema := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	for i := range s.ExtraTables {
		name := fmt.Sprintf("other%d", i)
		schema.Tables[name] = &memdb.TableSchema{Name: name, Indexes: map[string]*memdb.IndexSchema{"id": id}}
	}
	ts := &memdb.TableSchema{Name: memdbTable, Indexes: map[string]*memdb.IndexSchema{"id": id}}
	if s.Name {
		ts.Indexes["name"] = &memdb.IndexSchema{Name: "name", Unique: true, AllowMissing: true,
			Indexer: &memdb.StringFieldIndex{Field: "Name"}}
	}
	if s.Tags {
		ts.Indexes["tags"] = &memdb.IndexSchema{Name: "tags", AllowMissing: true,
			Indexer: &memdb.StringSliceFieldIndex{Field: "Tags"}}
	}
	schema.Tables[memdbTable] = ts
	db, err := memdb.NewMemDB(schema)
	if err != nil {
		return nil, err
	}
	return &memdbDB{db: db}, nil
}

func (a *memdbDB) ReadTxn() RTxn {
	a.r.txn = a.db.Txn(false)
	return &a.r
}

func (a *memdbDB) WriteTxn() WTxn {
	a.w.txn = a.db.Txn(true)
	return &a.w
}

func (r *memdbR) first(index string, arg any) (*Object, bool) {
	x, err := r.txn.First(memdbTable, index, arg)
	if err != nil {
		panic(err) // a schema or argument bug, not a data condition
	}
	if x == nil {
		return nil, false
	}
	return x.(*Object), true
}

func (r *memdbR) Get(id uint64) (*Object, bool)         { return r.first("id", id) }
func (r *memdbR) GetByName(name string) (*Object, bool) { return r.first("name", name) }

func scanMemdb(it memdb.ResultIterator, err error) (res Result) {
	if err != nil {
		panic(err)
	}
	for x := it.Next(); x != nil; x = it.Next() {
		res.N++
		res.Sum += x.(*Object).ID
	}
	return res
}

func (r *memdbR) ListByTag(tag string) Result {
	return scanMemdb(r.txn.Get(memdbTable, "tags", tag))
}

func (r *memdbR) PrefixByTag(prefix string) Result {
	return scanMemdb(r.txn.Get(memdbTable, "tags_prefix", prefix))
}

func (r *memdbR) LowerBoundByTag(tag string) Result {
	return scanMemdb(r.txn.LowerBound(memdbTable, "tags", tag))
}

func (r *memdbR) All() Result { return scanMemdb(r.txn.Get(memdbTable, "id")) }

// Count scans: go-memdb keeps no object count.
func (r *memdbR) Count() int { return r.All().N }

func (w *memdbW) Insert(o *Object) error { return w.txn.Insert(memdbTable, o) }

func (w *memdbW) Modify(o *Object) error {
	if _, err := w.txn.First(memdbTable, "id", o.ID); err != nil {
		return err
	}
	// The merge keeps the new object, as in the other adapters.
	return w.txn.Insert(memdbTable, o)
}

func (w *memdbW) Delete(o *Object) (bool, error) {
	err := w.txn.Delete(memdbTable, o)
	if errors.Is(err, memdb.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (w *memdbW) Commit() { w.txn.Commit() }
func (w *memdbW) Abort()  { w.txn.Abort() }

func (w *memdbW) DeleteAll() error {
	_, err := w.txn.DeleteAll(memdbTable, "id")
	return err
}
