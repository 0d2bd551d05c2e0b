package strata

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"reflect"
	"strings"

	"github.com/strata-db/strata/index"
)

// LPMIndex is a secondary index of network prefixes (netip.Prefix) that
// answers longest-prefix-match queries: which prefixes contain an
// address, the most specific first. Declare it beside the other indexes
// of a table and query it through the table's usual reads:
//
//	var byCIDR = strata.LPMIndex[*Route]{
//		Name:       "cidr",
//		FromObject: func(r *Route) strata.PrefixSet { return strata.PrefixSetOf(r.CIDR) },
//	}
//
//	r, _, found := routes.Get(txn, byCIDR.Containing(addr))   // the longest match
//	for r := range routes.List(txn, byCIDR.Containing(addr))  // every match, longest first
//	r, _, found = routes.Get(txn, byCIDR.Query(cidr))          // exactly this prefix
//	for r := range routes.Prefix(txn, byCIDR.Query(cidr))     // cidr and its subnets
//
// # Queries
//
//   - Containing(addr) and ContainingPrefix(p) select the objects whose
//     prefix contains the address (or all of p, p itself included), the
//     longest prefix first; among objects of one prefix, in primary key
//     order. Get returns the first of them, the longest-prefix match, and
//     List all of them. They are for Get, List, their Watch forms and
//     DeleteMatches: Prefix, LowerBound, Range, their reverse forms and the
//     deletes built on them panic on them, a programming error like the
//     query of an index the table does not have.
//   - Query(p) selects the objects whose prefix is exactly p with Get and
//     List; with Prefix (and ReversePrefix, DeletePrefix) it selects p and
//     all its subnets, the prefixes within p; LowerBound and Range read the
//     index in its order from it.
//
// The index is ordered by address family (IPv4 first), then by masked
// address, then by prefix length, so that a prefix comes right before its
// subnets.
//
// # Prefixes
//
// FromObject returns the object's prefixes: none (the object is not in
// the index), one (PrefixSetOf) or several (NewPrefixSet). An IPv4-mapped
// IPv6 prefix of at least 96 bits (::ffff:10.0.0.0/104) is taken as the
// IPv4 prefix it maps (10.0.0.0/8), and an IPv4-mapped address is looked
// up as IPv4, so that dual-stack sockets' addresses find IPv4 routes; IPv6
// prefixes shorter than /96 never contain an IPv4 address.
//
// A prefix with host bits set (10.0.0.1/8) is refused, not masked: the
// write fails with ErrPrefixHostBits, and an invalid prefix (the zero
// netip.Prefix, or a length out of range) with ErrInvalidPrefix, and the
// write changes nothing. Mask prefixes in FromObject (p.Masked()) to
// index them by their network. Queries, which store nothing, mask their
// prefix: Query(10.0.0.1/8) is Query(10.0.0.0/8).
//
// # Unique or not
//
// A unique LPMIndex holds at most one object per prefix: an object whose
// prefix another object holds is refused with ErrUniqueConstraint. A
// non-unique one holds any number of objects per prefix.
//
// # Watching
//
// The channel of a Get of a Containing query (GetWatch) closes when the
// longest match may change: when an object of the matched prefix changes,
// or a longer prefix is added that may contain the address. That of a
// List of a Containing query (ListWatch) closes on any change to the
// index's prefixes of the address's family, any of which may be an
// answer. That of a Get or List of Query(p) closes when the objects of p
// change, and that of a Prefix read when a prefix within p does. Each may
// also close when nearby keys change.
//
// # Text
//
// Keys typed as text (AnyTable, tools) are an address, read as a
// Containing query ("10.1.2.3"), or a prefix, read as Query ("10.0.0.0/8").
// AnyTable reads an address key with QueryList only; ReadWatch's channel
// is the one described above. IndexInfo.LPM marks the index.
//
// An LPMIndex is a secondary index: NewTable refuses it as the primary
// index with ErrPrimaryIndexLPM.
type LPMIndex[Obj any] struct {
	// Name names the index in queries and errors. It must match
	// NamePattern and be unique within the table.
	Name string
	// FromObject returns the object's prefixes in this index.
	FromObject func(obj Obj) PrefixSet
	// Unique makes the index hold at most one object per prefix.
	Unique bool
}

