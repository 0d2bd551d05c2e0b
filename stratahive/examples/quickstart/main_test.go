package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestREADME checks that stratahive/README.md's Quick start shows this
// program, byte for byte, so that what a newcomer copies compiles.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte("## Quick start\n"))
	if !ok {
		t.Fatal("stratahive/README.md has no Quick start section")
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
		t.Fatalf("stratahive/README.md's Quick start differs from stratahive/examples/quickstart/main.go: copy the file into the README")
	}
}

// TestRun runs the program twice on one store: it greets, stores the
// greeting durably, and terminates each time.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	args, stdout := os.Args, os.Stdout
	defer func() { os.Args, os.Stdout = args, stdout }()
	for run := range 2 {
		out, err := os.Create(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		os.Args = []string{"quickstart", "--strata-persist-dir", filepath.Join(dir, "store")}
		os.Stdout = out
		main()
		os.Stdout = stdout
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		printed, err := os.ReadFile(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		// A second run may greet twice: the reconciler refreshes the Done
		// greeting it loads (the screen may have changed meanwhile).
		if !bytes.HasPrefix(printed, []byte("hello, world\n")) || !bytes.Contains(printed, []byte("\n1 greeting(s) stored\n")) {
			t.Fatalf("run %d printed:\n%s", run, printed)
		}
	}
}
