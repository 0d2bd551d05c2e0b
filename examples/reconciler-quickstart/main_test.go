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

// TestREADME checks that the root README's Reconciler section shows this
// program, byte for byte, so that what a newcomer copies compiles.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte("## Reconciler\n"))
	if !ok {
		t.Fatal("README.md has no Reconciler section")
	}
	_, block, ok := bytes.Cut(after, []byte("```go\n"))
	if !ok {
		t.Fatal("the Reconciler section has no Go block")
	}
	block, _, ok = bytes.Cut(block, []byte("```"))
	if !ok {
		t.Fatal("the Reconciler section's Go block does not end")
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block, program) {
		t.Fatalf("README.md's Reconciler section differs from examples/reconciler-quickstart/main.go: copy the file into the README")
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
