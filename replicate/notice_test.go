package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestCommitNotices: a follower that waits for an entry the leader
// committed learns the commit without waiting for raft's CommitTimeout
// (notice.go). raft's CommitTimeout is 30 s here, and each wait has 10 s:
// without the notices, a follower of an idle leader learns a commit only
// from the AppendEntries the leader sends CommitTimeout after its last,
// so every wait below would fail. Each case runs three times, the cluster
// idle between them (nothing else carries the commit index).
func TestCommitNotices(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(t *testing.T, ld *rnode, fs []*rnode, id uint64)
	}{
		{"read-at-least", func(t *testing.T, ld *rnode, fs []*rnode, id uint64) {
			// A write on the leader, read on each follower at its index.
			ctx, cancel := noticeWait()
			defer cancel()
			index, err := put(ctx, ld, id, "leader")
			must(t, err)
			for _, f := range fs {
				txn, err := f.node.ReadAtLeast(ctx, index)
				if err != nil {
					t.Fatalf("ReadAtLeast(%d) on %s: %v", index, f.id, err)
				}
				if got := get(f, txn, id); got != "leader" {
					t.Fatalf("%s read %q at index %d", f.id, got, index)
				}
			}
		}},
		{"forwarded-write", func(t *testing.T, ld *rnode, fs []*rnode, id uint64) {
			// Write through a follower returns once the follower
			// published it. (Per-object preconditions, and a retry
			// of a conflict: the other follower's write may apply
			// here while the transaction runs.)
			for i, f := range fs {
				ctx, cancel := noticeWait()
				var index uint64
				var err error
				for range 5 {
					index, err = putWith(ctx, f, id+uint64(i)*1000, "follower", ObjectConflicts())
					if !errors.Is(err, ErrConflict) {
						break
					}
				}
				cancel()
				if err != nil {
					t.Fatalf("Write through %s: %v", f.id, err)
				}
				if got := f.node.PublishedIndex(); got < index {
					t.Fatalf("Write through %s returned index %d, published %d", f.id, index, got)
				}
			}
		}},
		{"linearizable", func(t *testing.T, ld *rnode, fs []*rnode, id uint64) {
			// A linearizable read on a follower after a write on the
			// leader: the leader's read index, then the follower's wait.
			ctx, cancel := noticeWait()
			defer cancel()
			_, err := put(ctx, ld, id, "lin")
			must(t, err)
			for _, f := range fs {
				txn, err := f.node.ReadLinearizable(ctx)
				if err != nil {
					t.Fatalf("ReadLinearizable on %s: %v", f.id, err)
				}
				if got := get(f, txn, id); got != "lin" {
					t.Fatalf("%s read %q linearizably", f.id, got)
				}
			}
		}},
	}
	forEachForwarder(t, func(t *testing.T, mode string) {
		t.Parallel()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c, _ := newForwardClusterWith(t, 3, mode, raftCommitTimeout(30*time.Second))
				ld := c.leader()
				fs := c.followers(ld)
				for round := range 3 {
					tc.run(t, ld, fs, uint64(round+1))
				}
			})
		}
	})
}

// noticeWait is how long TestCommitNotices waits for one step: a third
// of its CommitTimeout.
func noticeWait() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// idleWritten starts a cluster of TestCommitNotices's (CommitTimeout 30
// s) with forwarders of kind mode, writes one object through its leader,
// and returns the cluster, its leader, a context of noticeWait's and the
// write's index.
func idleWritten(t *testing.T, mode string) (*rcluster, *fwdNodes, *rnode, context.Context, uint64) {
	t.Helper()
	c, f := newForwardClusterWith(t, 3, mode, raftCommitTimeout(30*time.Second))
	ld := c.leader()
	ctx, cancel := noticeWait()
	t.Cleanup(cancel)
	index, err := put(ctx, ld, 1, "x")
	must(t, err)
	return c, f, ld, ctx, index
}

// TestCommitNoticesShared: 32 readers on each follower that wait for the
// same index make the leader append one barrier, not one each or one per
// follower (invariants 2 and 3 of notice.go).
func TestCommitNoticesShared(t *testing.T) {
	t.Parallel()
	c, _, ld, ctx, index := idleWritten(t, fwdLocal)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, f := range c.followers(ld) {
		for range 32 {
			wg.Go(func() {
				if _, err := f.node.ReadAtLeast(ctx, index); err != nil {
					errs <- fmt.Errorf("%s: %w", f.id, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("ReadAtLeast(%d): %v", index, err)
	}
	last, err := ld.store.LastIndex()
	must(t, err)
	barriers := 0
	for i := index + 1; i <= last; i++ {
		var l raft.Log
		must(t, ld.store.GetLog(i, &l))
		if l.Type == raft.LogBarrier {
			barriers++
		}
	}
	if barriers != 1 {
		t.Fatalf("64 readers of index %d on two followers made the leader append %d barriers, want 1", index, barriers)
	}
}

// TestAnnounceCommitRefusals: AnnounceCommit on a follower is a
// *NotLeaderError; of an index beyond the leader's log it returns at once,
// appending nothing; a notice request over HTTP whose body is not one
// uvarint is refused with 400.
func TestAnnounceCommitRefusals(t *testing.T) {
	t.Parallel()
	c, f, ld, ctx, index := idleWritten(t, fwdNet)
	fl := c.followers(ld)[0]
	if err := fl.node.AnnounceCommit(ctx, index); !errors.Is(err, ErrNotLeader) {
		t.Errorf("AnnounceCommit on a follower: %v, want ErrNotLeader", err)
	}
	before, err := ld.store.LastIndex()
	must(t, err)
	if err := ld.node.AnnounceCommit(ctx, before+100); err != nil {
		t.Errorf("AnnounceCommit beyond the log: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // a barrier would be appended by now
	if after, err := ld.store.LastIndex(); err != nil || after != before {
		t.Errorf("AnnounceCommit beyond the log appended: last index %d, was %d (%v)", after, before, err)
	}
	var addr string
	for i, nd := range f.nodes {
		if nd == ld {
			addr = f.addrs[i]
		}
	}
	for _, body := range [][]byte{nil, {0x80}, {1, 2}, bytes.Repeat([]byte{0xff}, 20)} {
		resp, err := http.Post("http://"+addr+noticePath, "application/octet-stream", bytes.NewReader(body))
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("notice with body %x: HTTP %d, want 400 or 413", body, resp.StatusCode)
		}
	}
}
