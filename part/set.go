package part

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// Set is a persistent set of elements of type T, kept in a Tree so that
// iteration is in ascending order (see MapKey for the order). It is meant
// for small collections held inside stored, immutable database objects, such
// as the tags of an object.
//
// A Set is an immutable value: no method changes its receiver, and the
// methods that change the contents (Add, Delete, Union, Difference,
// Intersect) return a new Set that shares all unchanged nodes with the old
// one. A Set is therefore cheap to copy and safe to share between goroutines
// without locks; only UnmarshalJSON and UnmarshalYAML, which replace the
// whole value they are called on, write to their receiver.
//
// The zero Set is an empty set, ready to use.
type Set[T MapKey] struct {
	// tree holds each element under its encoding by codec. It is the zero
	// Tree, which must not be read, exactly when codec is zero: that is the
	// zero Set. Every Set derived from a non-empty one carries its codec,
	// even when emptied again by Delete.
	tree  Tree[T]
	codec keyCodec
}

// NewSet returns a Set of the given items. Repeated items are kept once.
func NewSet[T MapKey](items ...T) Set[T] {
	var s Set[T]
	if len(items) == 0 {
		return s
	}
	txn, c := s.txn()
	var buf [8]byte
	for _, x := range items {
		txn.Insert(encodeKey(c, x, &buf), x)
	}
	return Set[T]{txn.Commit(), c}
}

// txn returns a transaction on s's tree, or on a new empty tree for the zero
// Set, and the codec of T.
func (s Set[T]) txn() (*Txn[T], keyCodec) {
	if s.codec == 0 {
		return New[T](RootOnlyWatch()).Txn(), codecFor[T]()
	}
	return s.tree.Txn(), s.codec
}

// Len returns the number of elements in s.
func (s Set[T]) Len() int {
	if s.codec == 0 {
		return 0
	}
	return s.tree.Len()
}

// Has reports whether x is in s.
// Guarded by BenchmarkSet_Has.
func (s Set[T]) Has(x T) bool {
	if s.codec == 0 {
		return false
	}
	var buf [8]byte
	_, found := s.tree.Get(encodeKey(s.codec, x, &buf))
	return found
}

// Add returns a Set that has x and is otherwise the same as s. If s already
// has x, it returns s.
func (s Set[T]) Add(x T) Set[T] {
	if s.Has(x) {
		return s
	}
	txn, c := s.txn()
	var buf [8]byte
	txn.Insert(encodeKey(c, x, &buf), x)
	return Set[T]{txn.Commit(), c}
}

// Delete returns a Set without x and otherwise the same as s. If s does not
// have x, it returns s.
func (s Set[T]) Delete(x T) Set[T] {
	if s.codec == 0 {
		return s
	}
	txn := s.tree.Txn()
	var buf [8]byte
	if _, found := txn.Delete(encodeKey(s.codec, x, &buf)); !found {
		return s
	}
	return Set[T]{txn.Commit(), s.codec}
}

// All returns the elements of s in ascending order.
func (s Set[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if s.codec == 0 {
			return
		}
		for _, x := range s.tree.All() {
			if !yield(x) {
				return
			}
		}
	}
}

// First returns the smallest element of s, and false if s is empty. It
// descends the tree once and allocates nothing.
func (s Set[T]) First() (x T, ok bool) {
	if s.codec == 0 {
		return x, false
	}
	if l := minLeaf(s.tree.root); l != nil {
		return asLeaf[T](l).value, true
	}
	return x, false
}

// Equal reports whether s and o have the same elements.
func (s Set[T]) Equal(o Set[T]) bool {
	if s.Len() != o.Len() {
		return false
	}
	if s.Len() == 0 {
		return true
	}
	for key := range s.tree.All() {
		if _, found := o.tree.Get(key); !found {
			return false
		}
	}
	return true
}

