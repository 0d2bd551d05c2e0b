package strata

import (
	"slices"
	"strconv"
	"testing"

	"github.com/strata-db/strata/index"
)

type rowObject struct {
	ID    uint64
	Panic bool
}

func (o *rowObject) TableHeader() []string { return []string{"ID"} }

func (o *rowObject) TableRow() []string {
	if o.Panic {
		panic("boom")
	}
	return []string{strconv.FormatUint(o.ID, 10)}
}

type panicHeader struct{ ID uint64 }

func (panicHeader) TableHeader() []string { panic("boom") }
func (panicHeader) TableRow() []string    { return nil }

func TestAnyTableTableHeaderAndRow(t *testing.T) {
	db := New()
	rows := MustNewTable(db, "rows", Index[*rowObject, uint64]{
		Name:       "id",
		FromObject: func(o *rowObject) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	})
	plain := newTestTable(t, db, "plain")
	panics := MustNewTable(db, "panics", Index[panicHeader, uint64]{
		Name:       "id",
		FromObject: func(o panicHeader) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	})

	at := AnyTable{Meta: rows}
	if got := at.TableHeader(); !slices.Equal(got, []string{"ID"}) {
		t.Errorf("TableHeader of a TableWritable type: %q, want [ID]", got)
	}
	if got := at.TableRow(&rowObject{ID: 7}); !slices.Equal(got, []string{"7"}) {
		t.Errorf("TableRow: %q, want [7]", got)
	}
	if got := at.TableRow(&rowObject{ID: 7, Panic: true}); got != nil {
		t.Errorf("TableRow that panics: %q, want nil", got)
	}
	if got := (AnyTable{Meta: plain}).TableHeader(); got != nil {
		t.Errorf("TableHeader of a type without TableWritable: %q, want nil", got)
	}
	if got := (AnyTable{Meta: plain}).TableRow(&testObject{ID: 1}); got != nil {
		t.Errorf("TableRow of an object without TableWritable: %q, want nil", got)
	}
	if got := (AnyTable{Meta: panics}).TableHeader(); got != nil {
		t.Errorf("TableHeader that panics: %q, want nil", got)
	}
	var _ TableWritable = &rowObject{}
}
