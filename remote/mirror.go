package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/internal/wirejson"
)

// Mirror keeps a local table equal to a remote one: an informer. It
// follows the remote table's change stream (Client.Changes: reconnecting,
// resuming, listing again) and applies it to the local table in write
// transactions, so that another process reads the first's state with its
// own snapshots, watch channels, change feeds and indexes.
//
// The local table must have the remote's primary index (objects are
// replaced and deleted by their primary key), and its objects must
// decode from the remote's JSON; its other indexes are its own. Nothing
// else should write it. A listing (the first, and one after the server
// could no longer resume the stream) is applied in one transaction: the
// objects listed are written, and the local objects not listed are
// deleted; an object listed as it already is locally is left alone, so
// that its watch channels stay open. Other changes are applied as they
// come, those the client has already received in one transaction each.
//
// The local table is not initialized (strata.Table.Initialized) until the
// first listing is applied: readers that wait for it see the remote table
// whole.
type Mirror[Obj any] struct {
	src  *Table[Obj]
	db   *strata.DB
	dst  strata.RWTable[Obj]
	done func(strata.WriteTxn)
	// rev is the remote revision the local table reflects.
	rev atomic.Uint64
}

// NewMirror returns a mirror of src into dst, a table of db, and registers
// an initializer on dst (named "remote:" and src's name), which the first
// listing marks done. Run does the work. If the transaction that
// registers the initializer fails to commit, NewMirror returns its error
// (wrapped, for errors.Is) and no mirror, and dst is left as it was.
func NewMirror[Obj any](src *Table[Obj], db *strata.DB, dst strata.RWTable[Obj]) (*Mirror[Obj], error) {
	m := &Mirror[Obj]{src: src, db: db, dst: dst}
	wtxn := db.WriteTxn(dst)
	m.done = dst.RegisterInitializer(wtxn, "remote:"+src.Name())
	if _, err := wtxn.Commit(); err != nil {
		return nil, fmt.Errorf("table %q: mirror: registering the initializer: %w", dst.Name(), err)
	}
	return m, nil
}

// Revision returns the remote table's revision that the local table
// reflects: that of the last change or bookmark applied.
func (m *Mirror[Obj]) Revision() strata.Revision { return m.rev.Load() }

// maxTxnChanges is the most changes a mirror applies in one transaction
// outside a listing.
const maxTxnChanges = 1024

// Run mirrors until ctx is done, and then returns nil; or until the
// stream fails for good (the table does not exist, access is refused, an
// object does not decode into Obj), and returns why. It may be called
// again after it returns.
func (m *Mirror[Obj]) Run(ctx context.Context) error {
	s := &eventStream{c: m.src.c, table: m.src.name, from: m.rev.Load()}
	defer s.disconnect()
	var (
		listing bool
		listed  []listedObject[Obj]
		wtxn    strata.WriteTxn
		pending int
	)
	commit := func() error {
		if wtxn == nil {
			return nil
		}
		m.src.c.at(holdMirrorCommit)
		_, err := wtxn.Commit()
		wtxn, pending = nil, 0
		return err
	}
	defer func() {
		if wtxn != nil {
			wtxn.Abort()
		}
	}()
	for {
		if wtxn != nil && (!s.lineBuffered() || pending >= maxTxnChanges) {
			if err := commit(); err != nil {
				return fmt.Errorf("mirror of %q: %w", m.src.name, err)
			}
		}
		ev, err := s.next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mirror of %q: %w", m.src.name, err)
		}
		switch ev.Kind {
		case EventRelist:
			listing, listed = true, listed[:0]
			continue
		case httpapi.EventBookmark:
			if listing {
				if err := commit(); err != nil {
					return fmt.Errorf("mirror of %q: %w", m.src.name, err)
				}
				m.src.c.at(holdMirrorListing)
				if err := m.applyListing(listed); err != nil {
					return err
				}
				listing, listed = false, nil
			}
			m.rev.Store(ev.Revision)
			continue
		}
		ch, err := changeOf[Obj](ev)
		if err != nil {
			return fmt.Errorf("mirror of %q: %w", m.src.name, err)
		}
		if listing {
			listed = append(listed, listedObject[Obj]{ch.Object, ev.Object})
			continue
		}
		if wtxn == nil {
			wtxn = m.db.WriteTxn(m.dst)
		}
		if ch.Kind == ChangeDelete {
			_, _, err = m.dst.Delete(wtxn, ch.Object)
		} else {
			_, _, err = m.dst.Insert(wtxn, ch.Object)
		}
		if err != nil {
			return fmt.Errorf("mirror of %q: %s %q: %w", m.src.name, ch.Kind, ch.Key, err)
		}
		pending++
		m.rev.Store(ch.Revision)
	}
}

// listedObject is an object of a listing, and its JSON.
type listedObject[Obj any] struct {
	obj  Obj
	data json.RawMessage
}

// applyListing makes the local table hold exactly the objects listed, in
// one transaction, and marks the mirror's initializer done.
func (m *Mirror[Obj]) applyListing(listed []listedObject[Obj]) error {
	meta := strata.AnyTable{Meta: m.dst}
	wtxn := m.db.WriteTxn(m.dst)
	defer wtxn.Abort()
	keep := make(map[string]bool, len(listed))
	for _, l := range listed {
		pk, err := meta.PrimaryKey(l.obj)
		if err != nil {
			return fmt.Errorf("mirror of %q: %w", m.src.name, err)
		}
		keep[string(pk)] = true
		if cur, ok := m.local(wtxn, meta, pk); ok {
			if data, err := wirejson.Marshal(cur); err == nil && bytes.Equal(data, l.data) {
				continue
			}
		}
		if _, _, err := m.dst.Insert(wtxn, l.obj); err != nil {
			return fmt.Errorf("mirror of %q: %w", m.src.name, err)
		}
	}
	var gone []Obj
	for obj := range m.dst.All(wtxn) {
		if pk, err := meta.PrimaryKey(obj); err == nil && !keep[string(pk)] {
			gone = append(gone, obj)
		}
	}
	for _, obj := range gone {
		if _, _, err := m.dst.Delete(wtxn, obj); err != nil {
			return fmt.Errorf("mirror of %q: %w", m.src.name, err)
		}
	}
	m.done(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		return fmt.Errorf("mirror of %q: %w", m.src.name, err)
	}
	return nil
}

// local returns the local object with primary key pk.
func (m *Mirror[Obj]) local(txn strata.ReadTxn, meta strata.AnyTable, pk []byte) (Obj, bool) {
	seq, err := meta.Read(txn, strata.AnyQuery{Op: strata.QueryList, Key: pk})
	if err == nil {
		for o := range seq {
			obj, ok := o.Object.(Obj)
			return obj, ok
		}
	}
	var zero Obj
	return zero, false
}
