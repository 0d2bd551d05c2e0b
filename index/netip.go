package index

import "net/netip"

// Family tags, the first byte of every NetIPAddr key. Their order is the
// order of netip.Addr.Compare between families.
const (
	tagInvalidAddr = 0x00 // the zero netip.Addr; nothing follows
	tagIPv4        = 0x04 // 4 address bytes follow
	tagIPv6        = 0x06 // 16 address bytes and the zone follow
)

// NetIPAddr encodes a with the order of netip.Addr.Compare: the zero
// (invalid) Addr first, then IPv4 addresses, then IPv6 addresses
// (including IPv4-mapped ones such as ::ffff:10.0.0.1, which are IPv6
// addresses to netip), each family in address order, and IPv6 addresses
// that differ only by zone in the string order of their zones, no zone
// first.
//
// The key is a family tag byte (0x00 invalid, 0x04 IPv4, 0x06 IPv6), then
// the 4 or 16 address bytes, then for IPv6 the raw zone. Keys without a
// zone have a fixed length per family; a zoned key has the unzoned key of
// the same address as a prefix, so NetIPAddr keys are not prefix-free
// when zones are in use (Composite and Builder escape them).
func NetIPAddr(a netip.Addr) Key {
	return AppendNetIPAddr(make(Key, 0, 17+len(a.Zone())), a)
}

// AppendNetIPAddr appends the NetIPAddr encoding of a to dst.
func AppendNetIPAddr(dst []byte, a netip.Addr) []byte {
	switch {
	case a.Is4():
		b := a.As4()
		return append(append(dst, tagIPv4), b[:]...)
	case a.Is6():
		b := a.As16()
		dst = append(append(dst, tagIPv6), b[:]...)
		return append(dst, a.Zone()...)
	default:
		return append(dst, tagInvalidAddr)
	}
}

// NetIPPrefix encodes p with the order of netip.Prefix.Compare (Go 1.26):
//
//  1. by masked address, p.Masked().Addr(), in NetIPAddr order; this puts
//     invalid prefixes first, then IPv4, then IPv6 prefixes;
//  2. then by prefix length, shorter first;
//  3. then by the unmasked address p.Addr(), which tells apart prefixes
//     such as 10.0.0.0/8 and 10.1.2.3/8 that differ only in host bits.
//
// The key is NetIPAddr(p.Masked().Addr()), one byte p.Bits()+1 (0 for an
// invalid prefix), then NetIPAddr(p.Addr()): 11 bytes for an IPv4 prefix,
// 35 for an IPv6 one. Prefixes carry no zone.
//
// This order suits network queries. A prefix sorts right before the
// prefixes it contains, and the prefixes contained in a masked prefix P
// (those with at least P's length whose masked address lies in P) form
// one contiguous run of keys starting at NetIPPrefix(P): a range scan
// from there that stops at the first prefix outside P visits exactly
// the subnets of P.
func NetIPPrefix(p netip.Prefix) Key {
	return AppendNetIPPrefix(make(Key, 0, 35), p)
}

// AppendNetIPPrefix appends the NetIPPrefix encoding of p to dst.
func AppendNetIPPrefix(dst []byte, p netip.Prefix) []byte {
	dst = AppendNetIPAddr(dst, p.Masked().Addr())
	dst = append(dst, uint8(p.Bits()+1))
	return AppendNetIPAddr(dst, p.Addr())
}
