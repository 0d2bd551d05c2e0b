package replicate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// entryCases are the entries of the round-trip tests and the fuzzers'
// seeds.
func entryCases() []struct {
	name string
	e    *Entry
} {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB
	many := make([]ChangeSet, 200)
	for i := range many {
		many[i] = ChangeSet{ID: NewChangeSetID(uint16(i%3), uint64(i)), Tables: []TableChanges{{
			Table: fmt.Sprintf("t%d", i%7),
			Ops:   []Op{Upsert([]byte(fmt.Sprint(i)), uint64(i), 1, []byte("v")), SetRevision(uint64(i))},
		}}}
	}
	manyOps := make([]Op, 1000)
	for i := range manyOps {
		manyOps[i] = Upsert(binary.BigEndian.AppendUint32(nil, uint32(i)), 0, 3, bytes.Repeat([]byte{byte(i)}, i%200))
	}
	return []struct {
		name string
		e    *Entry
	}{
		{"one upsert", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 1, Tables: []TableChanges{{
			Table: "users", Ops: []Op{Upsert([]byte("k"), 7, 1, []byte(`{"name":"a"}`))},
		}}}}}},
		{"every op", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: NewChangeSetID(3, 99), Tables: []TableChanges{{
			Table: "t",
			Ops: []Op{
				DeleteAll(1),
				Upsert([]byte("a"), 1<<40, 1<<31, []byte("x")),
				Delete([]byte("b"), 3),
				Upsert(nil, 0, 0, nil),
				Delete(nil, 4),
				SetRevision(1<<63 + 5),
			},
		}}}}}},
		{"preconditions", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: ^ChangeSetID(0), Tables: []TableChanges{
			{Table: "a", ReadRevision: 12, Reads: []ObjectRead{{Key: []byte("k1"), Revision: 3}, {Key: []byte("k2")}, {Key: nil, Revision: 1}}},
			{Table: "b", ReadRevision: 1, Ops: []Op{Delete([]byte("z"), 3)}},
		}}}}},
		{"empty tables", &Entry{Kind: KindChanges, Changes: []ChangeSet{
			{ID: 0},
			{ID: 2, Tables: []TableChanges{{Table: "x"}, {Table: "y"}}},
		}}},
		{"empty and nil values", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 5, Tables: []TableChanges{{
			Table: "t",
			Ops:   []Op{Upsert([]byte{}, 1, 1, []byte{}), Upsert(nil, 1, 1, nil), Delete([]byte{}, 2)},
		}}}}}},
		{"many change sets", &Entry{Kind: KindChanges, Changes: many}},
		{"many ops", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 9, Tables: []TableChanges{{Table: "objects", Ops: manyOps}}}}}},
		{"large value", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 1, Tables: []TableChanges{{
			Table: "blobs", Ops: []Op{Upsert([]byte("big"), 1, 1, big), Upsert([]byte("big2"), 1, 1, big[:1000])},
		}}}}}},
		{"unicode table", &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 1, Tables: []TableChanges{{
			Table: "таблица\x00\xff", Ops: []Op{Delete([]byte{0, 0xff}, 1)},
		}}}}}},
		{"ignorable kind", &Entry{Kind: KindIgnorable | 5, Body: []byte("a future body")}},
		{"ignorable kind, empty body", &Entry{Kind: KindIgnorable}},
	}
}

// normalize returns a copy of e as DecodeEntry returns it: empty slices
// are nil.
func normalize(e *Entry) *Entry {
	nb := func(p []byte) []byte {
		if len(p) == 0 {
			return nil
		}
		return p
	}
	out := &Entry{Kind: e.Kind, Body: e.Body}
	if !e.Kind.known() && out.Body == nil {
		out.Body = []byte{}
	}
	for _, cs := range e.Changes {
		ncs := ChangeSet{ID: cs.ID}
		for _, t := range cs.Tables {
			nt := TableChanges{Table: t.Table, ReadRevision: t.ReadRevision}
			for _, r := range t.Reads {
				nt.Reads = append(nt.Reads, ObjectRead{Key: nb(r.Key), Revision: r.Revision})
			}
			for _, op := range t.Ops {
				op.Key, op.Value = nb(op.Key), nb(op.Value)
				nt.Ops = append(nt.Ops, op)
			}
			ncs.Tables = append(ncs.Tables, nt)
		}
		out.Changes = append(out.Changes, ncs)
	}
	return out
}

