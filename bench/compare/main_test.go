package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests and benchmarks
// (goleak looks once they all ended): every database, reconciler, hive
// and store a workload opens must be closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
