package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBuildLineIgnored: the build command of the README writes the binary
// where git ignores it, so that building leaves no untracked file in the
// repository.
func TestBuildLineIgnored(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	// go build -C cmd/strata -o "$PWD/PATH" .   (run from the root)
	re := regexp.MustCompile(`go build -C cmd/strata -o "\$PWD/([^"]+)"`)
	m := re.FindAllStringSubmatch(string(readme), -1)
	if len(m) == 0 {
		t.Fatal("no build line in README.md")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, sub := range m {
		out, err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", sub[1]).CombinedOutput()
		if err != nil {
			t.Errorf("the README's build line writes %s, which git does not ignore: %v %s", sub[1], err, strings.TrimSpace(string(out)))
		}
	}
}
