package replicate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestForwardResultCodec: every error a leader's ApplyForwarded or
// ReadIndex returns crosses the network as the same kind of error, with
// its index, table or leader, and its text once; a result that does not
// decode is errBadResult, never a success.
func TestForwardResultCodec(t *testing.T) {
	cause := errors.New("the cause")
	for _, c := range []struct {
		name  string
		index uint64
		err   error
		check func(index uint64, err error) bool
	}{
		{"ok", 42, nil, func(i uint64, err error) bool { return i == 42 && err == nil }},
		{"conflict", 0, &ConflictError{Table: "a", Revision: 7, Err: cause}, func(_ uint64, err error) bool {
			var ce *ConflictError
			return errors.As(err, &ce) && ce.Table == "a" && ce.Revision == 7
		}},
		{"not leader", 0, &NotLeaderError{Leader: "b:1", Err: cause}, func(_ uint64, err error) bool {
			var nl *NotLeaderError
			return errors.As(err, &nl) && nl.Leader == raft.ServerAddress("b:1")
		}},
		{"ambiguous", 0, &AmbiguousError{Err: cause}, func(_ uint64, err error) bool { return errors.Is(err, ErrAmbiguous) }},
		{"ambiguous wrapped", 0, fmt.Errorf("commit: %w", &AmbiguousError{Err: cause}), func(_ uint64, err error) bool { return errors.Is(err, ErrAmbiguous) }},
		{"stopped", 0, &StoppedError{Index: 9, Err: cause}, func(_ uint64, err error) bool {
			var st *StoppedError
			return errors.As(err, &st) && st.Index == 9
		}},
		{"shutdown", 0, fmt.Errorf("%w: the cause", ErrShutdown), func(_ uint64, err error) bool { return errors.Is(err, ErrShutdown) }},
		{"not ready", 0, fmt.Errorf("%w: the cause", ErrNotReady), func(_ uint64, err error) bool { return errors.Is(err, ErrNotReady) }},
		{"invalid", 0, fmt.Errorf("%w: the cause", ErrInvalidForward), func(_ uint64, err error) bool { return errors.Is(err, ErrInvalidForward) }},
		{"too large", 0, fmt.Errorf("%w: the cause", ErrEntryTooLarge), func(_ uint64, err error) bool { return errors.Is(err, ErrEntryTooLarge) }},
		{"other", 0, cause, func(_ uint64, err error) bool {
			var re *RemoteError
			return errors.As(err, &re)
		}},
	} {
		index, err := decodeResult(encodeResult(nil, c.index, c.err))
		if !c.check(index, err) {
			t.Errorf("%s: %v decodes as %d, %v", c.name, c.err, index, err)
			continue
		}
		if c.err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "the cause") {
			t.Errorf("%s: %q lost the cause's text", c.name, err)
		}
		for _, once := range []string{"outcome unknown", ErrShutdown.Error(), ErrNotReady.Error(), ErrInvalidForward.Error(), ErrEntryTooLarge.Error()} {
			if n := strings.Count(err.Error(), once); n > 1 {
				t.Errorf("%s: %q says %q %d times", c.name, err, once, n)
			}
		}
	}
	for _, bad := range [][]byte{nil, {resultOK}, {resultOK, 0x80}, {resultOK, 1, 5, 'x'}, {200, 1, 0}} {
		if _, err := decodeResult(bad); !errors.Is(err, errBadResult) {
			t.Errorf("%x decodes as %v, want errBadResult", bad, err)
		}
	}
}

// TestNetForwarderTimeout: a leader whose connection is open but that
// never answers ends each request at the forwarder's request timeout,
// whatever the caller's context: a change set as ambiguous (the leader
// may have it), a read index as a plain error; a context with an earlier
// deadline ends the request first. A leader that is not listening at all
// is unreachable, which Write may retry.
func TestNetForwarderTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go func() { _, _ = io.Copy(io.Discard, c) }() // reads, never answers
		}
	}()
	t.Cleanup(func() {
		must(t, ln.Close())
		<-accepted
		for _, c := range conns {
			_ = c.Close()
		}
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	deadAddr := dead.Addr().String()
	must(t, dead.Close())
	addrs := map[raft.ServerAddress]string{"mute": ln.Addr().String(), "dead": deadAddr}
	const timeout = 200 * time.Millisecond
	f := NewNetForwarder(StaticResolver(addrs, nil), WithRequestTimeout(timeout))
	defer f.Close()

	start := time.Now()
	_, err = f.Forward(context.Background(), "mute", []byte{1, 2, 3})
	if took := time.Since(start); !errors.Is(err, ErrAmbiguous) || took < timeout || took > 20*timeout {
		t.Errorf("Forward to a mute leader: %v after %v, want ErrAmbiguous after %v", err, took, timeout)
	}
	start = time.Now()
	_, err = f.ReadIndex(context.Background(), "mute")
	if took := time.Since(start); err == nil || errors.Is(err, ErrAmbiguous) || took < timeout || took > 20*timeout {
		t.Errorf("ReadIndex of a mute leader: %v after %v, want an error after %v", err, took, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout/4)
	defer cancel()
	start = time.Now()
	_, err = f.Forward(ctx, "mute", []byte{1})
	if took := time.Since(start); !errors.Is(err, ErrAmbiguous) || took >= timeout {
		t.Errorf("Forward with an earlier deadline: %v after %v, want ErrAmbiguous before %v", err, took, timeout)
	}
	var u *UnreachableError
	if _, err := f.Forward(context.Background(), "dead", []byte{1}); !errors.As(err, &u) {
		t.Errorf("Forward to a closed port: %v, want an *UnreachableError", err)
	}
	if !retryable(&UnreachableError{}) || retryable(&AmbiguousError{Err: cause()}) {
		t.Error("retryable: unreachable must be retried, ambiguous must not")
	}
	// The default.
	if g := NewNetForwarder(StaticResolver(addrs, nil)); g.timeout != DefaultForwardTimeout {
		t.Errorf("the default request timeout is %v, want %v", g.timeout, DefaultForwardTimeout)
	}
}

func cause() error { return errors.New("the cause") }
