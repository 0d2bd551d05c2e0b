// Package reconcilertest is a test kit for code that uses package
// reconciler: World, an in-memory outside world that implements
// reconciler.Operations and reconciler.BatchOperations, and that a test can
// make fail, slow, block, panic or drift, and ask what it holds and what
// happened to it.
//
// A test wires a World in as the reconciler's operations:
//
//	world := reconcilertest.NewWorld(func(o *Obj) string { return o.Name })
//	r, err := reconciler.New(db, reconciler.Config[*Obj]{
//		Table: objs, ..., Operations: world,
//	})
//
// and then, typically inside testing/synctest so that backoffs and
// timeouts pass in fake time, changes the table, injects faults, waits,
// and checks Contents, Ops, MaxConcurrentPerKey and PruneOverlapped.
package reconcilertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
)

// ErrInjected is the error of an injected failure when the test gave none.
var ErrInjected = errors.New("injected failure")

// World is an in-memory outside world of objects by key. Update stores an
// object, Delete removes it, Prune removes the keys the desired objects do
// not have. It is safe for concurrent use.
type World[Obj any] struct {
	key    func(Obj) string
	status func(Obj) reconciler.Status

	mu      sync.Mutex
	objs    map[string]Obj
	faults  map[string]*fault
	faulty  error // every operation fails with it, if not nil
	prunes  fault
	log     []string
	updates int
	deletes int
	pruned  int

	running    int            // operations running
	perKey     map[string]int // operations running, by key
	maxPerKey  map[string]int
	maxRunning int
	pruning    bool
	overlapped bool
	changed    chan struct{}
}

// fault is what is injected for one key (or for prunes).
type fault struct {
	failNext  int
	failErr   error
	always    error
	panicNext int
	delay     time.Duration
	block     chan struct{}
	unblock   func() // closes block, once
}

// NewWorld returns an empty world whose objects are identified by key.
func NewWorld[Obj any](key func(Obj) string) *World[Obj] {
	return &World[Obj]{
		key:       key,
		objs:      make(map[string]Obj),
		faults:    make(map[string]*fault),
		perKey:    make(map[string]int),
		maxPerKey: make(map[string]int),
	}
}

// LogRefreshes makes Ops show updates of objects whose status (as status
// returns it) is Refreshing as "update-refresh(key)". It returns w.
func (w *World[Obj]) LogRefreshes(status func(Obj) reconciler.Status) *World[Obj] {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = status
	return w
}

func (w *World[Obj]) faultOf(key string) *fault {
	f := w.faults[key]
	if f == nil {
		f = &fault{}
		w.faults[key] = f
	}
	return f
}

// FailNext makes the next n operations on key fail with err (ErrInjected
// if nil).
func (w *World[Obj]) FailNext(key string, n int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.faultOf(key)
	f.failNext, f.failErr = n, err
}

// FailAlways makes every operation on key fail with err (ErrInjected if
// nil) until Heal.
func (w *World[Obj]) FailAlways(key string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		err = ErrInjected
	}
	w.faultOf(key).always = err
}

// PanicNext makes the next n operations on key panic.
func (w *World[Obj]) PanicNext(key string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultOf(key).panicNext = n
}

// Delay makes every operation on key take d longer (or until its context
// ends); 0 removes the delay.
func (w *World[Obj]) Delay(key string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faultOf(key).delay = d
}

// Block makes operations on key wait until the returned function is
// called (or their context ends). Calling it again does nothing.
func (w *World[Obj]) Block(key string) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.faultOf(key)
	if f.unblock != nil {
		f.unblock()
	}
	ch := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(ch) })
	f.block, f.unblock = ch, unblock
	return func() {
		w.mu.Lock()
		if f := w.faults[key]; f != nil && f.block == ch {
			f.block, f.unblock = nil, nil
		}
		w.mu.Unlock()
		unblock()
	}
}

// Heal removes every fault injected for key.
func (w *World[Obj]) Heal(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.faults[key]; f != nil && f.unblock != nil {
		f.unblock()
	}
	delete(w.faults, key)
}

// SetFaulty makes every operation, prunes included, fail with err, or, with
// nil, stops doing so (as statedb's script tests' set-faulty).
func (w *World[Obj]) SetFaulty(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faulty = err
}

// FailNextPrunes makes the next n prunes fail with err (ErrInjected if
// nil).
func (w *World[Obj]) FailNextPrunes(n int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prunes.failNext, w.prunes.failErr = n, err
}

