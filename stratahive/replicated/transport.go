package replicated

import (
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata/replicate"
)

// tcpTransport opens raft's TCP transport on --strata-raft-bind,
// advertising --strata-raft-advertise (or the bound address).
//
// It is replicate.NewTCPTransportOn's: raft.NewTCPTransport's closes its
// listener on Close but not the connections it accepted, whose handler
// goroutines would then live on after the hive stopped.
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
	return replicate.NewTCPTransportOn(ln, advertise, log), nil
}
