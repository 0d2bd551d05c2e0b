package strata

import (
	"context"
	"sync"
	"sync/atomic"
)

// tableLock is a table's write lock: a sync.Mutex, plus a way for
// WriteTxnContext to wait for it that gives up when a context is done, which
// sync.Mutex cannot do by itself.
//
// Plain lock and unlock are the mutex's. A context waiter registers in
// waiters, takes the current wake channel and tries the mutex again; unlock
// closes the wake channel (and installs a new one) whenever waiters is
// non-zero. Because the waiter registers before its last TryLock and the
// unlocker reads waiters after releasing the mutex, either the TryLock sees
// the mutex free or the unlocker sees the waiter and wakes it.
type tableLock struct {
	mu      sync.Mutex
	waiters atomic.Int32
	wakeMu  sync.Mutex
	wake    chan struct{} // closed on unlock while waiters > 0; guarded by wakeMu
}

func (l *tableLock) lock() { l.mu.Lock() }

func (l *tableLock) unlock() {
	l.mu.Unlock()
	if l.waiters.Load() > 0 {
		l.wakeMu.Lock()
		if l.wake != nil {
			close(l.wake)
			l.wake = nil
		}
		l.wakeMu.Unlock()
	}
}

func (l *tableLock) lockContext(ctx context.Context) error {
	for {
		if l.mu.TryLock() {
			return nil
		}
		l.waiters.Add(1)
		l.wakeMu.Lock()
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake := l.wake
		l.wakeMu.Unlock()
		if l.mu.TryLock() {
			l.waiters.Add(-1)
			return nil
		}
		select {
		case <-wake:
			l.waiters.Add(-1)
		case <-ctx.Done():
			l.waiters.Add(-1)
			return ctx.Err()
		}
	}
}

func (l *tableLock) tryLock() bool { return l.mu.TryLock() }
