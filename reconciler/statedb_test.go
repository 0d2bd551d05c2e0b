package reconciler

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// statedb's spellings set what MIGRATING.md says they map to.
func TestStatedbSpellings(t *testing.T) {
	apply := func(opts ...Option) options {
		o := defaultOptions()
		for _, opt := range opts {
			opt(&o)
		}
		return o
	}
	o := apply(WithRoundLimits(500, rate.NewLimiter(1000, 10)))
	if o.err != nil || o.roundSize != 500 || o.roundRate != 1000 || o.roundBurst != 10 {
		t.Errorf("WithRoundLimits(500, 1000/s burst 10): size %d, rate %g, burst %d, err %v", o.roundSize, o.roundRate, o.roundBurst, o.err)
	}
	o = apply(WithRoundLimits(500, rate.NewLimiter(rate.Inf, 0)))
	if o.err != nil || o.roundSize != 500 || o.roundRate != 0 {
		t.Errorf("WithRoundLimits(500, rate.Inf): size %d, rate %g, err %v; want no rate limit", o.roundSize, o.roundRate, o.err)
	}
	o = apply(WithRefreshing(time.Minute, rate.NewLimiter(100, 1)))
	if o.err != nil || o.refreshEvery != time.Minute || o.refreshRate != 100 {
		t.Errorf("WithRefreshing(1m, 100/s): every %s, rate %g, err %v", o.refreshEvery, o.refreshRate, o.err)
	}
	for name, opt := range map[string]Option{
		"WithRoundLimits nil":   WithRoundLimits(10, nil),
		"WithRoundLimits 0":     WithRoundLimits(0, rate.NewLimiter(1, 1)),
		"WithRefreshing nil":    WithRefreshing(time.Minute, nil),
		"WithRefreshing Inf":    WithRefreshing(time.Minute, rate.NewLimiter(rate.Inf, 0)),
		"WithRefreshing zero":   WithRefreshing(0, rate.NewLimiter(1, 1)),
		"WithRoundLimits burst": WithRoundLimits(10, rate.NewLimiter(1, 0)),
	} {
		if o := apply(opt); !errors.Is(o.err, ErrInvalidOption) {
			t.Errorf("%s: err %v, want ErrInvalidOption", name, o.err)
		}
	}
	var m *ExpVarMetrics = NewUnpublishedExpVarMetrics()
	if m.Err() != nil || m.Map() == nil {
		t.Errorf("NewUnpublishedExpVarMetrics: %v", m.Err())
	}
}
