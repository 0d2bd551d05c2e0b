package index

import (
	"cmp"
	"math"
	"testing"
)

func intCase[T integer](enc func(T) Key, app func([]byte, T) []byte, edge ...T) orderCase[T] {
	return orderCase[T]{
		enc:  enc,
		app:  app,
		cmp:  cmp.Compare[T],
		edge: edge,
		gen:  randInt[T],
	}
}

func TestUnsignedOrder(t *testing.T) {
	t.Run("Uint8", func(t *testing.T) {
		checkOrder(t, intCase(Uint8, AppendUint8, 0, 1, 0x7f, 0x80, 0xfe, math.MaxUint8))
	})
	t.Run("Uint16", func(t *testing.T) {
		checkOrder(t, intCase(Uint16, AppendUint16, 0, 1, 0xff, 0x100, 0x7fff, 0x8000, math.MaxUint16))
	})
	t.Run("Uint32", func(t *testing.T) {
		checkOrder(t, intCase(Uint32, AppendUint32, 0, 1, 0xff, 0x100, 1<<31-1, 1<<31, math.MaxUint32))
	})
	t.Run("Uint64", func(t *testing.T) {
		checkOrder(t, intCase(Uint64, AppendUint64, 0, 1, 0xff, 0x100, 1<<63-1, 1<<63, math.MaxUint64))
	})
	t.Run("Uint", func(t *testing.T) {
		checkOrder(t, intCase(Uint, AppendUint, 0, 1, 0xff, 1<<32, math.MaxUint))
	})
}

func TestSignedOrder(t *testing.T) {
	t.Run("Int8", func(t *testing.T) {
		checkOrder(t, intCase(Int8, AppendInt8, math.MinInt8, math.MinInt8+1, -2, -1, 0, 1, math.MaxInt8))
	})
	t.Run("Int16", func(t *testing.T) {
		checkOrder(t, intCase(Int16, AppendInt16, math.MinInt16, -256, -255, -1, 0, 1, 255, 256, math.MaxInt16))
	})
	t.Run("Int32", func(t *testing.T) {
		checkOrder(t, intCase(Int32, AppendInt32, math.MinInt32, -256, -1, 0, 1, 256, math.MaxInt32))
	})
	t.Run("Int64", func(t *testing.T) {
		checkOrder(t, intCase(Int64, AppendInt64, math.MinInt64, math.MinInt32, -256, -1, 0, 1, 256, math.MaxInt32, math.MaxInt64))
	})
	t.Run("Int", func(t *testing.T) {
		checkOrder(t, intCase(Int, AppendInt, math.MinInt, -1, 0, 1, math.MaxInt))
	})
}

// TestIntegerWidths pins the key lengths and the platform-independent
// encodings of Int and Uint.
func TestIntegerWidths(t *testing.T) {
	lens := map[string]int{
		"Uint8": len(Uint8(1)), "Uint16": len(Uint16(1)), "Uint32": len(Uint32(1)),
		"Uint64": len(Uint64(1)), "Uint": len(Uint(1)),
		"Int8": len(Int8(1)), "Int16": len(Int16(1)), "Int32": len(Int32(1)),
		"Int64": len(Int64(1)), "Int": len(Int(1)),
	}
	want := map[string]int{
		"Uint8": 1, "Uint16": 2, "Uint32": 4, "Uint64": 8, "Uint": 8,
		"Int8": 1, "Int16": 2, "Int32": 4, "Int64": 8, "Int": 8,
	}
	for name, n := range want {
		if lens[name] != n {
			t.Errorf("%s key length %d, want %d", name, lens[name], n)
		}
	}
	for _, v := range []int{math.MinInt, -1, 0, 1, math.MaxInt} {
		if !Int(v).Equal(Int64(int64(v))) {
			t.Errorf("Int(%d) = %v, Int64 gives %v", v, Int(v), Int64(int64(v)))
		}
		if !Uint(uint(v)).Equal(Uint64(uint64(v))) {
			t.Errorf("Uint(%d) = %v, Uint64 gives %v", uint(v), Uint(uint(v)), Uint64(uint64(v)))
		}
	}
	if got, want := Int64(math.MinInt64), (Key{0, 0, 0, 0, 0, 0, 0, 0}); !got.Equal(want) {
		t.Errorf("Int64(MinInt64) = %v, want all zero bytes", got)
	}
	if got, want := Int64(-1), (Key{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); !got.Equal(want) {
		t.Errorf("Int64(-1) = %v, want %v", got, want)
	}
}
