package part

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// Map is a persistent map from keys of type K to values of type V, kept in a
// Tree so that iteration is in ascending key order (see MapKey for the
// order). It is meant for small collections held inside stored, immutable
// database objects, such as the labels of an object.
//
// A Map is an immutable value: no method changes its receiver, and the
// methods that change the contents (Set, Delete, Union, Difference) return a
// new Map that shares all unchanged nodes with the old one. A Map is
// therefore cheap to copy and safe to share between goroutines without
// locks; only UnmarshalJSON and UnmarshalYAML, which replace the whole value
// they are called on, write to their receiver.
//
// The zero Map is an empty map, ready to use.
type Map[K MapKey, V any] struct {
	// tree holds one mapEntry per key, under the key's encoding by codec.
	// It is the zero Tree, which must not be read, exactly when codec is
	// zero: that is the zero Map. Every Map derived from a non-empty one
	// carries its codec, even when emptied again by Delete.
	tree  Tree[mapEntry[K, V]]
	codec keyCodec
}

// mapEntry is what a Map stores under a key: the key itself as well as the
// value, so that iteration returns keys without decoding or allocating.
type mapEntry[K MapKey, V any] struct {
	key   K
	value V
}

// FromMap returns a Map holding the entries of m.
func FromMap[K MapKey, V any](m map[K]V) Map[K, V] {
	var out Map[K, V]
	if len(m) == 0 {
		return out
	}
	txn, c := out.txn()
	var buf [8]byte
	for k, v := range m {
		txn.Insert(encodeKey(c, k, &buf), mapEntry[K, V]{k, v})
	}
	return Map[K, V]{txn.Commit(), c}
}

// txn returns a transaction on m's tree, or on a new empty tree for the zero
// Map, and the codec of K.
func (m Map[K, V]) txn() (*Txn[mapEntry[K, V]], keyCodec) {
	if m.codec == 0 {
		return New[mapEntry[K, V]](RootOnlyWatch()).Txn(), codecFor[K]()
	}
	return m.tree.Txn(), m.codec
}

// Len returns the number of keys in m.
func (m Map[K, V]) Len() int {
	if m.codec == 0 {
		return 0
	}
	return m.tree.Len()
}

// Get returns the value stored under k, and whether there is one.
// Guarded by BenchmarkMap_Get.
func (m Map[K, V]) Get(k K) (value V, found bool) {
	if m.codec == 0 {
		return value, false
	}
	var buf [8]byte
	e, found := m.tree.Get(encodeKey(m.codec, k, &buf))
	return e.value, found
}

// Has reports whether m has the key k.
func (m Map[K, V]) Has(k K) bool {
	_, found := m.Get(k)
	return found
}

// Set returns a Map that has v under k and is otherwise the same as m.
// Guarded by BenchmarkMap_Set.
func (m Map[K, V]) Set(k K, v V) Map[K, V] {
	txn, c := m.txn()
	var buf [8]byte
	txn.Insert(encodeKey(c, k, &buf), mapEntry[K, V]{k, v})
	return Map[K, V]{txn.Commit(), c}
}

// Delete returns a Map without the key k and otherwise the same as m. If m
// does not have k, it returns m.
func (m Map[K, V]) Delete(k K) Map[K, V] {
	if m.codec == 0 {
		return m
	}
	txn := m.tree.Txn()
	var buf [8]byte
	if _, found := txn.Delete(encodeKey(m.codec, k, &buf)); !found {
		return m
	}
	return Map[K, V]{txn.Commit(), m.codec}
}

// All returns the keys and values of m in ascending key order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.codec == 0 {
			return
		}
		for _, e := range m.tree.All() {
			if !yield(e.key, e.value) {
				return
			}
		}
	}
}

// Keys returns the keys of m in ascending order.
func (m Map[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// LowerBound returns the keys and values of m whose keys are greater than or
// equal to k, in ascending key order.
func (m Map[K, V]) LowerBound(k K) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.codec == 0 {
			return
		}
		var buf [8]byte
		for _, e := range m.tree.LowerBound(encodeKey(m.codec, k, &buf)) {
			if !yield(e.key, e.value) {
				return
			}
		}
	}
}

// Prefix returns the keys and values of m whose keys start with prefix, in
// ascending key order. It is meant for string keys: "eu-" finds "eu-west"
// and "eu-north". An integer key is encoded at its type's full width, so
// for integer keys it finds at most the entry of prefix itself.
func (m Map[K, V]) Prefix(prefix K) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.codec == 0 {
			return
		}
		var buf [8]byte
		for _, e := range m.tree.Prefix(encodeKey(m.codec, prefix, &buf)) {
			if !yield(e.key, e.value) {
				return
			}
		}
	}
}

// Equal reports whether m and o have the same keys and, under each key,
// values for which eq returns true.
func (m Map[K, V]) Equal(o Map[K, V], eq func(V, V) bool) bool {
	if m.Len() != o.Len() {
		return false
	}
	if m.Len() == 0 {
		return true
	}
	for key, e := range m.tree.All() {
		oe, found := o.tree.Get(key)
		if !found || !eq(e.value, oe.value) {
			return false
		}
	}
	return true
}

