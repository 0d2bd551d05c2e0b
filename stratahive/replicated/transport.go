package replicated

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// tcpTransport opens raft's TCP transport on --strata-raft-bind,
// advertising --strata-raft-advertise (or the bound address).
//
// It is raft's NetworkTransport over a stream layer of the Cell's own
// (tcpStream) rather than raft.NewTCPTransport's: raft's closes its
// listener on Close but not the connections it accepted, whose handler
// goroutines then live until the other nodes close their ends, after the
// hive stopped.
func tcpTransport(cfg Config, log hclog.Logger) (*raft.NetworkTransport, error) {
	var advertise net.Addr
	if cfg.StrataRaftAdvertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.StrataRaftAdvertise)
		if err != nil {
			return nil, fmt.Errorf("%w: --strata-raft-advertise=%q: %w", ErrInvalidConfig, cfg.StrataRaftAdvertise, err)
		}
		advertise = a
	}
	ln, err := net.Listen("tcp", cfg.StrataRaftBind)
	if err != nil {
		return nil, fmt.Errorf("replicated: raft transport on --strata-raft-bind=%q: %w", cfg.StrataRaftBind, err)
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if a, ok := advertise.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("replicated: raft transport on --strata-raft-bind=%q: %s cannot be advertised: set --strata-raft-advertise",
			cfg.StrataRaftBind, advertise)
	}
	s := &tcpStream{ln: ln, advertise: advertise, conns: map[*trackedConn]struct{}{}}
	return raft.NewNetworkTransportWithLogger(s, 3, 10*time.Second, log), nil
}

// tcpStream is raft's stream layer over TCP: it closes the connections
// it accepted when it closes.
type tcpStream struct {
	ln        net.Listener
	advertise net.Addr

	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{} // accepted and not closed
}

// Accept waits for the next connection.
func (s *tcpStream) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close() // refused: nothing was read from it
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// Close closes the listener and every connection accepted.
func (s *tcpStream) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close() // its handler's read fails, and ends it
	}
	return s.ln.Close()
}

// Addr is the address the other nodes reach this one at.
func (s *tcpStream) Addr() net.Addr { return s.advertise }

// Dial connects to the node at address.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// trackedConn is an accepted connection, which its stream forgets when it
// closes.
type trackedConn struct {
	net.Conn
	s *tcpStream
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
