package metrics

import "time"

// Store receives the measurements of a persistence store (package persist).
// Implementations must be safe for concurrent use.
type Store interface {
	// Commit reports one commit record written to the store: its size in
	// bytes, how long writing it took (including the sync, in Sync mode),
	// and whether it failed.
	Commit(bytes int, took time.Duration, failed bool)
	// Stats reports the figures of the store's LSM, sampled periodically.
	Stats(StoreStats)
}

// StoreStats are the figures of a store's LSM at one moment.
type StoreStats struct {
	WALBytesWritten uint64        // bytes written to the write-ahead log since the store opened
	WALSyncLatency  time.Duration // mean latency of the log's syncs since the last sample
	WALSyncs        uint64        // syncs of the write-ahead log since the store opened
	Compactions     int64         // compactions run since the store opened
	CompactionDebt  uint64        // estimated bytes compactions still need to write
	DiskUsage       uint64        // bytes of all files in the store's directory
	Tables          int           // tables in the store's catalog
}

// NopStore discards every measurement.
type NopStore struct{}

// Commit discards the measurement.
func (NopStore) Commit(int, time.Duration, bool) {}

// Stats discards the measurement.
func (NopStore) Stats(StoreStats) {}