// lpmIndexer marks LPMIndex among the Indexers.
type lpmIndexer interface{ isLPM() }

func (i LPMIndex[Obj]) isLPM()                {}
func (i LPMIndex[Obj]) indexName() string     { return i.Name }
func (i LPMIndex[Obj]) isUnique() bool        { return i.Unique }
func (i LPMIndex[Obj]) parsesText() bool      { return true }
func (i LPMIndex[Obj]) keyType() reflect.Type { return reflect.TypeFor[netip.Prefix]() }

func (i LPMIndex[Obj]) objectKeys() func(Obj) index.KeySet {
	from := i.FromObject
	if from == nil {
		return nil
	}
	return func(obj Obj) index.KeySet {
		s := from(obj)
		return s.keys()
	}
}

// Query returns a query for the objects whose prefix is exactly p, masked
// (and an IPv4-mapped prefix taken as IPv4); with Prefix, for p and its
// subnets. The query of an invalid prefix selects nothing and sorts before
// every prefix. A query of an IPv4 prefix allocates nothing.
func (i LPMIndex[Obj]) Query(p netip.Prefix) Query[Obj] {
	var b [lpmLen6]byte
	q := Query[Obj]{index: i.Name}
	q.key.set(lpmQueryKey(b[:0], p, 0))
	return q
}

// Containing returns a query for the objects whose prefix contains addr,
// the longest prefix first: Get returns the longest-prefix match, List
// every match. An IPv4-mapped address is looked up as IPv4, and a zone is
// ignored. The query of an invalid address selects nothing. A query of an
// IPv4 address allocates nothing.
func (i LPMIndex[Obj]) Containing(addr netip.Addr) Query[Obj] {
	addr = addr.WithZone("")
	return i.ContainingPrefix(netip.PrefixFrom(addr, addr.BitLen()))
}

// ContainingPrefix returns a query for the objects whose prefix contains
// all of p, masked (p itself included), the longest prefix first, as
// Containing does for an address.
func (i LPMIndex[Obj]) ContainingPrefix(p netip.Prefix) Query[Obj] {
	var b [lpmLen6]byte
	q := Query[Obj]{index: i.Name}
	q.key.set(lpmQueryKey(b[:0], p, lpmContaining))
	return q
}

// QueryKey returns a query for an already encoded key: one of the
// index's own (from AnyTable.ParseKey, or a Query's Key), which reads as
// the query that made it. A key the index cannot have made selects
// nothing in Get, List and Prefix.
func (i LPMIndex[Obj]) QueryKey(key index.Key) Query[Obj] {
	return Query[Obj]{index: i.Name, key: sliceKey(key)}
}

// KeyString renders an encoded key of the index for people: a prefix
// ("10.0.0.0/8") for a stored key or Query's, an address for Containing's,
// and otherwise as index.Key's String does.
func (i LPMIndex[Obj]) KeyString(k index.Key) string { return i.keyString(k) }

func (i LPMIndex[Obj]) keyString(k index.Key) string {
	if tag, a, n, ok := lpmDecode(k); ok {
		switch p := netip.PrefixFrom(a.netipAddr(tag), n); {
		case tag&lpmContaining == 0:
			return p.String()
		case n == p.Addr().BitLen():
			return p.Addr().String()
		}
	}
	return k.String()
}

func (i LPMIndex[Obj]) fromString(s string) (index.Key, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%w: IP prefix: %w", index.ErrParseKey, err)
		}
		return lpmQueryKey(nil, p, 0), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return nil, fmt.Errorf("%w: IP address or prefix: %w", index.ErrParseKey, err)
	}
	a = a.WithZone("")
	return lpmQueryKey(nil, netip.PrefixFrom(a, a.BitLen()), lpmContaining), nil
}

// PrefixSet is the zero, one or several prefixes an object has in an
// LPMIndex. The zero PrefixSet is empty. It is a value: FromObject returns
// it, and the table reads it at once.
type PrefixSet struct {
	one    netip.Prefix
	hasOne bool
	many   []netip.Prefix
}

// PrefixSetOf returns the set of the one prefix p. It does not allocate,
// and the key the table makes of an IPv4 prefix does not either.
func PrefixSetOf(p netip.Prefix) PrefixSet { return PrefixSet{one: p, hasOne: true} }

