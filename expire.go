package strata

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// ExpireBefore deletes, from each of the tables of db given (every table
// of db if none is) that has an ExpiryIndex, the objects whose expiry is
// at or before now, and returns how many it deleted. It deletes them in
// write transactions of at most batch objects each, and commits each
// before it begins the next: readers see the table shrink batch by batch
// and are never paused, and writers of the table take turns with it. It
// takes the objects due the soonest first, up to 65536 (or batch) at a
// time, and deletes those in primary key order, so that the deletes of a
// batch share the tree nodes its commit copies. An object written since
// it was found due is left to the next pass. Every delete is an ordinary
// one: watch channels close, change feeds deliver it, journals record it.
//
// A table without an ExpiryIndex is skipped. An object written at the
// same time with an expiry after now stays. ExpireBefore fails with
// ErrExpiryBatch if batch is less than 1, and with the error of a commit
// that fails (a journal's), after which it stops; the batches committed
// before stay committed and counted.
func ExpireBefore(db *DB, now time.Time, batch int, tables ...TableMeta) (int, error) {
	if batch < 1 {
		return 0, fmt.Errorf("batch %d: %w", batch, ErrExpiryBatch)
	}
	if len(tables) == 0 {
		tables = db.Tables()
	}
	total := 0
	for _, tm := range tables {
		et, ok := expiring(tm)
		if !ok {
			continue
		}
		for {
			n, more, err := et.expireBatch(db, now, batch)
			total += n
			if err != nil {
				return total, err
			}
			if !more {
				break
			}
		}
	}
	return total, nil
}

// expiringTable is what ExpireBefore and the Expirer need of a table with
// an ExpiryIndex; every table implements it.
type expiringTable interface {
	TableMeta
	// expiryIndex is the position of the table's ExpiryIndex, 0 if none.
	expiryIndex() int
	// expireBatch deletes up to expiryWindow (or batch) objects that
	// expire at or before now, in write transactions of db of at most
	// batch objects; more reports that it left some.
	expireBatch(db *DB, now time.Time, batch int) (n int, more bool, err error)
	// nextExpiry returns the soonest expiry in the snapshot, if any, and
	// a channel that closes when an object expiring from now up to that
	// expiry may have been written.
	nextExpiry(txn ReadTxn, now time.Time) (at time.Time, found bool, watch <-chan struct{})
}

// expiring returns tm as an expiringTable, if it has an ExpiryIndex.
func expiring(tm TableMeta) (expiringTable, bool) {
	et, ok := tm.tableMeta().table.(expiringTable)
	if !ok || et.expiryIndex() == 0 {
		return nil, false
	}
	return et, true
}

// expiryBound returns the key below which a non-unique expiry index's
// entries expire at or before now: the entries of a time T are T's key,
// escaped and terminated, followed by the primary key, and escaping keeps
// the order of keys of one length, so an entry is below the escaped key
// of now+1ns, unterminated, exactly when T <= now.
func expiryBound(dst []byte, now time.Time) []byte {
	var b [expiryKeyLen]byte
	return index.AppendEscapedPrefix(dst, index.AppendTime(b[:0], now.Add(time.Nanosecond)))
}

// expiryWindow is the most objects due that one step of a pass collects
// (or batch, if larger): it deletes them in primary key order, batch by
// batch, so that the deletes of a batch share the tree nodes it copies
// however the objects' expiries are ordered (BenchmarkExpire's
// order=random).
const expiryWindow = 1 << 16

// dueObject is an object a pass found due: its primary key (in the
// expiry index's key, which the tree never changes), and the object and
// revision it was found at.
type dueObject[Obj any] struct {
	pk  []byte
	obj Obj
	rev Revision
}

func (t *table[Obj]) expireBatch(db *DB, now time.Time, batch int) (n int, more bool, err error) {
	pos := t.expiryIndex()
	txn := db.WriteTxn(t)
	defer func() { txn.Abort() }() // the latest: a no-op once committed
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, false, err
	}
	var b [2 * (expiryKeyLen + 1)]byte
	bound := expiryBound(b[:0], now)
	// The objects are collected before the first delete: the snapshot is
	// taken before the transaction wrote anything, so taking it copies
	// nothing, and the deletes cannot disturb it.
	window := max(batch, expiryWindow)
	due := make([]dueObject[Obj], 0, min(window, tt.secondary[pos-1].Len()))
	for k, o := range tt.secondary[pos-1].Snapshot().All() {
		if bytes.Compare(k, bound) >= 0 {
			break
		}
		if len(due) == window {
			more = true
			break
		}
		due = append(due, dueObject[Obj]{pk: escapedRest(k), obj: o.obj, rev: o.rev})
	}
	if len(due) == 0 {
		return 0, false, nil
	}
	slices.SortFunc(due, func(a, b dueObject[Obj]) int { return bytes.Compare(a.pk, b.pk) })
	for start := 0; start < len(due); start += batch {
		if start > 0 {
			txn = db.WriteTxn(t)
			if tt, err = t.txnFor(txn); err != nil {
				return n, false, err
			}
		}
		deleted := 0
		for _, d := range due[start:min(start+batch, len(due))] {
			// Deleted only at the revision it was found due at: one
			// written since (by a later batch's time) is not this pass's
			// to judge.
			switch _, _, err := tt.remove(d.obj, true, d.rev); {
			case err == nil:
				deleted++
			case errors.Is(err, ErrRevisionNotEqual), errors.Is(err, ErrObjectNotFound):
			default:
				return n, false, err
			}
		}
		if _, err := txn.Commit(); err != nil {
			return n, false, err
		}
		n += deleted
	}
	return n, more, nil
}

// escapedRest returns what follows the escaped key at the start of k, a
// non-unique index's entry: the primary key.
func escapedRest(k []byte) []byte {
	for i := 0; i+1 < len(k); i++ {
		if k[i] == 0 {
			if k[i+1] == 1 { // the terminator; 0x00 0xff is an escaped 0x00
				return k[i+2:]
			}
			i++
		}
	}
	return nil
}

func (t *table[Obj]) nextExpiry(txn ReadTxn, now time.Time) (at time.Time, found bool, watch <-chan struct{}) {
	tree := t.read(txn).secondary[t.expiryIndex()-1]
	var first []byte
	for k := range tree.All() {
		first = k
		break
	}
	if first == nil {
		return time.Time{}, false, tree.RootWatch()
	}
	key, _, err := index.UnescapeNext(first)
	if err == nil {
		at, err = index.DecodeTime(key)
	}
	if err != nil {
		panic(fmt.Sprintf("strata: table %q: malformed expiry key %x: %v", t.meta.name, first, err))
	}
	return at, true, expiryWatch(tree, now, first)
}

// expiryWatch returns the channel of the node of tree whose subtree holds
// the entries of every time from now to the time of the entry first: the
// node of the longest prefix the two keys share, which any entry between
// them shares too.
func expiryWatch[Obj any](tree part.Tree[object[Obj]], now time.Time, first []byte) <-chan struct{} {
	var b [expiryKeyLen]byte
	var e [2 * expiryKeyLen]byte
	lo := index.AppendEscapedPrefix(e[:0], index.AppendTime(b[:0], now))
	n := 0
	for n < len(lo) && n < len(first) && lo[n] == first[n] {
		n++
	}
	return tree.WatchPrefix(lo[:n])
}