// BlockPrunes makes prunes wait until the returned function is called.
func (w *World[Obj]) BlockPrunes() (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.prunes.block = ch
	return sync.OnceFunc(func() {
		w.mu.Lock()
		if w.prunes.block == ch {
			w.prunes.block = nil
		}
		w.mu.Unlock()
		close(ch)
	})
}

// Drift changes the world out of band: key now holds obj, as if someone
// else had written it. A key the table does not hold is a stranger that a
// prune removes.
func (w *World[Obj]) Drift(key string, obj Obj) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs[key] = obj
	w.notify()
}

// DriftDelete removes key out of band.
func (w *World[Obj]) DriftDelete(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, key)
	w.notify()
}

// Contents returns a copy of what the world holds.
func (w *World[Obj]) Contents() map[string]Obj {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.objs)
}

// Get returns what the world holds for key.
func (w *World[Obj]) Get(key string) (Obj, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.objs[key]
	return o, ok
}

// Keys returns the keys the world holds, sorted.
func (w *World[Obj]) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.objs))
}

// Ops returns the log of operations so far, such as "update(a)",
// "update(a) fail", "delete(b)", "update-refresh(c)" and "prune(n=2)".
func (w *World[Obj]) Ops() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// TakeOps returns the log of operations and clears it.
func (w *World[Obj]) TakeOps() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := w.log
	w.log = nil
	return ops
}

// Counts returns the number of Update and Delete calls for single objects
// (a batch counts each of its objects) and of prunes, failed ones
// included.
func (w *World[Obj]) Counts() (updates, deletes, prunes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.updates, w.deletes, w.pruned
}

// MaxConcurrentPerKey returns the most operations that ever ran at once on
// one key: 1 for a reconciler that keeps its promise.
func (w *World[Obj]) MaxConcurrentPerKey() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.maxPerKey {
		n = max(n, m)
	}
	return n
}

// MaxConcurrent returns the most operations that ever ran at once.
func (w *World[Obj]) MaxConcurrent() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxRunning
}

// Running returns the number of operations running now.
func (w *World[Obj]) Running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// PruneOverlapped reports whether a prune ever ran at the same time as an
// Update or Delete.
func (w *World[Obj]) PruneOverlapped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overlapped
}

// Changed returns a channel that is closed at the next change of the
// world or of its log.
func (w *World[Obj]) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

