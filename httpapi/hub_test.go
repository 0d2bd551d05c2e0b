package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata"
)

// TestHubReadSpans: an NDJSON stream's read of the ring gives the lines
// of the entries after its revision, those of one round's chunk in one
// span, at most limit entries at a time, and the same lines as the
// entries (read) give; a stream behind the ring is told it was evicted.
func TestHubReadSpans(t *testing.T) {
	hb := &hub{h: &Handler{opts: Options{RingBytes: 1 << 20}}, ring: make([]ringEntry, 6), wake: make(chan struct{})}
	rev := strata.Revision(0)
	// Three rounds of three changes each, into a ring of six: the first
	// round is evicted.
	for range 3 {
		var entries []ringEntry
		var chunk []byte
		for range 3 {
			rev++
			off := len(chunk)
			chunk = append(fmt.Appendf(chunk, `{"rev":%d}`, rev), '\n')
			entries = append(entries, ringEntry{rev: rev, kind: EventUpsert, off: off, end: len(chunk)})
		}
		for i := range entries {
			entries[i].chunk = chunk
		}
		hb.append(entries, rev)
	}
	lines := func(spans []span) (string, []strata.Revision) {
		var b strings.Builder
		var revs []strata.Revision
		for _, sp := range spans {
			b.Write(sp.chunk[sp.off:sp.end])
			revs = append(revs, sp.rev)
		}
		return b.String(), revs
	}
	if _, _, _, _, evicted, _ := hb.readSpans(0, 0, nil, 10); !evicted {
		t.Error("seq 0 (evicted) was read")
	}
	for _, c := range []struct {
		next  uint64
		after strata.Revision
		limit int
		n     int
		want  string
		revs  []strata.Revision
	}{
		{3, 3, 10, 6, "{\"rev\":4}\n{\"rev\":5}\n{\"rev\":6}\n{\"rev\":7}\n{\"rev\":8}\n{\"rev\":9}\n", []strata.Revision{6, 9}},
		{3, 4, 10, 6, "{\"rev\":5}\n{\"rev\":6}\n{\"rev\":7}\n{\"rev\":8}\n{\"rev\":9}\n", []strata.Revision{6, 9}},
		{3, 3, 4, 4, "{\"rev\":4}\n{\"rev\":5}\n{\"rev\":6}\n{\"rev\":7}\n", []strata.Revision{6, 7}},
		{7, 7, 10, 2, "{\"rev\":8}\n{\"rev\":9}\n", []strata.Revision{9}},
		{9, 9, 10, 0, "", nil},
	} {
		spans, n, head, _, evicted, stopped := hb.readSpans(c.next, c.after, nil, c.limit)
		got, revs := lines(spans)
		if n != c.n || got != c.want || fmt.Sprint(revs) != fmt.Sprint(c.revs) || head != 9 || evicted || stopped {
			t.Errorf("readSpans(%d, %d, %d): n %d, %q, revs %v, head %d, evicted %v, stopped %v; want n %d, %q, revs %v",
				c.next, c.after, c.limit, n, got, revs, head, evicted, stopped, c.n, c.want, c.revs)
		}
		entries, _, _, _, _ := hb.read(c.next, nil, c.limit)
		var b strings.Builder
		for _, e := range entries {
			if e.rev > c.after {
				b.Write(e.line())
				b.WriteByte('\n')
			}
		}
		if b.String() != got {
			t.Errorf("read(%d, %d): %q, readSpans %q", c.next, c.limit, b.String(), got)
		}
	}
}
