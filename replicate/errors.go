package replicate

import (
	"errors"
	"fmt"
)

var (
	// ErrKeyNotFound is what StableStore.Get and GetUint64 return for a
	// key that was never set, with a nil value and 0. Its text is exactly
	// "not found": raft v1.7.2 tells a missing key from a failure by that
	// text (api.go:470, api.go:511, raft.go:1687, raft.go:1692), as its own
	// InmemStore.Get returns it. Compare with errors.Is.
	ErrKeyNotFound = errors.New("not found")

	// ErrClosed is returned by every method of a LogStore that was closed.
	ErrClosed = errors.New("replicate: log store closed")

	// ErrCorrupt is what every corruption error of this package matches
	// with errors.Is: *CorruptLogError and *CorruptStableError.
	ErrCorrupt = errors.New("replicate: corrupt log store")

	// ErrNotContiguous is returned, with nothing written, by StoreLogs for
	// entries whose indexes do not follow each other (or start at 0), and
	// by DeleteRange for a range that would leave a hole inside the log
	// (neither its head nor its tail). raft never asks either.
	ErrNotContiguous = errors.New("replicate: log indexes not contiguous")

	// ErrUnknownFormat is returned by Open for a store written in a layout
	// newer than this package knows.
	ErrUnknownFormat = errors.New("replicate: unknown log store format")
)

// CorruptLogError reports a log entry that cannot be trusted: its record
// fails its checksum or does not decode, holds another index than its key,
// or is missing from inside the log (a hole between FirstIndex and
// LastIndex). GetLog returns it rather than an entry that might be wrong;
// Open returns it when the checks on open find it.
type CorruptLogError struct {
	Index  uint64 // the entry's index
	Reason string // what is wrong with it
}

func (e *CorruptLogError) Error() string {
	return fmt.Sprintf("replicate: corrupt log entry %d: %s", e.Index, e.Reason)
}

// Is reports that e is an ErrCorrupt.
func (e *CorruptLogError) Is(target error) bool { return target == ErrCorrupt }

// CorruptStableError reports a stable value (raft's current term or vote)
// whose record fails its checksum or does not decode.
type CorruptStableError struct {
	Key    string // the stable key
	Reason string // what is wrong with its value
}

func (e *CorruptStableError) Error() string {
	return fmt.Sprintf("replicate: corrupt stable value %q: %s", e.Key, e.Reason)
}

// Is reports that e is an ErrCorrupt.
func (e *CorruptStableError) Is(target error) bool { return target == ErrCorrupt }
