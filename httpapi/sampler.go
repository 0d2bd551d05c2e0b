package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/strata-db/strata"
)

// sampler records, every interval, the database's commit count and each
// table's number of objects, keeping the last history samples: the data of
// the web inspector's plots (GET /v1/samples).
type sampler struct {
	db       *strata.DB
	interval time.Duration

	mu sync.Mutex
	// samples is a ring of the last len(samples) samples: the oldest at
	// start, n of them. Guarded by mu.
	samples  []sample
	start, n int
}

type sample struct {
	at      time.Time
	commits uint64
	// objects holds the tables' object counts by registration position;
	// tables registered later are missing from older samples.
	objects []int
	// names holds the tables' names, shared between samples while no
	// table is registered.
	names []string
}

func newSampler(db *strata.DB, interval time.Duration, history int) *sampler {
	return &sampler{db: db, interval: interval, samples: make([]sample, history)}
}

// run samples until ctx is done.
func (s *sampler) run(ctx context.Context) {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	s.take(time.Now())
	for {
		select {
		case now := <-ticker.C:
			s.take(now)
		case <-ctx.Done():
			return
		}
	}
}

// take records one sample.
func (s *sampler) take(now time.Time) {
	commits := s.db.Commits()
	txn := s.db.ReadTxn()
	metas := s.db.Tables()
	sm := sample{at: now, commits: commits, objects: make([]int, len(metas))}
	for i, m := range metas {
		sm.objects[i] = m.NumObjects(txn)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n > 0 {
		prev := s.samples[(s.start+s.n-1)%len(s.samples)]
		if len(prev.names) == len(metas) {
			sm.names = prev.names
		}
	}
	if sm.names == nil {
		sm.names = make([]string, len(metas))
		for i, m := range metas {
			sm.names[i] = m.Name()
		}
	}
	if s.n < len(s.samples) {
		s.samples[(s.start+s.n)%len(s.samples)] = sm
		s.n++
	} else {
		s.samples[s.start] = sm
		s.start = (s.start + 1) % len(s.samples)
	}
}

// history returns the samples as columns.
func (s *sampler) history() Samples {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Samples{
		IntervalMillis: s.interval.Milliseconds(),
		Times:          make([]int64, s.n),
		CommitsPerSec:  make([]float64, s.n),
		Objects:        map[string][]int{},
	}
	var names []string
	if s.n > 0 {
		names = s.samples[(s.start+s.n-1)%len(s.samples)].names
	}
	for _, name := range names {
		out.Objects[name] = make([]int, s.n)
	}
	for i := range s.n {
		sm := s.samples[(s.start+i)%len(s.samples)]
		out.Times[i] = sm.at.UnixMilli()
		if i > 0 {
			prev := s.samples[(s.start+i-1)%len(s.samples)]
			if dt := sm.at.Sub(prev.at).Seconds(); dt > 0 && sm.commits >= prev.commits {
				out.CommitsPerSec[i] = float64(sm.commits-prev.commits) / dt
			}
		}
		for j, n := range sm.objects {
			out.Objects[names[j]][i] = n
		}
	}
	return out
}

func (h *Handler) getSamples(w http.ResponseWriter, r *http.Request, _ url.Values) error {
	return writeJSON(w, h.sampler.history())
}
