package persist

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests re-execute their own binary as a child process (a second
// process on a store's directory; the crash test's writer). childEnv
// selects the child's mode, childDirEnv gives it the store's directory.
const (
	childEnv    = "STRATA_PERSIST_TEST_CHILD"
	childDirEnv = "STRATA_PERSIST_TEST_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChildMode(mode, os.Getenv(childDirEnv))
		os.Exit(0)
	}
	code := m.Run()
	if recoveryDir != "" {
		os.RemoveAll(recoveryDir)
	}
	if code == 0 {
		// Close stops every goroutine of a store.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runChildMode(mode, dir string) {
	switch mode {
	case "lock":
		childLock(dir)
	case "wal-tail":
		childWALTail(dir, false)
	case "wal-recycle":
		childWALTail(dir, true)
	case "crash":
		childCrash(dir, Sync{}, false)
	case "crash-buffered":
		childCrash(dir, Buffered{Interval: 5 * time.Millisecond}, false)
	case "loss-age":
		childCrash(dir, Buffered{Interval: lossAgeInterval}, true)
	default:
		fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
		os.Exit(2)
	}
}
