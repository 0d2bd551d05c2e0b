package reconciler

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// roundLimit holds back the rounds of a reconciler with a round rate
// limit (WithRoundRateLimit). It is the loop's own: only Run's goroutine
// touches it.
//
// The loop takes a round's token when it has a round to hand out. When
// the limiter makes it wait, the token stays taken (held) and is used by
// the first round at or after its time, so that no wait is asked for
// twice and rounds start at the limiter's times exactly. A token taken
// for a round that found nothing to start (every ready object's ordering
// key busy) is given back the same way, held and usable at once.
type roundLimit struct {
	// lim is nil when rounds are not limited: take then costs one
	// branch (BenchmarkReconcile guards it).
	lim *rate.Limiter
	// epoch is the reconciler's zero of mono time, to give lim wall
	// clock times.
	epoch time.Time
	// held: a token is taken and not used; a round may use it from at
	// (mono time) on.
	held bool
	at   int64
}

func (rl *roundLimit) init(o *options, epoch time.Time) {
	if o.roundRate > 0 {
		rl.lim = rate.NewLimiter(rate.Limit(o.roundRate), o.roundBurst)
		rl.epoch = epoch
	}
}

// take reports whether a round may start at now (mono time), and takes its
// token if so.
func (rl *roundLimit) take(now int64) bool {
	if rl.lim == nil {
		return true
	}
	if rl.held {
		if now < rl.at {
			return false
		}
		rl.held = false
		return true
	}
	t := rl.epoch.Add(time.Duration(now - 1))
	res := rl.lim.ReserveN(t, 1)
	if d := res.DelayFrom(t); d > 0 {
		rl.held, rl.at = true, now+int64(d)
		return false
	}
	return true
}

// giveBack returns the token take gave for a round that did not start.
func (rl *roundLimit) giveBack(now int64) {
	if rl.lim != nil {
		rl.held, rl.at = true, now
	}
}

// next returns when a held token becomes usable, if that is after now
// (the loop must wake then); otherwise math.MaxInt64.
func (rl *roundLimit) next(now int64) int64 {
	if rl.held && rl.at > now {
		return rl.at
	}
	return math.MaxInt64
}
