package stratacli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// The exit codes of the strata command, which Run returns and ExitCode
// computes from an error. Scripts may rely on them.
const (
	// ExitOK: the command did what it was asked; check found no error.
	ExitOK = 0
	// ExitError: any failure the other codes do not name.
	ExitError = 1
	// ExitUsage: the command line is wrong (an unknown command or flag, a
	// missing argument, flags that exclude each other, a key that does not
	// parse), or asks what the source cannot answer.
	ExitUsage = 2
	// ExitCorrupt: the store or snapshot is damaged: a checksum failed, a
	// record is malformed, or check found errors.
	ExitCorrupt = 3
	// ExitNotFound: the store, the snapshot file, the table or the key
	// does not exist, or the database asked for its cluster is not a
	// cluster member.
	ExitNotFound = 4
	// ExitConnect: the running database named by --addr cannot be reached,
	// or refused the request.
	ExitConnect = 5
	// ExitLocked: the store directory is in use by a running process;
	// query that process with --addr, or read a snapshot of it.
	ExitLocked = 6
)

// Errors of the command, besides those of persist and strata. They are
// wrapped with context; test them with errors.Is.
var (
	// ErrUsage: the command line is wrong.
	ErrUsage = errors.New("usage")
	// ErrNotFound: the table or the key asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrErrorsFound: check found errors (each was printed).
	ErrErrorsFound = errors.New("errors found")
	// ErrConnect: the database named by --addr cannot be reached.
	ErrConnect = errors.New("cannot connect")
	// ErrKeyKindUnknown: a key was typed as text for a table whose Go type
	// the command does not know. A store records no key kinds, so the
	// text cannot be encoded: the message says to name the kind
	// (--key-format string, uint64, addr, …) or to give the key in hex
	// (--key-format hex). Exit code 2.
	ErrKeyKindUnknown = errors.New("key kind unknown")
	// ErrIndexNotStored: a query asked for an index other than the
	// primary of a stored table (or any query by key of a snapshot's
	// table) whose Go type the command does not know. A store holds
	// objects under their primary keys only, and a snapshot under none;
	// a secondary index is computed by the application's index function.
	// The message names the table and the index, and the ways out: the
	// primary index, --addr, or an application's command with
	// WithTable. Exit code 2.
	ErrIndexNotStored = errors.New("index not stored")
	// ErrTypeNeeded: snapshot import of tables whose Go types the command
	// does not know, and whose keys it was not told how to compute (--key,
	// for tables stored as JSON). A snapshot records no primary keys and a
	// store keeps each object under its primary key, which only the
	// application's primary index computes. The message names the tables.
	// Exit code 2.
	ErrTypeNeeded = errors.New("table type needed")
)

// ExitCode returns the exit code for an error returned by the command: 0
// for nil, then by the first of these it wraps: usage errors (ErrUsage,
// ErrKeyKindUnknown, ErrIndexNotStored, ErrTypeNeeded, and the strata and
// index errors of a bad query or key) 2, damage
// (persist.ErrCorrupt, persist.ErrCorruptSnapshot, ErrErrorsFound) 3,
// something missing (ErrNotFound, ErrNotClusterMember, persist.ErrNoStore,
// persist.ErrTableUnknown, persist.ErrSnapshotTableMissing,
// strata.ErrTableNotFound, fs.ErrNotExist) 4, ErrConnect 5,
// persist.ErrLocked 6, anything else 1.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, persist.ErrLocked):
		return ExitLocked
	case errors.Is(err, ErrUsage), errors.Is(err, ErrKeyKindUnknown), errors.Is(err, ErrIndexNotStored), errors.Is(err, ErrTypeNeeded),
		errors.Is(err, index.ErrParseKey), errors.Is(err, strata.ErrIndexNotFound),
		errors.Is(err, strata.ErrNoFromString), errors.Is(err, strata.ErrInvalidQuery), isCobraUsage(err),
		errors.Is(err, strata.ErrNoQueries), errors.Is(err, strata.ErrMixedIndexes):
		return ExitUsage
	case errors.Is(err, persist.ErrCorrupt), errors.Is(err, persist.ErrCorruptSnapshot), errors.Is(err, ErrErrorsFound):
		return ExitCorrupt
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNotClusterMember), errors.Is(err, persist.ErrNoStore), errors.Is(err, persist.ErrTableUnknown),
		errors.Is(err, persist.ErrSnapshotTableMissing), errors.Is(err, strata.ErrTableNotFound), errors.Is(err, fs.ErrNotExist):
		return ExitNotFound
	case errors.Is(err, ErrConnect):
		return ExitConnect
	case errors.Is(err, context.Canceled):
		return ExitError
	}
	return ExitError
}

// isCobraUsage reports whether err is one of cobra's own errors about the
// command line, which it does not type: an unknown command, flag or
// argument.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// usagef returns an error wrapping ErrUsage.
func usagef(format string, args ...any) error {
	return &wrapped{msg: fmt.Sprintf(format, args...), err: ErrUsage}
}

// notFoundf returns an error wrapping ErrNotFound.
func notFoundf(format string, args ...any) error {
	return &wrapped{msg: fmt.Sprintf(format, args...), err: ErrNotFound}
}

// wrapped is an error with its own message that wraps err (whose text is
// not repeated: "usage: " in front of every message says nothing).
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
