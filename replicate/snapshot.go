package replicate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// Raft snapshots of a node's state machine (FSM.Snapshot, FSM.Restore).
//
// A snapshot is a header of this package's followed by persist's snapshot
// of every bound table (persist.WriteSnapshot), tables in name order:
//
//	magic     8 bytes   snapshotMagic, "STRATARS"
//	version   4 bytes   big-endian SnapshotVersion (1)
//	index     8 bytes   big-endian: the node's AppliedIndex, whose state
//	                    the tables hold
//	checksum  4 bytes   big-endian CRC-32C (Castagnoli) of the 20 bytes
//	                    before it
//	tables              persist's format: blocks each with a checksum, and
//	                    a footer with the counts and the whole's checksum
//
// Snapshot takes a ReadTxn, which is free and holds its state while
// writers go on; Persist, on raft's snapshot goroutine, streams it. Restore
// reads and verifies the whole snapshot, decoding its objects, before it
// touches a table, then replaces every bound table at once, in one write
// transaction (strata.Replace): so a damaged snapshot changes nothing.

// SnapshotVersion is the version of the snapshot header this package
// writes; Restore refuses another.
const SnapshotVersion = 1

const (
	snapshotMagic      = "STRATARS"
	snapshotHeaderSize = 8 + 4 + 8 + 4
)

// snapshotPublishWait bounds how long Snapshot waits for the node's own
// commits of applied entries to be published (see fsm.Snapshot). They are
// published by their writers as soon as the FSM marks them applied: the
// bound is only there so that a stuck writer fails the snapshot, which
// raft retries, rather than block raft's FSM goroutine for good.
const snapshotPublishWait = 10 * time.Second

var snapshotCRC = crc32.MakeTable(crc32.Castagnoli)

// ErrSnapshotRefused is what a *SnapshotError matches.
var ErrSnapshotRefused = errors.New("replicate: snapshot refused")

// SnapshotError is what the node's FSM.Restore returns for a snapshot it
// refuses, having changed nothing: damaged (Err matches
// persist.ErrCorruptSnapshot), of a newer format
// (persist.ErrSnapshotVersion), of other tables than the node binds, with
// objects its codecs do not decode, or of a state that does not follow the
// node's (strata.ErrWriteOrder: older than what the node applied).
type SnapshotError struct {
	Reason string // what is wrong
	Err    error  // the cause, if there is one
}

func (e *SnapshotError) Error() string {
	if e.Err != nil {
		return "replicate: snapshot refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "replicate: snapshot refused: " + e.Reason
}

// Is reports that e is an ErrSnapshotRefused.
func (e *SnapshotError) Is(target error) bool { return target == ErrSnapshotRefused }

// Unwrap returns the cause.
func (e *SnapshotError) Unwrap() error { return e.Err }

// errRestored is why a restore fails the node's pending commits.
var (
	errRestored            = errors.New("the node restored a snapshot")
	errRestoredNotProposed = errors.Join(ErrNotReady, errRestored)
)

// Snapshot returns the node's state at its applied index: a ReadTxn of the
// bound tables, which Persist writes.
//
// raft calls it on its FSM goroutine, between two Applies, so no entry is
// being applied. But on the leader, the node's own commits of entries
// already applied may not be published yet (the FSM marks them applied;
// their writers publish them): the ReadTxn is taken once PublishedIndex
// reached AppliedIndex. It then holds exactly the applied index's state:
// nothing past it can be published, as nothing past it is applied until
// Snapshot returns.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	n := f.n
	if e := n.stopErr.Load(); e != nil {
		return nil, e
	}
	index := n.applied.Load()
	n.at(holdSnapshot, holdFSM)
	ctx, cancel := context.WithTimeout(context.Background(), snapshotPublishWait)
	defer cancel()
	if err := n.waitIndex(ctx, &n.published, index); err != nil {
		return nil, fmt.Errorf("replicate: snapshot at index %d: waiting for the node's commits to be published: %w", index, err)
	}
	if n.store != nil {
		// raft may compact the log up to index once the snapshot is
		// written: the store's position must not be lost below it, or a
		// restart after a power loss would install the snapshot.
		if err := n.store.Sync(); err != nil {
			return nil, fmt.Errorf("replicate: snapshot at index %d: syncing the store: %w", index, err)
		}
	}
	s := &nodeSnapshot{n: n, index: index, txn: n.db.ReadTxn()}
	for _, b := range n.sortedBindings() {
		s.tables = append(s.tables, b.snapshotTable())
	}
	return s, nil
}

