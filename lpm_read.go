package strata

import (
	"fmt"
	"iter"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// The reads of an LPMIndex (lpm.go, which describes its keys).
//
// # The search of a Containing query
//
// The prefixes that contain A/M (an address A of M bits, or a prefix of
// length M, masked) are the P/L with L <= M and P = mask(A, L). Their keys
// are the candidates
//
//	c(B) = tag | mask(A, B) | B,  for B = M, M-1, ..., 0,
//
// which decrease as B does: mask(A, B) cannot grow as B shrinks, and at
// one address the shorter length sorts first. The search keeps a bound B
// such that no candidate above c(B) is left to find, and takes K = P/L,
// the greatest key at most c(B): one descent of the tree (part's Floor).
// Then one of these holds:
//
//  1. K = c(L) for some L <= B: the longest match left. It is yielded and
//     the bound becomes L-1.
//  2. K is not a candidate. Then P < mask(A, B): were P = mask(A, B), K <=
//     c(B) would give L <= B, and P, masked to L as every stored key is,
//     would be mask(A, L), case 1. Let m be the number of leading bits P
//     and mask(A, B) share: P has a 0 at bit m where mask(A, B) has a 1,
//     so m < B; every c(L) with m < L <= B has that 1 too and sorts above
//     K, and so is not in the tree (K is the greatest key up to c(B)).
//     The bound becomes m.
//  3. There is no K, or K is of the other family: no candidate is left.
//
// The bound falls at every step, so a search takes at most M+1 descents:
// in practice one per match, and one for each place where the path to A
// branches off towards keys that do not contain it.
//
// A non-unique index stores an entry as K escaped, the terminator 0x00
// 0x01, then the primary key. The search takes the floor of c(B) escaped
// and followed by 0x00 0x02, which is above every entry of c(B) and below
// those of greater keys, and reads a match's entries forward, in primary
// key order.

// lpmTarget is what a Containing query looks for: the prefixes of the
// family tag that contain addr/bits.
type lpmTarget struct {
	tag  byte
	addr lpmAddr
	bits int
}

// containingTarget decodes the key of a Containing query; ok is false if
// the key is not one (an invalid address's, or a raw key).
func containingTarget(key []byte) (t lpmTarget, ok bool) {
	tag, a, n, ok := lpmDecode(key)
	return lpmTarget{tag &^ lpmContaining, a, n}, ok && tag&lpmContaining != 0
}

// isContainingKey reports whether key is that of a Containing query,
// well formed or not.
func isContainingKey(key []byte) bool { return len(key) > 0 && key[0]&lpmContaining != 0 }

// lpmSearch calls yield with the entries of tree, an LPM index's tree,
// whose prefix contains t: the longest prefix first, each prefix's entries
// in key order, until yield returns false. nonUnique: the entries are
// those of a non-unique index.
func lpmSearch[T any](tree part.Tree[T], t lpmTarget, nonUnique bool, yield func(entry []byte, bits int, v T) bool) {
	var kb [lpmLen6]byte
	var eb [2*lpmLen6 + 2]byte
	for b := t.bits; b >= 0; {
		a := t.addr.mask(b)
		c := appendLPMKey(kb[:0], t.tag, a, b)
		if nonUnique {
			c = append(index.AppendEscapedPrefix(eb[:0], c), 0x00, 0x02)
		}
		e, v, ok := tree.Floor(c) // BenchmarkDB_LPMIndex_Get_Routes
		if !ok {
			return
		}
		k := e
		if nonUnique {
			if k, ok = lpmEntryKey(&kb, e); !ok {
				return
			}
		}
		tag, p, l, _ := lpmDecode(k)
		if tag != t.tag {
			return
		}
		if l <= b && t.addr.mask(l) == p {
			if !nonUnique {
				if !yield(e, l, v) {
					return
				}
			} else if !yieldEntries(tree, index.AppendEscaped(eb[:0], k), l, yield) {
				return
			}
			b = l - 1
			continue
		}
		m := commonBits(p, a)
		if invariants && m >= b {
			panic(fmt.Sprintf("strata: LPM search at bound %d found %x, which shares %d bits", b, k, m))
		}
		b = min(m, b-1)
	}
}

// yieldEntries calls yield with the entries of tree that start with
// prefix, those of a prefix of length bits, in key order, and reports
// whether yield asked for more.
func yieldEntries[T any](tree part.Tree[T], prefix []byte, bits int, yield func(entry []byte, bits int, v T) bool) bool {
	var it part.Iterator[T]
	it.SetTree(tree)
	it.SeekPrefix(prefix)
	for e, v, ok := it.Next(); ok; e, v, ok = it.Next() {
		if !yield(e, bits, v) {
			return false
		}
	}
	return true
}

// lpmEntryKey decodes the LPM key at the start of e, an entry of a
// non-unique LPM index, into dst.
func lpmEntryKey(dst *[lpmLen6]byte, e []byte) ([]byte, bool) {
	var n int
	switch {
	case len(e) > 0 && e[0] == lpmTag4:
		n = lpmLen4
	case len(e) > 0 && e[0] == lpmTag6:
		n = lpmLen6
	default:
		return nil, false
	}
	j := 0
	for i := range n {
		if j >= len(e) {
			return nil, false
		}
		c := e[j]
		j++
		if c == 0x00 {
			if j >= len(e) || e[j] != 0xff {
				return nil, false
			}
			j++
		}
		dst[i] = c
	}
	return dst[:n], true
}

// lpmFamilyWatch returns the channel of List of the Containing query key:
// that of the keys of its family, any of which may be an answer.
func lpmFamilyWatch[T any](tree part.Tree[T], key []byte) <-chan struct{} {
	var fam [1]byte
	if len(key) > 0 {
		fam[0] = key[0] &^ lpmContaining
	}
	return tree.WatchPrefix(fam[:])
}

// lpmGetWatch returns the channel of Get of the Containing query key,
// whose longest match has the length bits (-1 for none): that of the keys
// that start with the query's tag and its first bits/8 address bytes. The
// answer changes only if the match's entries change or a longer prefix
// that contains the target is added, and all of their keys start so
// (those of a prefix of length L > bits share its first L/8 bytes with
// the target). Without a match, every key of the family may be one.
func lpmGetWatch[T any](tree part.Tree[T], key []byte, bits int, nonUnique bool) <-chan struct{} {
	if bits < 0 || len(key) < 1+bits/8 {
		return lpmFamilyWatch(tree, key)
	}
	var b [lpmLen6]byte
	var eb [2 * lpmLen6]byte
	p := append(append(b[:0], key[0]&^lpmContaining), key[1:1+bits/8]...)
	if nonUnique {
		p = index.AppendEscapedPrefix(eb[:0], p)
	}
	return tree.WatchPrefix(p)
}

// lpmGet is Get of the Containing query key on tree: the first object of
// the longest prefix that contains it, and that prefix's length (-1 if
// none does).
func lpmGet[Obj any](tree part.Tree[object[Obj]], key []byte, nonUnique bool) (obj Obj, rev Revision, bits int, found bool) {
	t, ok := containingTarget(key)
	if !ok {
		return obj, 0, -1, false
	}
	bits = -1
	lpmSearch(tree, t, nonUnique, func(_ []byte, l int, o object[Obj]) bool {
		obj, rev, bits, found = o.obj, o.rev, l, true
		return false
	})
	return obj, rev, bits, found
}

// lpmList is List of the Containing query key on tree; dedup: skip the
// objects already returned (some object has several prefixes).
func lpmList[Obj any](tree part.Tree[object[Obj]], key []byte, nonUnique, dedup bool) iter.Seq2[Obj, Revision] {
	t, ok := containingTarget(key)
	return func(yield func(Obj, Revision) bool) {
		if !ok {
			return
		}
		var seen map[Revision]struct{}
		lpmSearch(tree, t, nonUnique, func(_ []byte, _ int, o object[Obj]) bool {
			if dedup {
				if _, dup := seen[o.rev]; dup {
					return true
				}
				if seen == nil {
					seen = map[Revision]struct{}{}
				}
				seen[o.rev] = struct{}{}
			}
			return yield(o.obj, o.rev)
		})
	}
}

// lpmWithin returns the upper bound of the entries of the prefixes within
// the prefix of the Query key key, its subnets and itself, whose lower
// bound is key (invariant 3 of lpm.go), and the length of the prefix of
// key that all of their keys start with, for the watch channel. ok is
// false if key is not a well-formed key of a prefix.
func lpmWithin(key []byte) (upper queryKey, common int, ok bool) {
	tag, a, n, ok := lpmDecode(key)
	if !ok || tag&lpmContaining != 0 {
		return upper, 0, false
	}
	var b [lpmLen6]byte
	upper.set(appendLPMKey(b[:0], tag, a.fill(n), lpmWidth(tag)))
	return upper, 1 + n/8, true
}

// lpmPrefix is Prefix, ReversePrefix and their Watch forms on an LPM
// index: the prefixes within q's. The channel is made only if watch is
// set.
func (t *table[Obj]) lpmPrefix(ix *indexDef[Obj], st *tableState[Obj], q Query[Obj], reverse, watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}) {
	tree := st.tree(ix.pos)
	key := q.key.bytes()
	if isContainingKey(key) {
		t.panicContaining(ix, "Prefix")
	}
	upper, common, ok := lpmWithin(key)
	var w <-chan struct{}
	if !ok {
		if watch {
			w = tree.RootWatch()
		}
		return func(func(Obj, Revision) bool) {}, w
	}
	if watch {
		var buf [2 * lpmLen6]byte
		p := key[:common]
		if !ix.unique {
			p = index.AppendEscapedPrefix(buf[:0], p)
		}
		w = tree.WatchPrefix(p)
	}
	s := scan{scanFlags: scanFlags{op: scanBounded, reverse: reverse, dedup: st.dedup(ix.pos), nonUnique: !ix.unique,
		lowerSet: true, upperSet: true, upperInclusive: true}, lower: q.key, upper: upper}
	return scanObjects(st.treeRef(ix.pos), s), w
}

// lpmCheckBounds panics if a bound of the bounded read s (LowerBound,
// Range and their reverse forms) of the LPM index ix is a Containing
// query.
func (t *table[Obj]) lpmCheckBounds(ix *indexDef[Obj], s *scan) {
	if s.lowerSet && isContainingKey(s.lower.bytes()) || s.upperSet && isContainingKey(s.upper.bytes()) {
		t.panicContaining(ix, "a bounded read (LowerBound, Range)")
	}
}

// panicContaining reports a Containing query given to a read other than
// Get and List: a programming error.
func (t *table[Obj]) panicContaining(ix *indexDef[Obj], read string) {
	panic(fmt.Sprintf("strata: table %q: index %q: %s with a Containing query, which is for Get and List",
		t.meta.name, ix.name, read))
}
