//go:build go1.26

package index

import "testing"

// TestComparePrefixMatchesStdlib checks that the reference order of
// NetIPPrefix is netip.Prefix.Compare, which Go 1.26 added.
func TestComparePrefixMatchesStdlib(t *testing.T) {
	r := newRand(t)
	for range randPairs {
		a, b := randPrefix(r), randPrefix(r)
		if got, want := comparePrefix(a, b), a.Compare(b); sign(got) != sign(want) {
			t.Fatalf("comparePrefix(%v, %v) = %d, netip.Prefix.Compare = %d", a, b, got, want)
		}
	}
}
