package strata

import (
	"bytes"
	"fmt"
	"time"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// ExpireBefore deletes, from each of the tables of db given (every table
// of db if none is) that has an ExpiryIndex, the objects whose expiry is at or
// before now, and returns how many it deleted. It deletes them in write
// transactions of at most batch objects each, the soonest expiry first,
// and commits each before it begins the next: readers see the table
// shrink batch by batch and are never paused, and writers of the table
// take turns with it. Every delete is an ordinary one: watch channels
// close, change feeds deliver it, journals record it.
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
	// expireBatch deletes, in one write transaction of db, at most batch
	// objects that expire at or before now; more reports that it left
	// some.
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

func (t *table[Obj]) expireBatch(db *DB, now time.Time, batch int) (n int, more bool, err error) {
	pos := t.expiryIndex()
	txn := db.WriteTxn(t)
	defer txn.Abort()
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, false, err
	}
	var b [2 * (expiryKeyLen + 1)]byte
	bound := expiryBound(b[:0], now)
	// The objects are collected before the first delete: the snapshot is
	// taken before the transaction wrote anything, so taking it copies
	// nothing, and the deletes cannot disturb it.
	objs := make([]Obj, 0, min(batch, tt.secondary[pos-1].Len()))
	for k, o := range tt.secondary[pos-1].Snapshot().All() {
		if bytes.Compare(k, bound) >= 0 {
			break
		}
		if len(objs) == batch {
			more = true
			break
		}
		objs = append(objs, o.obj)
	}
	if len(objs) == 0 {
		return 0, false, nil
	}
	for _, o := range objs {
		// The object is in the transaction's state, so its key computes
		// and it is there to delete.
		if _, _, err := tt.remove(o, false, 0); err != nil {
			return 0, false, err
		}
	}
	if invariants && !more {
		checkExpired(tt, pos, bound)
	}
	if _, err := txn.Commit(); err != nil {
		return 0, false, err
	}
	return len(objs), more, nil
}

// checkExpired checks, under the invariants build tag, what a batch that
// left nothing due promises: the first entry of the expiry index, if any,
// is at or above bound (expires after now).
func checkExpired[Obj any](tt *tableTxn[Obj], pos int, bound []byte) {
	for k := range tt.secondary[pos-1].Snapshot().All() {
		if bytes.Compare(k, bound) < 0 {
			panic(fmt.Sprintf("strata: table %q: an object due is left after its expiry: key %x", tt.t.meta.name, k))
		}
		break
	}
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
