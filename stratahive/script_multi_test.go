package stratahive_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// TestMultiCommandsErrors: db/and, db/in and db/or refuse a query of an
// LPM index (strata.ErrInvalidQuery), no queries (strata.ErrNoQueries), a
// key that does not parse and an unknown index, with --delete too, and
// write nothing (multi.txtar has db/in of several indexes).
func TestMultiCommandsErrors(t *testing.T) {
	db, routes, rev, e, s := routesScript(t)
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
