package part

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// kind tells which concrete struct a *header is the first field of.
type kind uint8

const (
	kindLeaf kind = iota
	kindNode4
	kindNode16
	kindNode48
	kindNode256
)

// Shrink thresholds. A node shrinks to the next smaller kind when its child
// count drops to the threshold, which is below the smaller kind's capacity so
// that a key added and removed at the boundary does not make the node change
// kind every time (hysteresis).
const (
	shrink16  = 3  // node16 -> node4
	shrink48  = 12 // node48 -> node16
	shrink256 = 37 // node256 -> node48
)

// header is the first field of every node, so a *header can be converted to
// the concrete node type its kind names.
//
// Ownership: a node whose txn equals the id of the transaction currently
// writing is owned by that transaction: it was created there, no reader can
// reach it, and the transaction changes it in place. Every other node is
// shared with some committed tree and is never changed again, except for its
// watch field.
type header struct {
	// watch holds the node's watch channel (a chan struct{} stored as a
	// pointer), nil until a reader first asks for it. Readers install it
	// with compare-and-swap; a committing transaction replaces it with the
	// closed sentinel when the node leaves the tree, closing what was there.
	// Accessed only atomically.
	watch unsafe.Pointer
	// tk packs the id of the transaction that created the node (the high
	// 56 bits) and the node's kind (the low 8). Written only at creation.
	// Packing them keeps a leaf's header at 16 bytes.
	tk uint64
}

func mkHeader(txn uint64, k kind) header { return header{tk: txn<<8 | uint64(k)} }

func (h *header) kind() kind  { return kind(h.tk) }
func (h *header) txn() uint64 { return h.tk >> 8 }

// leaf holds one key and its value. The key is the full key, owned by the
// tree and never changed; it is kept as pointer and 32-bit length (a
// slice's capacity is never needed), so that a leaf with a two-word value
// and a key of up to 16 bytes kept inline is 64 bytes, one cache line.
type leaf[T any] struct {
	header
	kptr  *byte
	klen  uint32
	value T
}

func (l *leaf[T]) key() []byte { return unsafe.Slice(l.kptr, l.klen) }

// inlineLeaf is a leaf whose key lives in buf, in the same allocation.
type inlineLeaf[T any, B [8]byte | [16]byte | [32]byte] struct {
	leaf[T]
	buf B
}

// leafKey has the layout of every leaf[T] up to and including the key, so
// code that only needs the key need not be generic.
type leafKey struct {
	header
	kptr *byte
	klen uint32
}

// inner is the part shared by all inner node kinds. It is laid out so
// that a lookup finds everything it reads of a node4 (kind, count, prefix
// length, edge bytes and the first child) in the node's first 64 bytes, and
// of a node16 all but the children.
type inner struct {
	header
	count uint16 // number of children
	// The prefix is the full key path from the root to this node: every
	// key below the node starts with it. It aliases the key of some leaf
	// that is (or was) below the node, so it costs no allocation. The
	// root's prefix is empty. Kept as pointer and length (a slice's
	// capacity is never needed) to keep the node small.
	plen uint32
	pptr *byte
	// leaf is the leaf whose key equals the prefix, or nil.
	leaf *header
	// leaves is the number of leaves below the node: its own leaf and
	// those of all its children (count.go, invariant 1). A transaction
	// changes it in place only in a node it owns, like every other field.
	// Last, so that the fields a lookup reads come first.
	leaves int
}

// prefix returns the node's prefix.
func (in *inner) prefix() []byte { return unsafe.Slice(in.pptr, in.plen) }

// depth returns the length of the node's prefix: the position in a key of
// the byte that selects a child.
func (in *inner) depth() int { return int(in.plen) }

func (in *inner) setPrefix(p []byte) {
	in.plen = uint32(len(p))
	in.pptr = unsafe.SliceData(p)
}

type node4 struct {
	inner
	keys     [4]byte // sorted edge bytes of children[:count]
	children [4]*header
}

type node16 struct {
	inner
	keys     [16]byte
	children [16]*header
}

