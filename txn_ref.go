package strata

// Write transaction references: the WriteTxn a caller holds (txnRef),
// which outlives the pooled state of the transaction (txnCore), the
// blocks that allocate refs and abort the transactions their callers
// forgot, and Commit and Abort as the ref runs them.

import (
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"
)

// txnRef implements WriteTxn. Each transaction gets a ref of its own,
// which outlives the transaction (a ref used after Commit must say
// ErrTransactionClosed); the state it points to is pooled and reused once
// the transaction ended (BenchmarkDB_WriteTxn_1). Refs are allocated in
// blocks, which carry the cleanup that aborts forgotten transactions.
type txnRef struct {
	// w is the transaction's state while it is open, nil once it ended.
	w *txnCore
	// root, once the transaction ended, is the snapshot reads through the
	// ref see: the one Commit published, or the one it started from.
	root *dbRoot
	// open is the ref's slot in its block's openTxns, which holds w
	// while the transaction is open.
	open **txnCore
}

// monotonicEpoch is the origin of monotonic.
var monotonicEpoch = time.Now()

// monotonic returns the time since monotonicEpoch. It reads the monotonic
// clock alone, where time.Now also reads the wall clock: the metrics' two
// readings per write transaction cost about 60 ns with time.Now and
// time.Since, and 45 ns with this.
func monotonic() time.Duration { return time.Since(monotonicEpoch) }

var txnCorePool = sync.Pool{New: func() any { return new(txnCore) }}

// refsPerBlock is how many refs share an allocation and a cleanup.
// A cleanup costs more than the rest of an empty transaction
// (BenchmarkDB_WriteTxn_CommitOnly_1Table); sharing it makes it cheap. The
// price: a forgotten transaction is aborted once every ref of its block
// is unreachable, and a ref that is kept keeps the snapshots its block's
// other refs read after their transactions ended. Sixteen keeps both
// small.
const refsPerBlock = 16

// txnRefBlock is an allocation of refs, handed out in order. Partly
// used blocks wait in txnRefBlocks; one that the pool drops (the garbage
// collector empties sync.Pools) is cleaned up once its refs are
// unreachable, like a full one.
//
// The cleanup (runtime.AddCleanup) sees only the block's openTxns, not the
// block. A finalizer would see the block, and so keep it, and every
// snapshot its refs read, for one more collection: the garbage
// collector would mark a write-heavy program's old trees once more after
// they died (BenchmarkDB_Changes_Baseline marked 26-30 MB a cycle, against
// under 1 MB with the cleanup).
type txnRefBlock struct {
	used int // refs handed out; only the goroutine holding the block touches it
	refs [refsPerBlock]txnRef
	open *openTxns
}

// openTxns holds the transactions of a block's refs that are open.
type openTxns [refsPerBlock]*txnCore

var txnRefBlocks sync.Pool

// newTxnRef returns a fresh ref for the transaction w.
func newTxnRef(w *txnCore) *txnRef {
	b, _ := txnRefBlocks.Get().(*txnRefBlock)
	if b == nil {
		b = &txnRefBlock{open: new(openTxns)}
		runtime.AddCleanup(b, abortForgotten, b.open)
	}
	h := &b.refs[b.used]
	h.w, h.open = w, &b.open[b.used]
	*h.open = w
	if b.used++; b.used < refsPerBlock {
		txnRefBlocks.Put(b)
	}
	return h
}

func (h *txnRef) committed() *dbRoot {
	if h.w != nil {
		return h.w.root
	}
	return h.root
}

func (h *txnRef) pending() *txnCore { return h.w }

func (h *txnRef) Commit() (ReadTxn, error) {
	w := h.w
	if w == nil {
		return nil, ErrTransactionClosed
	}
	// Deferred, so that the transaction ends, unlocking its tables, and
	// the ref closes, however commit ends: with a panic too (a bug in
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

func (h *txnRef) Abort() {
	if w := h.w; w != nil {
		h.close(w)
		w.abort()
		recycle(w)
	}
}

// endCommit ends the transaction w that Commit ran: as committed once it
// published (w.committed), else aborted. The ref is closed first, so
// that if ending the transaction panics (a bug), no Abort of the ref,
// nor its block's cleanup, ends it again and unlocks its tables twice.
func (h *txnRef) endCommit(w *txnCore) {
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

// close closes the ref of w, a transaction that is ending: reads through
// the ref see w.root from now on, Commit and Abort do nothing, and the
// cleanup of the ref's block no longer sees w.
func (h *txnRef) close(w *txnCore) { h.root, h.w, *h.open = w.root, nil, nil }

// recycle returns the state of a transaction that ended to the pool.
func recycle(w *txnCore) {
	*w = txnCore{retired: w.retired}
	txnCorePool.Put(w)
}

// abortForgotten runs when the garbage collector found every ref of a
// block unreachable: a transaction still open in it was neither committed
// nor aborted, and is reported and aborted, which unlocks its tables.
func abortForgotten(open *openTxns) {
	for _, w := range open {
		if w == nil {
			continue
		}
		names := make([]string, len(w.lockedTables))
		for i, lt := range w.lockedTables {
			names[i] = lt.meta.name
		}
		slog.Error("strata: write transaction was neither committed nor aborted; aborting it",
			"tables", strings.Join(names, ","))
		w.abort()
		recycle(w)
	}
}
