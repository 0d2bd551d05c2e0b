package replicate

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs appends batches of 1, 16 and 64 entries of 100 bytes
// of data, each batch one StoreLogs call, synced to the disk the test's
// temporary directory is on, and reports entries per second.
func BenchmarkStoreLogs(b *testing.B) {
	for _, size := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			st := openStore(b, nil, b.TempDir())
			defer closeStore(b, st)
			data := make([]byte, 100)
			batch := make([]*raft.Log, size)
			for i := range batch {
				batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
			}
			next := uint64(1)
			b.SetBytes(int64(size * len(data)))
			b.ResetTimer()
			for range b.N {
				for _, l := range batch {
					l.Index = next
					next++
				}
				if err := st.StoreLogs(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkGetLog reads entries of 100 bytes of data back, as raft's
// replication does when the LogCache misses.
func BenchmarkGetLog(b *testing.B) {
	st := openStore(b, nil, b.TempDir())
	defer closeStore(b, st)
	const n = 4096
	ls := make([]*raft.Log, n)
	for i := range ls {
		ls[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Data: make([]byte, 100)}
	}
	if err := st.StoreLogs(ls); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var l raft.Log
	for i := range b.N {
		if err := st.GetLog(uint64(i%n)+1, &l); err != nil {
			b.Fatal(err)
		}
	}
}
