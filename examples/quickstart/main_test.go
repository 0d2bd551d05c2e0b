package main

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestREADME checks that the root README's Quick start is this program,
// byte for byte, so that what a newcomer copies compiles.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte("## Quick start\n"))
	if !ok {
		t.Fatal("README.md has no Quick start section")
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
		t.Fatalf("README.md's Quick start differs from examples/quickstart/main.go: copy the file into the README")
	}
}

// TestRun runs the program: it terminates.
func TestRun(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		main()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // only a hang reaches it
		t.Fatal("the quick start did not terminate in a minute")
	}
}
