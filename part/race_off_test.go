//go:build !race

package part

// raceDetector is true when the tests run under the race detector (see
// race_on_test.go).
const raceDetector = false