// NewPrefixSet returns the set of the prefixes ps. It keeps ps itself,
// which must not change while the set is in use: a slice the (immutable)
// object holds is the usual argument.
func NewPrefixSet(ps ...netip.Prefix) PrefixSet {
	if len(ps) == 1 {
		return PrefixSetOf(ps[0])
	}
	return PrefixSet{many: ps}
}

// Len returns the number of prefixes in s.
func (s PrefixSet) Len() int {
	if s.hasOne {
		return 1
	}
	return len(s.many)
}

// At returns the i'th prefix of s. It panics if i is out of range
// [0, s.Len()).
func (s PrefixSet) At(i int) netip.Prefix {
	if s.hasOne && i == 0 {
		return s.one
	}
	return s.many[i]
}

// keys returns the index keys of s: each prefix's key, or for a prefix
// the index refuses a key that says why (lpmBadKey).
func (s *PrefixSet) keys() index.KeySet {
	if s.hasOne {
		var b [lpmLen6]byte
		return index.KeySetOf(lpmObjectKey(b[:0], s.one))
	}
	if len(s.many) == 0 {
		return index.KeySet{}
	}
	// NewPrefixSet keeps a single prefix as one: these are two or more.
	buf := make([]byte, 0, lpmLen6*len(s.many))
	keys := make([]index.Key, len(s.many))
	for i, p := range s.many {
		start := len(buf)
		buf = lpmObjectKey(buf, p)
		keys[i] = buf[start:len(buf):len(buf)]
	}
	return index.NewKeySet(keys...)
}

// The keys of an LPM index. A prefix P/L (address P masked to its length
// L) is stored as
//
//	tag | P | L
//
// where tag is lpmTag4 or lpmTag6, P the 4 or 16 address bytes, and L one
// byte: 6 or 18 bytes, one length per family. What the reads rely on
// (lpm_read.go):
//
//  1. Key order is family, then address, then length.
//  2. The keys of a family have one length: no key is a prefix of another,
//     so the escaped entries of a non-unique index sort as their keys do.
//  3. The prefixes within P/L (P/L and its subnets) are exactly the keys
//     from tag|P|L to tag|last(P/L)|W, W being the family's width (32 or
//     128): one range.
//  4. Every stored key is well formed: the write path refuses prefixes
//     that are invalid or have host bits (lpmBadKey), and maps IPv4-mapped
//     prefixes to IPv4.
//
// Query keys have the same layout. Those of Containing set lpmContaining
// in the tag, so that the reads tell them apart; the query of an invalid
// prefix or address is the tag alone (lpmTagNone, or it with
// lpmContaining), which no stored key equals or starts with.
const (
	lpmTagNone    = 0x00
	lpmTag4       = 0x04
	lpmTag6       = 0x06
	lpmContaining = 0x80
	lpmLen4       = 1 + 4 + 1
	lpmLen6       = 1 + 16 + 1
)

// lpmBadKey is the key the index gives a prefix it refuses: 0x00, the
// reason, then the prefix's text for the error message. Such keys never
// reach a tree: the write path checks for them first (lpmCheckKeys).
const (
	lpmBadInvalid  = 0x01
	lpmBadHostBits = 0x02
)

// lpmObjectKey appends the key of an object's prefix p to dst, or the
// lpmBadKey that says why the index refuses p.
func lpmObjectKey(dst []byte, p netip.Prefix) []byte {
	switch {
	case !p.IsValid():
		return append(append(dst, lpmTagNone, lpmBadInvalid), p.String()...)
	case p.Masked() != p:
		return append(append(dst, lpmTagNone, lpmBadHostBits), p.String()...)
	}
	tag, a, n := lpmCanonical(p)
	return appendLPMKey(dst, tag, a, n)
}

// lpmQueryKey appends the key of a query of p, masked, to dst; kind is 0
// for Query and lpmContaining for Containing.
func lpmQueryKey(dst []byte, p netip.Prefix, kind byte) []byte {
	if !p.IsValid() {
		return append(dst, lpmTagNone|kind)
	}
	tag, a, n := lpmCanonical(p.Masked())
	return appendLPMKey(dst, tag|kind, a, n)
}

