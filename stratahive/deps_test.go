package stratahive_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goListDeps returns the packages pkg depends on.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// TestNoPebbleWithoutDurable: a hive program that keeps its tables in
// memory does not build Pebble, nor package persist; one that imports
// stratahive/durable does.
func TestNoPebbleWithoutDurable(t *testing.T) {
	for _, p := range goListDeps(t, "github.com/strata-db/strata/stratahive") {
		if strings.Contains(p, "cockroachdb/pebble") || p == "github.com/strata-db/strata/persist" {
			t.Errorf("stratahive depends on %s", p)
		}
	}
	found := false
	for _, p := range goListDeps(t, "github.com/strata-db/strata/stratahive/durable") {
		found = found || strings.HasPrefix(p, "github.com/cockroachdb/pebble")
	}
	if !found {
		t.Error("stratahive/durable does not depend on Pebble: is this test looking at the right packages?")
	}
}

// TestNoRaftWithoutReplicated: neither stratahive nor stratahive/durable
// builds raft or package replicate; stratahive/replicated does.
func TestNoRaftWithoutReplicated(t *testing.T) {
	for _, pkg := range []string{"github.com/strata-db/strata/stratahive", "github.com/strata-db/strata/stratahive/durable"} {
		for _, p := range goListDeps(t, pkg) {
			if strings.HasPrefix(p, "github.com/hashicorp/raft") || p == "github.com/strata-db/strata/replicate" {
				t.Errorf("%s depends on %s", pkg, p)
			}
		}
	}
	found := false
	for _, p := range goListDeps(t, "github.com/strata-db/strata/stratahive/replicated") {
		found = found || p == "github.com/hashicorp/raft"
	}
	if !found {
		t.Error("stratahive/replicated does not depend on raft: is this test looking at the right packages?")
	}
}
