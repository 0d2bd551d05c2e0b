package replicate

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The crash tests re-execute the test binary as a child process that
// writes to a store until it is killed. childEnv selects the child's
// workload, childDirEnv gives it the store's directory and childSeedEnv
// its seed.
const (
	childEnv     = "STRATA_REPLICATE_TEST_CHILD"
	childDirEnv  = "STRATA_REPLICATE_TEST_DIR"
	childSeedEnv = "STRATA_REPLICATE_TEST_SEED"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode, os.Getenv(childDirEnv), os.Getenv(childSeedEnv))
		fmt.Fprintf(os.Stderr, "child %s returned\n", mode)
		os.Exit(2)
	}
	// Close ends every goroutine of a store, and Shutdown every one of a
	// raft node. The process tests' program, built once, goes at the end.
	//
	// One goroutine may outlive its node: the node's waitFutures, held
	// by a future that raft v1.7.2 drops at shutdown and never answers
	// (hashicorp/raft#498; journal.go, TestCloseWithCommittedUnapplied).
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/strata-db/strata/replicate.(*Node).waitFutures"), goleak.Cleanup(func(code int) {
		removeClusterBuild()
		os.Exit(code)
	}))
}
