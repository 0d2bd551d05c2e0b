package replicate

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzEntryDecode checks that DecodeEntry never panics, fails only with a
// *DecodeError, and that an input which decodes is the one encoding of
// what it decodes to: AppendEntry gives the input back.
func FuzzEntryDecode(f *testing.F) {
	for _, c := range entryCases() {
		b, err := AppendEntry(nil, c.e)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 4096 {
			f.Add(b)
		}
	}
	f.Add(mustEncode(f, benchEntry(3)))
	f.Add([]byte{})
	f.Add([]byte{EntryVersion, byte(KindChanges), 0})
	f.Add([]byte{EntryVersion, 5})
	f.Add([]byte{2, byte(KindChanges), 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEntry(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if e.Size() != len(data) {
			t.Fatalf("Size %d of an entry of %d bytes", e.Size(), len(data))
		}
		again, err := AppendEntryLimit(nil, e, len(data))
		if err != nil {
			t.Fatalf("decoded, does not encode: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encodes to other bytes:\n% x\n% x", again, data)
		}
	})
}

// FuzzEntryRoundTrip builds an entry from the fuzzer's bytes and checks
// that it encodes to Size bytes and decodes to what it was (with empty
// slices nil), and that the decoding encodes to the same bytes.
func FuzzEntryRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(bytes.Repeat([]byte{0xff, 0x01, 0x80, 0x7f}, 64))
	f.Add(bytes.Repeat([]byte("change set"), 30))
	f.Fuzz(func(t *testing.T, program []byte) {
		e := entryFrom(program)
		b, err := AppendEntry(nil, e)
		if err != nil {
			t.Fatalf("%v: %+v", err, e)
		}
		if len(b) != e.Size() {
			t.Fatalf("Size %d, encoding %d bytes", e.Size(), len(b))
		}
		got, err := DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		if want := normalize(e); !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
		}
		if again := mustEncode(t, got); !bytes.Equal(again, b) {
			t.Fatal("re-encoding differs")
		}
	})
}

// entryFrom builds a valid entry from p, which it reads as a program: each
// byte chooses what comes next, and numbers and byte strings are taken
// from the bytes that follow. It reads zeros past p's end.
func entryFrom(p []byte) *Entry {
	r := programReader{p: p}
	if r.byte()%16 == 15 {
		return &Entry{Kind: KindIgnorable | Kind(r.byte()), Body: r.bytes()}
	}
	e := &Entry{Kind: KindChanges}
	for n := 1 + int(r.byte()%4); n > 0; n-- {
		cs := ChangeSet{ID: ChangeSetID(r.uint64())}
		for range int(r.byte() % 4) {
			t := TableChanges{Table: string(append([]byte{'t'}, r.bytes()...)), ReadRevision: r.uint64()}
			for range int(r.byte() % 3) {
				t.Reads = append(t.Reads, ObjectRead{Key: r.bytes(), Revision: r.uint64()})
			}
			for range int(r.byte() % 6) {
				switch r.byte() % 4 {
				case 0:
					t.Ops = append(t.Ops, Upsert(r.bytes(), r.uint64(), uint32(r.uint64()), r.bytes()))
				case 1:
					t.Ops = append(t.Ops, Delete(r.bytes(), r.uint64()))
				case 2:
					t.Ops = append(t.Ops, DeleteAll(r.uint64()))
				case 3:
					t.Ops = append(t.Ops, SetRevision(r.uint64()))
				}
			}
			cs.Tables = append(cs.Tables, t)
		}
		e.Changes = append(e.Changes, cs)
	}
	return e
}

type programReader struct {
	p   []byte
	off int
}

func (r *programReader) byte() byte {
	if r.off >= len(r.p) {
		return 0
	}
	r.off++
	return r.p[r.off-1]
}

// uint64 reads a number of 0 to 8 bytes, so that small and large ones
// both come up.
func (r *programReader) uint64() uint64 {
	var buf [8]byte
	n := int(r.byte() % 9)
	for i := range n {
		buf[i] = r.byte()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// bytes reads a string of 0 to 31 bytes; every other empty one is nil.
func (r *programReader) bytes() []byte {
	n := int(r.byte() % 32)
	if n == 0 && r.off%2 == 0 {
		return nil
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = r.byte()
	}
	return out
}
