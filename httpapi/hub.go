package httpapi

// A hub serves the change streams of one table from one change feed: it
// reads the feed, encodes each change once, and keeps the most recent
// changes in a ring that every stream of the table reads from, so that a
// client that reconnects resumes where it stopped.
//
// Invariants:
//
//  1. The ring holds changes in revision order: each batch of the feed is
//     in revision order and follows the batch before it.
//  2. floor is a revision such that every change after it is in the ring,
//     as itself or as a newer change of the same object (a feed delivers
//     an object once per batch, in its newest state). It starts at the
//     revision of the snapshot the feed first read, and rises to the
//     revision of each change the ring evicts: a change after that
//     revision sits after the evicted one (1).
//  3. head is the revision of the last snapshot whose changes are all in
//     the ring, as themselves or as newer changes of the same objects:
//     the end of the last batch read whole. Entries of a batch read in
//     part may be after head (and stand for older changes still to come).
//  4. A stream from revision R is served iff floor <= R <= the table's
//     revision: it is sent the ring's changes after R, then each change
//     the hub appends. A stream whose next change is evicted before it is
//     sent is ended (ErrSlowConsumer): its client resumes, if the ring
//     still covers where it stopped, or lists again. A stream bookmarks
//     only head, once it has sent every entry and none after head (3): a
//     bookmark says that every change up to it has been sent.
//  5. A hub lives while streams of its table are attached, and for
//     Options.RingRetention after the last detaches; then it closes its
//     feed and leaves the handler's map, under the handler's mu, so that
//     an attach either finds it running or starts another.

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// ringEntry is one change in a hub's ring.
type ringEntry struct {
	seq  uint64 // position in the hub's sequence of changes
	rev  strata.Revision
	kind EventKind
	// chunk holds the NDJSON lines of the changes the hub appended in one
	// round, this one's at chunk[off:end] (its newline last), so that a
	// stream sends the changes of a round with one write. Shared by every
	// stream; never modified.
	chunk    []byte
	off, end int
}

// line returns the change's Event as JSON, without the newline.
func (e *ringEntry) line() []byte { return e.chunk[e.off : e.end-1] }

// size is what the entry holds of its chunk.
func (e *ringEntry) size() int { return e.end - e.off }

// span is a run of a hub's entries that follow one another in one chunk:
// their NDJSON lines, chunk[off:end], up to the change of revision rev.
type span struct {
	chunk    []byte
	off, end int
	rev      strata.Revision
}

type hub struct {
	h     *Handler
	table strata.AnyTable

	// ready is closed once the feed is open and floor and head are set,
	// or err is.
	ready chan struct{}
	err   error

	// subs is the number of streams attached; guarded by h.mu.
	subs int
	// subsChanged is poked (without blocking) when subs drops to 0 or
	// leaves it, so that the hub's goroutine arms or stops its
	// retention timer.
	subsChanged chan struct{}

	mu sync.Mutex
	// ring holds the entries seq first..next-1: entry seq s is at
	// ring[s % len(ring)]. Guarded by mu, as are the fields below.
	ring        []ringEntry
	first, next uint64
	bytes       int
	floor, head strata.Revision
	// wake is closed, and replaced, when entries are appended or the hub
	// stops.
	wake chan struct{}
	// stopped: the hub's goroutine returned; streams attached end.
	stopped bool

	// batchTxn, owned by the hub's goroutine, is the snapshot of the
	// feed's batch that the last round read in part (nil: none).
	batchTxn strata.ReadTxn
}

// attach returns the running hub of t, starting one if there is none,
// with a stream counted as attached. It waits until the hub is ready.
func (h *Handler) attach(t strata.AnyTable) (*hub, error) {
	h.mu.Lock()
	if h.ctx.Err() != nil {
		h.mu.Unlock()
		return nil, ErrShuttingDown
	}
	hb := h.hubs[t.Name()]
	if hb == nil {
		hb = &hub{
			h:           h,
			table:       t,
			ready:       make(chan struct{}),
			subsChanged: make(chan struct{}, 1),
			ring:        make([]ringEntry, h.opts.RingSize),
			wake:        make(chan struct{}),
		}
		h.hubs[t.Name()] = hb
		h.wg.Add(1)
		go hb.run()
	}
	hb.subs++
	if hb.subs == 1 {
		hb.poke()
	}
	h.mu.Unlock()
	<-hb.ready
	if hb.err != nil {
		h.detach(hb)
		return nil, hb.err
	}
	return hb, nil
}

// detach counts a stream of hb as gone.
func (h *Handler) detach(hb *hub) {
	h.mu.Lock()
	hb.subs--
	if hb.subs == 0 {
		hb.poke()
	}
	h.mu.Unlock()
}