func (w *World[Obj]) notify() {
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// enter records the start of an operation on keys and returns what to do:
// a delay, a channel to wait for, an error to fail with, or a panic.
func (w *World[Obj]) enter(keys []string) (delay time.Duration, block []chan struct{}, err error, panicking bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running += len(keys)
	w.maxRunning = max(w.maxRunning, w.running)
	if w.pruning {
		w.overlapped = true
	}
	for _, k := range keys {
		w.perKey[k]++
		w.maxPerKey[k] = max(w.maxPerKey[k], w.perKey[k])
		f := w.faults[k]
		if f == nil {
			continue
		}
		delay = max(delay, f.delay)
		if f.block != nil {
			block = append(block, f.block)
		}
		switch {
		case f.panicNext > 0:
			f.panicNext--
			panicking = true
		case f.always != nil:
			err = f.always
		case f.failNext > 0:
			f.failNext--
			err = f.failErr
			if err == nil {
				err = ErrInjected
			}
		}
	}
	if w.faulty != nil {
		err = w.faulty
	}
	return delay, block, err, panicking
}

func (w *World[Obj]) exit(keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running -= len(keys)
	for _, k := range keys {
		if w.perKey[k]--; w.perKey[k] == 0 {
			delete(w.perKey, k)
		}
	}
}

// wait applies a delay and blocks, returning ctx's error if it ends first.
func wait(ctx context.Context, delay time.Duration, block []chan struct{}) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	for _, ch := range block {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (w *World[Obj]) record(entry string, err error) {
	if err != nil {
		entry += " fail"
	}
	w.log = append(w.log, entry)
	w.notify()
}

func (w *World[Obj]) opName(obj Obj) string {
	if w.status != nil && w.status(obj).Kind == reconciler.StatusKindRefreshing {
		return "update-refresh"
	}
	return "update"
}

// Update stores obj under its key, unless a fault says otherwise.
func (w *World[Obj]) Update(ctx context.Context, _ strata.ReadTxn, _ strata.Revision, obj Obj) error {
	k := w.key(obj)
	keys := []string{k}
	delay, block, err, panicking := w.enter(keys)
	defer w.exit(keys)
	if panicking {
		w.mu.Lock()
		w.updates++
		w.record(fmt.Sprintf("%s(%s) panic", w.opName(obj), k), nil)
		w.mu.Unlock()
		panic(fmt.Sprintf("reconcilertest: injected panic on %q", k))
	}
	if werr := wait(ctx, delay, block); werr != nil && err == nil {
		err = werr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updates++
	if err == nil {
		w.objs[k] = obj
	}
	w.record(fmt.Sprintf("%s(%s)", w.opName(obj), k), err)
	return err
}

// Delete removes obj's key, unless a fault says otherwise.
func (w *World[Obj]) Delete(ctx context.Context, _ strata.ReadTxn, _ strata.Revision, obj Obj) error {
	k := w.key(obj)
	keys := []string{k}
	delay, block, err, panicking := w.enter(keys)
	defer w.exit(keys)
	if panicking {
		w.mu.Lock()
		w.deletes++
		w.record(fmt.Sprintf("delete(%s) panic", k), nil)
		w.mu.Unlock()
		panic(fmt.Sprintf("reconcilertest: injected panic on %q", k))
	}
	if werr := wait(ctx, delay, block); werr != nil && err == nil {
		err = werr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deletes++
	if err == nil {
		delete(w.objs, k)
	}
	w.record(fmt.Sprintf("delete(%s)", k), err)
	return err
}

// UpdateBatch updates each object of the batch as Update does, with the
// faults of its key; the delays and blocks of the batch's keys apply to
// the whole call. A panic of any key panics the call.
func (w *World[Obj]) UpdateBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[Obj]) {
	w.batch(ctx, batch, false)
}

// DeleteBatch deletes each object of the batch as Delete does.
func (w *World[Obj]) DeleteBatch(ctx context.Context, txn strata.ReadTxn, batch []reconciler.BatchEntry[Obj]) {
	w.batch(ctx, batch, true)
}

func (w *World[Obj]) batch(ctx context.Context, batch []reconciler.BatchEntry[Obj], deletes bool) {
	keys := make([]string, len(batch))
	for i := range batch {
		keys[i] = w.key(batch[i].Object)
	}
	// Faults are per key: enter one key at a time to learn each one's.
	errs := make([]error, len(batch))
	var delay time.Duration
	var block []chan struct{}
	panicking := false
	for i, k := range keys {
		d, b, err, p := w.enter([]string{k})
		delay, block, errs[i] = max(delay, d), append(block, b...), err
		panicking = panicking || p
	}
	defer w.exit(keys)
	if panicking {
		panic(fmt.Sprintf("reconcilertest: injected panic in a batch of %d", len(batch)))
	}
	werr := wait(ctx, delay, block)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range batch {
		err := errs[i]
		if err == nil {
			err = werr
		}
		batch[i].Result = err
		k := keys[i]
		if deletes {
			w.deletes++
			if err == nil {
				delete(w.objs, k)
			}
			w.record(fmt.Sprintf("delete(%s)", k), err)
		} else {
			w.updates++
			if err == nil {
				w.objs[k] = batch[i].Object
			}
			w.record(fmt.Sprintf("%s(%s)", w.opName(batch[i].Object), k), err)
		}
	}
}

// Prune removes the keys that objects does not hold, with
// reconciler.PruneStrangers, which keeps to the prune budget.
func (w *World[Obj]) Prune(ctx context.Context, _ strata.ReadTxn, objects iter.Seq2[Obj, strata.Revision]) error {
	desired := 0
	for range objects {
		desired++
	}
	w.mu.Lock()
	if w.running > 0 {
		w.overlapped = true
	}
	w.pruning = true
	f := w.prunes
	var err error
	switch {
	case w.faulty != nil:
		err = w.faulty
	case w.prunes.failNext > 0:
		w.prunes.failNext--
		err = w.prunes.failErr
		if err == nil {
			err = ErrInjected
		}
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.pruning = false
		w.mu.Unlock()
	}()
	var block []chan struct{}
	if f.block != nil {
		block = append(block, f.block)
	}
	if werr := wait(ctx, 0, block); werr != nil && err == nil {
		err = werr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruned++
	if err == nil {
		_, err = reconciler.PruneStrangers(ctx, objects, w.key, maps.Keys(w.objs), func(k string) error {
			delete(w.objs, k)
			return nil
		})
	}
	w.record(fmt.Sprintf("prune(n=%d)", desired), err)
	return err
}
