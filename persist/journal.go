package persist

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
)

// Begin starts the record of one commit: a Pebble batch, reused from
// earlier commits. It implements strata.Journal.
func (s *Store) Begin() strata.JournalBatch {
	jb := s.batches.Get().(*journalBatch)
	jb.gen++
	if who := s.group.who; who != nil {
		jb.who = who()
	}
	return jb
}

var _ strata.Journal = (*Store)(nil)

// journalBatch is the record of one commit: the changes of every
// persisted table the commit changed, applied to Pebble atomically.
type journalBatch struct {
	s *Store
	b *pebble.Batch
	// gen tells the commits a pooled batch records apart: Begin increments
	// it.
	gen uint64
	// done receives the result of a commit that joined a group (group.go).
	done chan error
	// leads: the batch leads its group (enqueueGrouped). empty: Enqueue
	// found nothing to write. start: when Enqueue ran, for metrics.
	leads, empty bool
	start        time.Time
	// who tells the commits apart at hold points (holds.go): set by Begin
	// in the interleaving test, 0 otherwise.
	who int
}

var _ strata.QueuedBatch = (*journalBatch)(nil)

// Queues implements strata.QueuedBatch: in Sync mode the database
// enqueues the record and waits for its sync apart, unlocking its tables
// meanwhile; in Buffered mode it calls Commit, which returns once Pebble
// took the record.
func (jb *journalBatch) Queues() bool { return !jb.s.buffered }

// Enqueue implements strata.QueuedBatch: it places the batch in the group
// commit's order (group.go) and returns; Wait returns once its group is
// synced. Between the two the batch holds the store open (closeMu).
func (jb *journalBatch) Enqueue() error {
	s := jb.s
	if jb.b.Empty() {
		// Nothing to write, as in Commit.
		jb.empty = true
		return nil
	}
	s.closeMu.RLock()
	if err := s.usable(); err != nil {
		s.closeMu.RUnlock()
		return err
	}
	if s.metricsOn {
		jb.start = time.Now()
	}
	s.enqueueGrouped(jb)
	return nil
}

// Wait implements strata.QueuedBatch. If it fails, the store has failed
// (lead), so every batch enqueued after this one fails too, unwritten.
func (jb *journalBatch) Wait() error {
	s := jb.s
	if jb.empty {
		jb.empty = false
		jb.Discard()
		return nil
	}
	size := jb.b.Len()
	err := s.waitGrouped(jb)
	s.closeMu.RUnlock()
	if s.metricsOn {
		s.metrics.Commit(size, time.Since(jb.start), err != nil)
	}
	if err != nil {
		// Pebble forbids reusing a batch whose commit failed: drop it.
		return err
	}
	jb.b.Reset()
	s.batches.Put(jb)
	return nil
}