// sortedBindings returns the bound tables in name order: the order of a
// snapshot's tables, the same on every node whatever Config.Tables' order.
func (n *Node) sortedBindings() []Binding {
	bs := make([]Binding, 0, len(n.tables))
	for _, b := range n.tables {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b Binding) int { return strings.Compare(string(a.Table().Name()), string(b.Table().Name())) })
	return bs
}

// nodeSnapshot is a snapshot taken, to be written by Persist.
type nodeSnapshot struct {
	n      *Node
	index  uint64
	txn    strata.ReadTxn
	tables []persist.TableBinding
}

var _ raft.FSMSnapshot = (*nodeSnapshot)(nil)

// Persist writes the snapshot to sink and closes it, or cancels it on
// error.
func (s *nodeSnapshot) Persist(sink raft.SnapshotSink) error {
	s.n.at(holdPersist, holdSnapshotter)
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// write writes the snapshot to w: the header, then persist's snapshot.
func (s *nodeSnapshot) write(w io.Writer) error {
	if _, err := w.Write(appendSnapshotHeader(make([]byte, 0, snapshotHeaderSize), s.index)); err != nil {
		return err
	}
	return persist.WriteSnapshot(w, s.txn, s.tables...)
}

// Release lets go of the snapshot: a ReadTxn holds nothing to release.
func (s *nodeSnapshot) Release() {}

func appendSnapshotHeader(b []byte, index uint64) []byte {
	start := len(b)
	b = append(b, snapshotMagic...)
	b = binary.BigEndian.AppendUint32(b, SnapshotVersion)
	b = binary.BigEndian.AppendUint64(b, index)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], snapshotCRC))
}

// readSnapshotHeader reads the header from r and returns the index.
func readSnapshotHeader(r io.Reader) (uint64, error) {
	var h [snapshotHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, &SnapshotError{Reason: fmt.Sprintf("reading the header: %v", err), Err: persist.ErrCorruptSnapshot}
	}
	if string(h[:8]) != snapshotMagic {
		return 0, &SnapshotError{Reason: fmt.Sprintf("not a snapshot of package replicate (magic %q)", h[:8]), Err: persist.ErrCorruptSnapshot}
	}
	if sum := binary.BigEndian.Uint32(h[20:]); sum != crc32.Checksum(h[:20], snapshotCRC) {
		return 0, &SnapshotError{Reason: "the header fails its checksum", Err: persist.ErrCorruptSnapshot}
	}
	if v := binary.BigEndian.Uint32(h[8:]); v != SnapshotVersion {
		return 0, &SnapshotError{Reason: fmt.Sprintf("header version %d, this node reads %d", v, SnapshotVersion), Err: persist.ErrSnapshotVersion}
	}
	return binary.BigEndian.Uint64(h[12:]), nil
}

