package strata

import (
	"context"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// WatchSet is a set of watch channels that a controller waits on: it adds
// the channels returned by the Watch methods of its reads, calls Wait, and
// re-reads what the closed channels guarded. Its methods keep the names of
// cilium/statedb's WatchSet.
//
// Wait starts no goroutine per channel. It first looks at every channel
// without blocking, which finds channels that are already closed without
// allocating, and only if none is closed does it block in one
// reflect.Select over the whole set. A set larger than reflect.Select's
// limit of 65536 cases is split into chunks of up to 65535 channels; Wait
// selects on the first chunk itself and starts one helper goroutine per
// further chunk, all of which have stopped when Wait returns.
//
// A WatchSet is safe for concurrent use. Add, Merge, Clear, Has, HasAny and
// Len take a short lock and never wait for a running Wait; a Wait that is
// blocked watches the channels added meanwhile too (Add wakes it, and it
// starts its select again over the larger set). Waits on the same set run
// one at a time: a second Wait waits for the first to return, or for its
// own context to end.
//
// The zero value is an empty set ready to use. A WatchSet must not be
// copied after first use.
type WatchSet struct {
	mu sync.Mutex

	// chans holds the channels of the set, each once, in no particular
	// order. Guarded by mu.
	chans []<-chan struct{}
	// pos finds each channel of chans by its position there. Guarded by mu.
	pos chanTable
	// cases holds the cases of the blocking select, built as channels are
	// added: cases[wsCaseCtx] receives from the running Wait's ctx.Done()
	// (zero Chan, so ignored, between Waits), cases[wsCaseWake] from wake,
	// and cases[wsCaseFirst+i] from chans[i]. It is empty exactly when it has
	// not been set up yet or was dropped by Clear; chans is then empty too.
	//
	// Guarded by mu, with one more rule: while waiting is true, the blocked
	// Wait reads the prefix of the backing array it took under mu, without
	// mu. That prefix must not be written: Add only appends past it, and
	// Clear replaces the array instead of clearing it. Removing channels
	// (which moves cases) happens only in Wait, while waiting is false.
	cases []reflect.SelectCase
	// waiting is true while a Wait is blocked in its select without mu.
	// Guarded by mu.
	waiting bool
	// wake has a buffer of one. A send that does not block wakes the
	// blocked Wait: Add and Clear send while waiting is true, and the
	// helpers of a large set send when a channel of their chunk closes.
	// Wait drains it, under mu, before it looks at the set. Set once, under
	// mu, by setup.
	wake chan struct{}
	// turn has a buffer of one and is full while a Wait runs, so that
	// Waits run one at a time. Set once, under mu, by setup.
	turn chan struct{}

	// The fields below belong to the Wait that holds turn.

	// out is the unused tail of a block of result slots. Wait hands out
	// disjoint pieces of it, with capacity equal to length, so the caller
	// owns its result and a Wait that finds few channels does not allocate
	// (BenchmarkWatchSet_Wait_1024).
	out []<-chan struct{}
	// settle times the settle time of Wait; created on first use.
	settle *time.Timer
}

const (
	wsCaseCtx   = 0 // position in WatchSet.cases of the running Wait's ctx.Done()
	wsCaseWake  = 1 // position in WatchSet.cases of WatchSet.wake
	wsCaseFirst = 2 // position in WatchSet.cases of the first channel of the set

	// wsMaxSelectCases is the most cases reflect.Select accepts.
	wsMaxSelectCases = 65536
	// wsResultBlock is how many result slots Wait allocates at once.
	wsResultBlock = 128
)

// NewWatchSet returns an empty WatchSet. It is the same as new(WatchSet).
func NewWatchSet() *WatchSet { return &WatchSet{} }

// setup creates the channels and the first two select cases. mu must be
// held.
func (ws *WatchSet) setup() {
	if ws.wake == nil {
		ws.wake = make(chan struct{}, 1)
		ws.turn = make(chan struct{}, 1)
	}
	if len(ws.cases) == 0 {
		ws.cases = append(ws.cases[:0],
			reflect.SelectCase{Dir: reflect.SelectRecv},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ws.wake)})
	}
}