// node48 keeps its children sorted by edge byte; the bitmap says which edge
// bytes are present, and a child's slot is the number of present bytes
// below its own.
type node48 struct {
	inner
	bitmap   [4]uint64
	children [48]*header
}

// node256 has a slot per edge byte; absent children are nil.
type node256 struct {
	inner
	children [256]*header
}

func (h *header) inner() *inner     { return (*inner)(unsafe.Pointer(h)) }
func (h *header) node4() *node4     { return (*node4)(unsafe.Pointer(h)) }
func (h *header) node16() *node16   { return (*node16)(unsafe.Pointer(h)) }
func (h *header) node48() *node48   { return (*node48)(unsafe.Pointer(h)) }
func (h *header) node256() *node256 { return (*node256)(unsafe.Pointer(h)) }
func (h *header) leafKey() []byte {
	l := (*leafKey)(unsafe.Pointer(h))
	return unsafe.Slice(l.kptr, l.klen)
}

func asLeaf[T any](h *header) *leaf[T] { return (*leaf[T])(unsafe.Pointer(h)) }

// nodeKey returns the key of a leaf or the prefix of an inner node.
func (h *header) nodeKey() []byte {
	if h.kind() == kindLeaf {
		return h.leafKey()
	}
	return h.inner().prefix()
}

// children returns the child slots of an inner node in edge-byte order. For
// node256 the slice has 256 entries, nil where there is no child.
func (h *header) children() []*header {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		return n.children[:n.count]
	case kindNode16:
		n := h.node16()
		return n.children[:n.count]
	case kindNode48:
		n := h.node48()
		return n.children[:n.count]
	default:
		return h.node256().children[:]
	}
}

// rank48 returns the number of edge bytes below b present in the bitmap.
func rank48(bm *[4]uint64, b byte) int {
	w := int(b >> 6)
	r := bits.OnesCount64(bm[w] & (1<<(b&63) - 1))
	for i := range w {
		r += bits.OnesCount64(bm[i])
	}
	return r
}

func has48(bm *[4]uint64, b byte) bool { return bm[b>>6]&(1<<(b&63)) != 0 }

// findChild returns the slot of the child under edge byte b, or nil.
func (h *header) findChild(b byte) **header {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		if i := indexByte4(&n.keys, b); i < int(n.count) {
			return &n.children[i]
		}
	case kindNode16:
		n := h.node16()
		if i := indexByte16(&n.keys, b); i < int(n.count) {
			return &n.children[i]
		}
	case kindNode48:
		n := h.node48()
		if has48(&n.bitmap, b) {
			return &n.children[rank48(&n.bitmap, b)]
		}
	case kindNode256:
		n := h.node256()
		if n.children[b] != nil {
			return &n.children[b]
		}
	}
	return nil
}

// The edge bytes of node4 and node16 are searched a word at a time: x is
// the keys XORed with b in every byte, so a matching key is a zero byte,
// and (x - 0x01...) &^ x & 0x80... sets the high bit of the lowest zero
// byte (and maybe of higher ones, which borrows can flip; only the lowest
// is used). Keys are distinct, so the lowest match is the match; slots
// beyond the count hold stale bytes, which the callers' count check drops.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// indexByte4 returns the position of b in keys, or 4 or more if absent.
func indexByte4(keys *[4]byte, b byte) int {
	x := binary.LittleEndian.Uint32(keys[:]) ^ 0x01010101*uint32(b)
	return bits.TrailingZeros32((x-0x01010101)&^x&0x80808080) / 8
}

// indexByte16 returns the position of b in keys, or 16 or more if absent.
func indexByte16(keys *[16]byte, b byte) int {
	bb := lows * uint64(b)
	x0 := binary.LittleEndian.Uint64(keys[:8]) ^ bb
	x1 := binary.LittleEndian.Uint64(keys[8:]) ^ bb
	m0 := (x0 - lows) &^ x0 & highs
	m1 := (x1 - lows) &^ x1 & highs
	// Both halves are searched and the answer picked without a branch:
	// which half holds the byte is as unpredictable as the key.
	i, i1 := bits.TrailingZeros64(m0)/8, 8+bits.TrailingZeros64(m1)/8
	if m0 == 0 {
		i = i1
	}
	return i
}