func mustEncode(t testing.TB, e *Entry) []byte {
	t.Helper()
	b, err := AppendEntry(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEntryRoundTrip(t *testing.T) {
	for _, c := range entryCases() {
		t.Run(c.name, func(t *testing.T) {
			prefix := []byte("prefix")
			b, err := AppendEntry(prefix, c.e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, prefix) {
				t.Fatal("AppendEntry lost dst")
			}
			b = b[len(prefix):]
			if got := c.e.Size(); got != len(b) {
				t.Fatalf("Size %d, encoding %d bytes", got, len(b))
			}
			if b[0] != EntryVersion || Kind(b[1]) != c.e.Kind {
				t.Fatalf("header % x", b[:2])
			}
			got, err := DecodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := normalize(c.e); !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
			}
			if got.Skip() != (c.e.Kind != KindChanges) {
				t.Fatalf("Skip %v for kind %#x", got.Skip(), c.e.Kind)
			}
			again := mustEncode(t, got)
			if !bytes.Equal(again, b) {
				t.Fatal("re-encoding differs")
			}
			var into Entry
			into.Changes = make([]ChangeSet, 0, 500)
			if err := DecodeEntryInto(&into, b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustEncode(t, &into), b) {
				t.Fatal("DecodeEntryInto differs")
			}
		})
	}
}

// The encoding of a small entry, byte by byte, as doc.go describes it.
func TestEntryLayout(t *testing.T) {
	e := &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: NewChangeSetID(1, 2), Tables: []TableChanges{{
		Table:        "t",
		ReadRevision: 300,
		Reads:        []ObjectRead{{Key: []byte("r"), Revision: 0}},
		Ops:          []Op{DeleteAll(2), Upsert([]byte("k"), 5, 1, []byte("vv")), Delete([]byte("d"), 6), SetRevision(9)},
	}}}}}
	want := []byte{
		1, 1, // version, kind
		1,                      // one change set
		0, 1, 0, 0, 0, 0, 0, 2, // id: node 1, seq 2
		1,      // one table
		1, 't', // name
		0xac, 0x02, // read revision 300
		1, 1, 'r', 0, // one read: key "r", must not exist
		4,    // four ops
		3, 2, // delete all, from revision 2
		1, 1, 'k', 5, 1, 2, 'v', 'v', // upsert "k" at 5, codec 1, "vv"
		2, 1, 'd', 6, // delete "d" at 6
		4, 9, // set revision 9
	}
	if got := mustEncode(t, e); !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

func TestEntryChangeSetID(t *testing.T) {
	id := NewChangeSetID(0xabcd, 1<<50|12345)
	if id.Node() != 0xabcd || id.Seq() != 12345 {
		t.Fatalf("node %#x seq %d", id.Node(), id.Seq())
	}
	if id := NewChangeSetID(7, 1<<48-1); id.Node() != 7 || id.Seq() != 1<<48-1 {
		t.Fatalf("node %#x seq %d", id.Node(), id.Seq())
	}
}

// checkDecodeError checks that err is a *DecodeError, and returns a copy
// of it.
func checkDecodeError(t *testing.T, err error) DecodeError {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T), want a *DecodeError", err, err)
	}
	if de.Offset < 0 {
		t.Fatalf("offset %d", de.Offset)
	}
	return *de
}

func TestEntryTruncated(t *testing.T) {
	for _, c := range entryCases() {
		if c.e.Kind != KindChanges {
			continue // an unknown kind's body is opaque
		}
		b := mustEncode(t, c.e)
		// Every prefix of a small entry; of a large one, every prefix
		// near its ends and a sample between.
		step := 1
		if len(b) > 1<<13 {
			step = 97
		}
		for i := 0; i < len(b); i++ {
			if i > 1<<12 && i < len(b)-1<<12 && i%step != 0 {
				continue
			}
			e, err := DecodeEntry(b[:i])
			if err == nil {
				t.Fatalf("%s: prefix of %d of %d bytes decoded: %+v", c.name, i, len(b), e)
			}
			if de := checkDecodeError(t, err); de.Offset > i {
				t.Fatalf("%s: prefix of %d: offset %d", c.name, i, de.Offset)
			}
		}
	}
}

