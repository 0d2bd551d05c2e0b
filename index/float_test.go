package index

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFloat64Order(t *testing.T) {
	negNaN := math.Float64frombits(0xfff8000000000001)
	payloadNaN := math.Float64frombits(0x7ff0000000000001)
	checkOrder(t, orderCase[float64]{
		enc: Float64,
		app: AppendFloat64,
		cmp: cmp.Compare[float64],
		edge: []float64{
			math.NaN(), negNaN, payloadNaN,
			math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64,
			math.Copysign(0, -1), 0,
			math.SmallestNonzeroFloat64, 0x1p-1022, 1, math.MaxFloat64, math.Inf(1),
		},
		gen: func(r *rand.Rand) float64 {
			switch r.IntN(4) {
			case 0:
				return math.Float64frombits(r.Uint64()) // any bit pattern, NaNs included
			case 1:
				return float64(r.IntN(5) - 2)
			default:
				return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
			}
		},
	})
}

func TestFloat64Special(t *testing.T) {
	if !Float64(math.Copysign(0, -1)).Equal(Float64(0)) {
		t.Errorf("-0 and +0 have different keys")
	}
	nan := Float64(math.NaN())
	if !nan.Equal(Float64(math.Float64frombits(0xfff0000000000001))) {
		t.Errorf("NaNs have different keys")
	}
	if !nan.Equal(Key{0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("NaN key = %v, want all zero bytes", nan)
	}
	if Float64(math.Inf(-1)).Equal(nan) || string(Float64(math.Inf(-1))) < string(nan) {
		t.Errorf("NaN key does not sort before -Inf")
	}
}
