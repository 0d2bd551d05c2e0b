package persist

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cockroachdb/pebble/v2"
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
}

var _ pebble.Logger = (*pebbleLogger)(nil)

func (l *pebbleLogger) Infof(format string, args ...any) {
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
// *fatalPanic. It never returns.
func (l *pebbleLogger) Fatalf(format string, args ...any) {
	format = strings.TrimSpace(format)
	if !strings.HasPrefix(format, "pebble") {
		format = "pebble: " + format
	}
	err := fmt.Errorf(format, args...)
	l.log.Error("pebble: fatal error; the store refuses writes until it is reopened", "err", err)
	if l.onFatal != nil {
		l.onFatal(err)
	}
	panic(&fatalPanic{err: err})
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
func eventListener(log *slog.Logger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Error("pebble: background error", "err", err)
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
