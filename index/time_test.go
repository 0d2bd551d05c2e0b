package index

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// compareInstants is the reference order of Time: time.Time.Compare on
// the wall-clock instants, monotonic readings stripped.
func compareInstants(a, b time.Time) int { return a.Round(0).Compare(b.Round(0)) }

var testZones = []*time.Location{
	time.UTC,
	time.FixedZone("east", 14*3600),
	time.FixedZone("west", -12*3600),
	time.FixedZone("odd", 5*3600+45*60),
}

func TestTimeOrder(t *testing.T) {
	east := testZones[1]
	edge := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, east), // before the zero Time
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(-1, 0),
		time.Unix(0, 0),
		time.Unix(0, 0).In(east),
		time.Unix(0, 1),
		time.Unix(1<<31, 0),
		time.Date(2038, 1, 19, 3, 14, 8, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(292277026596, 12, 4, 15, 30, 7, 0, time.UTC),
		time.Unix(math.MinInt64, 0),
		time.Unix(math.MaxInt64, 999999999), // wraps below year 1 inside time.Time
		time.Unix(math.MaxInt64-62135596800, 999999999),
		time.Now(), // carries a monotonic reading
	}
	checkOrder(t, orderCase[time.Time]{
		enc:  Time,
		app:  AppendTime,
		cmp:  compareInstants,
		edge: edge,
		gen: func(r *rand.Rand) time.Time {
			var sec int64
			switch r.IntN(3) {
			case 0:
				sec = int64(r.Uint64()) // anywhere
			case 1:
				sec = r.Int64N(400*365*86400) - 200*365*86400 // 1770 to 2170
			default:
				sec = int64(r.IntN(5) - 2) // around 1970, often equal
			}
			nsec := int64(r.IntN(1e9))
			if r.IntN(2) == 0 {
				nsec = int64(r.IntN(3))
			}
			return time.Unix(sec, nsec).In(testZones[r.IntN(len(testZones))])
		},
	})
}

func TestTimeIgnoresLocationAndMonotonic(t *testing.T) {
	now := time.Now()
	if !Time(now).Equal(Time(now.Round(0))) {
		t.Errorf("monotonic reading changes the key")
	}
	for _, loc := range testZones {
		if !Time(now.In(loc)).Equal(Time(now.UTC())) {
			t.Errorf("location %v changes the key", loc)
		}
	}
	if n := len(Time(time.Time{})); n != timeKeyLen {
		t.Errorf("Time key length %d, want %d", n, timeKeyLen)
	}
}
