package main

import (
	"bytes"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestREADME checks that the Quick start of persist's README is this
// program, byte for byte, so that what a newcomer copies compiles.
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
		t.Fatal("persist/README.md's Quick start differs from persist/examples/quickstart/main.go: copy the file into the README")
	}
}

// TestRun runs the program: each run finds what the runs before it
// committed, and it terminates.
func TestRun(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		out <- b
	}()
	main()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Stdout = stdout
	if got, want := string(<-out), "found []\nfound [a]\nfound [a b]\n"; got != want {
		t.Fatalf("the program printed\n%s\nwant\n%s", got, want)
	}
}