// forget removes hb from the handler's hubs, if it is there.
func (h *Handler) forget(hb *hub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hubs[hb.table.Name()] == hb {
		delete(h.hubs, hb.table.Name())
	}
}

func (hb *hub) poke() {
	select {
	case hb.subsChanged <- struct{}{}:
	default:
	}
}

// run is the hub's goroutine: it opens the feed, then appends each batch
// to the ring until the handler closes or the hub is idle for
// RingRetention.
func (hb *hub) run() {
	h := hb.h
	defer h.wg.Done()
	defer hb.stop()
	defer h.forget(hb)
	h.at(holdHubOpen, nil)
	feed, watch, err := hb.open()
	hb.err = err
	close(hb.ready)
	if err != nil {
		return
	}
	defer feed.Close()

	retention := time.NewTimer(h.opts.RingRetention)
	retention.Stop()
	enc := wirejson.NewEncoder()
	// A round appends at most half a ring, so that what a round holds
	// before the ring takes it stays bounded, however large the batch (a
	// DeleteAll of a large table).
	round := max(1, len(hb.ring)/2)
	pause := newPause(h.opts.StreamInterval)
	defer pause.stop()
	for {
		select {
		case <-watch:
			h.at(holdHubWake, nil)
			// Let the commits of the next StreamInterval join this
			// batch, unless the last round left some of it.
			if watch != closedChan && !pause.wait(h.ctx.Done()) {
				return
			}
			watch = hb.appendRound(feed, enc, round)
		case <-hb.subsChanged:
			h.at(holdHubSubs, nil)
			h.mu.Lock()
			idle := hb.subs == 0
			h.mu.Unlock()
			if idle {
				retention.Reset(h.opts.RingRetention)
			} else {
				retention.Stop()
			}
		case <-retention.C:
			h.at(holdHubRetire, nil)
			h.mu.Lock()
			idle := hb.subs == 0
			if idle {
				// Under mu, so that an attach finds the hub running or
				// none (invariant 5).
				delete(h.hubs, hb.table.Name())
			}
			h.mu.Unlock()
			if idle {
				return
			}
		case <-h.ctx.Done():
			return
		}
	}
}

// open registers the hub's feed and reads its first batch (the objects of
// the table), which sets floor and head.
func (hb *hub) open() (strata.AnyChangeIterator, <-chan struct{}, error) {
	wtxn, err := hb.h.db.WriteTxnContext(hb.h.ctx, hb.table.Meta)
	if err != nil {
		return nil, nil, ErrShuttingDown
	}
	feed, err := hb.table.Changes(wtxn)
	if err != nil {
		wtxn.Abort()
		return nil, nil, fmt.Errorf("%w: opening a change feed: %v", ErrInternal, err)
	}
	if _, err := wtxn.Commit(); err != nil {
		return nil, nil, fmt.Errorf("%w: opening a change feed: %v", ErrInternal, err)
	}
	txn := hb.h.db.ReadTxn()
	changes, watch := feed.Next(txn)
	for range changes {
	}
	rev := hb.table.Revision(txn)
	hb.mu.Lock()
	hb.floor, hb.head = rev, rev
	hb.mu.Unlock()
	return feed, watch, nil
}

// appendRound reads up to max changes of the feed's next batch into the
// ring, and returns the channel to wait on before the next round: a
// closed one if the batch may have more.
func (hb *hub) appendRound(feed strata.AnyChangeIterator, enc *wirejson.Encoder, max int) <-chan struct{} {
	// After a round that stopped at max, the next reads the rest of the
	// batch, or finds it was all read: either way with the batch's own
	// snapshot, so that no change after it comes in this batch, and
	// head is the batch's revision.
	txn := hb.batchTxn
	if txn == nil {
		txn = hb.h.db.ReadTxn()
	}
	changes, watch := feed.Next(txn)
	var entries []ringEntry
	var chunk []byte
	full := true
	for c, rev := range changes {
		chunk, entries = hb.encode(enc, chunk, entries, c, rev)
		if len(entries) == max {
			// Stop here: the feed moved past every change yielded, so
			// breaking before the next one keeps it for the next round
			// (which may find the batch was all read).
			full = false
			break
		}
	}
	for i := range entries {
		entries[i].chunk = chunk
	}
	// head rises only with a batch read whole, to its snapshot's revision
	// (invariant 3): the changes of a batch read in part may stand for
	// older ones (invariant 2) that are still to come, so that a stream
	// that had them all would not have every change up to theirs.
	head := strata.Revision(0)
	hb.batchTxn = nil
	if full {
		head = hb.table.Revision(txn)
	} else {
		hb.batchTxn = txn
	}
	hb.h.at(holdHubPublish, nil)
	hb.append(entries, head)
	if !full {
		return closedChan
	}
	return watch
}

