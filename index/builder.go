package index

import (
	"net/netip"
	"time"
)

// Builder builds a composite key part by part, writing each value's
// encoding straight into one buffer and escaping it there. A chain such
// as
//
//	var b index.Builder
//	k := b.String("eu-west").Int64(-3).Build()
//
// produces the same bytes as Composite(String("eu-west"), Int64(-3)) and
// allocates only as the buffer grows. The zero Builder is empty and ready
// to use. A Builder is not safe for concurrent use.
type Builder struct {
	// buf holds the escaped, terminated parts added so far. Keys returned
	// by Build alias buf[:n] for the n of their time; the Builder only
	// appends after that, so those keys stay intact until Reset.
	buf []byte
}

// Reset empties b and keeps its buffer for the next key. Keys returned by
// earlier Build calls share that buffer: they must not be used after
// Reset (copy them first if they must live on).
func (b *Builder) Reset() { b.buf = b.buf[:0] }

// Build returns the composite key of the parts added so far. The key
// shares memory with b until b.Reset is called; adding more parts does
// not change it. A Builder with no parts gives an empty key.
func (b *Builder) Build() Key {
	return Key(b.buf[:len(b.buf):len(b.buf)])
}

// part escapes the part written at buf[start:] and returns b for chaining.
func (b *Builder) part(start int) *Builder {
	b.buf = escapeTail(b.buf, start)
	return b
}

// Key adds a pre-encoded part k.
func (b *Builder) Key(k Key) *Builder {
	b.buf = AppendEscaped(b.buf, k)
	return b
}

// Bytes adds the part Bytes(v).
func (b *Builder) Bytes(v []byte) *Builder {
	b.buf = AppendEscaped(b.buf, v)
	return b
}

// String adds the part String(v).
func (b *Builder) String(v string) *Builder {
	start := len(b.buf)
	b.buf = AppendString(b.buf, v)
	return b.part(start)
}

// Uint64 adds the part Uint64(v).
func (b *Builder) Uint64(v uint64) *Builder {
	start := len(b.buf)
	b.buf = AppendUint64(b.buf, v)
	return b.part(start)
}

// Int64 adds the part Int64(v).
func (b *Builder) Int64(v int64) *Builder {
	start := len(b.buf)
	b.buf = AppendInt64(b.buf, v)
	return b.part(start)
}

// Float64 adds the part Float64(v).
func (b *Builder) Float64(v float64) *Builder {
	start := len(b.buf)
	b.buf = AppendFloat64(b.buf, v)
	return b.part(start)
}

// Bool adds the part Bool(v).
func (b *Builder) Bool(v bool) *Builder {
	start := len(b.buf)
	b.buf = AppendBool(b.buf, v)
	return b.part(start)
}

// Time adds the part Time(v).
func (b *Builder) Time(v time.Time) *Builder {
	start := len(b.buf)
	b.buf = AppendTime(b.buf, v)
	return b.part(start)
}

// NetIPAddr adds the part NetIPAddr(v).
func (b *Builder) NetIPAddr(v netip.Addr) *Builder {
	start := len(b.buf)
	b.buf = AppendNetIPAddr(b.buf, v)
	return b.part(start)
}

// NetIPPrefix adds the part NetIPPrefix(v).
func (b *Builder) NetIPPrefix(v netip.Prefix) *Builder {
	start := len(b.buf)
	b.buf = AppendNetIPPrefix(b.buf, v)
	return b.part(start)
}
