package index_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// An index over signed integers: sorting the keys with bytes.Compare, as
// the radix tree does, puts negative numbers first.
func ExampleInt64() {
	values := []int64{3, -1, 0, math.MinInt64, 42, -300}
	slices.SortFunc(values, func(a, b int64) int {
		return bytes.Compare(index.Int64(a), index.Int64(b))
	})
	for _, v := range values {
		fmt.Println(v, index.Int64(v))
	}
	// Output:
	// -9223372036854775808 0x0000000000000000
	// -300 0x7ffffffffffffed4
	// -1 0x7fffffffffffffff
	// 0 0x8000000000000000
	// 3 0x8000000000000003
	// 42 0x800000000000002a
}

// A composite key of (region, id). The parts are escaped, so "eu" never
// matches the start of "eu-west", and keys sort by region, then by id.
func ExampleComposite() {
	type row struct {
		region string
		id     int64
	}
	rows := []row{{"eu-west", 1}, {"eu", 7}, {"us", -2}, {"eu", -5}}
	keys := make([]index.Key, len(rows))
	for i, r := range rows {
		keys[i] = index.Composite(index.String(r.region), index.Int64(r.id))
	}
	slices.SortFunc(keys, func(a, b index.Key) int { return bytes.Compare(a, b) })

	prefix := index.CompositePrefix(index.String("eu"))
	for _, k := range keys {
		parts, _ := index.SplitComposite(k)
		fmt.Printf("%s %v in eu: %v\n", parts[0], parts[1], bytes.HasPrefix(k, prefix))
	}

	var b index.Builder
	fmt.Println(b.String("eu").Int64(7).Build().Equal(keys[1]))
	// Output:
	// eu 0x7ffffffffffffffb in eu: true
	// eu 0x8000000000000007 in eu: true
	// eu-west 0x8000000000000001 in eu: false
	// us 0x7ffffffffffffffe in eu: false
	// true
}

// An object with several tags yields one key per tag for a tag index.
func ExampleKeySet() {
	tags := []string{"red", "blue"}
	keys := make([]index.Key, len(tags))
	for i, t := range tags {
		keys[i] = index.String(t)
	}
	s := index.NewKeySet(keys...)
	fmt.Println(s.Len(), s.Contains(index.String("blue")), s.Contains(index.String("green")))
	for k := range s.All() {
		fmt.Println(k)
	}
	// A single short key is copied into the KeySet: nothing allocates.
	one := index.KeySetOf(index.Uint64(7))
	fmt.Println(one.Len(), one.At(0))
	// Output:
	// 2 true false
	// red
	// blue
	// 1 0x0000000000000007
}

// Keys typed as text and shown as text: each encoder's parser reads what
// its formatter writes.
func ExampleUint64String() {
	k, err := index.Uint64String("1234")
	fmt.Println(k, err)
	text, _ := index.FormatUint64(k)
	fmt.Println(text)
	_, err = index.Uint64String("-1")
	fmt.Println(errors.Is(err, index.ErrParseKey))
	// Output:
	// 0x00000000000004d2 <nil>
	// 1234
	// true
}

// A composite index of (region, prefix) queried from text such as
// "eu-west|10.0.0.0/8", and its keys shown the same way. Text with only
// the leading parts gives a prefix of the keys, for prefix queries.
func ExampleCompositeParser() {
	parse := index.CompositeParser("|", index.FromString, index.NetIPPrefixString)
	format := index.CompositeFormatter("|", index.FormatString, index.FormatNetIPPrefix)

	k, _ := parse("eu-west|10.0.0.0/8")
	full := index.Composite(index.String("eu-west"), index.NetIPPrefix(netip.MustParsePrefix("10.0.0.0/8")))
	fmt.Println(k.Equal(full))
	fmt.Println(format(k))

	p, _ := parse("eu-west")
	fmt.Println(bytes.HasPrefix(k, p))
	// Output:
	// true
	// eu-west|10.0.0.0/8 <nil>
	// true
}

// Decoding a key gives back the value it was made from.
func ExampleDecodeNetIPPrefix() {
	k := index.NetIPPrefix(netip.MustParsePrefix("10.1.2.3/8"))
	p, err := index.DecodeNetIPPrefix(k)
	fmt.Println(p, p.Masked(), err)
	_, err = index.DecodeNetIPPrefix(k[:5])
	fmt.Println(errors.Is(err, index.ErrMalformedKey))
	// Output:
	// 10.1.2.3/8 10.0.0.0/8 <nil>
	// true
}

// A tag index: one key per element of a part.Set field, for FromObject.
func ExampleSet() {
	type host struct {
		name string
		tags part.Set[string]
	}
	h := host{"web-1", part.NewSet("prod", "eu", "web")}
	keys := index.Set(h.tags)
	for k := range keys.All() {
		fmt.Println(k)
	}
	ports := index.Slice(index.Uint16, []uint16{443, 80})
	fmt.Println(ports.Len(), ports.Contains(index.Uint16(80)))
	// Output:
	// eu
	// prod
	// web
	// 2 true
}
