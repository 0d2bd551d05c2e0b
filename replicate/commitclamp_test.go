package replicate

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestClampCommit: a request's commit index reaches raft lowered to its
// last entry, or to PrevLogEntry without entries (invariant 1 of
// commitclamp.go); a request within that bound, unchanged, the same
// pointer; the request the leader sent is never changed.
func TestClampCommit(t *testing.T) {
	entries := func(from, to uint64) []*raft.Log {
		var ls []*raft.Log
		for i := from; i <= to; i++ {
			ls = append(ls, &raft.Log{Index: i, Term: 3})
		}
		return ls
	}
	for _, c := range []struct {
		name       string
		prev       uint64
		entries    []*raft.Log
		commit     uint64
		wantCommit uint64
	}{
		{"empty, commit past prev: the old leader's stale suffix", 5, nil, 7, 5},
		{"empty, commit at prev", 5, nil, 5, 5},
		{"empty, commit below prev", 5, nil, 3, 3},
		{"entries short of the commit", 5, entries(6, 6), 9, 6},
		{"entries up to the commit", 5, entries(6, 9), 9, 9},
		{"entries past the commit", 5, entries(6, 12), 9, 9},
		{"no commit index (a heartbeat)", 0, nil, 0, 0},
		{"from the start", 0, entries(1, 2), 4, 2},
	} {
		req := &raft.AppendEntriesRequest{PrevLogEntry: c.prev, Entries: c.entries, LeaderCommitIndex: c.commit}
		got := clampCommit(req)
		if got.LeaderCommitIndex != c.wantCommit {
			t.Errorf("%s: commit %d, want %d", c.name, got.LeaderCommitIndex, c.wantCommit)
		}
		if req.LeaderCommitIndex != c.commit {
			t.Errorf("%s: the leader's request was changed", c.name)
		}
		if (got == req) != (c.commit == c.wantCommit) {
			t.Errorf("%s: copied %v, want a copy only when lowered", c.name, got != req)
		}
		if got.PrevLogEntry != req.PrevLogEntry || len(got.Entries) != len(req.Entries) {
			t.Errorf("%s: the request's other fields changed", c.name)
		}
	}
}

// TestClampTransport: through the wrapper raft receives every RPC, in
// order, AppendEntries with their commit index clamped and the others
// unchanged; pre-vote is offered exactly when the wrapped transport
// offers it; Close ends the goroutine (goleak, TestMain).
func TestClampTransport(t *testing.T) {
	_, inner := raft.NewInmemTransport("a")
	defer func() { must(t, inner.Close()) }()
	_, peer := raft.NewInmemTransport("b")
	defer func() { must(t, peer.Close()) }()
	peer.Connect("a", inner)
	wrapped, c := newClampTransport(inner)
	defer c.Close()
	if _, ok := wrapped.(raft.WithPreVote); !ok {
		t.Fatal("the in-memory transport offers pre-vote; the wrapper does not")
	}
	sent := []any{
		&raft.AppendEntriesRequest{PrevLogEntry: 5, LeaderCommitIndex: 7},
		&raft.RequestVoteRequest{LastLogIndex: 9},
		&raft.AppendEntriesRequest{PrevLogEntry: 7, LeaderCommitIndex: 7},
	}
	done := make(chan error, 1)
	go func() {
		for _, cmd := range sent {
			var err error
			switch req := cmd.(type) {
			case *raft.AppendEntriesRequest:
				err = peer.AppendEntries("a", "a", req, &raft.AppendEntriesResponse{})
			case *raft.RequestVoteRequest:
				err = peer.RequestVote("a", "a", req, &raft.RequestVoteResponse{})
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	wantCommit := []uint64{5, 0, 7}
	for i := range sent {
		select {
		case rpc := <-wrapped.Consumer():
			switch cmd := rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				if cmd.LeaderCommitIndex != wantCommit[i] {
					t.Errorf("RPC %d: commit %d, want %d", i, cmd.LeaderCommitIndex, wantCommit[i])
				}
				rpc.Respond(&raft.AppendEntriesResponse{}, nil)
			case *raft.RequestVoteRequest:
				if i != 1 || cmd.LastLogIndex != 9 {
					t.Errorf("RPC %d: a vote request out of order or changed: %+v", i, cmd)
				}
				rpc.Respond(&raft.RequestVoteResponse{}, nil)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("RPC %d never reached the consumer", i)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
