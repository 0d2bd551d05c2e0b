package reconciler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/index"
)

// StatusKind is the state of an object's reconciliation: Pending,
// Refreshing, Done or Error. It is a struct so that it can only be
// converted to a string with String (as in cilium/statedb).
type StatusKind struct {
	kind uint8
}

// The kinds of Status.
var (
	// StatusKindUnset is the zero StatusKind: an object whose status was
	// never set. The reconciler treats it like Done: nothing to do.
	StatusKindUnset = StatusKind{0}
	// StatusKindPending: the object changed and waits for Update (or,
	// when deleted, Delete).
	StatusKindPending = StatusKind{1}
	// StatusKindRefreshing: the object is Done but its Update is to run
	// again (a refresh); it is reconciled in the background lane.
	StatusKindRefreshing = StatusKind{2}
	// StatusKindDone: the last Update succeeded.
	StatusKindDone = StatusKind{3}
	// StatusKindError: the last Update failed; Status.Error says why and
	// Status.Attempts how many attempts failed since the object changed.
	StatusKindError = StatusKind{4}
)

var statusKindNames = [...]string{"", "Pending", "Refreshing", "Done", "Error"}

// String returns "Pending", "Refreshing", "Done", "Error", or "" for
// StatusKindUnset.
func (k StatusKind) String() string {
	if int(k.kind) < len(statusKindNames) {
		return statusKindNames[k.kind]
	}
	return fmt.Sprintf("StatusKind(%d)", k.kind)
}

// MarshalText encodes the kind as its String, for JSON, YAML and text
// encodings.
func (k StatusKind) MarshalText() ([]byte, error) {
	if int(k.kind) >= len(statusKindNames) {
		return nil, fmt.Errorf("reconciler: invalid StatusKind %d", k.kind)
	}
	return []byte(statusKindNames[k.kind]), nil
}

// UnmarshalText decodes a kind encoded by MarshalText. An unknown name is
// an error.
func (k *StatusKind) UnmarshalText(b []byte) error {
	for i, name := range statusKindNames {
		if string(b) == name {
			k.kind = uint8(i)
			return nil
		}
	}
	return fmt.Errorf("reconciler: unknown status kind %q", b)
}

var statusKindKeys = [...]index.Key{index.Key("?"), index.Key("P"), index.Key("R"), index.Key("D"), index.Key("E")}

// Key returns a one-byte key for the kind, for a table index on status
// kinds (as statedb's). It does not allocate.
func (k StatusKind) Key() index.Key {
	if int(k.kind) < len(statusKindKeys) {
		return statusKindKeys[k.kind]
	}
	return statusKindKeys[0]
}

// Status is an object's reconciliation status. Embed it in the objects of
// the reconciled table, and give the reconciler functions that get and set
// it (Config.GetObjectStatus, Config.SetObjectStatus); StatusSet holds
// several, for objects that several reconcilers work on.
//
// Whoever changes an object so that it needs reconciling sets its status
// to StatusPending(). The reconciler writes the outcome back: StatusDone,
// or an Error status with the error and the number of failed attempts,
// which is what lets a reconciler started later (after a restart of a
// durable table) resume the object's backoff instead of starting over.
//
// Its JSON and YAML have statedb's field order (updated-at, error, id,
// kind; then attempts and terminal, which statedb's Status lacks, left
// out when zero), so that a status Strata encodes reads as statedb's did.
type Status struct {
	// UpdatedAt is when the status was set.
	UpdatedAt time.Time `json:"updated-at" yaml:"updated-at"`
	// Error is the error of the last attempt if Kind is Error, else nil.
	Error *string `json:"error,omitempty" yaml:"error,omitempty"`
	// ID identifies this setting of the status. Every constructor draws
	// a new one; the reconciler compares IDs to tell a change of the
	// object (a new Pending status) from a write that only changed
	// another reconciler's status.
	ID uint64 `json:"id,omitempty" yaml:"id,omitempty"`
	// Kind is the state of the reconciliation.
	Kind StatusKind `json:"kind" yaml:"kind"`
	// Attempts counts the attempts that failed since the object last
	// changed, when Kind is Error; 0 otherwise.
	Attempts uint32 `json:"attempts,omitempty" yaml:"attempts,omitempty"`
	// Terminal is set when the error was marked Terminal by the
	// operation: the reconciler does not retry until the object changes.
	Terminal bool `json:"terminal,omitempty" yaml:"terminal,omitempty"`
}

// IsPendingOrRefreshing reports whether the object waits for the
// reconciler: its Kind is Pending or Refreshing.
func (s Status) IsPendingOrRefreshing() bool {
	return s.Kind == StatusKindPending || s.Kind == StatusKindRefreshing
}

// GetError returns the error message, or "" if there is none.
func (s Status) GetError() string {
	if s.Error == nil {
		return ""
	}
	return *s.Error
}

// String returns the kind, with the error and attempts for Error, and how
// long ago the status was set.
func (s Status) String() string {
	ago := prettySince(s.UpdatedAt)
	if s.Kind == StatusKindError {
		t := ""
		if s.Terminal {
			t = ", terminal"
		}
		return fmt.Sprintf("Error: %s (%d attempts%s, %s ago)", s.GetError(), s.Attempts, t, ago)
	}
	return fmt.Sprintf("%s (%s ago)", s.Kind, ago)
}

