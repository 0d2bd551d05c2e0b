package replicate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Set stores val under key, committed with pebble.Sync: it is on disk
// when Set returns. raft keeps its vote here (raft.go:2134).
func (s *LogStore) Set(key, val []byte) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.db.Set(stableKey(key), appendStable(nil, val), pebble.Sync); err != nil {
		return fmt.Errorf("replicate: set %q: %w", key, err)
	}
	return nil
}

// Get returns a copy of the value stored under key. For a key never set it
// returns nil and ErrKeyNotFound, whose text raft v1.7.2 checks for
// (errors.go has where); for a value whose record is not whole, a
// *CorruptStableError.
func (s *LogStore) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, closer, err := s.db.Get(stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("replicate: get %q: %w", key, err)
	}
	defer closer.Close()
	return decodeStable(key, v)
}

// SetUint64 stores val under key as 8 big-endian bytes, as Set does.
// raft keeps its current term here (raft.go:2143).
func (s *LogStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value SetUint64 stored under key. For a key never
// set it returns 0 and ErrKeyNotFound, as Get does; for a key whose value
// is not 8 bytes (it was given to Set), an error.
func (s *LogStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("replicate: stable key %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
