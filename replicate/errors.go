package replicate

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
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

// The errors of entries (entry.go).
var (
	// ErrUnsupportedVersion is what a *DecodeError matches for an entry
	// whose version byte is not EntryVersion: an entry written by a newer
	// node, or not an entry at all. The node must stop.
	ErrUnsupportedVersion = errors.New("replicate: unsupported entry version")

	// ErrUnknownKind is what a *DecodeError matches for an entry of a
	// kind this package does not know and that is not ignorable
	// (KindIgnorable): the node must stop rather than skip it, or its
	// state would differ from the others'. AppendEntry returns it for
	// such a kind too.
	ErrUnknownKind = errors.New("replicate: unknown entry kind")

	// ErrEntryTooLarge is what an *EntryTooLargeError matches.
	ErrEntryTooLarge = errors.New("replicate: entry too large")

	// ErrInvalidEntry is returned by AppendEntry, with nothing written,
	// for an Entry that breaks the rules of the format (see AppendEntry).
	ErrInvalidEntry = errors.New("replicate: invalid entry")
)

// DecodeError reports an entry that does not decode: DecodeEntry's only
// error. A node that meets one in a committed entry must stop.
type DecodeError struct {
	Offset int    // the offset in the entry of the field that is wrong
	What   string // what is wrong with it
	// Err is ErrUnsupportedVersion or ErrUnknownKind when it is one of
	// them, else nil.
	Err error
}

func (e *DecodeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("replicate: entry does not decode at byte %d: %s: %v", e.Offset, e.What, e.Err)
	}
	return fmt.Sprintf("replicate: entry does not decode at byte %d: %s", e.Offset, e.What)
}

// Unwrap returns e.Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// EntryTooLargeError is returned by AppendEntry, with nothing written, for
// an entry whose encoding would be larger than the limit.
type EntryTooLargeError struct {
	Size  int // the size of the entry's encoding, in bytes
	Limit int // the largest allowed
}

func (e *EntryTooLargeError) Error() string {
	return fmt.Sprintf("replicate: entry of %d bytes, more than the limit of %d", e.Size, e.Limit)
}

// Is reports that e is an ErrEntryTooLarge.
func (e *EntryTooLargeError) Is(target error) bool { return target == ErrEntryTooLarge }

// The errors of a Node's commits (node.go). A commit through a Node
// returns them wrapped ("journal: ..."), and a commit built on one that
// failed returns strata.ErrEarlierCommitFailed wrapping the first one's:
// compare with errors.Is and errors.As.
var (
	// ErrNotLeader is what a *NotLeaderError matches: the node could not
	// propose the commit, which is not in the log and never will be.
	ErrNotLeader = errors.New("replicate: not the leader")

	// ErrAmbiguous is what an *AmbiguousError matches: the commit's
	// change set was submitted to raft, and then leadership was lost,
	// the node shut down, or the entry was overtaken by another leader's:
	// it may or may not commit. It is never a failure: read to find out
	// (the change set applies on every node alike if it commits).
	ErrAmbiguous = errors.New("replicate: outcome unknown")

	// ErrConflict is reported for a change set whose precondition failed
	// when it applied (the table changed since the transaction read it):
	// it was skipped on every node. Retry the transaction.
	ErrConflict = errors.New("replicate: conflict")

	// ErrNotReady is returned, with nothing proposed, by a commit on the
	// leader while an earlier proposal's failure is still settling (its
	// successors in the commit queue fail with it) or while the node
	// applies an entry it did not propose. Node.Write retries it.
	ErrNotReady = errors.New("replicate: node not ready to propose")

	// ErrShutdown is returned by the commits of a Node that is closing or
	// closed that were not submitted to raft.
	ErrShutdown = errors.New("replicate: node shut down")

	// ErrStopped is what a *StoppedError matches: the node met an entry it
	// cannot apply and stopped applying (docs in Node).
	ErrStopped = errors.New("replicate: node stopped applying")

	// ErrNotPublished is returned, with the index, by a forwarded Write
	// whose change set committed at that index when its context ended (or
	// the node closed) before the node it ran on published the index. The
	// write is committed and never undone; a read on that node may not
	// see it yet (WaitApplied, ReadAtLeast).
	ErrNotPublished = errors.New("replicate: committed, not yet published on this node")
)

// NotLeaderError reports a commit on a node that is not the leader, or
// whose proposal raft refused as not leader: nothing was proposed.
type NotLeaderError struct {
	// Leader is the leader's address, or "" if this node knows none.
	Leader raft.ServerAddress
	// Err is raft's error, if raft returned one (raft.ErrNotLeader,
	// raft.ErrLeadershipTransferInProgress).
	Err error
}

func (e *NotLeaderError) Error() string {
	s := "replicate: not the leader"
	if e.Leader != "" {
		s += fmt.Sprintf(" (leader %s)", e.Leader)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports that e is an ErrNotLeader.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Unwrap returns raft's error.
func (e *NotLeaderError) Unwrap() error { return e.Err }

// AmbiguousError reports a commit whose change set was submitted and whose
// outcome is unknown (ErrAmbiguous).
type AmbiguousError struct {
	// Err is why the outcome is unknown: raft.ErrLeadershipLost,
	// raft.ErrRaftShutdown, or an earlier proposal's failure.
	Err error
}

func (e *AmbiguousError) Error() string {
	return "replicate: commit submitted, outcome unknown: " + e.Err.Error()
}

// Is reports that e is an ErrAmbiguous.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// Unwrap returns the cause.
func (e *AmbiguousError) Unwrap() error { return e.Err }

// StoppedError reports that a node stopped applying the log at Index,
// because of Err (a *DecodeError, or an entry that names a table the node
// has no binding for, or a commit of an apply that failed).
type StoppedError struct {
	Index uint64
	Err   error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("replicate: stopped applying at index %d: %v", e.Index, e.Err)
}

// Is reports that e is an ErrStopped.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

// Unwrap returns the cause.
func (e *StoppedError) Unwrap() error { return e.Err }

// notLeader returns the *NotLeaderError of this node, naming the leader it
// knows, with raft's error err.
func (n *Node) notLeader(err error) error {
	addr, _ := n.raft.LeaderWithID()
	return &NotLeaderError{Leader: addr, Err: err}
}
