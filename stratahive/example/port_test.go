package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The port check: this program is the one in statedb/ (its own module,
// written for cilium/statedb's hive API) with imports and names
// changed, and nothing else. stratahive/README.md shows these tables.

// portImports maps the original's imports to the port's.
var portImports = map[string][]string{
	"github.com/cilium/statedb":            {"github.com/strata-db/strata", "github.com/strata-db/strata/stratahive"},
	"github.com/cilium/statedb/index":      {"github.com/strata-db/strata/index"},
	"github.com/cilium/statedb/reconciler": {"github.com/strata-db/strata/reconciler"},
}

// portNames are the renames, applied in order.
var portNames = []struct{ from, to string }{
	{"statedb.Cell", "stratahive.Cell"},
	{"statedb.Derive", "stratahive.Derive"}, // and DeriveResult, DeriveInsert, ...
	{"reconciler.Params", "stratahive.ReconcilerParams"},
	{"reconciler.Register(", "stratahive.RegisterReconciler("},
	{"statedb.", "strata."}, // DB, Index, NewTable, RWTable, ReadTxn, Revision
}

func TestPortDiffIsImportsAndNames(t *testing.T) {
	files, err := filepath.Glob("statedb/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no original: %v", err)
	}
	for _, orig := range files {
		name := filepath.Base(orig)
		port := name
		t.Run(name, func(t *testing.T) {
			origImports, origBody := splitImports(t, orig)
			portImports_, portBody := splitImports(t, port)
			var want []string
			for _, imp := range origImports {
				if to, ok := portImports[imp]; ok {
					want = append(want, to...)
					continue
				}
				want = append(want, imp)
			}
			// An import the port does not need (a file without Derive
			// results has no stratahive) may go.
			for _, imp := range portImports_ {
				if !slices.Contains(want, imp) {
					t.Errorf("the port imports %q, which the original's imports do not map to", imp)
				}
			}
			renamed := origBody
			for _, r := range portNames {
				renamed = strings.ReplaceAll(renamed, r.from, r.to)
			}
			if renamed != portBody {
				t.Errorf("%s differs from statedb/%s beyond imports and names:\n%s", port, name, firstDiff(renamed, portBody))
			}
		})
	}
	// The script tests are the same file.
	a, err := os.ReadFile("statedb/testdata/hostsd.txtar")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/hostsd.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("testdata/hostsd.txtar differs from the original's")
	}
}

// splitImports returns a Go file's import paths, and its text without
// the import declaration.
func splitImports(t *testing.T, path string) ([]string, string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		paths = append(paths, p)
	}
	// With ImportsOnly, the declarations are the import declarations.
	body := src
	for i := len(f.Decls) - 1; i >= 0; i-- {
		start, end := fset.Position(f.Decls[i].Pos()).Offset, fset.Position(f.Decls[i].End()).Offset
		body = append(body[:start:start], body[end:]...)
	}
	return paths, string(body)
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "renamed original: " + x + "\nport:             " + y
		}
	}
	return ""
}
