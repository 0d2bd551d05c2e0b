package replicate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Forwarding over the network: every node serves its forward requests on
// a listener of its own, a second TCP port beside raft's (ForwardServer),
// and a follower's NetForwarder finds the leader's from the leader's raft
// address through a function the program gives it (a static map, or its
// own discovery): raft's address is the only one a follower learns of
// its leader.
//
// The protocol is HTTP/1.1 (net/http), four POST requests:
//
//	/strata/v1/forward    body: the change set (an entry of one change
//	                      set, AppendEntry's encoding); ApplyForwarded
//	/strata/v1/readindex  no body; ReadIndex
//	/strata/v1/notice     body: an index (a uvarint); AnnounceCommit
//	/strata/v1/applied    no body; AppliedIndex (of any member)
//
// Each answers 200 with a result: one byte of outcome, a uvarint (the
// index; for a stopped node the index it stopped at, for a conflict the
// table's revision at the leader), a name (a uvarint length and its
// bytes: for not leader the leader's raft address, for a conflict the
// table) and the error's text (the rest). Any other answer is the
// server's failure, not the node's.

// The outcomes of a result.
const (
	resultOK byte = iota
	resultConflict
	resultNotLeader
	resultAmbiguous
	resultShutdown
	resultStopped
	resultNotReady
	resultInvalid
	resultTooLarge
	resultOther
)

const (
	forwardPath   = "/strata/v1/forward"
	readIndexPath = "/strata/v1/readindex"
	noticePath    = "/strata/v1/notice"
	appliedPath   = "/strata/v1/applied"
	// maxForwardBody bounds a request's body: a change set is at most
	// MaxEntrySize, and the entry's header is 3 bytes.
	maxForwardBody = MaxEntrySize + 16
)

// encodeResult appends the result of a forward request (index or err) to
// dst.
func encodeResult(dst []byte, index uint64, err error) []byte {
	if err == nil {
		dst = append(dst, resultOK)
		return binary.AppendUvarint(binary.AppendUvarint(dst, index), 0)
	}
	var (
		nl   *NotLeaderError
		st   *StoppedError
		ce   *ConflictError
		code = resultOther
		name string // the leader's raft address, or the table
	)
	index = 0
	// In this order: an error that may have committed is ambiguous
	// whatever else it wraps.
	switch {
	case errors.Is(err, ErrAmbiguous):
		code = resultAmbiguous
	case errors.As(err, &st):
		code, index = resultStopped, st.Index
	case errors.As(err, &ce):
		code, index, name = resultConflict, ce.Revision, ce.Table
	case errors.Is(err, ErrConflict):
		code = resultConflict
	case errors.As(err, &nl):
		code, name = resultNotLeader, string(nl.Leader)
	case errors.Is(err, ErrShutdown):
		code = resultShutdown
	case errors.Is(err, ErrNotReady):
		code = resultNotReady
	case errors.Is(err, ErrInvalidForward):
		code = resultInvalid
	case errors.Is(err, ErrEntryTooLarge):
		code = resultTooLarge
	}
	dst = append(dst, code)
	dst = binary.AppendUvarint(dst, index)
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	var ae *AmbiguousError
	if code == resultAmbiguous && errors.As(err, &ae) {
		// decodeResult wraps the cause in an *AmbiguousError again: its
		// text once.
		err = ae.Err
	}
	return append(dst, err.Error()...)
}

// errBadResult is a result that does not decode.
var errBadResult = errors.New("replicate: forward result does not decode")