func TestEntryBitFlips(t *testing.T) {
	for _, c := range entryCases() {
		b := mustEncode(t, c.e)
		if len(b) > 4096 {
			continue
		}
		flipped := make([]byte, len(b))
		decoded := 0
		for i := range b {
			for bit := 0; bit < 8; bit++ {
				copy(flipped, b)
				flipped[i] ^= 1 << bit
				e, err := DecodeEntry(flipped)
				if err != nil {
					checkDecodeError(t, err)
					continue
				}
				decoded++
				again, err := AppendEntry(nil, e)
				if err != nil {
					t.Fatalf("%s: byte %d bit %d: decoded, does not encode: %v", c.name, i, bit, err)
				}
				if !bytes.Equal(again, flipped) {
					t.Fatalf("%s: byte %d bit %d: re-encodes to other bytes", c.name, i, bit)
				}
			}
		}
		t.Logf("%s: %d of %d flips decode", c.name, decoded, 8*len(b))
	}
}

func TestEntryKinds(t *testing.T) {
	valid := mustEncode(t, entryCases()[0].e)

	for _, kind := range []byte{0, 2, 5, 0x7f} {
		b := append([]byte{EntryVersion, kind}, valid[2:]...)
		_, err := DecodeEntry(b)
		if !errors.Is(err, ErrUnknownKind) {
			t.Fatalf("kind %#x: %v, want ErrUnknownKind", kind, err)
		}
		if de := checkDecodeError(t, err); de.Offset != 1 {
			t.Fatalf("kind %#x: offset %d", kind, de.Offset)
		}
		if _, err := AppendEntry(nil, &Entry{Kind: Kind(kind)}); !errors.Is(err, ErrUnknownKind) {
			t.Fatalf("encode kind %#x: %v, want ErrUnknownKind", kind, err)
		}
	}
	// KindChanges with the flag is another kind, which this package does
	// not know: its body is not read.
	for _, kind := range []byte{0x80, 0x81, 0xff} {
		b := append([]byte{EntryVersion, kind}, valid[2:]...)
		e, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("kind %#x: %v", kind, err)
		}
		if !e.Skip() || e.Kind != Kind(kind) || !bytes.Equal(e.Body, valid[2:]) || e.Changes != nil {
			t.Fatalf("kind %#x: %+v", kind, e)
		}
		if !bytes.Equal(mustEncode(t, e), b) {
			t.Fatalf("kind %#x: re-encoding differs", kind)
		}
	}
}

func TestEntryVersion(t *testing.T) {
	valid := mustEncode(t, entryCases()[0].e)
	for _, v := range []byte{0, 2, 0xff} {
		b := append([]byte{v}, valid[1:]...)
		_, err := DecodeEntry(b)
		if !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("version %d: %v, want ErrUnsupportedVersion", v, err)
		}
		if de := checkDecodeError(t, err); de.Offset != 0 {
			t.Fatalf("version %d: offset %d", v, de.Offset)
		}
	}
	for _, b := range [][]byte{nil, {}, {EntryVersion}} {
		_, err := DecodeEntry(b)
		checkDecodeError(t, err)
		if errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrUnknownKind) {
			t.Fatalf("% x: %v", b, err)
		}
	}
}

func TestEntryTrailingBytes(t *testing.T) {
	for _, c := range entryCases() {
		if c.e.Kind != KindChanges {
			continue
		}
		b := mustEncode(t, c.e)
		for _, tail := range [][]byte{{0}, {1}, b} {
			_, err := DecodeEntry(append(b[:len(b):len(b)], tail...))
			if de := checkDecodeError(t, err); de.Offset != len(b) {
				t.Fatalf("%s: trailing % x: offset %d, want %d (%v)", c.name, tail[:1], de.Offset, len(b), err)
			}
		}
	}
}