// lowerBound returns the position in children() of the first child whose
// edge byte is at least b.
func (h *header) lowerBound(b byte) int {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		i := 0
		for i < int(n.count) && n.keys[i] < b {
			i++
		}
		return i
	case kindNode16:
		n := h.node16()
		i := 0
		for i < int(n.count) && n.keys[i] < b {
			i++
		}
		return i
	case kindNode48:
		return rank48(&h.node48().bitmap, b)
	default:
		return int(b)
	}
}

// seekChild returns h's children (children()), the position in them of
// the first child whose edge byte is at least b, and whether that child's
// edge byte is b: lowerBound and findChild in one pass over the node.
func (h *header) seekChild(b byte) (kids []*header, i int, found bool) {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		kids = n.children[:n.count]
		for i < len(kids) && n.keys[i] < b {
			i++
		}
		return kids, i, i < len(kids) && n.keys[i] == b
	case kindNode16:
		n := h.node16()
		kids = n.children[:n.count]
		for i < len(kids) && n.keys[i] < b {
			i++
		}
		return kids, i, i < len(kids) && n.keys[i] == b
	case kindNode48:
		n := h.node48()
		return n.children[:n.count], rank48(&n.bitmap, b), has48(&n.bitmap, b)
	default:
		n := h.node256()
		return n.children[:], int(b), n.children[b] != nil
	}
}

// comparePart is bytes.Compare for the short stretches of key a seek
// compares with a node's prefix, without a call.
func comparePart(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return cmp.Compare(len(a), len(b))
}

// equalPart is bytes.Equal for the short stretches of key between two
// branch bytes (prefixNode): a loop, without the call bytes.Equal makes.
func equalPart(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// compareKey is bytes.Compare, with 8-byte keys (the usual integer keys)
// compared in one load each instead of a call.
func compareKey(a, b []byte) int {
	if len(a) == 8 && len(b) == 8 {
		return cmp.Compare(binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b))
	}
	return bytes.Compare(a, b)
}

// edgeAt returns the edge byte of the child at position i of children().
func (h *header) edgeAt(i int) byte {
	switch h.kind() {
	case kindNode4:
		return h.node4().keys[i]
	case kindNode16:
		return h.node16().keys[i]
	case kindNode48:
		// The edge byte is also the child's key byte at the node's depth.
		return h.node48().children[i].nodeKey()[h.inner().depth()]
	default:
		return byte(i)
	}
}

// isFull reports whether adding a child requires a bigger node.
func (h *header) isFull() bool {
	switch h.kind() {
	case kindNode4:
		return h.inner().count == 4
	case kindNode16:
		return h.inner().count == 16
	case kindNode48:
		return h.inner().count == 48
	default:
		return false
	}
}

// shouldShrink reports whether, after removing one child, the node should
// become the next smaller kind.
func (h *header) shouldShrink() bool {
	c := h.inner().count - 1
	switch h.kind() {
	case kindNode16:
		return c <= shrink16
	case kindNode48:
		return c <= shrink48
	case kindNode256:
		return c <= shrink256
	default:
		return false
	}
}

// newInner allocates an empty inner node of the given kind. Its leaf count
// is 0, whatever leaf is: the caller sets it (kept out of here so that
// newInner inlines, BenchmarkInsert).
func newInner(k kind, txn uint64, prefix []byte, leaf *header) *header {
	in := inner{header: mkHeader(txn, k), leaf: leaf}
	in.setPrefix(prefix)
	switch k {
	case kindNode4:
		return &(&node4{inner: in}).header
	case kindNode16:
		return &(&node16{inner: in}).header
	case kindNode48:
		return &(&node48{inner: in}).header
	default:
		return &(&node256{inner: in}).header
	}
}

