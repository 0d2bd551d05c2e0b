package persist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// pebbleLogger carries Pebble's messages to slog: Infof at Debug level
// (Pebble is chatty about routine work), Errorf at Error level.
//
// Fatalf never returns. Pebble calls it when it cannot go on safely, such
// as after a failed write or sync of its log, and carries on as if it had
// succeeded if it returns: a Fatalf that returns would make a commit whose
// sync failed look durable. Fatalf logs the error, marks the store failed
// (onFatal), and panics with a *fatalPanic. The store's own calls into
// Pebble (commit, the periodic sync, Register, Checkpoint, Close) recover
// that panic and return the error, wrapped with ErrStoreFailed; a Fatalf
// raised on one of Pebble's own goroutines (a flush or a compaction that
// cannot write its manifest) is not recovered and ends the process, as
// Pebble's default logger does with os.Exit.
type pebbleLogger struct {
	log     *slog.Logger
	onFatal func(error)
	// fs is the store's file system, in which walStopped reads the log
	// that recovery stopped in; nil in tests of the logger alone.
	fs vfs.FS
}

var _ pebble.Logger = (*pebbleLogger)(nil)

func (l *pebbleLogger) Infof(format string, args ...any) {
	if strings.Contains(format, walStoppedMessage) {
		for _, a := range args {
			if off, ok := a.(wal.Offset); ok {
				l.walStopped(off)
			}
		}
	}
	l.logf(slog.LevelDebug, format, args)
}

func (l *pebbleLogger) Errorf(format string, args ...any) {
	l.logf(slog.LevelError, format, args)
}

func (l *pebbleLogger) logf(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.Log(ctx, level, "pebble: "+strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Fatalf logs at Error level, marks the store failed and panics with a
// *fatalPanic. It never returns. The error and the Error line carry the
// message's first line; the rest (Pebble's stack traces) goes to a Debug
// line.
func (l *pebbleLogger) Fatalf(format string, args ...any) {
	format = strings.TrimSpace(format)
	if !strings.HasPrefix(format, "pebble") {
		format = "pebble: " + format
	}
	full := fmt.Sprintf(format, args...)
	var causes []error
	for _, a := range args {
		if e, ok := a.(error); ok {
			causes = append(causes, e)
		}
	}
	err := newPebbleError(full, causes...)
	l.log.Error("pebble: fatal error; the store refuses writes until it is reopened", "err", err)
	if err.Error() != full {
		l.log.Debug("pebble: fatal error in full", "err", full)
	}
	if l.onFatal != nil {
		l.onFatal(err)
	}
	panic(&fatalPanic{err: err})
}

// pebbleError is an error of Pebble as the store reports it: by the first
// line of its message (Pebble's errors print their stack traces on the
// lines after it), wrapping the errors it came from, and ErrCorrupt if
// Pebble found damaged data.
type pebbleError struct {
	msg    string
	causes []error
}

func (e *pebbleError) Error() string   { return e.msg }
func (e *pebbleError) Unwrap() []error { return e.causes }

// newPebbleError returns the pebbleError of a message of Pebble and the
// errors it came from.
func newPebbleError(msg string, causes ...error) error {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	for _, c := range causes {
		if pebble.IsCorruptionError(c) {
			return &pebbleError{msg: ErrCorrupt.Error() + ": " + msg, causes: append([]error{ErrCorrupt}, causes...)}
		}
	}
	return &pebbleError{msg: msg, causes: causes}
}

// fromPebble returns err, an error a call into Pebble returned, as the
// store reports it (pebbleError), or nil. A store Pebble cannot read
// (a malformed MANIFEST, a missing format marker, which Pebble reports as
// a format it no longer supports) is reported as damaged or foreign, with
// ErrCorrupt.
func fromPebble(err error) error {
	if err == nil {
		return nil
	}
	var pe *pebbleError
	if errors.As(err, &pe) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "malformed manifest") || strings.Contains(msg, "no longer supported") ||
		strings.Contains(msg, "not pristine") {
		first := msg
		if i := strings.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
		}
		return &pebbleError{msg: "damaged or foreign store: " + ErrCorrupt.Error() + ": " + first, causes: []error{ErrCorrupt, err}}
	}
	return newPebbleError(msg, err)
}

// fatalPanic is the value pebbleLogger.Fatalf panics with.
type fatalPanic struct{ err error }

func (p *fatalPanic) Error() string { return "persist: " + p.err.Error() }

// recoverFatal, deferred, turns a Fatalf panic into *err (wrapped with
// ErrStoreFailed). Any other panic goes on.
func recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	p, ok := r.(*fatalPanic)
	if !ok {
		panic(r)
	}
	*err = fmt.Errorf("%w: %w", ErrStoreFailed, p.err)
}

// eventListener logs the events of Pebble that an operator should see:
// background errors, slow disks, write stalls, low disk space.
func eventListener(log *slog.Logger, onCorrupt func(error)) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Error("pebble: background error", "err", fromPebble(err))
		},
		// Pebble's default makes a corruption fatal (Fatalf), which leaves
		// the reader that found it holding references, so that Pebble
		// cannot be closed afterwards. Here the read that found it returns
		// a corruption error (ErrCorrupt), and the store refuses writes.
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			err := newPebbleError(info.String(), info.Details)
			log.Error("pebble: damaged data", "path", info.Path, "err", err)
			log.Debug("pebble: damaged data in full", "details", fmt.Sprintf("%+v", info.Details))
			if onCorrupt != nil {
				onCorrupt(err)
			}
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			log.Warn("pebble: disk slow", "info", info.String())
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			log.Warn("pebble: write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			log.Info("pebble: write stall ended")
		},
		LowDiskSpace: func(info pebble.LowDiskSpaceInfo) {
			log.Warn("pebble: low disk space", "available", info.AvailBytes, "total", info.TotalBytes, "percent", info.PercentThreshold)
		},
		PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			log.Warn("pebble: possible API misuse", "info", info.String())
		},
	}
}