// Add adds the channels to the set. A channel already in the set is kept
// once. Channels added while a Wait is blocked are watched by that Wait.
// Add does not allocate unless the set grows past its largest size so far
// (BenchmarkWatchSet_Add_1024).
func (ws *WatchSet) Add(chans ...<-chan struct{}) {
	ws.mu.Lock()
	n := len(ws.chans)
	for _, ch := range chans {
		ws.add(ch)
	}
	if ws.waiting && len(ws.chans) > n {
		wakeWaiter(ws.wake)
	}
	ws.mu.Unlock()
}

// add adds ch to the set unless it is there. mu must be held.
func (ws *WatchSet) add(ch <-chan struct{}) {
	ws.pos.reserve(ws.chans, len(ws.chans)+1)
	slot, found := ws.pos.find(ws.chans, ch)
	if found {
		return
	}
	ws.setup()
	ws.pos.slots[slot] = int32(len(ws.chans)) + 1
	ws.chans = append(ws.chans, ch)
	// Grow by a zero case and set its fields in place: appending a
	// composite SelectCase (56 bytes) makes Add about 25% slower.
	n := len(ws.cases)
	ws.cases = append(ws.cases, reflect.SelectCase{})
	ws.cases[n].Dir = reflect.SelectRecv
	ws.cases[n].Chan = reflect.ValueOf(ch)
}

// wakeWaiter wakes the Wait blocked on wake, if any, without blocking.
func wakeWaiter(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Has reports whether ch is in the set.
func (ws *WatchSet) Has(ch <-chan struct{}) bool {
	ws.mu.Lock()
	_, ok := ws.pos.find(ws.chans, ch)
	ws.mu.Unlock()
	return ok
}

// HasAny reports whether any of chans is in the set.
func (ws *WatchSet) HasAny(chans []<-chan struct{}) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ch := range chans {
		if _, ok := ws.pos.find(ws.chans, ch); ok {
			return true
		}
	}
	return false
}

// Len returns the number of channels in the set.
func (ws *WatchSet) Len() int {
	ws.mu.Lock()
	n := len(ws.chans)
	ws.mu.Unlock()
	return n
}

// Clear removes every channel from the set, keeping the memory for the
// channels added next. A blocked Wait stops watching them and goes on
// waiting for the channels added later, or for its context.
func (ws *WatchSet) Clear() {
	ws.mu.Lock()
	clear(ws.chans)
	ws.chans = ws.chans[:0]
	clear(ws.pos.slots)
	if ws.waiting {
		// The blocked Wait reads the old array: leave it to it.
		ws.cases = nil
		wakeWaiter(ws.wake)
	} else if len(ws.cases) > wsCaseFirst {
		clear(ws.cases[wsCaseFirst:])
		ws.cases = ws.cases[:wsCaseFirst]
	}
	ws.mu.Unlock()
}

// Merge adds every channel of other to the set, as Add does. Merging a set
// into itself, or a nil set, changes nothing.
func (ws *WatchSet) Merge(other *WatchSet) {
	if other == nil || other == ws {
		return
	}
	// Lock both, in address order, so that a.Merge(b) and b.Merge(a)
	// running together cannot deadlock. A WatchSet shared between
	// goroutines lives on the heap, where it does not move.
	first, second := ws, other
	if uintptr(unsafe.Pointer(second)) < uintptr(unsafe.Pointer(first)) {
		first, second = second, first
	}
	first.mu.Lock()
	second.mu.Lock()
	n := len(ws.chans)
	for _, ch := range other.chans {
		ws.add(ch)
	}
	if ws.waiting && len(ws.chans) > n {
		wakeWaiter(ws.wake)
	}
	second.mu.Unlock()
	first.mu.Unlock()
}

