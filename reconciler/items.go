package reconciler

import (
	"bytes"
	"hash/maphash"

	"github.com/strata-db/strata"
)

// item is the reconciler's record of one object (by primary key) that has
// work: queued, parked, in flight, delayed, or failed. Objects with
// nothing to do have no item. Items are owned by the loop goroutine and
// changed under Reconciler.mu; workers and the committer never touch them
// (they get a copy of what they need in an entry).
//
// Items live in an arena and are referred to by their index (ref), so that
// the key index, the lanes, the progress ring and the heaps hold no
// pointers: the garbage collector neither scans them nor makes their
// writes pay for write barriers (BenchmarkReconciler/B1 in bench/compare).
type item[Obj any] struct {
	// key is the primary key: in keyArr if it fits, so that most items
	// need no allocation of their own for it. The buffer is kept when the
	// item is reused.
	key    []byte
	keyArr [16]byte
	hash   uint64
	self   ref
	// gen is bumped each time the item is released, so that queue and
	// progress entries that still refer to it are recognised as stale.
	gen uint32

	// The newest version of the object the reconciler has read (or
	// written), its revision, and the ID of the reconciler's status in it.
	obj      Obj
	rev      strata.Revision
	deleted  bool
	statusID uint64

	phase Phase
	lane  Lane // the lane it waits in, or will wait in once dispatchable
	// qseq is bumped on each enqueue: only the lane entry with the
	// current qseq is live.
	qseq     uint32
	queuedAt int64 // when it entered its lane or group (mono)

	// In flight: the status ID of the version being attempted, and
	// whether a newer change arrived meanwhile.
	flightID uint64
	dirty    bool

	// Progress (progress.go): the revision of the first change not yet
	// attempted, and the first change the in-flight attempt covers, each
	// with when the change was made (changedAt, flightChangedAt): the
	// UpdatedAt of the Pending or Refreshing status it was written with,
	// in mono time, for the change-to-Done metric; 0 if unknown or if
	// metrics are off.
	pendingRev, flightRev      strata.Revision
	changedAt, flightChangedAt int64

	// Failures since the object last changed, and the kind of status
	// (Pending or Refreshing) that made the first attempt: a retry shows
	// it to Update again.
	attempts  uint32
	retryKind StatusKind
	lastErr   error
	errRev    strata.Revision // revision of the version that failed
	errIdx    int32           // position in state.failing, or -1

	dueAt    int64 // mono time of the next attempt, in PhaseBackoff and PhaseRequeued
	delayIdx int32 // position in state.delayed, or -1

	// With an ordering key: the group it is a member of while it has
	// work, its place there (the revision of the change that gave it its
	// work), and the group it keeps busy while in flight, which is the
	// group it was a member of when it started (a change while in flight
	// may move it to another).
	group       *group[Obj]
	orderRev    strata.Revision
	flightGroup *group[Obj]
}

// ref is an item's index in the arena.
type ref uint32

// arena holds the items, in pages that never move, so that an item's
// address is stable and its index is enough to find it.
type arena[Obj any] struct {
	pages [][]item[Obj]
	free  []ref
}

const (
	pageShift = 8
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
)

func (a *arena[Obj]) at(r ref) *item[Obj] { return &a.pages[r>>pageShift][r&pageMask] }

func (a *arena[Obj]) alloc() *item[Obj] {
	if n := len(a.free); n > 0 {
		r := a.free[n-1]
		a.free = a.free[:n-1]
		return a.at(r)
	}
	if len(a.pages) == 0 || len(a.pages[len(a.pages)-1]) == pageSize {
		a.pages = append(a.pages, make([]item[Obj], 0, pageSize))
	}
	p := len(a.pages) - 1
	page := a.pages[p]
	page = page[:len(page)+1]
	a.pages[p] = page
	it := &page[len(page)-1]
	it.self = ref(p<<pageShift | (len(page) - 1))
	it.errIdx, it.delayIdx = -1, -1
	it.key = it.keyArr[:0]
	return it
}

// release resets it for reuse, keeping its identity and key buffer.
func (a *arena[Obj]) release(it *item[Obj]) {
	key, self := it.key[:0], it.self
	*it = item[Obj]{self: self, gen: it.gen + 1, errIdx: -1, delayIdx: -1}
	if cap(key) > len(it.keyArr) {
		it.key = key // a long key's buffer, kept for reuse
	} else {
		it.key = it.keyArr[:0]
	}
	a.free = append(a.free, self)
}

// keyMap finds items by primary key: an open-addressing hash table with
// linear probing over the arena. A slot holds the low 32 bits of the key's
// hash and the item's ref+1 (0: empty), so that probing touches no item
// until the hash matches, and the table holds no pointers.
type keyMap[Obj any] struct {
	seed  maphash.Seed
	items arena[Obj]
	slots []uint64
	mask  uint64
	n     int
	// The hash and free slot of the key get last looked up, for add.
	lastHash uint64
	lastSlot uint64
}

func newKeyMap[Obj any]() keyMap[Obj] {
	km := keyMap[Obj]{seed: maphash.MakeSeed()}
	km.resize(64)
	return km
}

func slotOf(hash uint64, r ref) uint64 { return uint64(uint32(hash))<<32 | uint64(r+1) }