// decodeResult returns the index or the typed error a result holds.
func decodeResult(data []byte) (uint64, error) {
	if len(data) == 0 {
		return 0, errBadResult
	}
	code, rest := data[0], data[1:]
	index, k := binary.Uvarint(rest)
	if k <= 0 {
		return 0, errBadResult
	}
	rest = rest[k:]
	l, k := binary.Uvarint(rest)
	if k <= 0 || l > uint64(len(rest)-k) {
		return 0, errBadResult
	}
	name := string(rest[k : k+int(l)])
	msg := string(rest[k+int(l):])
	cause := errors.New(msg)
	switch code {
	case resultOK:
		return index, nil
	case resultConflict:
		return 0, &ConflictError{Table: name, Revision: index, Err: cause}
	case resultNotLeader:
		return 0, &NotLeaderError{Leader: raft.ServerAddress(name), Err: cause}
	case resultAmbiguous:
		return 0, &AmbiguousError{Err: cause}
	case resultShutdown:
		return 0, fmt.Errorf("%w (the leader): %s", ErrShutdown, trimSentinel(msg, ErrShutdown))
	case resultStopped:
		return 0, &StoppedError{Index: index, Err: cause}
	case resultNotReady:
		return 0, fmt.Errorf("%w (the leader): %s", ErrNotReady, trimSentinel(msg, ErrNotReady))
	case resultInvalid:
		return 0, fmt.Errorf("%w: %s", ErrInvalidForward, trimSentinel(msg, ErrInvalidForward))
	case resultTooLarge:
		return 0, fmt.Errorf("%w: %s", ErrEntryTooLarge, trimSentinel(msg, ErrEntryTooLarge))
	case resultOther:
		return 0, &RemoteError{Msg: msg}
	}
	return 0, errBadResult
}

// trimSentinel returns msg, an error's text, without the text of
// sentinel it begins with: the decoded error wraps sentinel again.
func trimSentinel(msg string, sentinel error) string {
	return strings.TrimPrefix(msg, sentinel.Error()+": ")
}

// ForwardServer serves a node's forward requests (ApplyForwarded,
// ReadIndex) on a listener: the leader's side of NetForwarder.
type ForwardServer struct {
	n      *Node
	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Serve's, once done is closed
}

// ServeForward serves n's forward requests on ln until Close. The server
// owns ln from then on.
func ServeForward(n *Node, ln net.Listener) *ForwardServer {
	base, cancel := context.WithCancel(context.Background())
	s := &ForwardServer{n: n, cancel: cancel, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+forwardPath, s.forward)
	mux.HandleFunc("POST "+readIndexPath, s.readIndex)
	mux.HandleFunc("POST "+noticePath, s.notice)
	mux.HandleFunc("POST "+appliedPath, s.applied)
	s.srv = &http.Server{
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.done)
		s.err = s.srv.Serve(ln)
	}()
	return s
}

func (s *ForwardServer) forward(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxForwardBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	index, err := s.n.ApplyForwarded(r.Context(), body)
	_, _ = w.Write(encodeResult(nil, index, err))
}

func (s *ForwardServer) readIndex(w http.ResponseWriter, r *http.Request) {
	index, err := s.n.ReadIndex(r.Context())
	_, _ = w.Write(encodeResult(nil, index, err))
}

func (s *ForwardServer) notice(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, binary.MaxVarintLen64))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	index, k := binary.Uvarint(body)
	if k <= 0 || k != len(body) {
		http.Error(w, "replicate: a notice's body is one uvarint index", http.StatusBadRequest)
		return
	}
	_, _ = w.Write(encodeResult(nil, 0, s.n.AnnounceCommit(r.Context(), index)))
}

func (s *ForwardServer) applied(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write(encodeResult(nil, s.n.AppliedIndex(), s.n.liveErr()))
}

// Close stops the server: it closes the listener, ends the requests in
// progress (their contexts are cancelled; a commit already submitted
// still ends as the node decides) and returns once every goroutine of
// the server returned.
func (s *ForwardServer) Close() error {
	s.cancel()
	err := s.srv.Shutdown(context.Background())
	<-s.done
	if err == nil && !errors.Is(s.err, http.ErrServerClosed) {
		err = s.err
	}
	return err
}

// NetForwarder is the Forwarder over the network: it sends a follower's
// requests to the leader's ForwardServer, whose TCP address it learns from
// the leader's raft address with Resolve. Close it after the node it
// serves.
type NetForwarder struct {
	resolve func(raft.ServerAddress) (string, bool)
	client  *http.Client
	tr      *http.Transport
	timeout time.Duration
}

// DefaultForwardTimeout is how long a NetForwarder waits for the answer
// to one request, unless WithRequestTimeout says otherwise.
const DefaultForwardTimeout = 30 * time.Second

