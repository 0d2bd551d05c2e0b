package stratacli

import (
	"bytes"
	"fmt"
	"iter"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// tableType is a table whose Go type the application registered with
// WithTable: it decodes the table's values and computes their keys.
type tableType interface {
	tableName() string
	// schema is what persist records of a table bound as registered.
	schema() persist.Schema
	// create makes the table in db, empty.
	create(db *strata.DB) (typedTable, error)
}

// typedTable is a registered table created in a database of the command's
// own.
type typedTable interface {
	anyTable() strata.AnyTable
	// decode decodes a value written by codec version version.
	decode(value []byte, version uint32) (any, error)
	// primaryKey returns obj's key in the primary index.
	primaryKey(obj any) (index.Key, error)
	// restore fills the table, in txn, with the decoded objects of
	// records, which come in primary key order.
	restore(txn strata.WriteTxn, records iter.Seq2[record, error], version uint32, revision uint64) error
	// binding binds the table to its codec, for the store and snapshots.
	binding() persist.TableBinding
}

// record is an object as stored: its key when known (a store's), its
// revision, the codec version that wrote it, and the codec's bytes.
type record struct {
	key      []byte
	revision uint64
	version  uint32
	value    []byte
}

// typeDef is the tableType of a table of Obj.
type typeDef[Obj any] struct {
	name      string
	codec     persist.Codec[Obj]
	primary   strata.Indexer[Obj]
	secondary []strata.Indexer[Obj]
	typeName  string
}

func (d *typeDef[Obj]) tableName() string { return d.name }

func (d *typeDef[Obj]) schema() persist.Schema {
	if d.typeName != "" {
		return persist.TableSchema(d.codec, persist.TypeName(d.typeName))
	}
	return persist.TableSchema(d.codec)
}

func (d *typeDef[Obj]) create(db *strata.DB) (typedTable, error) {
	tbl, err := strata.NewTable(db, d.name, d.primary, d.secondary...)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", d.name, err)
	}
	t := &typed[Obj]{def: d, tbl: tbl}
	if q, ok := tbl.PrimaryIndexer().(interface {
		QueryFromObject(Obj) (strata.Query[Obj], bool)
	}); ok {
		t.keyOf = q.QueryFromObject
	}
	return t, nil
}

// typed is the typedTable of a table of Obj.
type typed[Obj any] struct {
	def   *typeDef[Obj]
	tbl   strata.RWTable[Obj]
	keyOf func(Obj) (strata.Query[Obj], bool)
}

func (t *typed[Obj]) anyTable() strata.AnyTable { return strata.AnyTable{Meta: t.tbl} }

func (t *typed[Obj]) decode(value []byte, version uint32) (any, error) {
	obj, err := t.def.codec.Decode(value, version)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (t *typed[Obj]) primaryKey(obj any) (index.Key, error) {
	o, ok := obj.(Obj)
	if !ok || t.keyOf == nil {
		return nil, fmt.Errorf("table %q: no primary key for %T", t.def.name, obj)
	}
	q, found := t.keyOf(o)
	if !found {
		return nil, fmt.Errorf("table %q: the object has no key in the primary index", t.def.name)
	}
	return bytes.Clone(q.Key()), nil
}

func (t *typed[Obj]) restore(txn strata.WriteTxn, records iter.Seq2[record, error], version uint32, revision uint64) error {
	var err error
	objects := func(yield func(Obj, strata.Revision) bool) {
		for rec, rerr := range records {
			if rerr != nil {
				err = rerr
				return
			}
			v := rec.version
			if v == 0 {
				v = version
			}
			obj, derr := t.def.codec.Decode(rec.value, v)
			if derr != nil {
				err = fmt.Errorf("table %q: decoding the object at revision %d: %w", t.def.name, rec.revision, derr)
				return
			}
			if !yield(obj, rec.revision) {
				return
			}
		}
	}
	if rerr := strata.Restore(txn, t.tbl, objects, revision); rerr != nil {
		return rerr
	}
	return err
}

func (t *typed[Obj]) binding() persist.TableBinding {
	if t.def.typeName != "" {
		return persist.Table(t.tbl, t.def.codec, persist.TypeName(t.def.typeName))
	}
	return persist.Table(t.tbl, t.def.codec)
}

// compatible says whether values stored with schema stored (nil: none
// recorded) can be decoded by a table registered with schema now, as
// persist decides when it loads them: the same schema, or a higher codec
// version, whose codec migrates older values. It returns why not
// otherwise. A snapshot of format 1 records only the codec version
// (codec and type empty).
func compatible(stored *persist.Schema, now persist.Schema) (bool, string) {
	switch {
	case stored == nil:
		return true, ""
	case stored.Version > now.Version:
		return false, fmt.Sprintf("stored by codec version %d, the registered codec is version %d", stored.Version, now.Version)
	case stored.Version < now.Version, *stored == now, stored.Codec == "" && stored.Type == "":
		return true, ""
	}
	return false, fmt.Sprintf("stored with %v, registered with %v", *stored, now)
}
