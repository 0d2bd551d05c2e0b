package strata

import "context"

// tableLock is a table's write lock. It is a one-slot semaphore so that
// waiting for it can be given up when a context is done, which sync.Mutex
// cannot do.
type tableLock struct {
	ch chan struct{} // holds a token while the table is locked
}

func newTableLock() tableLock { return tableLock{ch: make(chan struct{}, 1)} }

func (l *tableLock) lock() { l.ch <- struct{}{} }

func (l *tableLock) lockContext(ctx context.Context) error {
	select {
	case l.ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *tableLock) unlock() { <-l.ch }
