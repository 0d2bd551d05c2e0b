package remote

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// mangler is a transport that breaks the percent-escape of each
// request's last query parameter (as a proxy that mangles URLs would),
// and counts the requests.
type mangler struct {
	n atomic.Int64
}

func (m *mangler) RoundTrip(req *http.Request) (*http.Response, error) {
	m.n.Add(1)
	req = req.Clone(req.Context())
	req.URL.RawQuery += "%zz"
	return http.DefaultTransport.RoundTrip(req)
}

// TestMalformedQueryRefused: a request whose query the server cannot
// parse is refused with a 400 problem, which the client returns as an
// *Error matching httpapi.ErrBadRequest and naming the parameter, once: a
// change stream or a mirror does not retry it (a retry would send the
// same query), and a delete deletes nothing.
func TestMalformedQueryRefused(t *testing.T) {
	s := newServer(t, httpapi.Options{Authorize: httpapi.Allow(httpapi.AccessRead, httpapi.AccessWatch, httpapi.AccessWrite)})
	rev := s.insert(sixHosts()...)
	m := &mangler{}
	c := s.client(t, WithHTTPClient(&http.Client{Transport: m}))
	defer c.CloseIdleConnections()
	hosts := NewTable[*Host](c, "hosts")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	check := func(what, param string, err error, requests int64) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !errors.Is(err, httpapi.ErrBadRequest) ||
			!strings.Contains(err.Error(), `query parameter "`+param+`"`) {
			t.Errorf("%s: error %v, want a 400 *Error matching httpapi.ErrBadRequest naming %q", what, err, param)
		}
		if n := m.n.Swap(0); n != requests {
			t.Errorf("%s: %d requests, want %d", what, n, requests)
		}
	}

	_, err := c.Page(ctx, "hosts", Query{}, 0, "YTE")
	check("Page with a cursor", "after", err, 1)
	_, err = c.Wait(ctx, "hosts", Query{}, rev, time.Second)
	check("Wait", "waitRev", err, 1) // wait sorts before waitRev
	_, err = hosts.Delete(ctx, "a1")
	check("Delete", "key", err, 1)
	if got := len(s.contents()); got != 6 {
		t.Errorf("the server holds %d hosts after the refused delete, want 6", got)
	}

	var evs, errs int
	for _, err := range c.Changes(ctx, "hosts", rev) {
		if err != nil {
			errs++
			check("Changes", "from", err, 1)
			continue
		}
		evs++
	}
	if evs != 0 || errs != 1 || ctx.Err() != nil {
		t.Errorf("Changes: %d events, %d errors (context: %v); want the one error, at once", evs, errs, ctx.Err())
	}

	local := strata.New()
	dst := strata.MustNewTable(local, "hosts", hostByName)
	mr, err := NewMirror(hosts, local, dst)
	if err != nil {
		t.Fatal(err)
	}
	err = mr.Run(ctx)
	check("Mirror.Run", "from", err, 1)
	if ctx.Err() != nil {
		t.Errorf("Mirror.Run returned only when the context ended")
	}
}