func (km *keyMap[Obj]) resize(size int) {
	old := km.slots
	km.slots = make([]uint64, size)
	km.mask = uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := (s >> 32) & km.mask
		for km.slots[i] != 0 {
			i = (i + 1) & km.mask
		}
		km.slots[i] = s
	}
}

func (km *keyMap[Obj]) get(key []byte) *item[Obj] {
	h := maphash.Bytes(km.seed, key)
	km.lastHash = h
	frag := uint64(uint32(h))
	for i := frag & km.mask; ; i = (i + 1) & km.mask {
		s := km.slots[i]
		if s == 0 {
			km.lastSlot = i
			return nil
		}
		if s>>32 == frag {
			if it := km.items.at(ref(uint32(s) - 1)); bytes.Equal(it.key, key) {
				return it
			}
		}
	}
}

// add returns a new item for key. It must follow a get of the same key
// that found none, with no change of the map in between.
func (km *keyMap[Obj]) add(key []byte) *item[Obj] {
	if 4*(km.n+1) > 3*len(km.slots) {
		km.resize(2 * len(km.slots))
		km.get(key) // find the free slot again
	}
	it := km.items.alloc()
	it.key = append(it.key[:0], key...)
	it.hash = km.lastHash
	km.slots[km.lastSlot] = slotOf(it.hash, it.self)
	km.n++
	return it
}

// remove takes the item out of the map and resets it for reuse. It must
// be out of every queue and heap already.
func (km *keyMap[Obj]) remove(it *item[Obj]) {
	want := slotOf(it.hash, it.self)
	i := uint64(uint32(it.hash)) & km.mask
	for km.slots[i] != want {
		i = (i + 1) & km.mask
	}
	// Backward shift deletion: move up the entries of the probe run that
	// would no longer be found past the hole.
	for {
		km.slots[i] = 0
		j := i
		for {
			j = (j + 1) & km.mask
			s := km.slots[j]
			if s == 0 {
				km.n--
				km.items.release(it)
				return
			}
			home := (s >> 32) & km.mask
			// Move s into the hole at i unless its home lies cyclically
			// in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				km.slots[i] = s
				i = j
				break
			}
		}
	}
}

// deque is a FIFO queue in a ring buffer whose size is a power of two.
type deque[T any] struct {
	buf  []T
	head int // position of the front
	n    int
}

func (d *deque[T]) len() int { return d.n }

func (d *deque[T]) push(v T) {
	if d.n == len(d.buf) {
		buf := make([]T, max(16, 2*len(d.buf)))
		k := copy(buf, d.buf[d.head:])
		copy(buf[k:], d.buf[:d.head])
		d.buf, d.head = buf, 0
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = v
	d.n++
}

// front returns the front entry; the deque must not be empty.
func (d *deque[T]) front() *T { return &d.buf[d.head] }

// pop drops the front entry.
func (d *deque[T]) pop() {
	var zero T
	d.buf[d.head] = zero
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
}

// at returns entry i from the front.
func (d *deque[T]) at(i int) *T { return &d.buf[(d.head+i)&(len(d.buf)-1)] }

// insert puts v at position i from the front, moving the later entries
// back (O(n); for the rare entry out of order).
func (d *deque[T]) insert(i int, v T) {
	var zero T
	d.push(zero)
	for j := d.n - 1; j > i; j-- {
		*d.at(j) = *d.at(j - 1)
	}
	*d.at(i) = v
}

// itemHeap is a binary min-heap of items (by ref) that keeps each item's
// position in it (pos), so that an item can be removed or moved in
// O(log n).
type itemHeap[Obj any] struct {
	items *arena[Obj]
	refs  []ref
	less  func(a, b *item[Obj]) bool
	pos   func(*item[Obj]) *int32
}

func (h *itemHeap[Obj]) len() int { return len(h.refs) }

func (h *itemHeap[Obj]) top() *item[Obj] { return h.items.at(h.refs[0]) }

func (h *itemHeap[Obj]) at(i int) *item[Obj] { return h.items.at(h.refs[i]) }

func (h *itemHeap[Obj]) push(it *item[Obj]) {
	*h.pos(it) = int32(len(h.refs))
	h.refs = append(h.refs, it.self)
	h.up(len(h.refs) - 1)
}

// fix restores the heap after it's key changed, or pushes it if absent.
func (h *itemHeap[Obj]) fix(it *item[Obj]) {
	i := int(*h.pos(it))
	if i < 0 {
		h.push(it)
		return
	}
	if !h.down(i) {
		h.up(i)
	}
}

func (h *itemHeap[Obj]) remove(it *item[Obj]) {
	i := int(*h.pos(it))
	if i < 0 {
		return
	}
	last := len(h.refs) - 1
	if i != last {
		h.swap(i, last)
	}
	h.refs = h.refs[:last]
	*h.pos(it) = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *itemHeap[Obj]) swap(i, j int) {
	h.refs[i], h.refs[j] = h.refs[j], h.refs[i]
	*h.pos(h.at(i)) = int32(i)
	*h.pos(h.at(j)) = int32(j)
}

func (h *itemHeap[Obj]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.at(i), h.at(p)) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *itemHeap[Obj]) down(i int) bool {
	start, n := i, len(h.refs)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(h.at(r), h.at(l)) {
			m = r
		}
		if !h.less(h.at(m), h.at(i)) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}
