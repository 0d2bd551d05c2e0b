package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// asProgram, set in the environment, makes the test binary run the
// program (main) with its arguments instead of the tests: the -crash mode
// starts its writer as os.Executable(), which is then the test binary.
const asProgram = "STRATA_RESTART_EXAMPLE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asProgram) != "" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runProgram runs the program with args and returns what it printed; it
// fails the test if the program fails (log.Fatal exits with 1).
func runProgram(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asProgram+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("restart %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestRestart: a second run finds the first run's events.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	runProgram(t, "-dir", dir, "-n", "3")
	out := runProgram(t, "-dir", dir, "-n", "3")
	if !strings.Contains(out, ": 3 events from 1 runs") {
		t.Fatalf("the second run did not find the first run's 3 events:\n%s", out)
	}
}

var (
	killedRe   = regexp.MustCompile(`killed the writer with SIGKILL after it reported event (\d+) committed`)
	reopenedRe = regexp.MustCompile(`reopened: events 1 to (\d+) are there`)
)

// TestCrash runs the -crash mode: a child process adds events until it is
// killed with SIGKILL, and the reopened store holds every event the child
// reported committed (Sync), or a prefix of them (Buffered). The program
// checks it and fails otherwise; the test checks what it printed.
func TestCrash(t *testing.T) {
	for _, mode := range []string{"sync", "buffered"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-crash", "-dir", t.TempDir(), "-for", "300ms"}
			if mode == "buffered" {
				args = append(args, "-buffered")
			}
			out := runProgram(t, args...)
			k, r := killedRe.FindStringSubmatch(out), reopenedRe.FindStringSubmatch(out)
			if k == nil || r == nil {
				t.Fatalf("the program did not report a kill and a reopen:\n%s", out)
			}
			acked, _ := strconv.Atoi(k[1])
			found, _ := strconv.Atoi(r[1])
			t.Logf("%s: %d events acknowledged before the kill, %d found", mode, acked, found)
			if acked == 0 {
				t.Fatalf("the writer acknowledged nothing before the kill:\n%s", out)
			}
			if mode == "sync" && found < acked {
				t.Fatalf("Sync: %d events found, %d acknowledged:\n%s", found, acked, out)
			}
		})
	}
}
