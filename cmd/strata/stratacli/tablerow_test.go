package stratacli

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// cliRoute implements strata.TableWritable: its columns are not its
// fields.
type cliRoute struct {
	ID   uint64 `json:"id"`
	Dst  string `json:"dst"`
	Hops int    `json:"hops"`
}

func (*cliRoute) TableHeader() []string { return []string{"Destination", "Path"} }
func (r *cliRoute) TableRow() []string {
	return []string{r.Dst, strconv.Itoa(r.Hops) + " hops"}
}

var cliRouteByID = strata.Index[*cliRoute, uint64]{
	Name:       "id",
	FromObject: func(r *cliRoute) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// TestTableWritableColumns: the table output of a registered type that
// implements strata.TableWritable has its TableHeader's columns and its
// TableRow's cells (statedb's convention, as the db/... script commands
// and the web inspector show it); the other formats keep the object's
// JSON, and a table of unknown type its JSON members.
func TestTableWritableColumns(t *testing.T) {
	dir := t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", cliRouteByID)
	if err := s.Register(persist.Table(routes, persist.JSON[*cliRoute]())); err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(routes)
	if _, _, err := routes.Insert(txn, &cliRoute{ID: 1, Dst: "10.0.0.0/8", Hops: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	typed := []Option{WithTable("routes", persist.JSON[*cliRoute](), cliRouteByID)}
	out, errOut, code := runCmd(t, typed, "dump", "routes", "-d", dir, "-o", "table")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || strings.Fields(lines[0])[2] != "DESTINATION" || strings.Fields(lines[0])[3] != "PATH" ||
		!strings.HasSuffix(lines[1], "10.0.0.0/8   2 hops") {
		t.Fatalf("typed table: exit %d, %s\n%q", code, errOut, out)
	}
	if out, _, _ := runCmd(t, typed, "dump", "routes", "-d", dir, "-o", "jsonl"); !strings.Contains(out, `"object":{"id":1,"dst":"10.0.0.0/8","hops":2}`) {
		t.Errorf("typed jsonl: %q, want the object's JSON", out)
	}
	if out, _, _ := runCmd(t, nil, "dump", "routes", "-d", dir, "-o", "table"); !strings.Contains(out, "DST") {
		t.Errorf("untyped table: %q, want the JSON members' columns", out)
	}
}
