package replicated_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Stopping a hive stops everything the Cell started: raft's goroutines,
// the node's, the transport's, the forward server's, the health reporter,
// the leader-only jobs.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
