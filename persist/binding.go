package persist

import (
	"reflect"

	"github.com/cockroachdb/pebble/v2"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// TableBinding is a table bound to the codec of its objects: what the store
// (Store.Register) and snapshots (WriteSnapshot, ReadSnapshot) need to write
// the table's objects and to read them back. Create one with Table.
type TableBinding interface {
	meta() strata.TableMeta
	schema() schema
	// register loads the table from s and attaches it (register.go).
	register(s *Store) error
	// loadApplied loads the table from s without attaching it, and
	// appendState writes its state as txn holds it into a batch
	// (applied.go).
	loadApplied(s *Store, keys tableKeys) error
	appendState(b *pebble.Batch, keys tableKeys, txn strata.ReadTxn) error
	// write writes the table's objects as seen by txn into a snapshot.
	write(ow *snapObjectWriter, txn strata.ReadTxn) error
	// restore fills the table, in txn, with the records that or reads;
	// e is the table's entry in the snapshot's header.
	restore(txn strata.WriteTxn, or *snapObjectReader, e *snapshotEntry) error
}

// Table binds tbl to codec. The binding records, with the table's objects,
// the codec's name and version and the identity of the object type (by
// default its package path and name, such as "*example.com/app.Node"; see
// TypeName), and refuses to load a table stored with another
// (ErrSchemaMismatch), unless the codec's version went up to migrate it.
//
// The codec is bound once: it is called directly for every object, with
// no lookup, reflection or boxing per object.
func Table[Obj any](tbl strata.RWTable[Obj], codec Codec[Obj], opts ...TableOption) TableBinding {
	b := &binding[Obj]{
		tbl:   tbl,
		codec: codec,
		sch:   schema{codec: codecName(codec), version: codec.Version(), typ: typeIdentity[Obj]()},
	}
	for _, o := range opts {
		o(&b.opts)
	}
	if b.opts.typeName != "" {
		b.sch.typ = b.opts.typeName
	}
	b.primaryKeys = primaryKeysOf(tbl)
	return b
}

// A TableOption changes how Table binds a table.
type TableOption func(*tableOptions)

type tableOptions struct {
	typeName string
	rekey    bool
}

// TypeName sets the identity of the table's object type that is recorded
// with its objects and compared when they are loaded, in place of the Go
// type's package path and name. Use it to keep a table's identity when the
// type is renamed or moved to another package without a change of
// encoding, or to name a type in a way of your own from the start.
func TypeName(name string) TableOption {
	return func(o *tableOptions) { o.typeName = name }
}

// Rekey lets Register rewrite the stored keys of a table whose primary
// index changed. Register computes the primary key of every stored object
// with the table's primary index as it is now; without Rekey, an object
// stored under another key fails the registration with ErrKeyChanged (a
// delete would otherwise miss the stored object, which would come back on
// the next start). With Rekey, the objects are loaded under their new keys
// and the store's keys are rewritten in one atomic batch before the table
// is attached; two objects with one new key fail the registration
// (strata.ErrRestoreInput) and change nothing. Rekey costs nothing when no
// key changed; snapshots ignore it (their records carry no keys).
func Rekey() TableOption {
	return func(o *tableOptions) { o.rekey = true }
}

// binding is a TableBinding of a table of Obj.
type binding[Obj any] struct {
	tbl   strata.RWTable[Obj]
	codec Codec[Obj]
	sch   schema
	opts  tableOptions
	// primaryKeys returns an object's keys in the table's primary index.
	primaryKeys func(Obj) index.KeySet
}

// keyString renders a primary key for people, through the table's primary
// index (strata.Index.KeyString: its ToString, or the default of its key
// type), in error messages. The text may hold any byte: quote it.
func (b *binding[Obj]) keyString(key []byte) string {
	if ks, ok := b.tbl.PrimaryIndexer().(interface{ KeyString(index.Key) string }); ok {
		return ks.KeyString(key)
	}
	return index.Key(key).String()
}

func (b *binding[Obj]) meta() strata.TableMeta { return b.tbl }
func (b *binding[Obj]) schema() schema         { return b.sch }

// primaryKeysOf returns the FromObject function of tbl's primary index. An
// Indexer is a strata.Index[Obj, Key] for some Key (its methods are
// unexported, so no other type is one), whose FromObject field is found
// once here and then called directly for every object, without the copy
// that QueryFromObject makes.
func primaryKeysOf[Obj any](tbl strata.Table[Obj]) func(Obj) index.KeySet {
	ix := tbl.PrimaryIndexer()
	v := reflect.ValueOf(ix)
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("FromObject"); f.IsValid() {
			if fn, ok := f.Interface().(func(Obj) index.KeySet); ok && fn != nil {
				return fn
			}
		}
	}
	q, ok := ix.(interface {
		QueryFromObject(Obj) (strata.Query[Obj], bool)
	})
	if !ok {
		return nil
	}
	return func(obj Obj) index.KeySet {
		query, found := q.QueryFromObject(obj)
		if !found {
			return index.KeySet{}
		}
		return index.NewKeySet(query.Key())
	}
}