// Restore replaces the state of every bound table with the snapshot's,
// in one write transaction, and makes the snapshot's index the node's
// applied and published index. raft calls it on its FSM goroutine: to
// install a leader's snapshot on a node too far behind its log, to
// restore the latest snapshot when a node starts, and for raft.Restore.
//
// The snapshot is read and verified whole, and every object decoded,
// before anything is touched: a snapshot refused then (a *SnapshotError:
// damaged, of other tables, older than the node's applied index) changes
// nothing, and the node goes on as it was. Then the commits this node has
// pending are failed, as when it applies an entry it did not propose (a
// node that restores a snapshot is not leading; it may just have lost the
// lead): those submitted with an *AmbiguousError, the others with
// ErrNotReady; new ones are refused with ErrNotReady until the restore is
// done; and Restore waits until the database settled them all. A table
// that refuses the snapshot's state then (strata.Replace's errors) fails
// the restore with no table changed. Every bound table is replaced: it
// holds exactly the snapshot's objects, at their revisions, and the
// snapshot's table revision, every watch channel of its old state closes,
// and its change feeds deliver the deletions of the objects gone and the
// objects that are new or changed.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	n := f.n
	if e := n.stopErr.Load(); e != nil {
		return e
	}
	index, loads, err := n.readSnapshot(rc)
	if err != nil {
		return err
	}
	if applied := n.applied.Load(); index < applied {
		return &SnapshotError{Reason: fmt.Sprintf("the snapshot is at index %d, the node applied %d", index, applied), Err: strata.ErrWriteOrder}
	}
	n.at(holdRestore, holdFSM)
	n.mu.Lock()
	n.st.applyingForeign = true
	n.st.failFrom(0, &AmbiguousError{Err: errRestored}, errRestoredNotProposed)
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.st.applyingForeign = false
		n.mu.Unlock()
	}()
	n.waitSettled()
	if err := n.replaceTables(loads); err != nil {
		return err
	}
	if n.store != nil {
		// The tables are the snapshot's: so must the store be, or the node
		// cannot go on (durable.go, invariant 1). Nothing is published
		// meanwhile: Enqueue refuses while applyingForeign is set.
		if err := n.store.Replace(index, n.db.ReadTxn()); err != nil {
			return n.stop(index, err)
		}
	}
	// Every batch was settled (waitSettled): the node's own commits of
	// the entries applied before the snapshot are published (or the node
	// stopped), and nothing is left to publish below the snapshot's
	// index.
	n.mu.Lock()
	n.st.unpublished = n.st.unpublished[:0]
	n.applied.Store(index)
	n.published.Store(index)
	n.advancePublished()
	n.mu.Unlock()
	return nil
}

// readSnapshot reads the snapshot in r whole, verifying it, and returns
// its index and, per bound table, its objects decoded.
func (n *Node) readSnapshot(r io.Reader) (uint64, []tableLoad, error) {
	index, err := readSnapshotHeader(r)
	if err != nil {
		return 0, nil, err
	}
	sr, err := persist.NewSnapshotReader(r)
	if err != nil {
		return 0, nil, &SnapshotError{Reason: "reading the tables' header", Err: err}
	}
	infos := sr.Tables()
	loads := make([]tableLoad, len(infos))
	for i, info := range infos {
		b, ok := n.tables[string(info.Name)]
		if !ok {
			return 0, nil, &SnapshotError{Reason: fmt.Sprintf("table %q of the snapshot is not bound on this node", info.Name)}
		}
		for _, prev := range infos[:i] {
			if prev.Name == info.Name {
				return 0, nil, &SnapshotError{Reason: fmt.Sprintf("table %q twice in the snapshot", info.Name), Err: persist.ErrCorruptSnapshot}
			}
		}
		if loads[i], err = b.loader(info); err != nil {
			return 0, nil, &SnapshotError{Reason: fmt.Sprintf("table %q", info.Name), Err: err}
		}
	}
	if len(infos) != len(n.tables) {
		return 0, nil, &SnapshotError{Reason: fmt.Sprintf("the snapshot has %d tables, the node binds %d", len(infos), len(n.tables))}
	}
	for sr.Next() {
		rec := sr.Record()
		if err := loads[rec.Table].add(rec.Revision, rec.Value); err != nil {
			return 0, nil, &SnapshotError{Reason: fmt.Sprintf("table %q: the object at revision %d", infos[rec.Table].Name, rec.Revision), Err: err}
		}
	}
	if err := sr.Err(); err != nil {
		return 0, nil, &SnapshotError{Reason: "reading the tables", Err: err}
	}
	return index, loads, nil
}

