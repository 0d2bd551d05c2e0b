package part

import (
	"sync/atomic"
	"unsafe"
)

// closedWatch is the channel every node's watch field is set to when the node
// leaves the tree. A reader that asks an old node for its channel after that
// gets a closed channel at once, so no change can be missed, and a node is
// never closed twice: only the transaction that swaps the sentinel in closes
// what was there before.
var (
	closedWatch    = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()
	closedWatchPtr = chanPtr(closedWatch)
)

func chanPtr(ch chan struct{}) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&ch)) }
func ptrChan(p unsafe.Pointer) chan struct{}  { return *(*chan struct{})(unsafe.Pointer(&p)) }

// watchChan returns the node's watch channel, creating it on first use. Safe
// for concurrent use by any number of readers and one sealing writer.
func (h *header) watchChan() <-chan struct{} {
	p := atomic.LoadPointer(&h.watch)
	if p == nil {
		ch := make(chan struct{})
		if atomic.CompareAndSwapPointer(&h.watch, nil, chanPtr(ch)) {
			return ch
		}
		p = atomic.LoadPointer(&h.watch)
	}
	return ptrChan(p)
}

// seal marks the node as gone from the tree and closes its watch channel if a
// reader created one.
func (h *header) seal() {
	if atomic.LoadPointer(&h.watch) == closedWatchPtr {
		return
	}
	old := atomic.SwapPointer(&h.watch, closedWatchPtr)
	if old != nil && old != closedWatchPtr {
		close(ptrChan(old))
	}
}