// Commit writes the batch: in Sync mode it returns once the log is synced
// (concurrent commits share one batch and one sync: groupCommit); in
// Buffered mode once Pebble has taken the batch. If it returns an error, the database
// publishes nothing; see the README for what the store then holds.
//
// Guarded by BenchmarkCommit.
func (jb *journalBatch) Commit() (err error) {
	s := jb.s
	if jb.b.Empty() {
		// Nothing to write: a commit that changed no object or revision
		// of a persisted table (a registration's first commit).
		jb.Discard()
		return nil
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.usable(); err != nil {
		jb.Discard()
		return err
	}
	var start time.Time
	if s.metricsOn {
		start = time.Now()
	}
	size := jb.b.Len()
	if s.buffered {
		err = s.apply(jb.b)
	} else {
		err = s.commitGrouped(jb)
	}
	if s.metricsOn {
		s.metrics.Commit(size, time.Since(start), err != nil)
	}
	if err != nil {
		// Pebble forbids reusing a batch whose commit failed: drop it.
		return err
	}
	if s.buffered {
		s.unsynced.Store(true)
	}
	jb.b.Reset()
	s.batches.Put(jb)
	return nil
}

// apply commits b to Pebble, turning a fatal error (which Pebble raises on
// a failed write or sync of its log) into an error.
func (s *Store) apply(b *pebble.Batch) (err error) {
	defer recoverFatal(&err)
	return b.Commit(s.writeOpts)
}

// Discard drops the batch unwritten.
func (jb *journalBatch) Discard() {
	jb.b.Reset()
	jb.s.batches.Put(jb)
}

// tableJournal writes the changes of one table into journal batches. It
// is bound to the table once, at registration: the codec, its version and
// the table's keys are fields, so that the per-object path has no lookup.
//
// The database calls it only while the table is locked, so buf, its
// scratch space, needs no lock of its own.
type tableJournal[Obj any] struct {
	codec   Codec[Obj]
	version uint32
	keys    tableKeys
	// refused, while set, is the error every write of the table fails
	// with: the table is attached while it loads, and stays attached,
	// refusing writes, if loading fails (ErrNotLoaded). Register sets it;
	// commits read it with the table locked.
	refused atomic.Pointer[error]
	// deletesPass, set while the table refuses writes, lets through the
	// deletes of a commit, writing nothing: the table was refused as not
	// empty, before anything was loaded, so what it holds was never
	// stored, and emptying it is the way to register it again. A commit
	// that upserts still fails.
	deletesPass atomic.Bool
	// keyString renders a primary key in error messages.
	keyString func([]byte) string
	buf       []byte
	// last is the highest revision upserted into the batch lastBatch
	// (generation lastGen) records: if the table's revision after the
	// commit is that one, SetRevision need not write it (see there).
	last      strata.Revision
	lastBatch *journalBatch
	lastGen   uint64
	// implied is the revision loading the store gives the table as it is
	// (the greater of the stored revision and the highest object
	// revision), which SetRevision need not write: Register sets it to
	// what it loaded, so that its own commit writes nothing. Later commits
	// only raise the revision a load gives (see SetRevision).
	implied strata.Revision
}

var _ strata.TableJournal[int] = (*tableJournal[int])(nil)

func newTableJournal[Obj any](codec Codec[Obj], keys tableKeys, keyString func([]byte) string) *tableJournal[Obj] {
	return &tableJournal[Obj]{codec: codec, version: codec.Version(), keys: keys, keyString: keyString}
}

// refuse makes every write of the table fail with err; a nil err accepts
// writes.
func (tj *tableJournal[Obj]) refuse(err error) {
	if err == nil {
		tj.refused.Store(nil)
		return
	}
	tj.refused.Store(&err)
}

// refusal returns the error writes fail with, or nil.
func (tj *tableJournal[Obj]) refusal() error {
	if p := tj.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// maxRetainedBuf is the largest scratch buffer a table keeps between
// objects.
const maxRetainedBuf = 64 << 10

// Upsert encodes obj after its value header into the table's scratch
// buffer, and copies it, with the key, into the batch (Pebble's
// SetDeferred: the key is written in place, never concatenated). The
// codec appends, so the value's length is only known once it is encoded;
// the one copy of the value is what Batch.Set would do too.
//
// No allocation per object for a codec that does not allocate; guarded by
// BenchmarkCommit and TestUpsertAllocs.
func (tj *tableJournal[Obj]) Upsert(b strata.JournalBatch, primaryKey []byte, obj Obj, rev strata.Revision) error {
	if err := tj.refusal(); err != nil {
		return err
	}
	jb := b.(*journalBatch)
	buf := appendValueHeader(tj.buf[:0], tj.version, rev)
	buf, err := tj.codec.Append(buf, obj)
	if cap(buf) <= maxRetainedBuf {
		tj.buf = buf
	}
	if err != nil {
		return fmt.Errorf("encode object %q: %w", tj.keyString(primaryKey), err)
	}
	prefix := tj.keys.prefix
	op := jb.b.SetDeferred(len(prefix)+len(primaryKey), len(buf))
	copy(op.Key[copy(op.Key, prefix):], primaryKey)
	copy(op.Value, buf)
	if tj.lastBatch != jb || tj.lastGen != jb.gen {
		tj.lastBatch, tj.lastGen, tj.last = jb, jb.gen, 0
	}
	tj.last = max(tj.last, rev)
	return op.Finish()
}

// Delete records the deletion of the object with the primary key.
func (tj *tableJournal[Obj]) Delete(b strata.JournalBatch, primaryKey []byte) error {
	if err := tj.refusal(); err != nil {
		if tj.deletesPass.Load() {
			return nil
		}
		return err
	}
	jb := b.(*journalBatch)
	prefix := tj.keys.prefix
	op := jb.b.DeleteDeferred(len(prefix) + len(primaryKey))
	copy(op.Key[copy(op.Key, prefix):], primaryKey)
	return op.Finish()
}

// DeleteAll records the deletion of all of the table's objects: one range
// deletion over the table's keys.
func (tj *tableJournal[Obj]) DeleteAll(b strata.JournalBatch) error {
	if err := tj.refusal(); err != nil {
		if tj.deletesPass.Load() {
			return nil
		}
		return err
	}
	return b.(*journalBatch).b.DeleteRange(tj.keys.prefix, tj.keys.upper, nil)
}

// SetRevision records the table's revision, unless the commit upserted an
// object at that very revision: loading takes the greater of the stored
// revision and the highest object revision, so the revision is then
// known without its own record. A commit whose last revision went to a
// delete, whose object is gone, records it; so every later load finds a
// revision at least as high as any handed out. (One record less per
// commit: BenchmarkCommit/Buffered/objects=1/journal.) Nor does it record
// the revision the table was loaded at (implied): the store gives that one
// already, and no commit lowers what it gives.
//
// While the table refuses writes, SetRevision writes nothing and succeeds:
// a commit that wrote no object (one that only registers an initializer,
// as Register's first does) is not a write of the table, and one that did
// fails at its first object.
func (tj *tableJournal[Obj]) SetRevision(b strata.JournalBatch, rev strata.Revision) error {
	if tj.refused.Load() != nil {
		return nil
	}
	jb := b.(*journalBatch)
	if (tj.lastBatch == jb && tj.lastGen == jb.gen && tj.last == rev) || rev == tj.implied {
		tj.lastBatch = nil
		return nil
	}
	tj.lastBatch = nil
	var v [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(v[:], rev)
	op := jb.b.SetDeferred(len(tj.keys.rev), n)
	copy(op.Key, tj.keys.rev)
	copy(op.Value, v[:n])
	return op.Finish()
}
