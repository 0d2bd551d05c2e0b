package stratahive_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/hive/script"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/stratahive"
)

// TestMultiCommandsErrors: db/and, db/in and db/or refuse a query of an
// LPM index (strata.ErrInvalidQuery), no queries (strata.ErrNoQueries), a
// key that does not parse and an unknown index, with --delete too, and
// write nothing (multi.txtar has db/in of several indexes).
func TestMultiCommandsErrors(t *testing.T) {
	byID := strata.Index[*route, uint64]{
		Name:       "id",
		FromObject: func(r *route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	byDst := strata.LPMIndex[*route]{
		Name:       "prefix",
		FromObject: func(r *route) strata.PrefixSet { return strata.PrefixSetOf(r.Dst) },
	}
	db := strata.New()
	routes, err := strata.NewTable(db, "routes", byID, byDst)
	must(t, err)
	wtxn := db.WriteTxn(routes)
	_, _, err = routes.Insert(wtxn, &route{ID: 1, Dst: netip.MustParsePrefix("10.0.0.0/8")})
	must(t, err)
	txn, err := wtxn.Commit()
	must(t, err)
	rev := routes.Revision(txn)
	e := &script.Engine{Cmds: stratahive.Commands(db, stratahive.NewRegistry())}
	s, err := script.NewState(context.Background(), t.TempDir(), nil)
	must(t, err)
	for _, tc := range []struct {
		line string
		want error
	}{
		{"db/and --delete routes prefix=10.0.0.0/8", strata.ErrInvalidQuery},
		{"db/in --delete routes prefix=10.1.2.3", strata.ErrInvalidQuery},
		{"db/or --delete routes 1 prefix=10.0.0.0/8", strata.ErrInvalidQuery},
		{"db/or --delete routes", strata.ErrNoQueries},
		{"db/and --delete routes id=x", index.ErrParseKey},
		{"db/and --delete routes nope=1", strata.ErrIndexNotFound},
	} {
		var out strings.Builder
		if err := e.ExecuteLine(s, tc.line, &out); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.line, err, tc.want)
		}
	}
	if got := routes.Revision(db.ReadTxn()); got != rev {
		t.Fatalf("revision %d after the bad commands, want %d", got, rev)
	}
	var out strings.Builder
	must(t, e.ExecuteLine(s, "db/or --delete routes 1 id=1", &out))
	if n := routes.NumObjects(db.ReadTxn()); n != 0 {
		t.Fatalf("%d routes after db/or --delete, want 0", n)
	}
}
