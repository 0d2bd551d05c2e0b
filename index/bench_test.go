package index

import (
	"net/netip"
	"testing"
	"time"

	"github.com/strata-db/strata/part"
)

// sinkKey keeps benchmarked keys alive, so that they are allocated as
// they would be in real use rather than on the benchmark's stack.
var sinkKey Key

func BenchmarkAppendUint64(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 8)
	for b.Loop() {
		buf = AppendUint64(buf[:0], 0x0123456789abcdef)
	}
}

func BenchmarkInt64(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkKey = Int64(-12345)
	}
}

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkKey = String("some-object-name")
	}
}

func BenchmarkAppendTime(b *testing.B) {
	b.ReportAllocs()
	t := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, timeKeyLen)
	for b.Loop() {
		buf = AppendTime(buf[:0], t)
	}
}

func BenchmarkNetIPPrefix(b *testing.B) {
	b.ReportAllocs()
	p := netip.MustParsePrefix("2001:db8::/48")
	for b.Loop() {
		sinkKey = NetIPPrefix(p)
	}
}

func BenchmarkComposite(b *testing.B) {
	b.ReportAllocs()
	name, id := String("eu-west"), Uint64(7)
	for b.Loop() {
		sinkKey = Composite(name, id)
	}
}

func BenchmarkBuilder(b *testing.B) {
	b.ReportAllocs()
	var kb Builder
	for b.Loop() {
		kb.Reset()
		_ = kb.String("eu-west").Uint64(7).Build()
	}
}

// BenchmarkKeySetIterate guards the per-object path of the database:
// building a KeySet and walking it with Len and At.
func BenchmarkKeySetIterate(b *testing.B) {
	k := String("key")
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			s := NewKeySet(k)
			for i := range s.Len() {
				n += len(s.At(i))
			}
		}
		_ = n
	})
	b.Run("many", func(b *testing.B) {
		b.ReportAllocs()
		s := NewKeySet(k, k, k, k)
		n := 0
		for b.Loop() {
			for i := range s.Len() {
				n += len(s.At(i))
			}
		}
		_ = n
	})
	b.Run("All", func(b *testing.B) {
		b.ReportAllocs()
		s := NewKeySet(k, k, k, k)
		n := 0
		for b.Loop() {
			for key := range s.All() {
				n += len(key)
			}
		}
		_ = n
	})
}

// keySetSink keeps the benchmarks' KeySets alive.
var keySetSink KeySet

// BenchmarkKeySetOf: an index's FromObject, called through a func value as
// the database calls it, building the KeySet of an integer key with
// KeySetOf (which allocates nothing: the key lives in the KeySet) and with
// NewKeySet (which keeps the key the encoder allocated).
func BenchmarkKeySetOf(b *testing.B) {
	for _, c := range []struct {
		name string
		from func(uint64) KeySet
	}{
		{"KeySetOf", func(v uint64) KeySet { return KeySetOf(Uint64(v)) }},
		{"NewKeySet", func(v uint64) KeySet { return NewKeySet(Uint64(v)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			from := c.from
			n := uint64(0)
			for b.Loop() {
				keySetSink = from(n)
				n++
			}
		})
	}
}

// BenchmarkSet: a tag index's FromObject over a part.Set of three
// elements, by Set and by the loop one writes without it.
func BenchmarkSet(b *testing.B) {
	strs := part.NewSet("blue", "green", "red")
	ints := part.NewSet[uint64](1, 2, 3)
	b.Run("strings/Set", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keySetSink = Set(strs)
		}
		if keySetSink.Len() != 3 {
			b.Fatal(keySetSink.Len())
		}
	})
	b.Run("strings/loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keys := make([]Key, 0, strs.Len())
			for s := range strs.All() {
				keys = append(keys, String(s))
			}
			keySetSink = NewKeySet(keys...)
		}
		if keySetSink.Len() != 3 {
			b.Fatal(keySetSink.Len())
		}
	})
	b.Run("uint64/Set", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keySetSink = Set(ints)
		}
		if keySetSink.Len() != 3 {
			b.Fatal(keySetSink.Len())
		}
	})
	b.Run("uint64/loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			keys := make([]Key, 0, ints.Len())
			for v := range ints.All() {
				keys = append(keys, Uint64(v))
			}
			keySetSink = NewKeySet(keys...)
		}
		if keySetSink.Len() != 3 {
			b.Fatal(keySetSink.Len())
		}
	})
}
