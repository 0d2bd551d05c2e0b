package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
)

// Invariants of registration, kept by this file:
//
//  1. A table attached to a store reads as initialized only once a
//     registration of it has loaded it: a registration refused or failed
//     after it attached the table leaves the store's initializer
//     (InitializerName) pending, and so does refuseWrites, which attaches
//     a table refused before that; Store.pending records it, by table,
//     with why the registration failed (Store.LoadError).
//  2. A table attached to a store whose registration has not succeeded
//     holds its name in Store.registered: Unregistered does not list it,
//     Drop and Rename refuse it, and only a registration of that same
//     table, one at a time (pendingReg.running), claims it again.
//  3. Such a table refuses every commit that upserts an object
//     (ErrNotLoaded wrapping why); one refused as not empty lets through
//     the deletes of a commit, writing nothing (tableJournal.deletesPass).

// InitializerName is the name of the initializer Register gives a table
// while it loads (strata.RWTable.RegisterInitializer); it stays pending
// while the table's registration is refused or failed.
const InitializerName = "persist"

// Register makes the tables durable in s and loads into each the objects s
// holds for it; several load in parallel, one goroutine each, and each table
// scans its stored objects on a goroutine of its own beside the one that
// restores them, which ends before Register returns. It returns
// the errors of the tables that failed, joined; the others are registered.
// Each table's database is its own (strata.TableMeta.DB): tables of several
// databases may share a store.
//
// Tables are known in the store by name: a table registered under the name
// of a table stored earlier gets that table's objects back, if it was stored
// with the same codec and object type (or the codec's version went up to
// migrate it: see Table and Versioned), and if every object's primary key,
// computed with the table's primary index as it is now, is the key it was
// stored under (see Rekey). Secondary indexes are not stored: they are
// rebuilt as the objects are loaded, so they may change freely between runs.
//
// Register works in three steps, for each table:
//
//  1. it refuses, before anything else, a table whose name is registered
//     already (ErrAlreadyRegistered), one whose database has another
//     journal (strata.ErrJournalConflict), one stored with another codec
//     or type (ErrSchemaMismatch, ErrUnknownVersion) and one that is not
//     empty (strata.ErrTableNotEmpty: register tables before writing to
//     them). All but the second are left attached to s, refusing writes:
//     every commit that writes them fails with ErrNotLoaded wrapping the
//     refusal (a table registered again goes on as it was, and so does
//     the table that holds the name). So does a table a closed or failed
//     store refuses (ErrClosed, ErrStoreFailed), and one whose primary
//     index is of a kind the store cannot compute keys with. Then, in a write
//     transaction, it attaches the table to s, refusing writes while it
//     loads, and registers an initializer, InitializerName, so that from
//     then on the table reads as not initialized (Initialized is false,
//     PendingInitializers names it);
//  2. in a second write transaction, it reads the table's stored
//     objects, decoded, in primary key order, with one scan bounded to
//     the table's keys, checking each object's primary key, and restores
//     them as the scan reads them (strata.Restore: secondary indexes are
//     rebuilt, the table's revision continues above the stored one);
//     a commit that writes the table meanwhile waits for its lock;
//  3. it marks the initializer done and commits;
//     from then on commits that write the table write it to s. Readers see
//     the loaded table, initialized, all at once.
//
// A table that Register refused, or failed to load (a value that does not
// decode, ErrKeyChanged, ErrUnknownVersion, ErrCorrupt, ErrStoreFailed,
// ErrClosed), never reads as initialized: the initializer InitializerName stays pending (except for
// a table of a database with another journal, which is not s's), and
// Store.LoadError returns why, the error commits that write it fail with.
// Such a table refuses writes: every commit that writes it fails with
// ErrNotLoaded wrapping the registration's error, so that no write is
// acknowledged that the next start would not find. Once attached to s
// (refused for its schema or for not being empty, or failed while
// loading), it keeps its name in s: Unregistered does not list it, Drop
// and Rename refuse it (ErrAlreadyRegistered), another table cannot be
// registered under it, and its stored objects wait for it. Register may be
// called again for the table (with a codec that migrates, say): when it
// succeeds, the table is loaded and initialized, and the initializer the
// failed registration left is the one it completes.
//
// The way out of strata.ErrTableNotEmpty: empty the table and register it
// again. A table refused as not empty lets through the commits that only
// delete its objects (DeleteAll, say), writing nothing to s: those objects
// were never stored, and the stored ones are untouched; a commit that
// inserts or updates still fails. To keep objects written before
// Register, read them out, empty the table, register it, and write them
// again. Errors are wrapped with the table's name.
func (s *Store) Register(tables ...TableBinding) error {
	if len(tables) == 1 {
		return tables[0].register(s)
	}
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		wg.Go(func() { errs[i] = t.register(s) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Register registers one table with s: it is s.Register(Table(table,
// codec)), the older form of the call, which also names the table's
// database: if db is not the table's, it fails with ErrForeignTable, and
// the table refuses writes as after any failed registration (unless it is
// the table registered with s under its name, which goes on).
func Register[Obj any](s *Store, db *strata.DB, table strata.RWTable[Obj], codec Codec[Obj]) error {
	b := Table(table, codec).(*binding[Obj])
	if !table.DB().SameDatabase(db) {
		return wrapTableErr(table.Name(), joinRefusal(ErrForeignTable, b.refuseWrites(s, ErrForeignTable)))
	}
	return b.register(s)
}

// register is Store.Register for one table.
func (b *binding[Obj]) register(s *Store) (err error) {
	name := b.tbl.Name()
	defer func() {
		if err != nil {
			err = wrapTableErr(name, err)
		}
	}()
	// Every failure leaves the table refusing writes (ErrNotLoaded), and
	// not initialized, except the table registered under the name, which
	// goes on, and a table of a database with another journal
	// (refuseWrites).
	if b.primaryKeys == nil {
		return joinRefusal(errUnknownPrimary, b.refuseWrites(s, errUnknownPrimary))
	}
	reg, err := s.claimTable(name, b.tbl, b.sch)
	if err != nil {
		// Another table of that name, or a store that is closed or
		// failed.
		return joinRefusal(err, b.refuseWrites(s, err))
	}
	if err := s.checkNotApplied(reg.id); err != nil {
		s.registrationFailed(name, b.tbl, err)
		return joinRefusal(err, b.refuseWrites(s, err))
	}
	// attached is set once a commit attached the table to s with tj:
	// from then on tj refuses writes after a failure; before, refuseWrites
	// attaches a journal that does.
	attached := false
	defer func() {
		if err != nil {
			// A table attached with its initializer pending keeps its
			// name (invariant 2); others let it go.
			s.registrationFailed(name, b.tbl, err)
			if !attached {
				err = joinRefusal(err, b.refuseWrites(s, err))
			}
		}
	}()
	tj := newTableJournal(b.codec, makeTableKeys(reg.id), b.keyString)
	tj.refuse(fmt.Errorf("%w: loading", ErrNotLoaded))
	db := b.tbl.DB()

	// Step 1: refuse what needs no scan, attach the table (refusing writes)
	// and mark it not initialized, refused or not (invariant 1).
	txn := db.WriteTxn(b.tbl)
	refusal := checkSchema(reg.stored, b.sch)
	notEmpty := false
	if n := b.tbl.NumObjects(txn); refusal == nil && n != 0 {
		refusal = fmt.Errorf("%d objects: %w", n, strata.ErrTableNotEmpty)
		notEmpty = true
	}
	if err := strata.SetJournal(txn, b.tbl, s, tj); err != nil {
		txn.Abort()
		return err
	}
	done := s.pendingInit(b.tbl)
	if done == nil {
		// A registration that failed left its initializer pending: this
		// one completes it rather than adding one nothing would complete.
		done = b.tbl.RegisterInitializer(txn, InitializerName)
	}
	if refusal != nil {
		// Attached, not initialized: the table refuses writes (the commit
		// writes nothing). One refused as not empty lets through the
		// commits that empty it, writing nothing (invariant 3), so that
		// it can be registered again.
		tj.refuse(fmt.Errorf("%w: %w", ErrNotLoaded, refusal))
		tj.deletesPass.Store(notEmpty)
		if _, err := txn.Commit(); err != nil {
			return errors.Join(refusal, err)
		}
		attached = true
		s.setPendingInit(b.tbl, done)
		return refusal
	}
	if _, err := txn.Commit(); err != nil {
		return err
	}
	attached = true
	s.setPendingInit(b.tbl, done)
	defer func() {
		if err != nil {
			tj.refuse(fmt.Errorf("%w: registration failed: %w", ErrNotLoaded, err))
		}
	}()
	if testHookLoading != nil {
		testHookLoading(name)
	}

	// Step 2: load the stored objects into the table.
	txn = db.WriteTxn(b.tbl)
	defer txn.Abort()
	// What is restored is in the store already: not journaled.
	if err := strata.SetJournal[Obj](txn, b.tbl, s, nil); err != nil {
		return err
	}
	moves, implied, err := b.load(s, txn, tj.keys)
	if err != nil {
		return err
	}
	tj.implied = implied

	// Step 3: attach the table for writing, and complete.
	if err := strata.SetJournal(txn, b.tbl, s, tj); err != nil {
		return err
	}
	done(txn)
	if len(moves) > 0 || reg.stored == nil || *reg.stored != b.sch {
		// Loaded: the keys and the schema now stored are those of the
		// binding.
		if err := s.rewriteTable(reg.id, tj.keys, moves, b.sch); err != nil {
			return err
		}
	}
	tj.refuse(nil)
	// The commit goes through the store, and writes nothing unless the
	// table's revision was above the one loaded (tj.implied).
	if _, err = txn.Commit(); err != nil {
		return err
	}
	s.registrationDone(b.tbl)
	return nil
}

// wrapTableErr wraps err with the table's name, unless the message begins
// with it already (strata's errors name the table).
func wrapTableErr(name string, err error) error {
	prefix := fmt.Sprintf("table %q: ", name)
	if msg := err.Error(); len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
		return fmt.Errorf("persist: %w", err)
	}
	return fmt.Errorf("persist: %s%w", prefix, err)
}

// keyMove is a stored object whose key is now another: its stored key, its
// new key, and its stored value.
type keyMove struct {
	from, to, value []byte
}

// load restores into the table, in txn, the objects the store holds for
// it, decoded, as one bounded scan of the table's keys reads them: in
// primary key order, streamed into the table's trees (strata.Restore). It
// checks that each object's primary key is the key it is stored under, and
// returns the objects whose key changed, when the binding has Rekey, and
// the revision the store gives the table: the greater of its stored
// revision and the highest object revision. The table's revision continues
// above it.
//
// The scan runs beside the restore: a goroutine reads and decodes the
// objects into batches (scan) that the calling goroutine restores, so that
// on two cores the reading and decoding overlap the tree inserts. The
// invariants: the iterator is used by the scanning goroutine alone, and
// closed only after it has ended; load does not return before that
// goroutine has ended, whichever way it returns (an error, a panic of
// Restore or of an index function, early stop); a panic of the scan (the
// codec's, or a fatal error of Pebble) is raised again in the calling
// goroutine, where it would have been raised without the pipeline; the
// objects reach Restore in the scan's order, each batch whole, the error
// that ended the scan after the objects read before it.
//
// If it fails, the transaction holds part of the objects: the caller
// aborts it.
//
// Guarded by BenchmarkRecovery.
func (b *binding[Obj]) load(s *Store, txn strata.WriteTxn, keys tableKeys) (moves []keyMove, implied strata.Revision, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return nil, 0, err
	}
	defer recoverFatal(&err)
	revision, err := s.storedRevision(keys)
	if err != nil {
		return nil, 0, fromPebble(err)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: keys.prefix, UpperBound: keys.upper})
	if err != nil {
		return nil, 0, fromPebble(err)
	}
	sc := &scanner[Obj]{
		b: b, it: it, prefixLen: len(keys.prefix),
		out:  make(chan *loadBatch[Obj], loadBatches),
		free: make(chan *loadBatch[Obj], loadBatches+2),
		stop: make(chan struct{}),
	}
	go sc.run()
	// Runs before recoverFatal, whatever ends load: the scan ends, then
	// its iterator is closed (run closes out last).
	defer sc.end()

	// scanErr is the error that ended the scan, which Restore, its
	// consumer, does not see: it restores what it got, and the caller
	// aborts the transaction.
	var scanErr error
	// value is the stored value of the object Restore is at, kept by the
	// scan only with Rekey.
	var value []byte
	implied = revision
	objects := func(yield func(strata.StoredObject[Obj], strata.Revision) bool) {
		for batch := range sc.out {
			for i := range batch.objs {
				rev := batch.revs[i]
				implied = max(implied, rev)
				if batch.values != nil {
					value = batch.values[i]
				}
				if !yield(batch.objs[i], rev) {
					return
				}
			}
			if batch.panicked != nil {
				panic(batch.panicked.value)
			}
			if batch.err != nil {
				scanErr = batch.err
				return
			}
			sc.recycle(batch)
		}
	}
	// Restore computes each object's primary key and compares it with the
	// stored one, calling keyChanged, before it draws the next object.
	keyChanged := func(stored, now []byte) error {
		if !b.opts.rekey {
			return fmt.Errorf("object stored under key %q has key %q in primary index %q now (register with persist.Rekey to rewrite the stored keys): %w",
				b.keyString(stored), b.keyString(now), b.tbl.Indexes()[0], ErrKeyChanged)
		}
		moves = append(moves, keyMove{from: bytes.Clone(stored), to: bytes.Clone(now), value: bytes.Clone(value)})
		return nil
	}
	if err := strata.RestoreStored(txn, b.tbl, objects, revision, keyChanged); err != nil {
		return nil, 0, err
	}
	return moves, implied, scanErr
}

// decode decodes the object at the iterator, whose key begins with a
// prefix of prefixLen bytes. Its primary key is checked by Restore
// (strata.RestoreStored, load's keyChanged).
//
// The iterator's keys and values are only valid until it moves: the codec
// copies what it keeps (its contract).
func (b *binding[Obj]) decode(it *pebble.Iterator, prefixLen int) (obj Obj, rev strata.Revision, err error) {
	key := it.Key()[prefixLen:]
	v, err := it.ValueAndErr()
	if err != nil {
		return obj, 0, fromPebble(err)
	}
	version, rev, data, err := parseValue(v)
	if err != nil {
		return obj, 0, fmt.Errorf("key %q: %w", b.keyString(key), err)
	}
	if known := b.codec.Version(); version > known {
		return obj, 0, fmt.Errorf("key %q: value version %d, codec version %d: %w", b.keyString(key), version, known, ErrUnknownVersion)
	}
	if obj, err = b.codec.Decode(data, version); err != nil {
		return obj, 0, fmt.Errorf("key %q: decode: %w", b.keyString(key), err)
	}
	return obj, rev, nil
}

// testHookLoading, if set, runs in Register between the commit that marks
// the table not initialized and the load.
var testHookLoading func(table string)

// registration is a table's entry in the catalog, as claimTable found it.
type registration struct {
	id     uint32
	stored *schema // nil if none is recorded
}

// claimTable marks name registered and returns its catalog entry, entering
// a new table into the catalog, with its schema, durably, before any of its
// objects can be written.
func (s *Store) claimTable(name string, tbl strata.TableMeta, sch schema) (_ registration, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return registration{}, err
	}
	defer recoverFatal(&err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.registered[name]; t != nil {
		p := s.pending[tbl]
		switch {
		case t == tbl && p != nil && !p.running:
			// The table holds the name since a registration of it was
			// refused or failed (invariant 2): this one retries it.
		case t == tbl:
			return registration{}, fmt.Errorf("%w: %w", ErrAlreadyRegistered, errSameTable)
		default:
			return registration{}, ErrAlreadyRegistered
		}
	}
	e, ok := s.catalog[name]
	if !ok {
		id := s.nextID
		if id == 0 {
			return registration{}, errors.New("table ids exhausted")
		}
		b := s.db.NewBatch()
		defer b.Close()
		if err := b.Set(catalogKey(name), binary.AppendUvarint(nil, uint64(id)), nil); err != nil {
			return registration{}, err
		}
		if err := b.Set(schemaKey(id), appendSchema(nil, sch), nil); err != nil {
			return registration{}, err
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return registration{}, err
		}
		e = catalogEntry{id: id, schema: &sch}
		s.catalog[name] = e
		s.nextID++
	}
	s.registered[name] = tbl
	if p := s.pending[tbl]; p != nil {
		p.running = true
	} else {
		s.pending[tbl] = &pendingReg{running: true}
	}
	return registration{id: e.id, stored: e.schema}, nil
}

// registrationFailed records that the registration of tbl under name
// failed with err. If the table is attached to s with the store's
// initializer pending, it keeps its name (invariant 2) until a
// registration of it succeeds; otherwise the name is let go.
func (s *Store) registrationFailed(name string, tbl strata.TableMeta, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[tbl]
	if p != nil && p.done != nil {
		p.running, p.err = false, err
		return
	}
	delete(s.pending, tbl)
	if s.registered[name] == tbl {
		delete(s.registered, name)
	}
}

// registrationDone forgets the pending registration of tbl: it succeeded.
func (s *Store) registrationDone(tbl strata.TableMeta) {
	s.mu.Lock()
	delete(s.pending, tbl)
	s.mu.Unlock()
}

// pendingInit returns the initializer that a registration of tbl that
// failed or runs left pending, or nil.
func (s *Store) pendingInit(tbl strata.TableMeta) func(strata.WriteTxn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pending[tbl]; p != nil {
		return p.done
	}
	return nil
}

// setPendingInit records the initializer of tbl's registration, which
// runs, until it succeeds.
func (s *Store) setPendingInit(tbl strata.TableMeta, done func(strata.WriteTxn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pending[tbl]; p != nil {
		p.done = done
		return
	}
	s.pending[tbl] = &pendingReg{done: done, running: true}
}

// pendingReg is a table's registration that has not succeeded: the
// initializer it left pending (nil before it is registered), whether a
// registration of the table runs, and the error the last one failed
// with.
type pendingReg struct {
	done    func(strata.WriteTxn)
	running bool
	err     error
}

// LoadError returns nil if tbl is registered with s and loaded. Otherwise
// it returns why not, an error wrapping ErrNotLoaded and, if a
// registration of the table failed or was refused, that registration's
// error (ErrSchemaMismatch, strata.ErrTableNotEmpty, ErrKeyChanged, ...):
// the error that commits writing the table fail with. A table whose
// registration was refused or failed also reads as not initialized, with
// InitializerName pending; LoadError says why.
func (s *Store) LoadError(tbl strata.TableMeta) error {
	name := tbl.Name()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[tbl]
	switch {
	case p != nil && p.running:
		return wrapTableErr(name, fmt.Errorf("%w: loading", ErrNotLoaded))
	case p != nil && p.err != nil:
		return wrapTableErr(name, fmt.Errorf("%w: registration failed: %w", ErrNotLoaded, p.err))
	case s.registered[name] == tbl:
		return nil
	}
	return wrapTableErr(name, fmt.Errorf("%w: not registered with the store", ErrNotLoaded))
}

// rewriteTable writes, in one synced batch, the table's objects whose key
// changed under their new keys (the stored ones deleted first) and the
// table's schema.
func (s *Store) rewriteTable(id uint32, keys tableKeys, moves []keyMove, sch schema) (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	defer recoverFatal(&err)
	b := s.db.NewBatch()
	defer b.Close()
	for _, m := range moves {
		if err := b.Delete(append(bytes.Clone(keys.prefix), m.from...), nil); err != nil {
			return err
		}
	}
	for _, m := range moves {
		if err := b.Set(append(bytes.Clone(keys.prefix), m.to...), m.value, nil); err != nil {
			return err
		}
	}
	if err := b.Set(schemaKey(id), appendSchema(nil, sch), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	s.mu.Lock()
	for name, e := range s.catalog {
		if e.id == id {
			s.catalog[name] = catalogEntry{id: id, schema: &sch}
		}
	}
	s.mu.Unlock()
	return nil
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

// errUnknownPrimary: the table's primary index is of a kind whose keys
// the store cannot compute (primaryKeysOf): no strata index kind is one
// yet.
var errUnknownPrimary = errors.New("the table's primary index is of an unknown kind")

// errSameTable says, in an ErrAlreadyRegistered, that the table registered
// under the name is the very table given: it goes on working, and nothing
// about it changes (refuseWrites leaves it).
var errSameTable = errors.New("this very table")

// refuseWrites attaches the table to s with a journal that fails every
// commit that writes it with ErrNotLoaded wrapping err, and marks it not
// initialized (InitializerName pending, unless a registration of it left
// it pending already): a table whose registration failed before it could
// be attached must not acknowledge writes that no store keeps, nor read
// as loaded. Two tables are left as they are: the table registered with s
// under its name (it goes on: a registration of it failed for another
// reason, such as the wrong database), and one whose database has another
// journal (the refusal was strata.ErrJournalConflict's).
//
// It looks at the registration under the table's lock, which every
// registration holds while it attaches the table: a registration of the
// table that claims the name before it is seen here attaches the table
// after this, or is seen here.
//
// It returns the error of the commit that attaches the refusing journal.
// That transaction writes no object, so its commit writes no record and
// is not expected to fail; if it does, the table is left unattached, and
// the caller reports the error with its own (joinRefusal).
func (b *binding[Obj]) refuseWrites(s *Store, err error) error {
	txn := b.tbl.DB().WriteTxn(b.tbl)
	defer txn.Abort()
	s.mu.Lock()
	registered := s.registered[b.tbl.Name()] == b.tbl
	s.mu.Unlock()
	if registered {
		return nil
	}
	tj := newTableJournal(b.codec, makeTableKeys(0), b.keyString)
	tj.refuse(fmt.Errorf("%w: registration failed: %w", ErrNotLoaded, err))
	if strata.SetJournal(txn, b.tbl, s, tj) != nil {
		return nil
	}
	done := s.pendingInit(b.tbl)
	if done == nil {
		done = b.tbl.RegisterInitializer(txn, InitializerName)
	}
	if _, err := txn.Commit(); err != nil {
		return fmt.Errorf("refusing writes: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p := s.pending[b.tbl]; {
	case p == nil:
		s.pending[b.tbl] = &pendingReg{done: done, err: err}
	case !p.running:
		p.done, p.err = done, err
	}
	return nil
}

// joinRefusal returns err, joined with rerr, the error of refuseWrites,
// if there is one.
func joinRefusal(err, rerr error) error {
	if rerr == nil {
		return err
	}
	return errors.Join(err, rerr)
}