// Wait blocks until at least one channel of the set is closed or ctx ends.
// It returns the channels of the set that are closed, each once and in no
// particular order, and removes them from the set; the others stay. The
// returned slice belongs to the caller.
//
// If settleTime is positive, Wait then waits settleTime more (even if every
// channel is closed already) and returns, as well, the channels that closed
// by its end, including those added meanwhile. Use it to handle a burst of
// changes at once.
//
// If ctx ends before any channel is closed, Wait returns ctx.Err() and no
// channels. If it ends during the settle time, Wait returns ctx.Err()
// together with the channels closed so far. A channel found closed is
// reported even if ctx is already done, when settleTime is zero. With an
// empty set, Wait waits for ctx, or for a channel added by another
// goroutine to close.
//
// Wait does not allocate when a channel is already closed
// (BenchmarkWatchSet_Wait_1024): it finds closed channels by looking at
// each channel without blocking. Only when none is closed does it block, in
// reflect.Select, which allocates memory in proportion to the size of the
// set; Wait then looks at every channel again when it wakes.
func (ws *WatchSet) Wait(ctx context.Context, settleTime time.Duration) ([]<-chan struct{}, error) {
	ws.mu.Lock()
	ws.setup()
	turn := ws.turn
	ws.mu.Unlock()
	select {
	case turn <- struct{}{}:
	default:
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-turn }()

	if cap(ws.out) == 0 {
		ws.out = make([]<-chan struct{}, 0, wsResultBlock)
	}
	closed, err := ws.waitAny(ctx)
	if err == nil && settleTime > 0 {
		err = ws.settleFor(ctx, settleTime)
		ws.mu.Lock()
		closed = ws.sweep(closed)
		ws.mu.Unlock()
	}
	if len(closed) == 0 {
		return nil, err
	}
	// closed lies in ws.out unless an append outgrew it: hand that piece
	// out.
	if len(closed) <= cap(ws.out) {
		ws.out = ws.out[len(closed):len(closed)]
	}
	return closed[:len(closed):len(closed)], err
}

// waitAny blocks until the set holds a closed channel or ctx ends. It
// returns the closed channels, appended to ws.out[:0] and removed from the
// set, or ctx.Err(). The caller holds turn.
func (ws *WatchSet) waitAny(ctx context.Context) ([]<-chan struct{}, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	defer func() {
		if len(ws.cases) > 0 {
			ws.cases[wsCaseCtx].Chan = reflect.Value{} // do not keep ctx
		}
	}()
	done := ctx.Done()
	for {
		select {
		case <-ws.wake:
		default:
		}
		if closed := ws.sweep(ws.out[:0]); len(closed) > 0 {
			return closed, nil
		}
		select {
		case <-done:
			return nil, ctx.Err()
		default:
		}
		ws.setup()
		ws.cases[wsCaseCtx].Chan = reflect.ValueOf(done)
		cases := ws.cases
		ws.waiting = true
		ws.mu.Unlock()
		selectSet(cases, ws.wake)
		ws.mu.Lock()
		ws.waiting = false
	}
}

// selectSet waits until one of cases is ready: a channel of the set
// closes, ctx ends, or wake fires. cases must not be written while it runs.
// A set too large for one reflect.Select is split into chunks: the first
// is selected here, with ctx and wake, and each further chunk by a helper
// goroutine that sends on wake when a channel of its chunk closes. The
// helpers have stopped when selectSet returns.
func selectSet(cases []reflect.SelectCase, wake chan struct{}) {
	if len(cases) <= wsMaxSelectCases {
		reflect.Select(cases)
		return
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for lo := wsMaxSelectCases; lo < len(cases); lo += wsMaxSelectCases - 1 {
		hi := min(lo+wsMaxSelectCases-1, len(cases))
		chunk := make([]reflect.SelectCase, 1, 1+hi-lo)
		chunk[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)}
		chunk = append(chunk, cases[lo:hi]...)
		wg.Go(func() {
			if i, _, _ := reflect.Select(chunk); i != 0 {
				wakeWaiter(wake)
			}
		})
	}
	reflect.Select(cases[:wsMaxSelectCases])
	close(stop)
	wg.Wait()
}

// settleFor waits for d or for ctx to end, and returns ctx.Err() in the
// latter case. The caller holds turn.
func (ws *WatchSet) settleFor(ctx context.Context, d time.Duration) error {
	if ws.settle == nil {
		ws.settle = time.NewTimer(d)
	} else {
		ws.settle.Reset(d)
	}
	select {
	case <-ws.settle.C:
		return nil
	case <-ctx.Done():
		// Drop the timer rather than reuse it: with asynctimerchan=1 (a
		// main module older than Go 1.23) its channel could still
		// receive a value from this run.
		ws.settle.Stop()
		ws.settle = nil
		return ctx.Err()
	}
}

