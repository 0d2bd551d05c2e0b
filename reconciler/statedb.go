package reconciler

import (
	"time"

	"golang.org/x/time/rate"
)

// This file has cilium/statedb's spellings of options and metrics that
// Strata's reconciler names otherwise, so that code written for statedb's
// reconciler compiles unchanged where the meaning is the same.

// WithRefreshing is statedb's form of WithRefresh: refresh Done objects
// older than interval, marking them at limiter's rate (its burst is not
// used: marks are written in batches). A nil limiter, or one of rate.Inf,
// makes New fail with ErrInvalidOption (give WithRefresh a rate).
func WithRefreshing(interval time.Duration, limiter *rate.Limiter) Option {
	if limiter == nil || limiter.Limit() == rate.Inf {
		return func(o *options) {
			o.invalid("WithRefreshing(%s, limiter): need a limiter of a finite rate (or WithRefresh(interval, marksPerSecond))", interval)
		}
	}
	return WithRefresh(interval, float64(limiter.Limit()))
}

// WithRoundLimits is statedb's form of WithRoundSize and
// WithRoundRateLimit together: rounds of at most numObjects objects, at
// limiter's rate and burst (no rate limit for a limiter of rate.Inf). A
// nil limiter makes New fail with ErrInvalidOption.
func WithRoundLimits(numObjects int, limiter *rate.Limiter) Option {
	size := WithRoundSize(numObjects)
	if limiter == nil {
		return func(o *options) {
			o.invalid("WithRoundLimits(%d, nil): need a limiter (or WithRoundSize alone, for no rate limit)", numObjects)
		}
	}
	if limiter.Limit() == rate.Inf {
		return size
	}
	limit := WithRoundRateLimit(float64(limiter.Limit()), limiter.Burst())
	return func(o *options) {
		size(o)
		limit(o)
	}
}
