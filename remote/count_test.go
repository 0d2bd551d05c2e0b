package remote

import (
	"errors"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// TestCount: Client.Count returns the server's count of a query, with
// the table's revision, for every kind of query; an unknown index is a
// *Error naming strata.ErrIndexNotFound.
func TestCount(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	rev := s.insert(sixHosts()...)
	c := s.client(t)
	ctx := t.Context()
	for _, tc := range []struct {
		q    Query
		want int
	}{
		{Query{}, 6},
		{Query{Op: strata.QueryList, Key: "a2"}, 1},
		{Query{Index: "zone", Op: strata.QueryList, Key: "eu"}, 3},
		{Query{Op: strata.QueryPrefix, Key: "b"}, 3},
		{Query{Op: strata.QueryLowerBound, Key: "a3"}, 4},
		{Query{Op: strata.QueryRange, Key: "a2", To: "b2"}, 3},
		{Query{Index: "zone", Op: strata.QueryPrefix, RawKey: []byte("u")}, 3},
	} {
		res, err := c.Count(ctx, "hosts", tc.q)
		if err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		if res.Count != tc.want || res.Revision != rev || res.Table != "hosts" {
			t.Errorf("%+v: %+v, want %d at revision %d", tc.q, res, tc.want, rev)
		}
	}
	_, err := c.Count(ctx, "hosts", Query{Index: "nope"})
	var e *Error
	if !errors.As(err, &e) || e.Problem.Error != "strata.ErrIndexNotFound" {
		t.Fatalf("count of an unknown index: %v, want a *Error naming strata.ErrIndexNotFound", err)
	}
}
