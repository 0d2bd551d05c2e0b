package remote

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies: httpapi and remote import only the standard library
// and Strata's own packages of the root module, its internal ones included
// (no Pebble, no persist).
func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/strata-db/strata"
	allowed := map[string]bool{mod: true, mod + "/part": true, mod + "/index": true, mod + "/metrics": true, mod + "/httpapi": true, mod + "/remote": true}
	for _, pkg := range []string{mod + "/httpapi", mod + "/remote"} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s listed %v", pkg, deps)
		}
		for _, dep := range deps {
			if !allowed[dep] && !strings.HasPrefix(dep, mod+"/internal/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
