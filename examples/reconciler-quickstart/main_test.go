package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: the
// program must stop every reconciler and worker it starts.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestREADME checks that reconciler/README.md's Quick start shows this
// program, byte for byte, so that what a newcomer copies compiles.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../reconciler/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte("## Quick start\n"))
	if !ok {
		t.Fatal("reconciler/README.md has no Quick start section")
	}
	_, block, ok := bytes.Cut(after, []byte("```go\n"))
	if !ok {
		t.Fatal("the Quick start has no Go block")
	}
	block, _, ok = bytes.Cut(block, []byte("```"))
	if !ok {
		t.Fatal("the Quick start's Go block does not end")
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block, program) {
		t.Fatalf("reconciler/README.md's Quick start differs from examples/reconciler-quickstart/main.go: copy the file into the README")
	}
}

// TestRun runs the program: it reconciles its one object and terminates.
func TestRun(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		main()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the reconciler quick start did not terminate in a minute")
	}
}
