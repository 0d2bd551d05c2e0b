package crashchild

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// roleEnv selects the role of this package's own test binary run as a
// child.
const roleEnv = "STRATA_CRASHCHILD_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		child(role)
		fmt.Fprintf(os.Stderr, "child %s returned\n", role)
		os.Exit(2)
	}
	// Run's reader of the child's stdout ends before Run returns.
	goleak.VerifyTestMain(m)
}

// child plays a role; all but "exit" block until they are killed.
func child(role string) {
	switch role {
	case "acks": // acknowledges forever
		fmt.Println("ready")
		for i := 1; ; i++ {
			fmt.Printf("ack %d\n", i)
			time.Sleep(time.Millisecond)
		}
	case "burst": // 100 lines in one write, shorter than a pipe's atomic write
		var b strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&b, "ack %d\n", i)
		}
		if _, err := os.Stdout.WriteString(b.String()); err != nil {
			fmt.Printf("error %v\n", err)
		}
	case "error": // fails, and does not exit
		fmt.Println("ready")
		fmt.Println("error: the disk is on fire")
	case "exit": // exits by itself, with a word on stderr
		fmt.Println("ready")
		fmt.Fprintln(os.Stderr, "exiting early")
		os.Exit(3)
	case "silent": // says nothing
	}
	time.Sleep(time.Hour)
}

func isAck(line string) bool { return strings.HasPrefix(line, "ack ") }

// killed fails the test unless the child died of SIGKILL.
func killed(t *testing.T, r Result) {
	t.Helper()
	if r.State == nil {
		t.Fatal("no exit state")
	}
	if ws, ok := r.State.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("child ended with %v, not SIGKILL", r.State)
	}
}

// TestKillAfterAck: the kill comes its delay after the first ack, and the
// lines are the child's, in order, with none missing.
func TestKillAfterAck(t *testing.T) {
	start := time.Now()
	r, err := Run(Options{Env: []string{roleEnv + "=acks"}, IsAck: isAck, Kill: Kill{After: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	killed(t, r)
	if len(r.Lines) < 2 || r.Lines[0] != "ready" {
		t.Fatalf("lines %q", r.Lines)
	}
	for i, line := range r.Lines[1:] {
		if want := "ack " + strconv.Itoa(i+1); line != want {
			t.Fatalf("line %d is %q, want %q", i+1, line, want)
		}
	}
	if d := r.Killed.Sub(start); d < 50*time.Millisecond {
		t.Errorf("killed %v after the start, before the delay after the first ack", d)
	}
	t.Logf("%d acks before the kill", len(r.Lines)-1)
}

// TestKillDrains: the lines in the pipe at the kill are read.
func TestKillDrains(t *testing.T) {
	r, err := Run(Options{Env: []string{roleEnv + "=burst"}, IsAck: isAck, Kill: Kill{}})
	if err != nil {
		t.Fatal(err)
	}
	killed(t, r)
	if len(r.Lines) != 100 || r.Lines[99] != "ack 100" {
		t.Errorf("%d lines, want 100: %q", len(r.Lines), r.Lines)
	}
}

// TestKillFromStart: a kill from the start needs no ack.
func TestKillFromStart(t *testing.T) {
	r, err := Run(Options{Env: []string{roleEnv + "=silent"}, IsAck: isAck, Kill: Kill{FromStart: true, After: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	killed(t, r)
	if len(r.Lines) != 0 {
		t.Errorf("lines %q", r.Lines)
	}
}

// TestErrorLine: a line starting with "error" is the child's error and
// ends the cycle at once; the child is killed.
func TestErrorLine(t *testing.T) {
	start := time.Now()
	r, err := Run(Options{Env: []string{roleEnv + "=error"}, IsAck: isAck, Kill: Kill{FromStart: true, After: time.Minute}})
	if err == nil || err.Error() != "error: the disk is on fire" {
		t.Fatalf("error %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("Run waited for the kill after the error line")
	}
	killed(t, r)
	if len(r.Lines) != 1 || r.Lines[0] != "ready" {
		t.Errorf("lines %q", r.Lines)
	}
}

// TestExited: a child that exits by itself is an error, which says what it
// wrote on stderr.
func TestExited(t *testing.T) {
	r, err := Run(Options{Env: []string{roleEnv + "=exit"}, IsAck: isAck, Kill: Kill{After: time.Minute}})
	if err == nil || !strings.Contains(err.Error(), "child exited: exiting early") {
		t.Fatalf("error %v", err)
	}
	if r.State == nil || r.State.ExitCode() != 3 {
		t.Errorf("exit state %v", r.State)
	}
	if len(r.Lines) != 1 || r.Lines[0] != "ready" {
		t.Errorf("lines %q", r.Lines)
	}
}

// TestTimeout: a child that never acknowledges is killed at the timeout,
// an error.
func TestTimeout(t *testing.T) {
	r, err := Run(Options{Env: []string{roleEnv + "=silent"}, IsAck: isAck, Kill: Kill{After: time.Millisecond}, Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no progress in 100ms") {
		t.Fatalf("error %v", err)
	}
	killed(t, r)
}

// TestRandomKill: one kill in ten from the start, within its bound; the
// others after the first ack, within theirs; a seed draws the same kills.
func TestRandomKill(t *testing.T) {
	draw := func() []Kill {
		rng := rand.New(rand.NewPCG(1, 2))
		var k []Kill
		for range 10000 {
			k = append(k, RandomKill(rng, 40*time.Millisecond, 30*time.Millisecond))
		}
		return k
	}
	kills := draw()
	early := 0
	for _, k := range kills {
		bound := 30 * time.Millisecond
		if k.FromStart {
			early++
			bound = 40 * time.Millisecond
		}
		if k.After < 0 || k.After >= bound {
			t.Fatalf("kill %+v out of bounds", k)
		}
	}
	if early < 800 || early > 1200 {
		t.Errorf("%d kills of 10000 from the start, want about 1000", early)
	}
	if !slices.Equal(kills, draw()) {
		t.Error("the same seed drew other kills")
	}
}
