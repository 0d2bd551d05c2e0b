package commitcheck_test

import (
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/strata-db/strata/cmd/commitcheck/commitcheck"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAnalyzer runs the analyzer over the testdata module, whose
// packages import the real strata (a replace directive points at this
// repository): every `// want` comment must be matched by a report, and
// nothing else reported. Package flagged holds the dropped errors,
// package clean the uses that must pass, package indirect a WriteTxn
// held without importing strata.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), commitcheck.Analyzer,
		"./flagged", "./clean", "./indirect", "./txns")
}