// Malformed entries, each refused at the offset given.
func TestEntryMalformed(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<62)
	id := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	head := []byte{EntryVersion, byte(KindChanges)}
	cases := []struct {
		name string
		b    []byte
		off  int
		what string
	}{
		{"no change set", cat(head, []byte{0}), 2, "no change set"},
		{"huge change set count", cat(head, huge), 2, "more than"},
		{"non-minimal count", cat(head, []byte{0x81, 0x00}), 2, "shortest"},
		{"count overflows", cat(head, bytes.Repeat([]byte{0xff}, 11)), 2, "overflows"},
		{"short id", cat(head, []byte{1, 0, 0, 0}), 2, "more than"},
		{"huge table count", cat(head, []byte{1}, id, huge), 11, "more than"},
		{"huge name", cat(head, []byte{1}, id, []byte{1}, huge, []byte("abcdefgh")), 12, "more than"},
		{"empty name", cat(head, []byte{1}, id, []byte{1, 0, 0, 0, 0, 0}), 12, "empty table name"},
		{"huge read count", cat(head, []byte{1}, id, []byte{1, 1, 't', 0}, huge), 15, "more than"},
		{"huge read key", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 1}, huge, []byte{0, 0}), 16, "more than"},
		{"huge op count", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0}, huge), 16, "more than"},
		{"unknown op", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0, 1, 9, 0}), 17, "unknown op kind 9"},
		{"op 0", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0, 1, 0, 0}), 17, "unknown op kind 0"},
		{"huge value", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0, 1, 1, 0, 0, 0}, huge, []byte{1, 2}), 21, "more than"},
		{"codec version over 32 bits", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0, 1, 1, 0, 0}, binary.AppendUvarint(nil, 1<<32), []byte{0}), 20, "32 bits"},
		{"non-minimal revision", cat(head, []byte{1}, id, []byte{1, 1, 't', 0, 0, 1, 4, 0x80, 0x80, 0}), 18, "shortest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEntry(c.b)
			de := checkDecodeError(t, err)
			if de.Offset != c.off || !strings.Contains(de.What, c.what) {
				t.Fatalf("%v (offset %d), want offset %d and %q", err, de.Offset, c.off, c.what)
			}
		})
	}
}

// A length or count that claims more than the input holds is refused
// before anything is allocated for it.
func TestEntryHugeLengthsDoNotAllocate(t *testing.T) {
	id := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	for _, claim := range []uint64{1 << 20, 1 << 40, 1<<63 - 1, 1<<64 - 1} {
		u := binary.AppendUvarint(nil, claim)
		for _, b := range [][]byte{
			bytes.Join([][]byte{{1, 1}, u}, nil),
			bytes.Join([][]byte{{1, 1, 1}, id, u}, nil),
			bytes.Join([][]byte{{1, 1, 1}, id, {1, 1, 't', 0}, u}, nil),
			bytes.Join([][]byte{{1, 1, 1}, id, {1, 1, 't', 0, 0}, u}, nil),
			bytes.Join([][]byte{{1, 1, 1}, id, {1, 1, 't', 0, 0, 1, 1}, u, {0}}, nil),
		} {
			var err error
			allocs := testing.AllocsPerRun(20, func() { _, err = DecodeEntry(b) })
			checkDecodeError(t, err)
			// The Entry, the change sets', tables' and ops' slices (one
			// element each), the table name, the error and its text; a
			// few more under -race.
			if allocs > 12 {
				t.Fatalf("claim %d in % x: %.0f allocations", claim, b, allocs)
			}
		}
	}
}

// Decoded slices alias the input, and cannot be appended to over it.
func TestEntryDecodeAliases(t *testing.T) {
	b := mustEncode(t, entryCases()[0].e)
	e, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	v := e.Changes[0].Tables[0].Ops[0].Value
	if &v[0] != &b[len(b)-len(v)] {
		t.Fatal("value does not alias the input")
	}
	key := e.Changes[0].Tables[0].Ops[0].Key
	_ = append(key, 'X')
	if !bytes.Equal(mustEncode(t, e), b) {
		t.Fatal("an append to a decoded key changed the input")
	}
}

