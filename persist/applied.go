package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
)

// Applied tables: tables whose changes are written to the store by the
// applier of a log (a replicated state machine, package replicate's Node),
// not by the store's journal, with the log's position in the same batch.
// The log is their write-ahead log: a batch is written without an fsync of
// its own, and a restart loads the tables at the stored position and
// replays the log after it.
//
// Invariants of applied tables, kept by this file:
//
//  1. The store's applied position (appliedKey) is written only in the
//     batch of the changes it names (AppliedBatch.Commit, Applied.Replace):
//     the tables marked applied hold exactly their state at the position,
//     after any crash (Pebble applies a batch whole or not at all).
//  2. The position only grows (AppliedBatch.Commit refuses another), but
//     for Replace, which installs a whole state at its own position.
//  3. A table marked applied (appliedMarkKey) is loaded only by
//     LoadApplied; Register refuses it (ErrAppliedTable): a commit of its
//     own would be a change no log position names. And LoadApplied refuses
//     a stored table that is not marked but holds objects or a revision,
//     for the same reason.

// appliedKey holds the store's applied position, a uvarint.
var appliedKey = []byte{tagMeta, 'a', 'p', 'p', 'l', 'i', 'e', 'd'}

// tagApplied marks a table applied: 'a' table id (4 bytes) -> empty.
const tagApplied = 'a'

func appliedMarkKey(id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{tagApplied}, id)
}

// ErrAppliedTable is what Register returns for a table that a log's
// applier keeps (LoadApplied), and what LoadApplied returns for a stored
// table that holds a state the log's position does not name: one written
// by commits of its own (Register), or before the log.
var ErrAppliedTable = errors.New("table is kept by a log's applier")

// Applied is the applied tables of a store, loaded by LoadApplied: it
// writes their changes with the log's position (NewBatch, Replace).
type Applied struct {
	s *Store
	// tables maps a table's name to its keys and binding; written only by
	// LoadApplied.
	tables map[string]appliedTable
	// mu orders the batches' commits and guards position.
	mu       sync.Mutex
	position uint64
}

type appliedTable struct {
	keys tableKeys
	b    TableBinding
}

// LoadApplied loads tables whose changes a log's applier writes (package
// replicate's Node, with its Config.Store): each table gets back the
// objects and revision the store holds for it, as Register would give
// them (schema checked, secondary indexes rebuilt), but is not attached
// to the store: its commits are not written by it. Its changes are
// written instead through the returned Applied, with the position of the
// log entry they come from, in one batch without an fsync (the log is
// durable before it is applied). Applied.Position is the position of the
// state loaded: the applier replays the log after it.
//
// Call it once per store, with every applied table, before the tables
// are written. Before it loads anything it refuses a table registered
// with the store (ErrAlreadyRegistered), one stored with another codec or
// type (ErrSchemaMismatch), and a stored table that holds objects or a
// revision written otherwise than through an Applied (ErrAppliedTable):
// Drop it, or open it with Register. A table that is not empty
// (strata.ErrTableNotEmpty) or fails to load (a value that does not
// decode, ErrCorrupt) fails it with the tables before it loaded in
// memory: discard the database. Tables it loads are marked applied:
// Register refuses them (ErrAppliedTable) until they are dropped.
func (s *Store) LoadApplied(tables ...TableBinding) (_ *Applied, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("persist: load applied tables: %w", err)
		}
	}()
	if len(tables) == 0 {
		return nil, errors.New("no table")
	}
	position, err := s.readApplied()
	if err != nil {
		return nil, err
	}
	a := &Applied{s: s, tables: make(map[string]appliedTable, len(tables)), position: position}
	var claimed []TableBinding
	defer func() {
		if err != nil {
			for _, t := range claimed {
				s.registrationFailed(t.meta().Name(), t.meta(), err)
			}
		}
	}()
	ids := make([]uint32, 0, len(tables))
	for _, t := range tables {
		name := t.meta().Name()
		if _, dup := a.tables[name]; dup {
			return nil, fmt.Errorf("table %q given twice", name)
		}
		reg, err := s.claimTable(name, t.meta(), t.schema())
		if err != nil {
			return nil, wrapTableErr(name, err)
		}
		claimed = append(claimed, t)
		if err := checkSchema(reg.stored, t.schema()); err != nil {
			return nil, wrapTableErr(name, err)
		}
		keys := makeTableKeys(reg.id)
		if err := s.checkAppliedMark(reg.id, keys); err != nil {
			return nil, wrapTableErr(name, err)
		}
		a.tables[name] = appliedTable{keys: keys, b: t}
		ids = append(ids, reg.id)
	}
	for _, t := range tables {
		if err := t.loadApplied(s, a.tables[t.meta().Name()].keys); err != nil {
			return nil, wrapTableErr(t.meta().Name(), err)
		}
	}
	if err := s.markApplied(ids); err != nil {
		return nil, err
	}
	for _, t := range tables {
		s.registrationDone(t.meta())
	}
	return a, nil
}