// EqualKeys reports whether m and o have the same keys, whatever their
// values.
func (m Map[K, V]) EqualKeys(o Map[K, V]) bool {
	return m.Equal(o, func(V, V) bool { return true })
}

// Union returns a Map with the keys of both m and o. Where both have a key,
// the value from o wins.
func (m Map[K, V]) Union(o Map[K, V]) Map[K, V] {
	switch {
	case o.Len() == 0:
		return m
	case m.Len() == 0:
		return o
	}
	// Insert the smaller map's entries into a transaction on the larger.
	if m.Len() >= o.Len() {
		txn := m.tree.Txn()
		for key, e := range o.tree.All() {
			txn.Insert(key, e)
		}
		return Map[K, V]{txn.Commit(), m.codec}
	}
	txn := o.tree.Txn()
	for key, e := range m.tree.All() {
		if _, found := o.tree.Get(key); !found {
			txn.Insert(key, e)
		}
	}
	return Map[K, V]{txn.Commit(), m.codec}
}

// Difference returns a Map with the entries of m whose keys o does not
// have. If that is all of them, it returns m.
func (m Map[K, V]) Difference(o Map[K, V]) Map[K, V] {
	if m.Len() == 0 || o.Len() == 0 {
		return m
	}
	txn := m.tree.Txn()
	removed := 0
	if o.Len() < m.Len() {
		for key := range o.tree.All() {
			if _, found := txn.Delete(key); found {
				removed++
			}
		}
	} else {
		for key := range m.tree.All() {
			if _, found := o.tree.Get(key); found {
				txn.Delete(key)
				removed++
			}
		}
	}
	if removed == 0 {
		return m
	}
	return Map[K, V]{txn.Commit(), m.codec}
}

// ToMap returns the entries of m in a new Go map, which the caller owns.
func (m Map[K, V]) ToMap() map[K]V {
	out := make(map[K]V, m.Len())
	for k, v := range m.All() {
		out[k] = v
	}
	return out
}

// String returns the entries of m in key order, formatted like a Go map by
// the fmt package: "map[a:1 b:2]". It is meant for debugging.
func (m Map[K, V]) String() string {
	var b strings.Builder
	b.WriteString("map[")
	sep := ""
	for k, v := range m.All() {
		fmt.Fprintf(&b, "%s%v:%v", sep, k, v)
		sep = " "
	}
	b.WriteByte(']')
	return b.String()
}

// MarshalJSON encodes m as a JSON object with its keys in ascending order.
// As with a Go map in encoding/json, string keys are the object's names
// and integer keys are written as decimal strings; values are encoded with
// encoding/json. (Unlike encoding/json, a key's own MarshalText method, if
// any, is not used.)
func (m Map[K, V]) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for k, v := range m.All() {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		name, err := json.Marshal(formatKey(m.codec, k))
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("part.Map: key %v: %w", k, err)
		}
		buf = append(append(append(buf, name...), ':'), value...)
	}
	return append(buf, '}'), nil
}

// UnmarshalJSON replaces *m with the entries of the JSON object data, in the
// form MarshalJSON writes. A JSON null leaves *m as it is, as encoding/json
// does for other types. On error, *m is left as it was: the error wraps
// strconv.ErrSyntax or strconv.ErrRange for a name that is not a decimal
// integer fitting K.
func (m *Map[K, V]) UnmarshalJSON(data []byte) error {
	var raw map[string]V
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		return nil // null
	}
	var out Map[K, V]
	if len(raw) == 0 {
		*m = out
		return nil
	}
	txn, c := out.txn()
	var buf [8]byte
	for name, v := range raw {
		k, err := parseKey[K](c, name)
		if err != nil {
			return fmt.Errorf("part.Map: key %q: %w", name, err)
		}
		txn.Insert(encodeKey(c, k, &buf), mapEntry[K, V]{k, v})
	}
	*m = Map[K, V]{txn.Commit(), c}
	return nil
}

// MarshalYAML implements the Marshaler interface of gopkg.in/yaml.v3 (and
// v2) without importing it: m is encoded as a YAML mapping, by way of the Go
// map that ToMap returns, and so with its keys in the order that the YAML
// encoder chooses for Go maps.
func (m Map[K, V]) MarshalYAML() (any, error) { return m.ToMap(), nil }

// UnmarshalYAML implements the obsolete Unmarshaler interface that
// gopkg.in/yaml.v3 still honours (and v2's), without importing it: it
// replaces *m with the entries of a YAML mapping. The YAML decoder converts
// keys and values to K and V. On error, *m is left as it was.
func (m *Map[K, V]) UnmarshalYAML(unmarshal func(any) error) error {
	var raw map[K]V
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*m = FromMap(raw)
	return nil
}
