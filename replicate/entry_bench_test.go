package replicate

import (
	"bytes"
	"fmt"
	"testing"
)

// benchEntry returns an entry of one change set that upserts n objects of
// about 100 bytes into one table.
func benchEntry(n int) *Entry {
	ops := make([]Op, 0, n+1)
	for i := range n {
		key := fmt.Appendf(nil, "user/%08d", i)
		value := bytes.Repeat([]byte{'a' + byte(i%26)}, 100-len(key))
		ops = append(ops, Upsert(key, uint64(1000+i), 1, value))
	}
	ops = append(ops, SetRevision(2000))
	return &Entry{Kind: KindChanges, Changes: []ChangeSet{{
		ID: NewChangeSetID(1, 42),
		Tables: []TableChanges{{
			Table:        "users",
			ReadRevision: 999,
			Reads:        []ObjectRead{{Key: []byte("user/00000000"), Revision: 1000}},
			Ops:          ops,
		}},
	}}}
}

func BenchmarkEntryEncode(b *testing.B) {
	for _, n := range []int{1, 100} {
		e := benchEntry(n)
		buf := make([]byte, 0, e.Size())
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			b.SetBytes(int64(e.Size()))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendEntry(buf[:0], e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/new-buffer", n), func(b *testing.B) {
			b.SetBytes(int64(e.Size()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := AppendEntry(nil, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The decoder's slices alias its input. The benchmark compares it with
// the two ways of copying: the input once, then aliasing the copy
// (clone-input), and every key and value on its own (copy-fields).
func BenchmarkEntryDecode(b *testing.B) {
	for _, n := range []int{1, 100} {
		data, err := AppendEntry(nil, benchEntry(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("objects=%d/alias", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeEntry(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/alias-into", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var e Entry
			for b.Loop() {
				if err := DecodeEntryInto(&e, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/clone-input", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeEntry(bytes.Clone(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/copy-fields", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				e, err := DecodeEntry(data)
				if err != nil {
					b.Fatal(err)
				}
				copyFields(e)
			}
		})
	}
}

// copyFields gives every key and value of e a copy of its own, as a
// decoder that copied them would.
func copyFields(e *Entry) {
	for i := range e.Changes {
		for j := range e.Changes[i].Tables {
			t := &e.Changes[i].Tables[j]
			for k := range t.Reads {
				t.Reads[k].Key = bytes.Clone(t.Reads[k].Key)
			}
			for k := range t.Ops {
				t.Ops[k].Key = bytes.Clone(t.Ops[k].Key)
				t.Ops[k].Value = bytes.Clone(t.Ops[k].Value)
			}
		}
	}
}
