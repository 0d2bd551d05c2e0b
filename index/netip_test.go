package index

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"testing"
)

var testZoneNames = []string{"", "", "", "a", "ab", "b", "eth0", "\x00", "\xff"}

// randAddr returns a random address of any family, often one of a few
// values so that equal and near pairs are common.
func randAddr(r *rand.Rand, zones bool) netip.Addr {
	var b [16]byte
	for i := range b {
		switch r.IntN(4) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(r.Uint32())
		}
	}
	switch r.IntN(8) {
	case 0:
		return netip.Addr{}
	case 1, 2, 3, 4:
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	a := netip.AddrFrom16(b)
	if r.IntN(4) == 0 {
		a = netip.AddrFrom16(netip.AddrFrom4([4]byte(b[:4])).As16()) // IPv4-mapped IPv6
	}
	if zones {
		a = a.WithZone(testZoneNames[r.IntN(len(testZoneNames))])
	}
	return a
}

func TestNetIPAddrOrder(t *testing.T) {
	m := netip.MustParseAddr
	checkOrder(t, orderCase[netip.Addr]{
		enc: NetIPAddr,
		app: AppendNetIPAddr,
		cmp: netip.Addr.Compare,
		edge: []netip.Addr{
			{},
			m("0.0.0.0"), m("0.0.0.1"), m("10.0.0.1"), m("127.0.0.1"), m("255.255.255.255"),
			m("::"), m("::1"), m("::ffff:0.0.0.0"), m("::ffff:10.0.0.1"), m("::ffff:255.255.255.255"),
			m("2001:db8::1"), m("fe80::1"), m("fe80::1%eth0"), m("fe80::1%eth1"), m("fe80::1%eth"),
			m("fe80::1").WithZone("\x00"), m("fe80::2"), m("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
		},
		gen: func(r *rand.Rand) netip.Addr { return randAddr(r, true) },
	})
}

// comparePrefix is the order NetIPPrefix documents, written out: masked
// address (invalid, then IPv4, then IPv6, then address bytes), then prefix
// length, then the unmasked address. It is what netip.Prefix.Compare
// does from Go 1.26 on (netip_go126_test.go checks that).
func comparePrefix(a, b netip.Prefix) int {
	family := func(a netip.Addr) int {
		switch {
		case a.Is4():
			return 1
		case a.Is6():
			return 2
		}
		return 0
	}
	bytesOf := func(a netip.Addr) []byte {
		if !a.IsValid() {
			return nil
		}
		return a.AsSlice()
	}
	ma, mb := a.Masked().Addr(), b.Masked().Addr()
	if c := cmp.Compare(family(ma), family(mb)); c != 0 {
		return c
	}
	if c := compareBytes(bytesOf(ma), bytesOf(mb)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Bits(), b.Bits()); c != 0 {
		return c
	}
	ua, ub := a.Addr(), b.Addr()
	if c := cmp.Compare(family(ua), family(ub)); c != 0 {
		return c
	}
	return compareBytes(bytesOf(ua), bytesOf(ub))
}

// compareBytes compares equal-length byte strings by their first
// difference.
func compareBytes(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func randPrefix(r *rand.Rand) netip.Prefix {
	a := randAddr(r, false)
	bits := r.IntN(a.BitLen()+3) - 1 // -1 and BitLen()+1 give invalid prefixes
	if r.IntN(2) == 0 && a.BitLen() > 0 {
		bits = []int{0, 8, 16, 24, 32, 64, 128}[r.IntN(7)] % (a.BitLen() + 1)
	}
	p := netip.PrefixFrom(a, bits)
	if r.IntN(2) == 0 {
		p = p.Masked()
	}
	return p
}

func TestNetIPPrefixOrder(t *testing.T) {
	m := netip.MustParsePrefix
	a := netip.MustParseAddr
	checkOrder(t, orderCase[netip.Prefix]{
		enc: NetIPPrefix,
		app: AppendNetIPPrefix,
		cmp: comparePrefix,
		edge: []netip.Prefix{
			{},
			netip.PrefixFrom(a("1.2.3.4"), 33), // invalid, with an address
			netip.PrefixFrom(a("1.2.3.4"), -1),
			netip.PrefixFrom(a("::1"), 129),
			m("0.0.0.0/0"), m("0.0.0.0/32"), m("10.0.0.0/8"), m("10.1.2.3/8"), m("10.0.0.0/16"),
			m("10.0.0.0/32"), m("10.1.0.0/16"), m("11.0.0.0/8"), m("255.255.255.255/32"),
			m("::/0"), m("::/128"), m("::ffff:10.0.0.0/104"), m("::ffff:10.0.0.0/128"),
			m("2001:db8::/32"), m("2001:db8::1/32"), m("2001:db8::/64"),
			m("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"),
		},
		gen: randPrefix,
	})
}

// TestNetIPPrefixSubnetRange checks the property NetIPPrefix documents:
// the prefixes contained in P are one contiguous run of keys starting at
// NetIPPrefix(P).
func TestNetIPPrefixSubnetRange(t *testing.T) {
	r := newRand(t)
	for range 200 {
		p := randPrefix(r)
		if !p.IsValid() {
			continue
		}
		p = p.Masked()
		start := NetIPPrefix(p)
		for range 100 {
			q := randPrefix(r)
			if r.IntN(2) == 0 && q.IsValid() && q.Addr().BitLen() == p.Addr().BitLen() {
				// Bias towards q near p: p's network bits, q's host bits.
				q = netip.PrefixFrom(mix(p.Addr(), q.Addr(), p.Bits()), q.Bits())
			}
			inside := q.IsValid() && q.Bits() >= p.Bits() && p.Contains(q.Addr())
			k := NetIPPrefix(q)
			if inside && string(k) < string(start) {
				t.Fatalf("%v is inside %v but sorts before it", q, p)
			}
			// No prefix outside P may sort between P and a prefix inside P.
			if !inside && string(k) >= string(start) {
				last := NetIPPrefix(netip.PrefixFrom(lastAddr(p), p.Addr().BitLen()))
				if string(k) <= string(last) {
					t.Fatalf("%v is outside %v but sorts inside its run", q, p)
				}
			}
		}
	}
}

// mix returns the first bits of net followed by the rest of host.
func mix(net, host netip.Addr, bits int) netip.Addr {
	n, h := net.AsSlice(), host.AsSlice()
	for i := range n {
		for j := range 8 {
			if i*8+j >= bits {
				n[i] = n[i]&^(0x80>>j) | h[i]&(0x80>>j)
			}
		}
	}
	a, _ := netip.AddrFromSlice(n)
	return a
}

// lastAddr returns the last address of the masked prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		for j := range 8 {
			if i*8+j >= p.Bits() {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
