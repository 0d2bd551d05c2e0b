package httpapi

import (
	"fmt"
	"net/http"
	"slices"
)

// Access is what a request asks to do, as Options.Authorize is told.
type Access uint8

const (
	// AccessRead: read the database (the summary, tables, objects, the
	// JSON dump, the sampler's history, the web inspector).
	AccessRead Access = iota + 1
	// AccessWatch: wait for changes (a change stream, a blocking read);
	// it includes reading what is watched.
	AccessWatch
	// AccessSnapshot: download a snapshot of the whole database.
	AccessSnapshot
	// AccessWrite: insert or delete objects.
	AccessWrite
)

var accessNames = [...]string{"", "read", "watch", "snapshot", "write"}

// String returns the access's name: read, watch, snapshot or write.
func (a Access) String() string {
	if int(a) < len(accessNames) && a != 0 {
		return accessNames[a]
	}
	return fmt.Sprintf("Access(%d)", a)
}

// DefaultAuthorize is the policy of a handler without Options.Authorize:
// it allows reads and watches, and refuses snapshots and writes with
// ErrForbidden.
func DefaultAuthorize(r *http.Request, a Access) error {
	if a == AccessRead || a == AccessWatch {
		return nil
	}
	return fmt.Errorf("%w: %s access is not allowed by default (set Options.Authorize)", ErrForbidden, a)
}

// Allow returns an Authorize function that allows the accesses given and
// refuses the others with ErrForbidden, whoever asks: for a handler whose
// listener already admits only those who may (a unix socket of mode 0600,
// a loopback address, mutual TLS).
func Allow(accesses ...Access) func(*http.Request, Access) error {
	allowed := slices.Clone(accesses)
	return func(r *http.Request, a Access) error {
		if slices.Contains(allowed, a) {
			return nil
		}
		return fmt.Errorf("%w: %s access", ErrForbidden, a)
	}
}