// sweep removes the closed channels from the set and appends them to dst,
// without blocking. mu must be held and waiting be false.
func (ws *WatchSet) sweep(dst []<-chan struct{}) []<-chan struct{} {
	// Downwards, so that removeAt moves into position i a channel that
	// has been looked at already.
	for i := len(ws.chans) - 1; i >= 0; i-- {
		select {
		case <-ws.chans[i]:
			dst = append(dst, ws.chans[i])
			ws.removeAt(i)
		default:
		}
	}
	return dst
}

// removeAt removes chans[i] from the set, moving the last channel into its
// place. mu must be held and waiting be false.
func (ws *WatchSet) removeAt(i int) {
	last := len(ws.chans) - 1
	slot, _ := ws.pos.find(ws.chans, ws.chans[i])
	ws.pos.delete(ws.chans, slot)
	if i != last {
		slot, _ = ws.pos.find(ws.chans, ws.chans[last])
		ws.pos.slots[slot] = int32(i) + 1
		ws.chans[i] = ws.chans[last]
		ws.cases[wsCaseFirst+i] = ws.cases[wsCaseFirst+last]
	}
	ws.chans[last] = nil
	ws.cases[wsCaseFirst+last] = reflect.SelectCase{}
	ws.chans = ws.chans[:last]
	ws.cases = ws.cases[:wsCaseFirst+last]
}

// chanTable is the index of a WatchSet: a hash set of its channels that
// gives each one's position in WatchSet.chans. It is an open-addressing
// table with linear probing, keyed by the channel's address (channels live
// on the heap, which does not move objects). Compared with a Go map it
// checks for a duplicate and inserts in one probe sequence instead of two,
// takes 8 bytes per channel, and clears with one memclr
// (BenchmarkWatchSet_Add_1024).
type chanTable struct {
	// slots has a power-of-two length, at least twice the number of
	// channels, or is empty. A slot holds 0 if it is free, or one more
	// than the position in chans of a channel. A channel sits at its home
	// slot (chanHash) or after it, cyclically, with no free slot between
	// the two.
	slots []int32
	// shift is 64 less the base-2 logarithm of len(slots).
	shift uint8
}

// chanHash returns the home slot of ch in a table with the given shift:
// the top bits of the address times 2^64 divided by the golden ratio.
func chanHash(ch <-chan struct{}, shift uint8) int {
	addr := uint64(uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&ch))))
	return int((addr * 0x9E3779B97F4A7C15) >> shift)
}

// reserve makes room for n channels, chans being those in the table.
func (t *chanTable) reserve(chans []<-chan struct{}, n int) {
	if 2*n <= len(t.slots) {
		return
	}
	size, shift := 16, uint8(64-4)
	for size < 2*n {
		size, shift = 2*size, shift-1
	}
	t.slots, t.shift = make([]int32, size), shift
	for pos, ch := range chans {
		slot, _ := t.find(chans, ch)
		t.slots[slot] = int32(pos) + 1
	}
}

// find returns the slot that holds ch, and true, or the free slot where ch
// would go, and false. chans are the channels in the table. A table with no
// slots holds nothing and returns -1.
func (t *chanTable) find(chans []<-chan struct{}, ch <-chan struct{}) (int, bool) {
	if len(t.slots) == 0 {
		return -1, false
	}
	mask := len(t.slots) - 1
	for i := chanHash(ch, t.shift); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return i, false
		}
		if chans[s-1] == ch {
			return i, true
		}
	}
}

// delete frees slot i, moving back the entries after it that could no
// longer be found (backward-shift deletion, so no tombstones). chans must
// still hold every channel in the table at its position.
func (t *chanTable) delete(chans []<-chan struct{}, i int) {
	mask := len(t.slots) - 1
	for j := i; ; {
		t.slots[i] = 0
		for {
			j = (j + 1) & mask
			s := t.slots[j]
			if s == 0 {
				return
			}
			// The entry at j stays unless its home slot is at or
			// before the hole at i, cyclically.
			home := chanHash(chans[s-1], t.shift)
			if (j-home)&mask >= (j-i)&mask {
				t.slots[i] = s
				i = j
				break
			}
		}
	}
}
