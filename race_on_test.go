//go:build race

package strata

// raceDetector is true when the tests run under the race detector. The
// property tests that run one goroutine (the models, the differential
// tests) do a tenth of their work then: the race detector finds nothing
// in them, and they run at full size without it (make unit).
const raceDetector = true
