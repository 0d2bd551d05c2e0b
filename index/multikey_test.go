package index

import (
	"bytes"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-db/strata/part"
)

// keysOf returns the keys of s in order.
func keysOf(s KeySet) []Key { return slices.Collect(s.All()) }

func checkKeys(t *testing.T, name string, got KeySet, want ...Key) {
	t.Helper()
	if got.Len() != len(want) {
		t.Fatalf("%s: %d keys, want %d", name, got.Len(), len(want))
	}
	for i, k := range keysOf(got) {
		if !k.Equal(want[i]) {
			t.Fatalf("%s: key %d is %v, want %v", name, i, k, want[i])
		}
	}
}

type port uint16

func (p port) String() string { return "port-" + strconv.Itoa(int(p)) }

func TestSliceHelpers(t *testing.T) {
	checkKeys(t, "StringSlice(nil)", StringSlice(nil))
	checkKeys(t, "StringSlice(one)", StringSlice([]string{"a"}), String("a"))
	checkKeys(t, "StringSlice", StringSlice([]string{"b", "a", "b"}), String("b"), String("a"), String("b"))
	checkKeys(t, "StringerSlice", StringerSlice([]port{80, 443}), String("port-80"), String("port-443"))
	addrs := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::1")}
	checkKeys(t, "Slice", Slice(NetIPAddr, addrs), NetIPAddr(addrs[0]), NetIPAddr(addrs[1]))
	checkKeys(t, "Slice(one)", Slice(NetIPAddr, addrs[:1]), NetIPAddr(addrs[0]))
	checkKeys(t, "Slice(none)", Slice(NetIPAddr, nil))
	checkKeys(t, "Seq", Seq(Uint16, slices.Values([]uint16{1, 2})), Uint16(1), Uint16(2))
	checkKeys(t, "Seq(none)", Seq(Uint16, slices.Values([]uint16(nil))))
	checkKeys(t, "Seq2", Seq2(Int, slices.All([]string{"x", "y", "z"})), Int(0), Int(1), Int(2))
	checkKeys(t, "StringerSeq", StringerSeq(slices.Values([]port{1})), String("port-1"))
	checkKeys(t, "StringerSeq2", StringerSeq2(maps.All(map[port]bool{8: true})), String("port-8"))
	m := map[string]int{"x": 1, "y": 2, "z": 3}
	got := keysOf(StringMap(m))
	slices.SortFunc(got, func(a, b Key) int { return bytes.Compare(a, b) })
	if len(got) != 3 || string(got[0]) != "x" || string(got[1]) != "y" || string(got[2]) != "z" {
		t.Errorf("StringMap keys %q", got)
	}
	checkKeys(t, "StringMap(nil)", StringMap[int](nil))

	// The string helpers share the strings' memory: one string costs
	// nothing, more cost the KeySet's slice.
	one, two := []string{"a"}, []string{"a", "b"}
	if n := testing.AllocsPerRun(100, func() { keySetSink = StringSlice(one) }); n != 0 {
		t.Errorf("StringSlice of one string: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { keySetSink = StringSlice(two) }); n != 1 {
		t.Errorf("StringSlice of two strings: %v allocations, want 1", n)
	}
}

type tag string

// setCase checks Set over a part.Set of one element type: one key per
// element, each the element's encoder's key, in the set's (ascending)
// order.
func setCase[T part.MapKey](t *testing.T, enc func(T) Key, xs ...T) {
	t.Helper()
	s := part.NewSet(xs...)
	var want []Key
	for x := range s.All() {
		want = append(want, enc(x))
	}
	if len(want) != len(slices.Compact(slices.Sorted(slices.Values(xs)))) {
		t.Fatalf("part.Set of %v has %d elements", xs, len(want))
	}
	got := Set(s)
	checkKeys(t, "Set", got, want...)
	if !slices.IsSortedFunc(keysOf(got), func(a, b Key) int { return bytes.Compare(a, b) }) {
		t.Fatalf("Set(%v) keys are not in key order: %v", s, keysOf(got))
	}
}

func TestSet(t *testing.T) {
	checkKeys(t, "Set(zero)", Set(part.Set[string]{}))
	setCase(t, String, "b", "a", "", "ab")
	setCase(t, func(x tag) Key { return String(string(x)) }, "red", "blue")
	setCase(t, Int8, -128, -1, 0, 1, 127)
	setCase(t, Int16, -300, 300, 0)
	setCase(t, Int32, math.MinInt32, 5, -5)
	setCase(t, Int64, math.MinInt64, math.MaxInt64, 0)
	setCase(t, Int, -1, 1, math.MaxInt)
	setCase(t, Uint8, 0, 255, 7)
	setCase(t, Uint16, 80, 443, 8080)
	setCase(t, Uint32, math.MaxUint32, 0)
	setCase(t, Uint64, math.MaxUint64, 1)
	setCase(t, Uint, 3, 2, 1)
	setCase(t, func(x uintptr) Key { return Uint64(uint64(x)) }, 9, 10)
	setCase(t, Uint16, 42)

	// Integer keys share one buffer, and stay intact as it fills.
	s := part.NewSet[uint64](1, 2, 3)
	if n := testing.AllocsPerRun(100, func() { keySetSink = Set(s) }); n != 2 {
		t.Errorf("Set of three integers: %v allocations, want 2 (keys and their buffer)", n)
	}
	for _, one := range []KeySet{Set(part.NewSet("a")), Set(part.NewSet(-1))} {
		if one.Len() != 1 {
			t.Fatalf("Set of one element has %d keys", one.Len())
		}
	}
	oneStr, oneInt := part.NewSet("a"), part.NewSet[int16](-3)
	if n := testing.AllocsPerRun(100, func() { keySetSink = Set(oneStr) }); n != 0 {
		t.Errorf("Set of one string: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { keySetSink = Set(oneInt) }); n != 0 {
		t.Errorf("Set of one integer: %v allocations, want 0", n)
	}
	strs := part.NewSet("a", "b")
	if n := testing.AllocsPerRun(100, func() { keySetSink = Set(strs) }); n != 1 {
		t.Errorf("Set of two strings: %v allocations, want 1 (the keys)", n)
	}
}
