package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
)

// InitializerName is the name of the initializer Register gives a table
// while it loads (strata.RWTable.RegisterInitializer).
const InitializerName = "persist"

// Register makes table durable in s, with codec encoding its objects, and
// loads into it the objects s holds for it. table must be empty (register
// tables before writing to them). Tables are known in the store by name:
// a table registered under the name of a table stored earlier gets that
// table's objects back.
//
// Register works in three steps:
//
//  1. in a write transaction, it registers an initializer,
//     InitializerName, and commits, so that from then on the table reads
//     as not initialized (Initialized is false, PendingInitializers names
//     it);
//  2. it reads the table's stored objects, decoded, in primary key order,
//     with one scan bounded to the table's keys, without holding the
//     table's lock;
//  3. in a second write transaction, it restores them (strata.Restore:
//     secondary indexes are rebuilt, the table's revision continues
//     above the stored one), attaches the table to s (strata.SetJournal),
//     marks the initializer done, and commits. Readers see the loaded
//     table, initialized, all at once.
//
// If Register fails the table stays not initialized. Errors:
// ErrUnknownVersion (a value written by a newer codec version),
// ErrCorrupt, ErrAlreadyRegistered, ErrClosed, ErrStoreFailed, the codec's
// decoding errors, and strata's (ErrTableNotEmpty, ErrJournalConflict);
// each wrapped with the table's name.
//
// Register may be called concurrently for different tables: they load in
// parallel (see RegisterAll).
func Register[Obj any](s *Store, db *strata.DB, table strata.RWTable[Obj], codec Codec[Obj]) (err error) {
	name := table.Name()
	defer func() {
		if err != nil {
			err = fmt.Errorf("persist: table %q: %w", name, err)
		}
	}()
	id, err := s.claimTable(name)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.unclaimTable(name)
		}
	}()
	keys := makeTableKeys(id)

	txn := db.WriteTxn(table)
	done := table.RegisterInitializer(txn, InitializerName)
	if _, err := txn.Commit(); err != nil {
		return err
	}
	if testHookLoading != nil {
		testHookLoading(name)
	}

	objects, rev, err := scan(s, codec, keys)
	if err != nil {
		return err
	}
	txn = db.WriteTxn(table)
	defer txn.Abort()
	err = strata.Restore(txn, table, func(yield func(Obj, strata.Revision) bool) {
		for i := range objects {
			if !yield(objects[i].obj, objects[i].rev) {
				return
			}
		}
	}, rev)
	if err != nil {
		return err
	}
	tj := &tableJournal[Obj]{codec: codec, version: codec.Version(), keys: keys}
	if err := strata.SetJournal(txn, table, s, tj); err != nil {
		return err
	}
	done(txn)
	// The commit goes through the store (a record of the table's
	// revision).
	_, err = txn.Commit()
	return err
}

// revObject is a loaded object and its revision.
type revObject[Obj any] struct {
	obj Obj
	rev strata.Revision
}

// scan reads the table's stored revision and its objects, decoded, in
// primary key order, with one scan bounded to the table's keys. It runs
// before the table is locked: the lock is held only while the trees are
// built (scanning first and building after is also faster than
// interleaving the two: BenchmarkRecovery).
func scan[Obj any](s *Store, codec Codec[Obj], keys tableKeys) (objs []revObject[Obj], rev strata.Revision, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return nil, 0, err
	}
	defer recoverFatal(&err)
	rev, err = s.storedRevision(keys)
	if err != nil {
		return nil, 0, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: keys.prefix, UpperBound: keys.upper})
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	seq, decodeErr := decodeAll(it, codec, len(keys.prefix))
	for o, r := range seq {
		objs = append(objs, revObject[Obj]{o, r})
	}
	if *decodeErr != nil {
		return nil, 0, *decodeErr
	}
	return objs, rev, it.Error()
}

// testHookLoading, if set, runs in Register between the commit that marks
// the table not initialized and the load.
var testHookLoading func(table string)

// decodeAll returns the objects under the iterator's bounds, decoded, in
// key order. The iterator's keys and values are only valid until it moves:
// the codec copies what it keeps (its contract). A failure stops the
// sequence and is left in *err.
func decodeAll[Obj any](it *pebble.Iterator, codec Codec[Obj], prefixLen int) (iter.Seq2[Obj, strata.Revision], *error) {
	var err error
	known := codec.Version()
	seq := func(yield func(Obj, strata.Revision) bool) {
		for it.First(); it.Valid(); it.Next() {
			v, verr := it.ValueAndErr()
			if verr != nil {
				err = verr
				return
			}
			version, rev, data, perr := parseValue(v)
			if perr != nil {
				err = fmt.Errorf("key %x: %w", it.Key()[prefixLen:], perr)
				return
			}
			if version > known {
				err = fmt.Errorf("key %x: value version %d, codec version %d: %w", it.Key()[prefixLen:], version, known, ErrUnknownVersion)
				return
			}
			obj, derr := codec.Decode(data, version)
			if derr != nil {
				err = fmt.Errorf("key %x: decode: %w", it.Key()[prefixLen:], derr)
				return
			}
			if !yield(obj, rev) {
				return
			}
		}
	}
	return seq, &err
}

// claimTable marks name registered and returns its id, entering a new
// table into the catalog (durably, before any of its objects can be
// written).
func (s *Store) claimTable(name string) (_ uint32, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	defer recoverFatal(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.registered[name] {
		return 0, ErrAlreadyRegistered
	}
	id, ok := s.catalog[name]
	if !ok {
		id = s.nextID
		if id == 0 {
			return 0, errors.New("table ids exhausted")
		}
		if err := s.db.Set(catalogKey(name), binary.AppendUvarint(nil, uint64(id)), pebble.Sync); err != nil {
			return 0, err
		}
		s.catalog[name] = id
		s.nextID++
	}
	s.registered[name] = true
	return id, nil
}

func (s *Store) unclaimTable(name string) {
	s.mu.Lock()
	delete(s.registered, name)
	s.mu.Unlock()
}

// storedRevision returns the table's stored revision, 0 if none.
func (s *Store) storedRevision(keys tableKeys) (strata.Revision, error) {
	v, closer, err := s.db.Get(keys.rev)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	rev, err := parseUvarint(v)
	if err != nil {
		return 0, fmt.Errorf("table revision: %w", err)
	}
	return rev, nil
}

// TableSpec is a table to register with RegisterAll; make one with Table.
type TableSpec struct {
	register func(*Store, *strata.DB) error
}

// Table returns the TableSpec of table with codec, for RegisterAll.
func Table[Obj any](table strata.RWTable[Obj], codec Codec[Obj]) TableSpec {
	return TableSpec{register: func(s *Store, db *strata.DB) error {
		return Register(s, db, table, codec)
	}}
}

// RegisterAll registers the tables, loading them in parallel (one
// goroutine each), and returns the errors of those that failed, joined.
func RegisterAll(s *Store, db *strata.DB, tables ...TableSpec) error {
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		wg.Go(func() { errs[i] = t.register(s, db) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