// NetForwarderOption is an option of NewNetForwarder.
type NetForwarderOption func(*NetForwarder)

// WithRequestTimeout bounds each request a NetForwarder makes to d (d > 0;
// DefaultForwardTimeout otherwise), whatever the caller's context: a
// leader whose connection stays open but that never answers (a stopped
// process, a network that drops packets after the connection was made)
// ends the request then. A change set whose request timed out is
// ambiguous (an *AmbiguousError): the leader may have committed it. A
// context with an earlier deadline ends the request first.
func WithRequestTimeout(d time.Duration) NetForwarderOption {
	return func(f *NetForwarder) {
		if d > 0 {
			f.timeout = d
		}
	}
}

// NewNetForwarder returns a NetForwarder that finds the forward address
// (host:port of the node's ForwardServer) of the node at a raft address
// with resolve; false: the node is unknown (an *UnreachableError).
// StaticResolver makes one of a map.
func NewNetForwarder(resolve func(raft.ServerAddress) (string, bool), opts ...NetForwarderOption) *NetForwarder {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
	}
	f := &NetForwarder{resolve: resolve, client: &http.Client{Transport: tr}, tr: tr, timeout: DefaultForwardTimeout}
	for _, o := range opts {
		o(f)
	}
	return f
}

// StaticResolver returns a resolver for NewNetForwarder of a fixed map
// from raft addresses to forward addresses, safe to change under its
// lock.
func StaticResolver(addrs map[raft.ServerAddress]string, mu *sync.RWMutex) func(raft.ServerAddress) (string, bool) {
	return func(a raft.ServerAddress) (string, bool) {
		if mu != nil {
			mu.RLock()
			defer mu.RUnlock()
		}
		s, ok := addrs[a]
		return s, ok
	}
}

// Forward sends changes to the ForwardServer of the node at leader.
func (f *NetForwarder) Forward(ctx context.Context, leader raft.ServerAddress, changes []byte) (uint64, error) {
	return f.call(ctx, leader, forwardPath, changes, true)
}

// ReadIndex asks the ForwardServer of the node at leader for its read
// index.
func (f *NetForwarder) ReadIndex(ctx context.Context, leader raft.ServerAddress) (uint64, error) {
	return f.call(ctx, leader, readIndexPath, nil, false)
}

// NoticeCommit asks the ForwardServer of the node at leader to announce
// the commit of index.
func (f *NetForwarder) NoticeCommit(ctx context.Context, leader raft.ServerAddress, index uint64) error {
	_, err := f.call(ctx, leader, noticePath, binary.AppendUvarint(nil, index), false)
	return err
}

// AppliedIndex asks the ForwardServer of the node at member for its
// applied index.
func (f *NetForwarder) AppliedIndex(ctx context.Context, member raft.ServerAddress) (uint64, error) {
	return f.call(ctx, member, appliedPath, nil, false)
}

// call makes one request. Once a connection is made, a failure is
// ambiguous for a change set (the leader may have it); before, the
// request surely did not leave: an *UnreachableError.
func (f *NetForwarder) call(ctx context.Context, leader raft.ServerAddress, path string, body []byte, write bool) (uint64, error) {
	addr, ok := f.resolve(leader)
	if !ok {
		return 0, &UnreachableError{Leader: leader, Err: errors.New("no forward address known")}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, &UnreachableError{Leader: leader, Err: err}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := f.client.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var data []byte
		data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(data))
		}
		if err == nil {
			index, err := decodeResult(data)
			if errors.Is(err, errBadResult) && write {
				return 0, &AmbiguousError{Err: err}
			}
			return index, err
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return 0, &UnreachableError{Leader: leader, Err: err}
	}
	if write {
		return 0, &AmbiguousError{Err: fmt.Errorf("forward to %s: %w", leader, err)}
	}
	return 0, fmt.Errorf("replicate: read index from %s: %w", leader, err)
}

// Close closes the forwarder's idle connections. Requests in progress end
// as their contexts or the request timeout say.
func (f *NetForwarder) Close() {
	f.tr.CloseIdleConnections()
}
