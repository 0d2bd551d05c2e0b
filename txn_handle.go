package strata

// Write transaction handles: the WriteTxn a caller holds (txnHandle),
// which outlives the pooled state of the transaction (writeTxn), the
// blocks that allocate handles and abort the transactions their callers
// forgot, and Commit and Abort as the handle runs them.

import (
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
)

// txnHandle implements WriteTxn. Each transaction gets a handle of its own,
// which outlives the transaction (a handle used after Commit must say
// ErrTransactionClosed); the state it points to is pooled and reused once
// the transaction ended (BenchmarkDB_WriteTxn_1). Handles are allocated in
// blocks, which carry the cleanup that aborts forgotten transactions.
type txnHandle struct {
	// w is the transaction's state while it is open, nil once it ended.
	w *writeTxn
	// root, once the transaction ended, is the snapshot reads through the
	// handle see: the one Commit published, or the one it started from.
	root *dbRoot
	// open is the handle's slot in its block's openTxns, which holds w
	// while the transaction is open.
	open **writeTxn
}

// monotonicEpoch is the origin of monotonic.
var monotonicEpoch = time.Now()

// monotonic returns the time since monotonicEpoch. It reads the monotonic
// clock alone, where time.Now also reads the wall clock: the metrics' two
// readings per write transaction cost about 60 ns with time.Now and
// time.Since, and 45 ns with this.
func monotonic() time.Duration { return time.Since(monotonicEpoch) }

var writeTxnPool = sync.Pool{New: func() any { return new(writeTxn) }}

// handlesPerBlock is how many handles share an allocation and a cleanup.
// A cleanup costs more than the rest of an empty transaction
// (BenchmarkDB_WriteTxn_CommitOnly_1Table); sharing it makes it cheap. The
// price: a forgotten transaction is aborted once every handle of its block
// is unreachable, and a handle that is kept keeps the snapshots its block's
// other handles read after their transactions ended. Sixteen keeps both
// small.
const handlesPerBlock = 16

// handleBlock is an allocation of handles, handed out in order. Partly
// used blocks wait in handleBlocks; one that the pool drops (the garbage
// collector empties sync.Pools) is cleaned up once its handles are
// unreachable, like a full one.
//
// The cleanup (runtime.AddCleanup) sees only the block's openTxns, not the
// block. A finalizer would see the block, and so keep it, and every
// snapshot its handles read, for one more collection: the garbage
// collector would mark a write-heavy program's old trees once more after
// they died (BenchmarkDB_Changes_Baseline marked 26-30 MB a cycle, against
// under 1 MB with the cleanup).
type handleBlock struct {
	used    int // handles handed out; only the goroutine holding the block touches it
	handles [handlesPerBlock]txnHandle
	open    *openTxns
}

// openTxns holds the transactions of a block's handles that are open.
type openTxns [handlesPerBlock]*writeTxn

var handleBlocks sync.Pool

// newHandle returns a fresh handle for the transaction w.
func newHandle(w *writeTxn) *txnHandle {
	b, _ := handleBlocks.Get().(*handleBlock)
	if b == nil {
		b = &handleBlock{open: new(openTxns)}
		runtime.AddCleanup(b, abortForgotten, b.open)
	}
	h := &b.handles[b.used]
	h.w, h.open = w, &b.open[b.used]
	*h.open = w
	if b.used++; b.used < handlesPerBlock {
		handleBlocks.Put(b)
	}
	return h
}

func (h *txnHandle) committed() *dbRoot {
	if h.w != nil {
		return h.w.root
	}
	return h.root
}

func (h *txnHandle) pending() *writeTxn { return h.w }

func (h *txnHandle) Commit() (ReadTxn, error) {
	w := h.w
	if w == nil {
		return nil, ErrTransactionClosed
	}
	// Deferred, so that the transaction ends, unlocking its tables, and
	// the handle closes, however commit ends: with a panic too (a bug in
	// a writer, or the journal's panic, raised again below).
	defer h.endCommit(w)
	root, err := w.commit()
	if err != nil {
		if p, ok := err.(*journalPanic); ok {
			panic(p.value)
		}
		return nil, err
	}
	return root, nil
}

func (h *txnHandle) Abort() {
	if w := h.w; w != nil {
		h.close(w)
		w.abort()
		recycle(w)
	}
}

// endCommit ends the transaction w that Commit ran: as committed once it
// published (w.committed), else aborted. The handle is closed first, so
// that if ending the transaction panics (a bug), no Abort of the handle,
// nor its block's cleanup, ends it again and unlocks its tables twice.
func (h *txnHandle) endCommit(w *writeTxn) {
	h.close(w)
	switch {
	case w.released:
		// Unlocked before the commit was published.
		if w.db.opts.metricsOn {
			w.report(w.committed)
		}
	case w.committed:
		w.release(true)
	default:
		w.abort()
	}
	recycle(w)
}

// close closes the handle of w, a transaction that is ending: reads through
// the handle see w.root from now on, Commit and Abort do nothing, and the
// cleanup of the handle's block no longer sees w.
func (h *txnHandle) close(w *writeTxn) { h.root, h.w, *h.open = w.root, nil, nil }

// recycle returns the state of a transaction that ended to the pool.
func recycle(w *writeTxn) {
	*w = writeTxn{retired: w.retired}
	writeTxnPool.Put(w)
}

// abortForgotten runs when the garbage collector found every handle of a
// block unreachable: a transaction still open in it was neither committed
// nor aborted, and is reported and aborted, which unlocks its tables.
func abortForgotten(open *openTxns) {
	for _, w := range open {
		if w == nil {
			continue
		}
		names := make([]string, len(w.locked))
		for i, lt := range w.locked {
			names[i] = lt.meta.name
		}
		slog.Error("strata: write transaction was neither committed nor aborted; aborting it",
			"tables", strings.Join(names, ","))
		w.abort()
		recycle(w)
	}
}
