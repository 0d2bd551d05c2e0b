// Package expvars holds what Strata's expvar reporters share
// (metrics.ExpVar and reconciler.ExpVar): publishing a variable under a
// name without expvar.Publish's panic, a variable that keeps the largest
// value observed, and a gauge written only when it changes.
package expvars

import (
	"errors"
	"expvar"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrPublished is the error of Publish under a name that is taken. The
// reporters export it as their own ErrPublished.
var ErrPublished = errors.New("expvar name already published")

// mu makes the check for a published name and the publication one step,
// for every reporter of Strata's.
var mu sync.Mutex

// Publish publishes v under name with expvar.Publish, or, if the name is
// taken (by Strata or anyone else), returns an error wrapping ErrPublished
// and prefixed with pkg, instead of expvar.Publish's panic.
func Publish(pkg, name string, v expvar.Var) (err error) {
	mu.Lock()
	defer mu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("%s: %q: %w", pkg, name, ErrPublished)
	}
	// Someone outside Strata may publish the same name between Get and
	// Publish; turn that panic into the error too.
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%s: %q: %w", pkg, name, ErrPublished)
		}
	}()
	expvar.Publish(name, v)
	return nil
}

// Max is an expvar.Var holding the largest value observed, safe for
// concurrent use. Its zero value holds 0.
type Max struct{ atomic.Int64 }

// Observe raises the maximum to x, if x is larger.
func (m *Max) Observe(x int64) {
	for {
		cur := m.Load()
		if x <= cur || m.CompareAndSwap(cur, x) {
			return
		}
	}
}

// String returns the maximum in decimal (expvar.Var).
func (m *Max) String() string { return strconv.FormatInt(m.Load(), 10) }

// SetIfChanged sets the gauge v to x, with no write if it holds x
// already: gauges are set after every commit or round, and most change
// rarely, so a read saves most writes of a cache line others read.
func SetIfChanged(v *expvar.Int, x int64) {
	if v.Value() != x {
		v.Set(x)
	}
}
