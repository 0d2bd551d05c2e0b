package main

import (
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/stratahive"
)

// Host is a host the program is asked to know: a name and an address.
type Host struct {
	Name string `yaml:"name"`
	Addr string `yaml:"addr"`
}

func (h *Host) TableHeader() []string { return []string{"Name", "Addr"} }
func (h *Host) TableRow() []string    { return []string{h.Name, h.Addr} }

// Entry is a host's entry in the hosts directory, derived from a Host and
// written out by the reconciler.
type Entry struct {
	Name   string            `yaml:"name"`
	Addr   string            `yaml:"addr"`
	Status reconciler.Status `yaml:"status"`
}

func (e *Entry) TableHeader() []string { return []string{"Name", "Addr", "Status"} }
func (e *Entry) TableRow() []string    { return []string{e.Name, e.Addr, e.Status.Kind.String()} }

func (e *Entry) Clone() *Entry                        { c := *e; return &c }
func (e *Entry) GetStatus() reconciler.Status         { return e.Status }
func (e *Entry) SetStatus(s reconciler.Status) *Entry { e.Status = s; return e }

var HostName = strata.Index[*Host, string]{
	Name:       "name",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

var EntryName = strata.Index[*Entry, string]{
	Name:       "name",
	FromObject: func(e *Entry) index.KeySet { return index.NewKeySet(index.String(e.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

func NewHostTable(db *strata.DB) (strata.RWTable[*Host], error) {
	return strata.NewTable(db, "hosts", HostName)
}

func NewEntryTable(db *strata.DB) (strata.RWTable[*Entry], error) {
	return strata.NewTable(db, "entries", EntryName)
}

// deriveEntry makes a host's entry; hosts without an address get none.
func deriveEntry(h *Host, deleted bool) (*Entry, stratahive.DeriveResult) {
	e := &Entry{Name: h.Name, Addr: h.Addr, Status: reconciler.StatusPending()}
	if deleted || h.Addr == "" {
		return e, stratahive.DeriveDelete
	}
	return e, stratahive.DeriveInsert
}