// using runs f with the store's database open and usable (closeMu held
// for reading), a fatal error of Pebble returned as ErrStoreFailed.
func (s *Store) using(f func() error) (err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	defer recoverFatal(&err)
	return f()
}

// readApplied returns the store's applied position, 0 if none.
func (s *Store) readApplied() (position uint64, err error) {
	err = s.using(func() error {
		v, closer, err := s.db.Get(appliedKey)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fromPebble(err)
		}
		defer closer.Close()
		if position, err = parseUvarint(v); err != nil {
			return fmt.Errorf("applied position: %w", err)
		}
		return nil
	})
	return position, err
}

// checkAppliedMark refuses a table that is not marked applied but holds
// objects or a revision (invariant 3).
func (s *Store) checkAppliedMark(id uint32, keys tableKeys) error {
	return s.using(func() error { return s.checkAppliedMarkUsing(id, keys) })
}

func (s *Store) checkAppliedMarkUsing(id uint32, keys tableKeys) error {
	marked, err := s.has(appliedMarkKey(id))
	if err != nil || marked {
		return err
	}
	rev, err := s.has(keys.rev)
	if err != nil {
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: keys.prefix, UpperBound: keys.upper})
	if err != nil {
		return fromPebble(err)
	}
	objects := it.First()
	if err := it.Close(); err != nil {
		return fromPebble(err)
	}
	if rev || objects {
		return fmt.Errorf("the store holds a state of the table written by its own commits, at no position of the log: %w", ErrAppliedTable)
	}
	return nil
}

// has reports whether the store holds key.
func (s *Store) has(key []byte) (bool, error) {
	_, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fromPebble(err)
	}
	closer.Close()
	return true, nil
}

// isApplied reports whether table id is marked applied.
func (s *Store) isApplied(id uint32) (bool, error) { return s.has(appliedMarkKey(id)) }

// markApplied marks the tables applied, in one synced batch.
func (s *Store) markApplied(ids []uint32) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range ids {
		if err := b.Set(appliedMarkKey(id), nil, nil); err != nil {
			return err
		}
	}
	return s.applySynced(b)
}

// loadApplied restores the table's stored objects into it, in a
// transaction that the table's journal, if it has one, does not record.
func (b *binding[Obj]) loadApplied(s *Store, keys tableKeys) error {
	txn := b.tbl.DB().WriteTxn(b.tbl)
	defer txn.Abort()
	if n := b.tbl.NumObjects(txn); n != 0 {
		return fmt.Errorf("%d objects: %w", n, strata.ErrTableNotEmpty)
	}
	if err := strata.SetJournal[Obj](txn, b.tbl, nil, nil); err != nil {
		return err
	}
	moves, _, err := b.load(s, txn, keys)
	if err != nil {
		return err
	}
	if len(moves) > 0 {
		if err := s.rewriteTable(binaryID(keys), keys, moves, b.sch); err != nil {
			return err
		}
	}
	_, err = txn.Commit()
	return err
}

// binaryID returns the table id of keys.
func binaryID(keys tableKeys) uint32 { return binary.BigEndian.Uint32(keys.prefix[1:]) }

// Position returns the log position of the applied tables' state: that
// of the last batch committed, or Replace, or, before any, the one
// LoadApplied loaded (0 for a store that never had one).
func (a *Applied) Position() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.position
}

// AppliedBatch is the changes of applied tables from one or more log
// entries, written at once with the position of the last (Commit). Its
// methods are not safe for concurrent use.
type AppliedBatch struct {
	a *Applied
	b *pebble.Batch
}

// NewBatch starts a batch of changes.
func (a *Applied) NewBatch() *AppliedBatch {
	return &AppliedBatch{a: a, b: a.s.db.NewBatch()}
}

func (ab *AppliedBatch) table(name string) (*appliedTable, error) {
	t, ok := ab.a.tables[name]
	if !ok {
		return nil, fmt.Errorf("persist: applied table %q: %w", name, ErrTableUnknown)
	}
	return &t, nil
}

// Upsert records that the object with primaryKey is now the one value
// encodes, with the codec at codecVersion, at revision rev.
func (ab *AppliedBatch) Upsert(table string, primaryKey []byte, codecVersion uint32, rev uint64, value []byte) error {
	t, err := ab.table(table)
	if err != nil {
		return err
	}
	prefix := t.keys.prefix
	var hdr [2 * binary.MaxVarintLen64]byte
	h := appendValueHeader(hdr[:0], codecVersion, rev)
	op := ab.b.SetDeferred(len(prefix)+len(primaryKey), len(h)+len(value))
	copy(op.Key[copy(op.Key, prefix):], primaryKey)
	copy(op.Value[copy(op.Value, h):], value)
	return op.Finish()
}

// Delete records that the object with primaryKey was deleted.
func (ab *AppliedBatch) Delete(table string, primaryKey []byte) error {
	t, err := ab.table(table)
	if err != nil {
		return err
	}
	prefix := t.keys.prefix
	op := ab.b.DeleteDeferred(len(prefix) + len(primaryKey))
	copy(op.Key[copy(op.Key, prefix):], primaryKey)
	return op.Finish()
}

