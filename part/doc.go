// Package part implements a persistent adaptive radix tree: an immutable
// map from byte-string keys to values of any type, from which a
// transaction builds the next version while every older version keeps
// reading exactly as before. It is the data structure under every Strata
// table, index and watch channel, and Map and Set, small immutable
// collections for use inside stored objects, are built on it.
//
// # The tree
//
// A Tree is a small value (a root pointer and the options) that
// any number of goroutines may read at once. Its nodes are of five kinds
// (node.go):
//
//   - a leaf holds one key, whole, and its value; a key of up to 32 bytes
//     is kept in the leaf's own allocation (inlineLeaf);
//   - node4 and node16 hold up to 4 and 16 children beside a sorted array
//     of their edge bytes (node16's searched a word at a time);
//   - node48 holds up to 48 children sorted by edge byte, with a 256-bit
//     bitmap saying which edge bytes are present (a child's slot is the
//     number of present bytes below its own);
//   - node256 has a slot per edge byte.
//
// A node grows to the next kind when it is full, and shrinks to the
// smaller kind when its child count falls to a threshold below that
// kind's capacity (3, 12 and 37), so that a key added and removed at the
// boundary does not change the node's kind every time.
//
// Paths are compressed: an inner node exists only where keys branch, and
// it keeps its whole prefix (the key path from the root to it, aliasing
// the key of a leaf below it, so it costs no allocation) rather than the
// bytes since its parent. A lookup (search in tree.go) therefore descends
// by edge bytes alone and compares the full key once, at the leaf. Every
// key has a leaf, the empty key and a key that is a prefix of another
// included: an inner node holds, beside its children, the leaf whose key
// equals its prefix, if there is one. Keys may be up to MaxKeyLen bytes.
//
// # Transactions and persistence
//
// Tree.Txn starts a Txn, which reads its own writes and builds the next
// tree by path copying (txn.go). Each node records, in its header, the id
// of the transaction that created it. A transaction owns the nodes that
// carry its current id: no reader can reach them, and later writes in the
// same transaction change them in place. Every other node belongs to a
// committed tree and is never changed again (except for its watch
// channel): to change one, the transaction copies it under its own id,
// and copies its ancestors up to the first one it already owns or to the
// root (Txn.own, Txn.replaceUp). A transaction that writes many keys thus
// copies each shared node once, not once per write.
//
// Commit returns the new tree and clears the transaction's id, which
// freezes every node created so far: the next write, in the same Txn,
// takes a fresh id and copies again. Reset starts a Txn again from any
// tree; Discard does so and also closes the watch channels readers took
// on nodes that will now never be committed.
//
// # Watch channels
//
// Every node may carry a watch channel, created only when a reader asks
// for one (GetWatch, PrefixWatch, RootWatch, Txn.InsertWatch and
// Txn.ModifyWatch) and installed with a compare-and-swap (watch.go). A
// channel closes when its node leaves the tree: a transaction records
// each node of a committed tree that it copies or removes (retire), and
// Commit closes their channels, exactly those and no others. A closed
// node's watch field is set to a shared closed channel, so a reader that
// asks an old node for its channel afterwards gets one that is already
// closed, and no change can be missed. Hence a channel taken on a key
// that is present closes exactly when that key is updated or deleted; one
// taken on an absent key closes when the key is inserted, and may close
// when keys sharing a long prefix with it change.
//
// CommitOnly and Notify split Commit in two, so that a database can
// publish a tree before waking its watchers. MoveRetired, Retired and
// Mark (handoff.go) let a database start the next transaction from a
// tree that is committed but not yet published (while its journal record
// is being made durable), and close the right channels whether the tree
// is then published (Retired.Notify) or thrown away (DiscardSince). A
// tree created with RootOnlyWatch keeps a channel on its root only.
//
// # Reading
//
// Get, Floor, All, Prefix, LowerBound and their reverse variants read a
// tree or a transaction; they return iter.Seq2 iterators over key and
// value. An Iterator (iterator.go) keeps an explicit stack, held in the
// Iterator itself for shallow trees, so that a scan allocates nothing per
// key. The key a read returns belongs to the tree and must not be
// modified.
//
// CountPrefix and CountRange count keys without visiting them, in
// O(key length): every inner node keeps the number of leaves below it,
// which a transaction updates along the path of each write that adds or
// removes a key (count.go). The root's count is Len.
//
// # Correctness
//
// The tree's structural invariants (kinds match child counts, children
// sorted and under their parent's prefix, leaf counts right) are checked by
// validate.go after every commit in the tests, and on every commit in
// builds with -tags invariants. TestDifferential and FuzzDifferential
// compare every result against go-immutable-radix; TestWatchExact checks
// that a channel closes if and only if a key below its node changed.
// The package's README.md has the benchmarks against go-immutable-radix;
// bench/compare/RESULTS.md adds cilium/statedb's tree.
package part
