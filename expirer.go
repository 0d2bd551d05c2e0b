package strata

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultExpiryBatch is the batch size of an Expirer whose options give
// none: the most objects one of its write transactions deletes.
const DefaultExpiryBatch = 1024

// DefaultExpiryRetry is how long an Expirer whose options give no
// RetryInterval waits after a failed pass before it tries again.
const DefaultExpiryRetry = time.Second

// ExpirerOptions configure an Expirer. The zero value is the defaults.
type ExpirerOptions struct {
	// Batch is the most objects one write transaction deletes
	// (ExpireBefore's batch); 0 means DefaultExpiryBatch.
	Batch int
	// RetryInterval is how long the Expirer waits after a failed pass
	// before it tries again; 0 means DefaultExpiryRetry.
	RetryInterval time.Duration
	// OnPass, if set, is called from the Expirer's goroutine after every
	// pass with the number of objects the pass deleted and its error, nil
	// if it succeeded (Err returns the latest either way): a health
	// report's hook.
	OnPass func(expired int, err error)
	// Tables are the tables the Expirer expires. None means every table
	// of the database with an ExpiryIndex, those registered after Run
	// began included: a registration wakes the Expirer.
	Tables []TableMeta
}

// Expirer deletes the objects of a database's tables once their expiry
// (ExpiryIndex) has come: one goroutine, the one that calls Run, per
// database. It sleeps until the soonest expiry of its tables, then runs
// ExpireBefore with the time it woke at, and sleeps again. A write of an
// object that expires sooner than the one it sleeps for wakes it to sleep
// for less. It reads the time with time.Now and sleeps with the time
// package's timers, which testing/synctest replaces in tests; to expire
// by a clock of your own, call ExpireBefore with its time instead.
//
// Between the time an object expires and the pass that deletes it (a
// moment, or longer when the Expirer is behind or stopped), reads still
// return it: see ExpiryIndex.
type Expirer struct {
	db   *DB
	opts ExpirerOptions

	// running: Run is in progress; a second Run fails.
	running atomic.Bool
	// expired counts the objects deleted since NewExpirer.
	expired atomic.Uint64

	// mu guards err.
	mu  sync.Mutex
	err error
}

// NewExpirer returns an Expirer of db's tables, to start with Run. It
// fails with ErrExpiryBatch if opts.Batch is negative, and with
// ErrExpiryOptions if opts.RetryInterval is negative or a table of
// opts.Tables has no ExpiryIndex or is not db's.
func NewExpirer(db *DB, opts ExpirerOptions) (*Expirer, error) {
	switch {
	case opts.Batch < 0:
		return nil, fmt.Errorf("batch %d: %w", opts.Batch, ErrExpiryBatch)
	case opts.RetryInterval < 0:
		return nil, fmt.Errorf("retry interval %v: %w", opts.RetryInterval, ErrExpiryOptions)
	}
	for _, tm := range opts.Tables {
		if _, ok := expiring(tm); !ok {
			return nil, fmt.Errorf("table %q has no expiry index: %w", tm.Name(), ErrExpiryOptions)
		}
		if !tm.DB().SameDatabase(db) {
			return nil, fmt.Errorf("table %q is another database's: %w", tm.Name(), ErrExpiryOptions)
		}
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultExpiryBatch
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = DefaultExpiryRetry
	}
	opts.Tables = append([]TableMeta(nil), opts.Tables...)
	return &Expirer{db: db, opts: opts}, nil
}

// Run expires objects until ctx ends, and then returns ctx's error. It
// returns ErrExpirerRunning at once if the Expirer is running already.
// A failed pass does not end it: the error goes to OnPass and Err, and
// Run tries again after RetryInterval.
func (e *Expirer) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrExpirerRunning
	}
	defer e.running.Store(false)
	ws := NewWatchSet()
	for {
		now := time.Now()
		n, err := ExpireBefore(e.db, now, e.opts.Batch, e.opts.Tables...)
		e.expired.Add(uint64(n))
		e.setErr(err)
		if e.opts.OnPass != nil {
			e.opts.OnPass(n, err)
		}
		var wake time.Time
		ws.Clear()
		if err != nil {
			wake = now.Add(e.opts.RetryInterval)
		} else {
			wake = e.next(ws, now)
		}
		if err := e.sleep(ctx, ws, wake); err != nil {
			return err
		}
	}
}

// next returns the soonest expiry of the tables, the zero time if they
// have none, and adds to ws the channels that close when a sooner one may
// have been written.
func (e *Expirer) next(ws *WatchSet, now time.Time) time.Time {
	tables := e.opts.Tables
	if len(tables) == 0 {
		// Every table, those registered from now on too: a registration
		// wakes it (taken before the list, so that none is missed).
		ws.Add(e.db.tablesWatch())
		tables = e.db.Tables()
	}
	txn := e.db.ReadTxn()
	var soonest time.Time
	for _, tm := range tables {
		et, ok := expiring(tm)
		if !ok {
			continue
		}
		at, found, watch := et.nextExpiry(txn, now)
		ws.Add(watch)
		if found && (soonest.IsZero() || at.Before(soonest)) {
			soonest = at
		}
	}
	return soonest
}

// sleep waits until wake (for ever if it is zero), or a channel of ws
// closes, or ctx ends, and returns ctx's error in the last case. It
// returns at once if wake has passed.
func (e *Expirer) sleep(ctx context.Context, ws *WatchSet, wake time.Time) error {
	wctx := ctx
	if !wake.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, wake)
		defer cancel()
	}
	_, err := ws.Wait(wctx, 0)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

func (e *Expirer) setErr(err error) {
	e.mu.Lock()
	e.err = err
	e.mu.Unlock()
}

// Err returns the error of the Expirer's latest pass: nil if it
// succeeded (or none ran yet).
func (e *Expirer) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Expired returns the number of objects the Expirer has deleted.
func (e *Expirer) Expired() uint64 { return e.expired.Load() }