func prettySince(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// idGen draws status IDs. It starts at a random point so that the IDs of
// one process do not repeat those a previous process persisted in a
// durable table: a repeated ID would make a real change look like a
// status-only write. IDs stay below 1<<idTagShift: the bits above hold a
// reconciler's tag in the statuses it writes (tagged).
var idGen atomic.Uint64

const (
	idTagShift = 48
	idMask     = 1<<idTagShift - 1
)

func init() { idGen.Store(rand.Uint64N(1 << (idTagShift - 2))) }

func nextID() uint64 {
	for {
		if id := idGen.Add(1) & idMask; id != 0 {
			return id
		}
	}
}

// nextIDs reserves n consecutive IDs and returns the first.
func nextIDs(n int) uint64 {
	for {
		last := idGen.Add(uint64(n)) & idMask
		if first := last - uint64(n) + 1; first != 0 && first <= last {
			return first
		}
	}
}

// tagGen hands out reconciler tags, unique within the process.
var tagGen atomic.Uint32

func init() { tagGen.Store(rand.Uint32N(1 << 15)) }

// newTag returns a tag for a reconciler: 1 to 65535.
func newTag() uint64 {
	for {
		if t := uint64(tagGen.Add(1)) & 0xffff; t != 0 {
			return t << idTagShift
		}
	}
}

// StatusPending returns a Pending status with a new ID: set it on an
// object that changed so that the reconciler updates the outside world.
func StatusPending() Status {
	return Status{Kind: StatusKindPending, UpdatedAt: time.Now(), ID: nextID()}
}

// StatusRefreshing returns a Refreshing status with a new ID: the object
// is reconciled again although it did not change (the reconciler's
// refresh sets it; Update can tell a refresh by it).
func StatusRefreshing() Status {
	return Status{Kind: StatusKindRefreshing, UpdatedAt: time.Now(), ID: nextID()}
}

// StatusDone returns a Done status with a new ID.
func StatusDone() Status {
	return Status{Kind: StatusKindDone, UpdatedAt: time.Now(), ID: nextID()}
}

// StatusError returns an Error status with a new ID, err's message, and
// one attempt.
func StatusError(err error) Status {
	msg := "<nil>"
	if err != nil {
		msg = err.Error()
	}
	return Status{Kind: StatusKindError, UpdatedAt: time.Now(), Error: &msg, ID: nextID(), Attempts: 1}
}

// statusVersion is the first byte of Status's binary encoding.
const statusVersion = 1

// ErrStatusEncoding: DecodeStatus or UnmarshalBinary was given bytes that
// are not a Status's encoding.
var ErrStatusEncoding = errors.New("malformed status encoding")

// AppendBinary appends the status's binary encoding to b: compact,
// self-delimiting (so that it can sit inside a larger encoding, see
// DecodeStatus) and versioned. It implements encoding.BinaryAppender, for
// codecs of durable tables.
func (s Status) AppendBinary(b []byte) ([]byte, error) {
	flags := byte(0)
	if s.Error != nil {
		flags |= 1
	}
	if s.Terminal {
		flags |= 2
	}
	if s.UpdatedAt.IsZero() {
		flags |= 4
	}
	b = append(b, statusVersion, s.Kind.kind, flags)
	b = binary.AppendUvarint(b, s.ID)
	b = binary.AppendUvarint(b, uint64(s.Attempts))
	if !s.UpdatedAt.IsZero() {
		b = binary.AppendVarint(b, s.UpdatedAt.UnixNano())
	}
	if s.Error != nil {
		b = binary.AppendUvarint(b, uint64(len(*s.Error)))
		b = append(b, *s.Error...)
	}
	return b, nil
}

// UnmarshalBinary decodes a status encoded by AppendBinary; b must hold
// exactly one.
func (s *Status) UnmarshalBinary(b []byte) error {
	st, n, err := DecodeStatus(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("reconciler: %d bytes after the status: %w", len(b)-n, ErrStatusEncoding)
	}
	*s = st
	return nil
}

// DecodeStatus decodes the status encoded by AppendBinary at the start of
// b, and returns it with the number of bytes it took.
func DecodeStatus(b []byte) (Status, int, error) {
	bad := func(what string) (Status, int, error) {
		return Status{}, 0, fmt.Errorf("reconciler: status %s: %w", what, ErrStatusEncoding)
	}
	if len(b) < 3 {
		return bad("too short")
	}
	if b[0] != statusVersion {
		return bad(fmt.Sprintf("version %d", b[0]))
	}
	var s Status
	if int(b[1]) >= len(statusKindNames) {
		return bad(fmt.Sprintf("kind %d", b[1]))
	}
	s.Kind = StatusKind{b[1]}
	flags := b[2]
	if flags&^7 != 0 {
		return bad(fmt.Sprintf("flags %#x", flags))
	}
	n := 3
	id, k := binary.Uvarint(b[n:])
	if k <= 0 {
		return bad("id")
	}
	s.ID, n = id, n+k
	att, k := binary.Uvarint(b[n:])
	if k <= 0 || att > 1<<32-1 {
		return bad("attempts")
	}
	s.Attempts, n = uint32(att), n+k
	if flags&4 == 0 {
		ns, k := binary.Varint(b[n:])
		if k <= 0 {
			return bad("time")
		}
		s.UpdatedAt, n = time.Unix(0, ns), n+k
	}
	s.Terminal = flags&2 != 0
	if flags&1 != 0 {
		l, k := binary.Uvarint(b[n:])
		if k <= 0 || l > uint64(len(b)-n-k) {
			return bad("error")
		}
		n += k
		msg := string(b[n : n+int(l)])
		s.Error, n = &msg, n+int(l)
	}
	return s, n, nil
}