// lpmCheckKeys returns the error of the first prefix of keys, an
// LPMIndex's keys of an object, that the index refuses, or nil.
func lpmCheckKeys(keys *index.KeySet) error {
	for j := range keys.Len() {
		if k := keys.At(j); k[0] == lpmTagNone {
			if k[1] == lpmBadHostBits {
				return fmt.Errorf("prefix %s: %w", k[2:], ErrPrefixHostBits)
			}
			return fmt.Errorf("%w: %s", ErrInvalidPrefix, k[2:])
		}
	}
	return nil
}

// lpmAddr is an address as a 128-bit big-endian number; an IPv4 address
// is in the top 32 bits of hi.
type lpmAddr struct{ hi, lo uint64 }

// lpmCanonical returns the tag, address and length of the valid prefix p,
// an IPv4-mapped one as IPv4.
func lpmCanonical(p netip.Prefix) (tag byte, a lpmAddr, n int) {
	addr, n := p.Addr(), p.Bits()
	if addr.Is4In6() && n >= 96 {
		addr, n = addr.Unmap(), n-96
	}
	if addr.Is4() {
		b := addr.As4()
		return lpmTag4, lpmAddr{hi: uint64(binary.BigEndian.Uint32(b[:])) << 32}, n
	}
	b := addr.As16()
	return lpmTag6, lpmAddr{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}, n
}

// netipAddr returns a as an address of the family of tag.
func (a lpmAddr) netipAddr(tag byte) netip.Addr {
	if tag&^lpmContaining == lpmTag4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(a.hi>>32))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	return netip.AddrFrom16(b)
}

// mask returns a with the bits from n on cleared.
func (a lpmAddr) mask(n int) lpmAddr {
	switch {
	case n <= 0:
		return lpmAddr{}
	case n < 64:
		return lpmAddr{hi: a.hi &^ (^uint64(0) >> n)}
	case n < 128:
		return lpmAddr{a.hi, a.lo &^ (^uint64(0) >> (n - 64))}
	}
	return a
}

// fill returns a with the bits from n on set: the last address of a/n.
func (a lpmAddr) fill(n int) lpmAddr {
	switch {
	case n <= 0:
		return lpmAddr{^uint64(0), ^uint64(0)}
	case n < 64:
		return lpmAddr{a.hi | ^uint64(0)>>n, ^uint64(0)}
	case n < 128:
		return lpmAddr{a.hi, a.lo | ^uint64(0)>>(n-64)}
	}
	return a
}

// commonBits returns the number of leading bits a and b share.
func commonBits(a, b lpmAddr) int {
	if x := a.hi ^ b.hi; x != 0 {
		return bits.LeadingZeros64(x)
	}
	return 64 + bits.LeadingZeros64(a.lo^b.lo)
}

// lpmWidth returns the number of address bits of the family of tag.
func lpmWidth(tag byte) int {
	if tag&^lpmContaining == lpmTag4 {
		return 32
	}
	return 128
}

// appendLPMKey appends the key tag | a | n to dst.
func appendLPMKey(dst []byte, tag byte, a lpmAddr, n int) []byte {
	dst = append(dst, tag)
	if tag&^lpmContaining == lpmTag4 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(a.hi>>32))
	} else {
		dst = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, a.hi), a.lo)
	}
	return append(dst, byte(n))
}

// lpmDecode returns the tag, address and length of the LPM key k, stored
// or of a query, and whether k is well formed: of its family's length,
// with a length within the family's width and no host bits.
func lpmDecode(k []byte) (tag byte, a lpmAddr, n int, ok bool) {
	if len(k) == 0 {
		return 0, a, 0, false
	}
	tag = k[0]
	switch tag &^ lpmContaining {
	case lpmTag4:
		if len(k) != lpmLen4 {
			return tag, a, 0, false
		}
		a.hi = uint64(binary.BigEndian.Uint32(k[1:5])) << 32
	case lpmTag6:
		if len(k) != lpmLen6 {
			return tag, a, 0, false
		}
		a = lpmAddr{binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:17])}
	default:
		return tag, a, 0, false
	}
	n = int(k[len(k)-1])
	return tag, a, n, n <= lpmWidth(tag) && a.mask(n) == a
}
