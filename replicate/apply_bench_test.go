package replicate

import (
	"encoding/binary"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// BenchmarkFollowerApply is the cost of a follower's apply of one small
// transaction (the goal: ≤ 20 µs): the node's FSM.Apply of an
// entry of one change set another node proposed, which inserts one
// object of about 100 bytes with its precondition (the table's revision)
// into a table with a primary index only: decode, check, one write
// transaction, publish. memory: the tables in memory only; durable: with
// Config.Store, the entry also written to a persist store (one unsynced
// Pebble batch). raft's own work on a follower (receiving, storing the
// log) is not in it: BenchmarkStoreLogs measures the log store.
func BenchmarkFollowerApply(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := "memory"
		if durable {
			name = "durable"
		}
		b.Run(name, func(b *testing.B) {
			n, tbl := snapBenchNode(b)
			if durable {
				s, err := persist.Open(b.TempDir(), persist.Options{Logger: slog.New(slog.DiscardHandler)})
				must(b, err)
				b.Cleanup(func() { must(b, s.Close()) })
				n.store, err = s.LoadApplied(persist.Table(tbl, snapBenchCodec))
				must(b, err)
			}
			logs := make([]raft.Log, b.N)
			val := []byte(restartVal)
			for i := range logs {
				id := uint64(i + 1)
				value := binary.BigEndian.AppendUint64(nil, id)
				value = append(value, val...)
				e := &Entry{Kind: KindChanges, Changes: []ChangeSet{{
					ID: NewChangeSetID(2, id),
					Tables: []TableChanges{{
						Table:        "items",
						ReadRevision: id - 1,
						Ops:          []Op{Upsert(index.Uint64(id), id, 1, value), SetRevision(id)},
					}},
				}}}
				data, err := AppendEntry(nil, e)
				must(b, err)
				logs[i] = raft.Log{Index: id, Type: raft.LogCommand, Data: data}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range logs {
				res, ok := n.fsm.Apply(&logs[i]).(*ApplyResult)
				if !ok || len(res.Conflicts) != 0 {
					b.Fatalf("entry %d: %v", i+1, n.fsm.Apply(&logs[i]))
				}
			}
			b.StopTimer()
			if got := tbl.NumObjects(n.db.ReadTxn()); got != b.N {
				b.Fatalf("%d objects applied, want %d", got, b.N)
			}
		})
	}
}
