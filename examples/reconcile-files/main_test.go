package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: the
// program must stop every reconciler and worker it starts.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun runs the program three times on one directory: it writes the
// files, then repairs a file that drifted and prunes a stranger, then
// refuses to prune most of the directory until -force.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	run1 := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		if err := run(context.Background(), append([]string{"-dir", dir}, args...), &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	files := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	out := run1()
	if want := []string{"config.ini", "hello.txt", "motd"}; !slices.Equal(files(), want) {
		t.Fatalf("files %v, want %v\n%s", files(), want, out)
	}
	if !strings.Contains(out, "hello.txt    Done") {
		t.Errorf("statuses not reported Done:\n%s", out)
	}

	if err := os.WriteFile(filepath.Join(dir, "motd"), []byte("drifted"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stranger"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = run1()
	for _, want := range []string{"wrote     motd", "unchanged hello.txt", "pruned    stranger"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run did not say %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "motd")); strings.Contains(string(b), "drifted") {
		t.Error("the drifted file was not repaired")
	}

	manifest := filepath.Join(t.TempDir(), "manifest")
	if err := os.WriteFile(manifest, []byte("only.txt: just me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = run1("-manifest", manifest)
	if !strings.Contains(out, "not pruning 3 of 4 files") || len(files()) != 4 {
		t.Errorf("the budget did not hold the prune back: %v\n%s", files(), out)
	}
	out = run1("-manifest", manifest, "-force")
	if !slices.Equal(files(), []string{"only.txt"}) {
		t.Errorf("after -force: %v\n%s", files(), out)
	}
}
