package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionRevision: a binary built in a git checkout with VCS stamping
// (go build's default outside CI's -buildvcs=false) tells the revision it
// was built from, with --version and version alike.
func TestVersionRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary again")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !info.IsDir() {
		// go build finds the repository by a .git directory: a worktree's
		// .git file gets no stamp.
		t.Skip("a git worktree, which go build does not stamp")
	}
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	flag := run(t, bin, "--version")
	cmd := run(t, bin, "version")
	// The version is a pseudo-version of the revision (Go 1.24 and
	// later), or (devel).
	want := ", revision " + strings.TrimSpace(string(head))
	if flag.code != 0 || flag.stdout != cmd.stdout || !strings.HasPrefix(flag.stdout, "github.com/strata-db/strata/cmd/strata ") ||
		!strings.Contains(flag.stdout, want) {
		t.Errorf("--version %q, version %q: want the module and %q", flag.stdout, cmd.stdout, want)
	}
	// The stock binary without VCS stamping still tells its module.
	if r := strataRun(t, 0, "version"); !strings.HasPrefix(r.stdout, "github.com/strata-db/strata/cmd/strata ") {
		t.Errorf("version: %q", r.stdout)
	}
}
