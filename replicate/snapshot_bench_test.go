package replicate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// snapBenchCodec encodes an item as its ID and its value: about 100 bytes
// with the values the benchmark writes, and cheap, so that the benchmark
// measures the snapshot's machinery rather than a codec.
var snapBenchCodec = persist.Funcs[*item]{
	V: 1,
	Enc: func(dst []byte, o *item) ([]byte, error) {
		dst = binary.BigEndian.AppendUint64(dst, o.ID)
		return append(dst, o.Val...), nil
	},
	Dec: func(data []byte, _ uint32) (*item, error) {
		if len(data) < 8 {
			return nil, errors.New("short item")
		}
		return &item{ID: binary.BigEndian.Uint64(data), Val: string(data[8:])}, nil
	},
}

// snapBenchNode is a database with one bound table, and a Node around it
// with no raft: enough for its FSM's Snapshot and Restore.
func snapBenchNode(b *testing.B) (*Node, strata.RWTable[*item]) {
	db := strata.New()
	tbl, err := strata.NewTable(db, "items", itemByID)
	must(b, err)
	n := &Node{db: db, tables: map[string]Binding{"items": Bind(tbl, snapBenchCodec)}, appliedCh: make(chan struct{}), stall: newStallWatch()}
	n.st.init(1)
	n.fsm = &fsm{n: n}
	return n, tbl
}

// BenchmarkSnapshotRoundTrip takes a raft snapshot of a node's table of
// 100,000 objects of about 100 bytes, writes it, and restores it on a node
// whose table is empty (node: fsm.Snapshot, Persist, fsm.Restore), beside
// persist's snapshot of the same table written and read back into an
// empty table (persist: WriteSnapshot, ReadSnapshot): the price of the
// node's header, its reading of the whole snapshot before it restores, and
// strata.Replace over strata.Restore. node-over-state restores the
// snapshot on a node that holds its state already, as a follower behind
// by a few entries does.
func BenchmarkSnapshotRoundTrip(b *testing.B) {
	const objects = 100_000
	src, tbl := snapBenchNode(b)
	txn := src.db.WriteTxn(tbl)
	val := string(bytes.Repeat([]byte("v"), 92))
	for i := range uint64(objects) {
		if _, _, err := tbl.Insert(txn, &item{ID: i * 7919 % objects, Val: val}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		b.Fatal(err)
	}
	src.applied.Store(1)
	src.published.Store(1)
	var buf bytes.Buffer
	b.Run(fmt.Sprintf("node/objects=%d", objects), func(b *testing.B) {
		for range b.N {
			buf.Reset()
			s, err := src.fsm.Snapshot()
			must(b, err)
			must(b, s.(*nodeSnapshot).write(&buf))
			b.StopTimer()
			dst, dtbl := snapBenchNode(b)
			b.StartTimer()
			must(b, dst.fsm.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))))
			if dtbl.NumObjects(dst.db.ReadTxn()) != objects {
				b.Fatal("objects lost")
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
	// A node that holds the snapshot's state already restores it again:
	// strata.Replace over a full table, every object kept.
	b.Run(fmt.Sprintf("node-over-state/objects=%d", objects), func(b *testing.B) {
		buf.Reset()
		s, err := src.fsm.Snapshot()
		must(b, err)
		must(b, s.(*nodeSnapshot).write(&buf))
		dst, dtbl := snapBenchNode(b)
		must(b, dst.fsm.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))))
		b.ResetTimer()
		for range b.N {
			s, err := src.fsm.Snapshot()
			must(b, err)
			buf.Reset()
			must(b, s.(*nodeSnapshot).write(&buf))
			must(b, dst.fsm.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))))
		}
		if dtbl.NumObjects(dst.db.ReadTxn()) != objects {
			b.Fatal("objects lost")
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run(fmt.Sprintf("persist/objects=%d", objects), func(b *testing.B) {
		for range b.N {
			buf.Reset()
			must(b, persist.WriteSnapshot(&buf, src.db.ReadTxn(), persist.Table(tbl, persist.Codec[*item](snapBenchCodec))))
			b.StopTimer()
			dst, dtbl := snapBenchNode(b)
			b.StartTimer()
			_, err := persist.ReadSnapshot(bytes.NewReader(buf.Bytes()), persist.Table(dtbl, persist.Codec[*item](snapBenchCodec)))
			must(b, err)
			if dtbl.NumObjects(dst.db.ReadTxn()) != objects {
				b.Fatal("objects lost")
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
}
