package index

import (
	"testing"
	"time"
)

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