// DeleteAll records that every object of the table was deleted; the
// batch's later upserts of the table come after it.
func (ab *AppliedBatch) DeleteAll(table string) error {
	t, err := ab.table(table)
	if err != nil {
		return err
	}
	return ab.b.DeleteRange(t.keys.prefix, t.keys.upper, nil)
}

// SetRevision records the table's revision.
func (ab *AppliedBatch) SetRevision(table string, rev uint64) error {
	t, err := ab.table(table)
	if err != nil {
		return err
	}
	var v [binary.MaxVarintLen64]byte
	return ab.b.Set(t.keys.rev, v[:binary.PutUvarint(v[:], rev)], nil)
}

// Commit writes the batch with position, which must be above the
// position of the batches before it, and releases it. It does not fsync:
// the log the changes come from is durable, and a crash that loses the
// batch loses its position with it, so that the log after the position
// stored is replayed.
func (ab *AppliedBatch) Commit(position uint64) (err error) {
	defer ab.Close()
	a := ab.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if position <= a.position {
		return fmt.Errorf("persist: applied batch at position %d, the tables are at %d", position, a.position)
	}
	if err := setPosition(ab.b, position); err != nil {
		return err
	}
	if err := a.s.applyBatch(ab.b); err != nil {
		return err
	}
	a.position = position
	return nil
}

// Close releases the batch without writing it; it does nothing after
// Commit.
func (ab *AppliedBatch) Close() {
	if ab.b != nil {
		_ = ab.b.Close()
		ab.b = nil
	}
}

func setPosition(b *pebble.Batch, position uint64) error {
	var v [binary.MaxVarintLen64]byte
	return b.Set(appliedKey, v[:binary.PutUvarint(v[:], position)], nil)
}

// applyBatch writes b without a sync.
func (s *Store) applyBatch(b *pebble.Batch) error {
	return s.using(func() error { return fromPebble(s.db.Apply(b, pebble.NoSync)) })
}

// Replace writes, in one batch with position, the state of every applied
// table as txn holds it, in place of what the store holds: a log's
// applier installs a snapshot of the log's state with it. Unlike a
// batch, position may be below the tables' (a snapshot of another
// history); the batch is synced.
func (a *Applied) Replace(position uint64, txn strata.ReadTxn) (err error) {
	b := a.s.db.NewBatch()
	defer b.Close()
	for _, t := range a.tables {
		if err := t.b.appendState(b, t.keys, txn); err != nil {
			return fmt.Errorf("persist: replace applied table %q: %w", t.b.meta().Name(), err)
		}
	}
	if err := setPosition(b, position); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.s.applySynced(b); err != nil {
		return fmt.Errorf("persist: replace applied tables: %w", err)
	}
	a.position = position
	return nil
}

// applySynced writes b with a sync.
func (s *Store) applySynced(b *pebble.Batch) error {
	return s.using(func() error { return fromPebble(s.db.Apply(b, pebble.Sync)) })
}

// appendState appends to b the deletion of every stored object of the
// table, then its objects and revision as txn holds them.
func (b *binding[Obj]) appendState(pb *pebble.Batch, keys tableKeys, txn strata.ReadTxn) error {
	if err := pb.DeleteRange(keys.prefix, keys.upper, nil); err != nil {
		return err
	}
	version := b.codec.Version()
	var buf []byte
	for obj, rev := range b.tbl.All(txn) {
		pks := b.primaryKeys(obj)
		if pks.Len() != 1 {
			return fmt.Errorf("an object at revision %d has %d primary keys", rev, pks.Len())
		}
		pk := pks.At(0)
		var err error
		buf, err = b.codec.Append(appendValueHeader(buf[:0], version, rev), obj)
		if err != nil {
			return fmt.Errorf("encoding the object at revision %d: %w", rev, err)
		}
		op := pb.SetDeferred(len(keys.prefix)+len(pk), len(buf))
		copy(op.Key[copy(op.Key, keys.prefix):], pk)
		copy(op.Value, buf)
		if err := op.Finish(); err != nil {
			return err
		}
	}
	var v [binary.MaxVarintLen64]byte
	return pb.Set(keys.rev, v[:binary.PutUvarint(v[:], b.tbl.Revision(txn))], nil)
}

// checkNotApplied refuses to register table id if it is marked applied
// (invariant 3).
func (s *Store) checkNotApplied(id uint32) error {
	return s.using(func() error {
		marked, err := s.isApplied(id)
		if err == nil && marked {
			err = fmt.Errorf("register it with LoadApplied, or drop it: %w", ErrAppliedTable)
		}
		return err
	})
}

// Sync makes the position of the last batch committed durable, with
// every batch before it. Batches are not synced (Commit): an applier
// calls Sync where the log it replays from after a crash may lose the
// entries before it (raft compacts its log after a snapshot), so that a
// restart need not install a snapshot.
func (a *Applied) Sync() error { return a.s.syncLog() }
