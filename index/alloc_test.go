package index

import (
	"testing"
	"time"
)

// keySetOfUint64 is an index's FromObject, called through a variable.
var keySetOfUint64 = func(v uint64) KeySet { return KeySetOf(Uint64(v)) }

func TestAllocs(t *testing.T) {
	k := Uint64(42)
	var sink KeySet
	buf := make([]byte, 0, 128)
	var b Builder
	b.String("warm up the buffer").Uint64(1).Time(time.Time{})
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"NewKeySet(one key)", func() { sink = NewKeySet(k) }},
		// Through a func value, as the database calls FromObject: the
		// encoder's buffer stays on the stack.
		{"KeySetOf(Uint64) via a func value", func() { sink = keySetOfUint64(42) }},
		{"KeySetOf.At", func() {
			s := keySetOfUint64(42)
			buf = append(buf[:0], s.At(0)...)
		}},
		{"KeySet.At", func() {
			for i := range sink.Len() {
				buf = append(buf[:0], sink.At(i)...)
			}
		}},
		{"AppendUint64", func() { buf = AppendUint64(buf[:0], 42) }},
		{"AppendTime", func() { buf = AppendTime(buf[:0], time.Time{}) }},
		{"AppendEscaped", func() { buf = AppendEscaped(buf[:0], []byte("a\x00b")) }},
		{"Builder after Reset", func() {
			b.Reset()
			_ = b.String("a\x00b").Uint64(1).Time(time.Time{}).Build()
		}},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", c.name, n)
		}
	}
}
