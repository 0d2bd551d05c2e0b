package strata

import (
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testObject is the object of the tables most tests use.
type testObject struct {
	ID    uint64
	Name  string
	Tags  part.Set[string]
	Value int
}

var (
	idIndex = Index[*testObject, uint64]{
		Name:       "id",
		FromObject: func(o *testObject) index.KeySet { return index.KeySetOf(index.Uint64(o.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	nameIndex = Index[*testObject, string]{
		Name:       "name",
		FromObject: func(o *testObject) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	tagsIndex = Index[*testObject, string]{
		Name:       "tags",
		FromObject: func(o *testObject) index.KeySet { return index.Set(o.Tags) },
		FromKey:    index.String,
	}
	valueIndex = Index[*testObject, int]{
		Name:       "value",
		FromObject: func(o *testObject) index.KeySet { return index.NewKeySet(index.Int(o.Value)) },
		FromKey:    index.Int,
	}
)

func newTestTable(t testing.TB, db *DB, name string, secondary ...Indexer[*testObject]) RWTable[*testObject] {
	t.Helper()
	tbl, err := NewTable(db, name, idIndex, secondary...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