// Union returns a Set of the elements in s or o or both.
func (s Set[T]) Union(o Set[T]) Set[T] {
	// Add the smaller set's elements to the larger.
	big, small := s, o
	if s.Len() < o.Len() {
		big, small = o, s
	}
	if small.Len() == 0 {
		return big
	}
	txn := big.tree.Txn()
	added := 0
	for key, x := range small.tree.All() {
		if _, found := big.tree.Get(key); !found {
			txn.Insert(key, x)
			added++
		}
	}
	if added == 0 {
		return big
	}
	return Set[T]{txn.Commit(), big.codec}
}

// Difference returns a Set of the elements of s that o does not have. If
// that is all of them, it returns s.
func (s Set[T]) Difference(o Set[T]) Set[T] {
	if s.Len() == 0 || o.Len() == 0 {
		return s
	}
	txn := s.tree.Txn()
	removed := 0
	if o.Len() < s.Len() {
		for key := range o.tree.All() {
			if _, found := txn.Delete(key); found {
				removed++
			}
		}
	} else {
		for key := range s.tree.All() {
			if _, found := o.tree.Get(key); found {
				txn.Delete(key)
				removed++
			}
		}
	}
	if removed == 0 {
		return s
	}
	return Set[T]{txn.Commit(), s.codec}
}

// Intersect returns a Set of the elements that s and o both have.
func (s Set[T]) Intersect(o Set[T]) Set[T] {
	// Remove from the smaller set what the larger lacks.
	small, big := s, o
	if o.Len() < s.Len() {
		small, big = o, s
	}
	if small.Len() == 0 {
		return small
	}
	txn := small.tree.Txn()
	removed := 0
	for key := range small.tree.All() {
		if _, found := big.tree.Get(key); !found {
			txn.Delete(key)
			removed++
		}
	}
	if removed == 0 {
		return small
	}
	return Set[T]{txn.Commit(), small.codec}
}

// ToSlice returns the elements of s in ascending order, in a new slice that
// the caller owns. It is never nil.
func (s Set[T]) ToSlice() []T {
	out := make([]T, 0, s.Len())
	for x := range s.All() {
		out = append(out, x)
	}
	return out
}

// String returns the elements of s in ascending order, formatted like a Go
// slice by the fmt package but marked as a set: "set[a b c]". It is meant
// for debugging.
func (s Set[T]) String() string {
	var b strings.Builder
	b.WriteString("set[")
	sep := ""
	for x := range s.All() {
		fmt.Fprintf(&b, "%s%v", sep, x)
		sep = " "
	}
	b.WriteByte(']')
	return b.String()
}

// MarshalJSON encodes s as a JSON array of its elements in ascending order,
// each encoded by encoding/json as a T. The empty Set is []. (A Set[byte]
// is an array too, not the base64 string that encoding/json makes of a
// []byte.)
func (s Set[T]) MarshalJSON() ([]byte, error) {
	buf := []byte{'['}
	for x := range s.All() {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		b, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	return append(buf, ']'), nil
}

// UnmarshalJSON replaces *s with the elements of the JSON array data.
// Repeated elements are kept once. A JSON null leaves *s as it is, as
// encoding/json does for other types. On error, *s is left as it was.
func (s *Set[T]) UnmarshalJSON(data []byte) error {
	var items []T
	if err := json.Unmarshal(data, &items); err != nil {
		return err
	}
	if items == nil {
		return nil // null
	}
	*s = NewSet(items...)
	return nil
}

// MarshalYAML implements the Marshaler interface of gopkg.in/yaml.v3 (and
// v2) without importing it: s is encoded as a YAML sequence of its elements
// in ascending order.
func (s Set[T]) MarshalYAML() (any, error) { return s.ToSlice(), nil }

// UnmarshalYAML implements the obsolete Unmarshaler interface that
// gopkg.in/yaml.v3 still honours (and v2's), without importing it: it
// replaces *s with the elements of a YAML sequence, converted to T by the
// YAML decoder. Repeated elements are kept once. On error, *s is left as it
// was.
func (s *Set[T]) UnmarshalYAML(unmarshal func(any) error) error {
	var items []T
	if err := unmarshal(&items); err != nil {
		return err
	}
	*s = NewSet(items...)
	return nil
}
