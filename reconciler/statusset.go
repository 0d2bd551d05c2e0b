package reconciler

import (
	"cmp"
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"
)

// StatusSet holds the statuses of several reconcilers of one object, by
// reconciler name. Each reconciler gets and sets its own entry
// (Config.GetObjectStatus returns set.Get(name), Config.SetObjectStatus
// stores set.Set(name, status)); whoever changes the object marks every
// entry pending with Pending.
//
// The names given to NewStatusSet and Pending are required: they have an
// entry from then on, so IsDone is false until each of them is Done.
// Name the reconcilers that must see an object: a set that names none is
// Done as soon as the entries it has are, the first reconciler's Done
// included, before the others wrote anything (cilium#48268). An empty
// set is Done (no entry is not Done) and reads "Pending" (a reconciler
// reading it with Get finds Pending), as cilium/statedb's StatusSet.
//
// A StatusSet is a value; its methods return changed copies and never
// modify the set they are called on, so a set inside a stored object may
// be shared by any number of readers.
type StatusSet struct {
	id        uint64
	updatedAt time.Time
	statuses  []namedStatus // sorted by name
}

type namedStatus struct {
	Status
	name string
}

func (s StatusSet) find(name string) (int, bool) {
	return slices.BinarySearchFunc(s.statuses, name, func(ns namedStatus, name string) int {
		return cmp.Compare(ns.name, name)
	})
}

// NewStatusSet returns a set in which each of the named reconcilers is
// pending.
func NewStatusSet(names ...string) StatusSet {
	return StatusSet{}.Pending(names...)
}

// Pending returns a copy of the set in which every entry, and an entry for
// each of names, is Pending with one new ID: the object changed, and each
// reconciler is to reconcile it again.
func (s StatusSet) Pending(names ...string) StatusSet {
	s.id = nextID()
	s.updatedAt = time.Now()
	pending := Status{Kind: StatusKindPending, UpdatedAt: s.updatedAt, ID: s.id}
	statuses := make([]namedStatus, len(s.statuses), len(s.statuses)+len(names))
	for i, ns := range s.statuses {
		statuses[i] = namedStatus{pending, ns.name}
	}
	s.statuses = statuses
	for _, name := range names {
		if i, found := s.find(name); !found {
			s.statuses = slices.Insert(s.statuses, i, namedStatus{pending, name})
		}
	}
	return s
}

// Set returns a copy of the set with the named reconciler's status set
// (and the name required from then on).
func (s StatusSet) Set(name string, status Status) StatusSet {
	i, found := s.find(name)
	statuses := make([]namedStatus, 0, len(s.statuses)+1)
	statuses = append(statuses, s.statuses[:i]...)
	statuses = append(statuses, namedStatus{status, name})
	if found {
		i++
	}
	s.statuses = append(statuses, s.statuses[i:]...)
	return s
}

// Get returns the named reconciler's status. A name the set has no entry
// for is Pending (with the ID of the set's last Pending), so that a
// reconciler added later reconciles objects written before it existed.
func (s StatusSet) Get(name string) Status {
	if i, found := s.find(name); found {
		return s.statuses[i].Status
	}
	return Status{Kind: StatusKindPending, UpdatedAt: s.updatedAt, ID: s.id}
}

// Delete returns a copy of the set without the named reconciler's entry:
// the name is no longer required.
func (s StatusSet) Delete(name string) StatusSet {
	i, found := s.find(name)
	if !found {
		return s
	}
	s.statuses = slices.Delete(slices.Clone(s.statuses), i, i+1)
	return s
}

// Len returns the number of entries.
func (s StatusSet) Len() int { return len(s.statuses) }

// All returns the entries, by name.
func (s StatusSet) All() iter.Seq2[string, Status] {
	return func(yield func(string, Status) bool) {
		for _, ns := range s.statuses {
			if !yield(ns.name, ns.Status) {
				return
			}
		}
	}
}

// IsPendingOrRefreshing reports whether some entry is Pending or
// Refreshing.
func (s StatusSet) IsPendingOrRefreshing() bool {
	for _, ns := range s.statuses {
		if ns.IsPendingOrRefreshing() {
			return true
		}
	}
	return false
}

// IsDone reports whether every entry is Done; an empty set is Done, as
// statedb's.
func (s StatusSet) IsDone() bool {
	for _, ns := range s.statuses {
		if ns.Kind != StatusKindDone {
			return false
		}
	}
	return true
}

// String lists the entries by kind, for instance
// "Errored: b (boom), Pending: c, Done: a (1.5s ago)": the errored, then
// the pending (and refreshing), then the done, each kind in name order,
// and the age of the newest status. An empty set reads "Pending", as
// statedb's.
func (s StatusSet) String() string {
	if len(s.statuses) == 0 {
		return "Pending"
	}
	var updatedAt time.Time
	var done, pending, errored []string
	for _, ns := range s.statuses {
		if ns.UpdatedAt.After(updatedAt) {
			updatedAt = ns.UpdatedAt
		}
		switch ns.Kind {
		case StatusKindDone:
			done = append(done, ns.name)
		case StatusKindError:
			errored = append(errored, ns.name+" ("+ns.GetError()+")")
		default:
			pending = append(pending, ns.name)
		}
	}
	var b strings.Builder
	for _, part := range []struct {
		label string
		names []string
	}{{"Errored", errored}, {"Pending", pending}, {"Done", done}} {
		if len(part.names) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(part.label + ": " + strings.Join(part.names, " "))
	}
	b.WriteString(" (" + prettySince(updatedAt) + " ago)")
	return b.String()
}

// MarshalJSON encodes the set as an object of statuses by name.
func (s StatusSet) MarshalJSON() ([]byte, error) {
	return json.Marshal(maps.Collect(s.All()))
}

// UnmarshalJSON decodes a set encoded by MarshalJSON.
func (s *StatusSet) UnmarshalJSON(data []byte) error {
	m := map[string]Status{}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	s.setAll(m)
	return nil
}

// MarshalYAML encodes the set as a mapping of statuses by name, as
// MarshalJSON does (gopkg.in/yaml.v3 and sigs.k8s.io/yaml call it).
func (s StatusSet) MarshalYAML() (any, error) {
	return maps.Collect(s.All()), nil
}

// UnmarshalYAML decodes a set encoded by MarshalYAML. It has the form of
// yaml.v2's Unmarshaler, which gopkg.in/yaml.v3 still calls, so that this
// package need not import a YAML library.
func (s *StatusSet) UnmarshalYAML(unmarshal func(any) error) error {
	m := map[string]Status{}
	if err := unmarshal(&m); err != nil {
		return err
	}
	s.setAll(m)
	return nil
}

// setAll makes the set hold the statuses of m, by name.
func (s *StatusSet) setAll(m map[string]Status) {
	s.statuses = make([]namedStatus, 0, len(m))
	for name, status := range m {
		s.statuses = append(s.statuses, namedStatus{status, name})
	}
	slices.SortFunc(s.statuses, func(a, b namedStatus) int { return cmp.Compare(a.name, b.name) })
}
