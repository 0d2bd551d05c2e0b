package e2e

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
)

// Route implements strata.TableWritable: its columns are not its fields.
type Route struct {
	ID   uint64
	Dst  string
	Hops int
}

func (*Route) TableHeader() []string { return []string{"Destination", "Path"} }
func (r *Route) TableRow() []string {
	return []string{r.Dst, strconv.Itoa(r.Hops) + " hops"}
}

var routeByID = strata.Index[*Route, uint64]{
	Name:       "id",
	FromObject: func(r *Route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

// TestInspectorTableWritable: a table of objects that implement
// strata.TableWritable shows their TableHeader and TableRow (statedb's
// convention) in Chromium, and live mode keeps to those columns: a
// change shows the object's new TableRow, from the change stream.
func TestInspectorTableWritable(t *testing.T) {
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", routeByID)
	write := func(r *Route) {
		t.Helper()
		wtxn := db.WriteTxn(routes)
		if _, _, err := routes.Insert(wtxn, r); err != nil {
			t.Fatal(err)
		}
		if _, err := wtxn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write(&Route{ID: 1, Dst: "10.0.0.0/8", Hops: 2})
	write(&Route{ID: 2, Dst: "10.1.0.0/16", Hops: 3})
	h := httpapi.New(db, httpapi.Options{UI: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.Close()
	})
	ctx, _ := browser(t)
	do(t, ctx, "routes", chromedp.Navigate(srv.URL+"/ui/table?table=routes"))
	header := run(t, ctx, "header", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#rows thead th")].map((th) => th.textContent)`))
	if want := []string{"key", "revision", "Destination", "Path"}; !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	cells := `[...document.querySelector('tr[data-key="1"]').cells].slice(2).map((td) => td.textContent)`
	if got := run(t, ctx, "route 1", chromedp.Evaluate[[]string](cells)); !slices.Equal(got, []string{"10.0.0.0/8", "2 hops"}) {
		t.Fatalf("route 1's cells %q, want its TableRow", got)
	}
	do(t, ctx, "live", chromedp.Click(chromedp.ID("live")))
	waitJS(t, ctx, "live mode", `document.getElementById("live-state").textContent === "live"`)
	write(&Route{ID: 1, Dst: "10.0.0.0/8", Hops: 5})
	write(&Route{ID: 3, Dst: "192.168.0.0/16", Hops: 1})
	waitJS(t, ctx, "route 1's new row", cells+`.join("|") === "10.0.0.0/8|5 hops"`)
	waitJS(t, ctx, "route 3's row", `(() => { const tr = document.querySelector('tr[data-key="3"]');
		return tr !== null && [...tr.cells].slice(2).map((td) => td.textContent).join("|") === "192.168.0.0/16|1 hops"; })()`)
}
