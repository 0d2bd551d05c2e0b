package reconciler_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
)

func TestNewErrors(t *testing.T) {
	db := strata.New()
	tbl, err := strata.NewTable(db, "objects", idIndex)
	if err != nil {
		t.Fatal(err)
	}
	otherDB := strata.New()
	foreign, err := strata.NewTable(otherDB, "objects", idIndex)
	if err != nil {
		t.Fatal(err)
	}
	world := reconcilertest.NewWorld(objKey)
	good := func() reconciler.Config[*testObj] {
		return reconciler.Config[*testObj]{
			Table: tbl, CloneObject: (*testObj).Clone,
			GetObjectStatus: (*testObj).GetStatus, SetObjectStatus: (*testObj).SetStatus,
			Operations: world,
		}
	}
	for _, tc := range []struct {
		name string
		db   *strata.DB
		cfg  func(*reconciler.Config[*testObj])
		opts []reconciler.Option
		want error
	}{
		{"nil db", nil, nil, nil, reconciler.ErrMissingConfig},
		{"no table", db, func(c *reconciler.Config[*testObj]) { c.Table = nil }, nil, reconciler.ErrMissingConfig},
		{"no clone", db, func(c *reconciler.Config[*testObj]) { c.CloneObject = nil }, nil, reconciler.ErrMissingConfig},
		{"no get", db, func(c *reconciler.Config[*testObj]) { c.GetObjectStatus = nil }, nil, reconciler.ErrMissingConfig},
		{"no set", db, func(c *reconciler.Config[*testObj]) { c.SetObjectStatus = nil }, nil, reconciler.ErrMissingConfig},
		{"no ops", db, func(c *reconciler.Config[*testObj]) { c.Operations = nil }, nil, reconciler.ErrMissingConfig},
		{"foreign table", db, func(c *reconciler.Config[*testObj]) { c.Table = foreign }, nil, reconciler.ErrForeignTable},
		{"zero workers", db, nil, []reconciler.Option{reconciler.WithWorkers(0)}, reconciler.ErrInvalidOption},
		{"negative workers", db, nil, []reconciler.Option{reconciler.WithWorkers(-3)}, reconciler.ErrInvalidOption},
		{"zero round", db, nil, []reconciler.Option{reconciler.WithRoundSize(0)}, reconciler.ErrInvalidOption},
		{"zero backoff", db, nil, []reconciler.Option{reconciler.WithRetry(0, time.Second)}, reconciler.ErrInvalidOption},
		{"max below min", db, nil, []reconciler.Option{reconciler.WithRetry(time.Second, time.Millisecond)}, reconciler.ErrInvalidOption},
		{"jitter 1", db, nil, []reconciler.Option{reconciler.WithJitter(1, nil)}, reconciler.ErrInvalidOption},
		{"negative jitter", db, nil, []reconciler.Option{reconciler.WithJitter(-0.1, nil)}, reconciler.ErrInvalidOption},
		{"zero op timeout", db, nil, []reconciler.Option{reconciler.WithOpTimeout(0)}, reconciler.ErrInvalidOption},
		{"negative drain", db, nil, []reconciler.Option{reconciler.WithDrainTimeout(-time.Second)}, reconciler.ErrInvalidOption},
		{"zero weight", db, nil, []reconciler.Option{reconciler.WithLaneWeights(1, 0, 1)}, reconciler.ErrInvalidOption},
		{"zero aging", db, nil, []reconciler.Option{reconciler.WithAging(0)}, reconciler.ErrInvalidOption},
		{"zero prune interval", db, nil, []reconciler.Option{reconciler.WithPruning(0)}, reconciler.ErrInvalidOption},
		{"negative prune interval", db, nil, []reconciler.Option{reconciler.WithPruning(-time.Hour)}, reconciler.ErrInvalidOption},
		{"zero budget", db, nil, []reconciler.Option{reconciler.WithPruneBudget(0)}, reconciler.ErrInvalidOption},
		{"budget above 1", db, nil, []reconciler.Option{reconciler.WithPruneBudget(1.5)}, reconciler.ErrInvalidOption},
		{"zero refresh interval", db, nil, []reconciler.Option{reconciler.WithRefresh(0, 10)}, reconciler.ErrInvalidOption},
		{"zero refresh rate", db, nil, []reconciler.Option{reconciler.WithRefresh(time.Hour, 0)}, reconciler.ErrInvalidOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			r, err := reconciler.New(tc.db, cfg, tc.opts...)
			if !errors.Is(err, tc.want) || r != nil {
				t.Errorf("New = %v, %v; want %v", r, err, tc.want)
			}
		})
	}
	// The defaults are valid, and so are the options' edge values.
	if _, err := reconciler.New(db, good(), reconciler.WithDrainTimeout(0), reconciler.WithJitter(0, nil),
		reconciler.WithPruneBudget(1), reconciler.WithRetry(time.Second, time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.start()
		settle(0)
		if err := f.r.Run(context.Background(), nil); !errors.Is(err, reconciler.ErrAlreadyRunning) {
			t.Errorf("second Run: %v", err)
		}
		f.stop()
		if err := f.r.Run(context.Background(), nil); !errors.Is(err, reconciler.ErrAlreadyRunning) {
			t.Errorf("Run after Run: %v", err)
		}
	})
}

// TestNameOf: NameOf tells the name the last WithName gives, and that
// none is given when no WithName is there or the last gives "".
func TestNameOf(t *testing.T) {
	for _, tc := range []struct {
		opts  []reconciler.Option
		name  string
		named bool
	}{
		{nil, "", false},
		{[]reconciler.Option{reconciler.WithWorkers(2)}, "", false},
		{[]reconciler.Option{reconciler.WithName("a"), reconciler.WithWorkers(2)}, "a", true},
		{[]reconciler.Option{reconciler.WithName("a"), reconciler.WithName("b")}, "b", true},
		{[]reconciler.Option{reconciler.WithName("a"), reconciler.WithName("")}, "", false},
		// An invalid option does not hide the name.
		{[]reconciler.Option{reconciler.WithWorkers(0), reconciler.WithName("c")}, "c", true},
	} {
		if name, named := reconciler.NameOf(tc.opts...); name != tc.name || named != tc.named {
			t.Errorf("NameOf(%d options) = %q, %v; want %q, %v", len(tc.opts), name, named, tc.name, tc.named)
		}
	}
}
