package part

import (
	"math/rand/v2"
	"testing"
)

// TestIndexByte checks the word-at-a-time edge search against a plain loop,
// for every byte value over many sets of distinct keys, with stale bytes in
// the slots beyond the count.
func TestIndexByte(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 5000
	if raceDetector {
		n /= 10 // one goroutine: see race_on_test.go
	}
	for range n {
		var k16 [16]byte
		for i := range k16 {
			k16[i] = byte(r.UintN(256)) // stale bytes beyond the count
		}
		count := 1 + r.IntN(16)
		for i, v := range r.Perm(256)[:count] {
			k16[i] = byte(v)
		}
		var k4 [4]byte
		copy(k4[:], k16[:])
		count4 := min(count, 4)
		for b := range 256 {
			check := func(name string, keys []byte, count, got int) {
				want := -1
				for i := range count {
					if keys[i] == byte(b) {
						want = i
						break
					}
				}
				if (want >= 0 && got != want) || (want < 0 && got < count) {
					t.Fatalf("%s(%v, %d) over %d keys = %d, want %d", name, keys, b, count, got, want)
				}
			}
			check("indexByte16", k16[:], count, indexByte16(&k16, byte(b)))
			check("indexByte4", k4[:], count4, indexByte4(&k4, byte(b)))
		}
	}
}
