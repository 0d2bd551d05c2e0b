// Command commitcheck reports write transactions of
// github.com/strata-db/strata whose Commit error is not checked:
//
//	commitcheck ./...
//
// It takes the flags and package patterns of go vet's analyzers (run
// commitcheck -help); see package commitcheck for what it reports and
// what it leaves alone.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/strata-db/strata/cmd/commitcheck/commitcheck"
)

func main() { singlechecker.Main(commitcheck.Analyzer) }