// waitSettled waits until the database settled every batch the journal
// queued: the commits of the entries applied are published, and the
// tips of those failed are dropped. A transaction of the bound tables
// then begins from the published state, which is exactly the log's up to
// the applied index: begun from a tip, it would hold a commit that is not
// in the log, and Replace would refuse the snapshot as older than it.
// The settling is prompt: the writers of the failed commits have been
// woken, and no batch is queued meanwhile (Enqueue refuses them while
// applyingForeign is set).
func (n *Node) waitSettled() {
	for delay := 10 * time.Microsecond; ; delay = min(2*delay, time.Millisecond) {
		n.mu.Lock()
		queued := n.st.queued
		n.mu.Unlock()
		if queued == 0 {
			return
		}
		time.Sleep(delay)
	}
}

// replaceTables replaces every bound table with its load in one write
// transaction, and commits it.
func (n *Node) replaceTables(loads []tableLoad) error {
	metas := make([]strata.TableMeta, len(loads))
	for i, l := range loads {
		metas[i] = l.table()
	}
	for attempt := 0; ; attempt++ {
		txn := n.db.WriteTxn(metas[0], metas[1:]...)
		for _, m := range metas {
			if err := n.tables[string(m.Name())].detach(txn); err != nil {
				txn.Abort()
				return err
			}
		}
		for _, l := range loads {
			if err := l.replace(txn); err != nil {
				txn.Abort()
				return &SnapshotError{Reason: fmt.Sprintf("table %q does not take the snapshot's state", l.table().Name()), Err: err}
			}
		}
		_, err := txn.Commit()
		if err == nil {
			return nil
		}
		// A commit on another path failed under it (waitSettled leaves
		// no tip of the journal's): again, from the published state.
		if errors.Is(err, strata.ErrEarlierCommitFailed) && attempt < 1000 {
			continue
		}
		return err
	}
}

// tableLoad is a table's part of a snapshot being restored: its objects,
// decoded, and its revision.
type tableLoad interface {
	table() strata.TableMeta
	// add decodes the object at rev from value, which is only valid
	// during the call.
	add(rev uint64, value []byte) error
	// replace replaces the table's objects with the loaded ones in txn.
	replace(txn strata.WriteTxn) error
}

// snapshotTable returns the table as persist's snapshots bind it.
func (b *binding[Obj]) snapshotTable() persist.TableBinding { return persist.Table(b.tbl, b.codec) }

// loader checks that the snapshot's table info was written by a codec
// this binding's reads, and returns the table's load.
func (b *binding[Obj]) loader(info persist.SnapshotTableInfo) (tableLoad, error) {
	if v := b.codec.Version(); info.CodecVersion > v {
		return nil, fmt.Errorf("objects of codec version %d, the node's codec is at %d: %w", info.CodecVersion, v, persist.ErrUnknownVersion)
	}
	name := fmt.Sprintf("%T", b.codec)
	if cn, ok := b.codec.(persist.CodecNamer); ok {
		name = cn.CodecName()
	}
	if info.Codec != "" && info.Codec != name {
		return nil, fmt.Errorf("objects of codec %q, the node's is %q: %w", info.Codec, name, persist.ErrSchemaMismatch)
	}
	return &bindingLoad[Obj]{b: b, version: info.CodecVersion, revision: info.Revision, objs: make([]Obj, 0, info.Objects), revs: make([]strata.Revision, 0, info.Objects)}, nil
}

// bindingLoad is a tableLoad of a binding.
type bindingLoad[Obj any] struct {
	b        *binding[Obj]
	version  uint32
	revision strata.Revision
	objs     []Obj
	revs     []strata.Revision
}

func (l *bindingLoad[Obj]) table() strata.TableMeta { return l.b.tbl }

func (l *bindingLoad[Obj]) add(rev uint64, value []byte) error {
	obj, err := l.b.codec.Decode(value, l.version)
	if err != nil {
		return err
	}
	l.objs = append(l.objs, obj)
	l.revs = append(l.revs, rev)
	return nil
}

func (l *bindingLoad[Obj]) replace(txn strata.WriteTxn) error {
	return strata.Replace(txn, l.b.tbl, func(yield func(Obj, strata.Revision) bool) {
		for i, o := range l.objs {
			if !yield(o, l.revs[i]) {
				return
			}
		}
	}, l.revision)
}
