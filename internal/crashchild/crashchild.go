// Package crashchild runs the child process of Strata's crash tests: the
// test binary itself, started again with environment variables that give
// it a role (a writer on a store's directory), which prints one line per
// event on its stdout ("ack ..." after each acknowledged write, "error
// ..." if it fails) until the parent kills it with SIGKILL, at a moment
// the test picks: a delay after the start, or after the first
// acknowledgement. Run does one such cycle and returns every line the
// child printed before its death; the test then reopens what the child
// wrote and checks it against those lines.
//
// The child's side is the test package's own: its TestMain reads the
// variables, runs the role and never returns to m.Run.
//
// Tests only: nothing in production imports it.
package crashchild

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout is how long Run lets a child run when Options.Timeout is
// zero: a child that is not killed by then (it never acknowledged
// anything) made no progress.
const DefaultTimeout = 60 * time.Second

// lineBuffer is how many lines the reader of the child's stdout holds for
// Run: enough that a child printing fast never waits for the parent.
const lineBuffer = 1 << 16

// Kill is when Run kills the child: After its start if FromStart, else
// After its first acknowledgement.
type Kill struct {
	FromStart bool
	After     time.Duration
}

// RandomKill is the crash tests' kill: one time in ten at a random moment
// within fromStart of the start (which may fall while the child opens its
// store), the others at a random moment within afterAck of the first
// acknowledgement (in the middle of its writes). It draws from rng
// rng.IntN(10), then one rng.Int64N.
func RandomKill(rng *rand.Rand, fromStart, afterAck time.Duration) Kill {
	if rng.IntN(10) == 0 {
		return Kill{FromStart: true, After: time.Duration(rng.Int64N(int64(fromStart)))}
	}
	return Kill{After: time.Duration(rng.Int64N(int64(afterAck)))}
}

// Options describe one child and when to kill it.
type Options struct {
	// Env is added to the test's environment: the variables that select
	// the child's role ("NAME=value" each).
	Env []string
	// IsAck reports whether a line is an acknowledgement, the first of
	// which starts Kill's delay unless Kill.FromStart.
	IsAck func(line string) bool
	// Kill is when to kill the child.
	Kill Kill
	// Timeout is how long the child may run before Run gives up on it
	// (DefaultTimeout if zero).
	Timeout time.Duration
}

// Result is what the parent saw of one child.
type Result struct {
	// Lines are the lines the child printed, in order, including those
	// still in the pipe when it was killed, and excluding an error line.
	Lines []string
	// Killed is when Run sent SIGKILL (or, if the child had exited by
	// itself, found it gone).
	Killed time.Time
	// State is the child's exit state: killed by SIGKILL, normally.
	State *os.ProcessState
}

// Run starts the test binary as a child (no test runs in it: its TestMain
// acts on opts.Env), reads the lines it prints, kills it with SIGKILL at
// opts.Kill, reads the lines it printed before it died, and waits for it.
//
// The error is the child's: a line it printed starting with "error" (which
// ends the cycle at once, and also counts if read after the kill), its
// exit before the kill (with what it wrote on stderr), or the timeout. The
// result holds what was read either way, if the child started.
func Run(opts Options) (Result, error) {
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), opts.Env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	lines := make(chan string, lineBuffer)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	var (
		r         Result
		kill      <-chan time.Time
		childErr  error
		exited    bool // the child closed its stdout before the kill
		errorLine = func(line string) error {
			if strings.HasPrefix(line, "error") {
				return errors.New(line)
			}
			return nil
		}
	)
	if opts.Kill.FromStart {
		kill = time.After(opts.Kill.After)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				exited = true
				break loop
			}
			if childErr = errorLine(line); childErr != nil {
				break loop
			}
			r.Lines = append(r.Lines, line)
			if kill == nil && opts.IsAck(line) {
				kill = time.After(opts.Kill.After)
			}
		case <-kill:
			break loop
		case <-timer.C:
			childErr = fmt.Errorf("child made no progress in %v", timeout)
			break loop
		}
	}
	r.Killed = time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	// Lines printed before the kill are still in the pipe.
	for line := range lines {
		if err := errorLine(line); err != nil {
			if childErr == nil {
				childErr = err
			}
			continue
		}
		r.Lines = append(r.Lines, line)
	}
	// Wait, after the last read of the pipe, closes it, and ends the copy
	// of stderr: stderr can be read after it.
	cmd.Wait()
	r.State = cmd.ProcessState
	if exited && childErr == nil {
		childErr = fmt.Errorf("child exited: %s", stderr.String())
	}
	return r, childErr
}
