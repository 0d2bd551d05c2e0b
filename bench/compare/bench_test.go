package main

import (
	"flag"
	"testing"
)

var benchSmoke = flag.Bool("compare.smoke", false, "BenchmarkCompare: use the small data sets")

// BenchmarkCompare runs every database and radix workload as an ordinary Go
// benchmark, named Compare/<workload>/impl=<database>, so that the usual
// tools work on them:
//
//	go test -run '^$' -bench 'Compare/WriteTxn_1/' -benchmem -count 10 | tee out.txt
//	benchstat -col /impl out.txt
//
// The data set sizes are the full ones unless -compare.smoke is given. The
// memory workload is not included (it measures the heap, not time): use
// go run . -filter MemoryPerObject.
func BenchmarkCompare(b *testing.B) {
	if *benchSmoke {
		sizes = smokeSizes
	} else {
		sizes = fullSizes
	}
	for _, w := range workloads() {
		switch w.Kind {
		case KindDB:
			b.Run(w.Name, func(b *testing.B) {
				for _, f := range databases {
					b.Run("impl="+f.Name, func(b *testing.B) { w.DB(b, f); checkFailures(b) })
				}
			})
		case KindRead:
			b.Run(w.Name, func(b *testing.B) {
				for _, f := range readDBs {
					b.Run("impl="+f.Name, func(b *testing.B) { w.Read(b, f); checkFailures(b) })
				}
			})
		case KindLPM:
			b.Run(w.Name, func(b *testing.B) {
				for _, f := range lpmDBs {
					b.Run("impl="+f.Name, func(b *testing.B) { w.LPM(b, f); checkFailures(b) })
				}
			})
		case KindRadix:
			b.Run(w.Name, func(b *testing.B) {
				for _, f := range radixTrees {
					b.Run("impl="+f.Name, func(b *testing.B) { w.Radix(b, f); checkFailures(b) })
				}
			})
		}
		clearCaches()
	}
}

// checkFailures fails the benchmark if the workload recorded a failure.
func checkFailures(b *testing.B) {
	for _, msg := range takeFailures() {
		b.Error(msg)
	}
}