// encode appends the change c at rev to a round's chunk and entries.
func (hb *hub) encode(enc *wirejson.Encoder, chunk []byte, entries []ringEntry, c strata.Change[any], rev strata.Revision) ([]byte, []ringEntry) {
	kind := EventUpsert
	if c.Deleted {
		kind = EventDelete
	}
	key := ""
	if pk, err := hb.table.PrimaryKey(c.Object); err == nil {
		key, _ = hb.table.KeyString("", pk)
	}
	data, err := enc.Encode(c.Object)
	off := len(chunk)
	chunk = append(appendObject(chunk, kind, rev, key, data, err, hb.table.TableRow(c.Object)), '\n')
	return chunk, append(entries, ringEntry{rev: rev, kind: kind, off: off, end: len(chunk)})
}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// pause waits StreamInterval, reusing one timer.
type pause struct {
	d     time.Duration
	timer *time.Timer
}

func newPause(d time.Duration) *pause {
	t := time.NewTimer(d)
	t.Stop()
	return &pause{d: d, timer: t}
}

// wait waits for the pause, and reports false if done closed first.
func (p *pause) wait(done <-chan struct{}) bool {
	p.timer.Reset(p.d)
	select {
	case <-p.timer.C:
		return true
	case <-done:
		p.timer.Stop()
		return false
	}
}

func (p *pause) stop() { p.timer.Stop() }

// append adds entries to the ring, evicting the oldest beyond RingSize
// and RingBytes, and sets head.
func (hb *hub) append(entries []ringEntry, head strata.Revision) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	n := uint64(len(hb.ring))
	for _, e := range entries {
		if hb.next-hb.first == n {
			hb.evictLocked()
		}
		e.seq = hb.next
		hb.ring[e.seq%n] = e
		hb.next++
		hb.bytes += e.size()
		for hb.bytes > hb.h.opts.RingBytes && hb.next-hb.first > 1 {
			hb.evictLocked()
		}
	}
	if head > hb.head {
		hb.head = head
	}
	close(hb.wake)
	hb.wake = make(chan struct{})
}

// evictLocked drops the oldest entry, raising floor to its revision
// (invariant 2).
func (hb *hub) evictLocked() {
	e := &hb.ring[hb.first%uint64(len(hb.ring))]
	hb.floor = max(hb.floor, e.rev)
	hb.bytes -= e.size()
	*e = ringEntry{}
	hb.first++
}

// stop marks the hub stopped and wakes its streams.
func (hb *hub) stop() {
	hb.h.at(holdHubStop, nil)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.stopped = true
	close(hb.wake)
	hb.wake = make(chan struct{})
}

// seek returns the sequence number of the first entry after revision
// after, if the ring covers it (invariant 4 without the upper bound, which
// the stream checks against the table).
func (hb *hub) seek(after strata.Revision) (uint64, bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if after < hb.floor {
		return 0, false
	}
	n := uint64(len(hb.ring))
	i := sort.Search(int(hb.next-hb.first), func(i int) bool {
		return hb.ring[(hb.first+uint64(i))%n].rev > after
	})
	return hb.first + uint64(i), true
}

// read copies to dst the entries from seq next on, at most limit, and
// returns them, with head and the channel closed on the next append.
// evicted: entry next is gone (the stream fell behind); stopped: the hub
// stopped.
func (hb *hub) read(next uint64, dst []ringEntry, limit int) (entries []ringEntry, head strata.Revision, wake <-chan struct{}, evicted, stopped bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if next < hb.first {
		return dst, hb.head, hb.wake, true, hb.stopped
	}
	n := uint64(len(hb.ring))
	for s := next; s < hb.next && len(dst) < limit; s++ {
		dst = append(dst, hb.ring[s%n])
	}
	return dst, hb.head, hb.wake, false, hb.stopped
}

// readSpans is read for an NDJSON stream: of the entries from seq next
// on, at most limit (n of them read), it appends to dst the lines of
// those after revision after, as spans, instead of copying the entries
// (follow; BenchmarkChangeStream with 100 streams).
func (hb *hub) readSpans(next uint64, after strata.Revision, dst []span, limit int) (spans []span, n int, head strata.Revision, wake <-chan struct{}, evicted, stopped bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if next < hb.first {
		return dst, 0, hb.head, hb.wake, true, hb.stopped
	}
	size := uint64(len(hb.ring))
	for s := next; s < hb.next && n < limit; s++ {
		e := &hb.ring[s%size]
		n++
		if e.rev <= after {
			continue
		}
		if k := len(dst) - 1; k >= 0 && &dst[k].chunk[0] == &e.chunk[0] && dst[k].end == e.off {
			dst[k].end, dst[k].rev = e.end, e.rev
			continue
		}
		dst = append(dst, span{chunk: e.chunk, off: e.off, end: e.end, rev: e.rev})
	}
	return dst, n, hb.head, hb.wake, false, hb.stopped
}