func TestEntryEncodeErrors(t *testing.T) {
	ok := entryCases()[0].e
	cs := func(ops ...Op) []ChangeSet {
		return []ChangeSet{{ID: 1, Tables: []TableChanges{{Table: "t", Ops: ops}}}}
	}
	invalid := []*Entry{
		{Kind: KindChanges},
		{Kind: KindChanges, Changes: []ChangeSet{}},
		{Kind: KindChanges, Changes: ok.Changes, Body: []byte{}},
		{Kind: KindIgnorable | 3, Changes: ok.Changes},
		{Kind: KindChanges, Changes: []ChangeSet{{Tables: []TableChanges{{}}}}},
		{Kind: KindChanges, Changes: cs(Op{Kind: 0})},
		{Kind: KindChanges, Changes: cs(Op{Kind: 5})},
		{Kind: KindChanges, Changes: cs(Op{Kind: OpDelete, Key: []byte("k"), Value: []byte("v")})},
		{Kind: KindChanges, Changes: cs(Op{Kind: OpDelete, Key: []byte("k"), CodecVersion: 1})},
		{Kind: KindChanges, Changes: cs(Op{Kind: OpDeleteAll, Key: []byte{}})},
		{Kind: KindChanges, Changes: cs(Op{Kind: OpSetRevision, CodecVersion: 1})},
	}
	for i, e := range invalid {
		dst := []byte("dst")
		got, err := AppendEntry(dst, e)
		if !errors.Is(err, ErrInvalidEntry) {
			t.Fatalf("%d: %v, want ErrInvalidEntry", i, err)
		}
		if string(got) != "dst" {
			t.Fatalf("%d: dst changed", i)
		}
	}
}

func TestEntryTooLarge(t *testing.T) {
	value := make([]byte, MaxEntrySize)
	e := &Entry{Kind: KindChanges, Changes: []ChangeSet{{ID: 1, Tables: []TableChanges{{
		Table: "t", Ops: []Op{Upsert([]byte("k"), 1, 1, value)},
	}}}}}
	dst := make([]byte, 3, 10)
	got, err := AppendEntry(dst, e)
	var tl *EntryTooLargeError
	if !errors.Is(err, ErrEntryTooLarge) || !errors.As(err, &tl) {
		t.Fatalf("%v, want ErrEntryTooLarge", err)
	}
	if tl.Size != e.Size() || tl.Limit != MaxEntrySize || len(got) != 3 || cap(got) != 10 {
		t.Fatalf("%+v, dst %d/%d", tl, len(got), cap(got))
	}

	// Exactly at the limit is allowed.
	e.Changes[0].Tables[0].Ops[0].Value = value[:MaxEntrySize-(e.Size()-MaxEntrySize)]
	b, err := AppendEntry(nil, e)
	if err != nil || len(b) != MaxEntrySize {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	if _, err := AppendEntryLimit(nil, e, MaxEntrySize-1); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("%v, want ErrEntryTooLarge", err)
	}
	// The decoder has no limit.
	if _, err := AppendEntryLimit(nil, &Entry{Kind: KindChanges, Changes: []ChangeSet{{}}}, 12); err != nil {
		t.Fatal(err)
	}
	e.Changes[0].Tables[0].Ops[0].Value = make([]byte, 2*MaxEntrySize)
	b, err = AppendEntryLimit(nil, e, 4*MaxEntrySize)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(b); err != nil {
		t.Fatal(err)
	}
}

func TestEntryAppendAllocs(t *testing.T) {
	e := benchEntry(100)
	buf := make([]byte, 0, e.Size())
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, err = AppendEntry(buf[:0], e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.0f allocations into a buffer large enough", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := AppendEntry(nil, e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("%.0f allocations into nil, want 1", allocs)
	}
}

func TestUvarintLen(t *testing.T) {
	for _, x := range []uint64{0, 1, 127, 128, 1<<14 - 1, 1 << 14, 1<<63 - 1, 1 << 63, 1<<64 - 1} {
		if got, want := uvarintLen(x), len(binary.AppendUvarint(nil, x)); got != want {
			t.Fatalf("%d: %d, want %d", x, got, want)
		}
	}
}

// DecodeEntry's documentation promises at most 64 bytes per input byte.
func TestEntryOpSize(t *testing.T) {
	if size := unsafe.Sizeof(Op{}); size != 64 {
		t.Fatalf("an Op is %d bytes", size)
	}
}