// cloneInner returns a copy of the inner node h owned by txn. The fields are
// copied one by one rather than by struct assignment so that the watch field,
// which readers change concurrently, is never read here.
func cloneInner(h *header, txn uint64) *header {
	src := h.inner()
	in := inner{header: mkHeader(txn, h.kind()), count: src.count, plen: src.plen, pptr: src.pptr, leaf: src.leaf, leaves: src.leaves}
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		return &(&node4{inner: in, keys: n.keys, children: n.children}).header
	case kindNode16:
		n := h.node16()
		return &(&node16{inner: in, keys: n.keys, children: n.children}).header
	case kindNode48:
		n := h.node48()
		return &(&node48{inner: in, bitmap: n.bitmap, children: n.children}).header
	default:
		return &(&node256{inner: in, children: h.node256().children}).header
	}
}

// resized returns a copy of the inner node h, owned by txn, of kind k, which
// must be able to hold h's children.
func resized(h *header, k kind, txn uint64) *header {
	src := h.inner()
	nn := newInner(k, txn, src.prefix(), src.leaf)
	nn.inner().count, nn.inner().leaves = src.count, src.leaves
	kids := h.children()
	switch k {
	case kindNode4:
		d := nn.node4()
		i := 0
		for j, c := range kids {
			if c != nil {
				d.keys[i], d.children[i] = h.edgeAt(j), c
				i++
			}
		}
	case kindNode16:
		d := nn.node16()
		i := 0
		for j, c := range kids {
			if c != nil {
				d.keys[i], d.children[i] = h.edgeAt(j), c
				i++
			}
		}
	case kindNode48:
		d := nn.node48()
		i := 0
		for j, c := range kids {
			if c != nil {
				b := h.edgeAt(j)
				d.bitmap[b>>6] |= 1 << (b & 63)
				d.children[i] = c
				i++
			}
		}
	case kindNode256:
		d := nn.node256()
		for j, c := range kids {
			if c != nil {
				d.children[h.edgeAt(j)] = c
			}
		}
	}
	return nn
}

// insertChild adds child c under edge byte b to h, which must be owned, must
// not be full and must not have a child under b.
func (h *header) insertChild(b byte, c *header) {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		i := h.lowerBound(b)
		copy(n.keys[i+1:n.count+1], n.keys[i:n.count])
		copy(n.children[i+1:n.count+1], n.children[i:n.count])
		n.keys[i], n.children[i] = b, c
	case kindNode16:
		n := h.node16()
		i := h.lowerBound(b)
		copy(n.keys[i+1:n.count+1], n.keys[i:n.count])
		copy(n.children[i+1:n.count+1], n.children[i:n.count])
		n.keys[i], n.children[i] = b, c
	case kindNode48:
		n := h.node48()
		i := rank48(&n.bitmap, b)
		copy(n.children[i+1:n.count+1], n.children[i:n.count])
		n.children[i] = c
		n.bitmap[b>>6] |= 1 << (b & 63)
	case kindNode256:
		h.node256().children[b] = c
	}
	h.inner().count++
}

// removeChild removes the child under edge byte b from h, which must be owned
// and must have such a child.
func (h *header) removeChild(b byte) {
	switch h.kind() {
	case kindNode4:
		n := h.node4()
		i := h.lowerBound(b)
		copy(n.keys[i:], n.keys[i+1:n.count])
		copy(n.children[i:], n.children[i+1:n.count])
		n.children[n.count-1] = nil
	case kindNode16:
		n := h.node16()
		i := h.lowerBound(b)
		copy(n.keys[i:], n.keys[i+1:n.count])
		copy(n.children[i:], n.children[i+1:n.count])
		n.children[n.count-1] = nil
	case kindNode48:
		n := h.node48()
		i := rank48(&n.bitmap, b)
		copy(n.children[i:], n.children[i+1:n.count])
		n.children[n.count-1] = nil
		n.bitmap[b>>6] &^= 1 << (b & 63)
	case kindNode256:
		h.node256().children[b] = nil
	}
	h.inner().count--
}

// firstChild returns the only child of an inner node with count 1.
func (h *header) firstChild() *header {
	for _, c := range h.children() {
		if c != nil {
			return c
		}
	}
	return nil
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
