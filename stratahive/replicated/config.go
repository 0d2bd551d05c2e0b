package replicated

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/spf13/pflag"
)

// Config is the Cell's configuration, set with hive flags.
type Config struct {
	// StrataRaftID is the node's raft server ID (--strata-raft-id),
	// unique in the cluster. It is required.
	StrataRaftID string
	// StrataRaftNodeNumber is the node's number (--strata-raft-node-number),
	// 1 to 65535, unique in the cluster: the high bits of the ids of its
	// change sets (replicate.Config.NodeNumber). It is required.
	StrataRaftNodeNumber uint
	// StrataRaftBind is the host:port raft's TCP transport listens on
	// (--strata-raft-bind). It is required unless the program provides
	// Options.Transport.
	StrataRaftBind string
	// StrataRaftAdvertise is the host:port the other nodes reach this
	// node's raft at (--strata-raft-advertise); "" is StrataRaftBind,
	// which must then not be an unspecified address (0.0.0.0).
	StrataRaftAdvertise string
	// StrataRaftForward is the host:port this node serves the writes and
	// read indexes of followers on when it leads (--strata-raft-forward;
	// replicate.ServeForward). "": it serves none, and forwards its own
	// only through Options.Forwarder.
	StrataRaftForward string
	// StrataRaftDir is the node's directory (--strata-raft-dir): raft's
	// log in its "raft-log" subdirectory (a Pebble store,
	// replicate.Open), raft's snapshots in "snapshots". It is required.
	StrataRaftDir string
	// StrataRaftDurable keeps the replicated tables in a persist store in
	// the directory's "state" subdirectory (--strata-raft-durable;
	// replicate.Config.Store): a restart loads them from it and replays
	// only the log after them, rather than the latest snapshot and the
	// log after that.
	StrataRaftDurable bool
	// StrataRaftPeers are the cluster's servers (--strata-raft-peers), each
	// "id=raft-address" or "id=raft-address/forward-address": the first
	// configuration of a cluster this node bootstraps, and where a
	// follower forwards its writes to (the forward address of the
	// leader's raft address).
	StrataRaftPeers []string
	// StrataRaftBootstrap makes the node bootstrap the cluster when it
	// starts (--strata-raft-bootstrap): with StrataRaftPeers, which must
	// name this node, or alone without. Every node of the first
	// configuration may bootstrap it with the same peers; a node that
	// has state already (a restart) ignores it.
	StrataRaftBootstrap bool
	// StrataRaftHealthContact is how long a follower may go without
	// hearing from its leader before its health is Degraded
	// (--strata-raft-health-contact; replicate.Health.Err).
	StrataRaftHealthContact time.Duration
}

// DefaultConfig is the configuration without flags: nothing set but the
// health's contact bound, 10 s.
var DefaultConfig = Config{StrataRaftHealthContact: 10 * time.Second}

// Flags registers the Cell's flags.
func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("strata-raft-id", def.StrataRaftID, "This node's raft server ID, unique in the cluster (required)")
	flags.Uint("strata-raft-node-number", def.StrataRaftNodeNumber, "This node's number, 1 to 65535, unique in the cluster (required)")
	flags.String("strata-raft-bind", def.StrataRaftBind, "host:port of raft's TCP transport (required)")
	flags.String("strata-raft-advertise", def.StrataRaftAdvertise, "host:port the other nodes reach raft at (default: --strata-raft-bind)")
	flags.String("strata-raft-forward", def.StrataRaftForward, "host:port to serve the followers' forwarded writes on (default: none)")
	flags.String("strata-raft-dir", def.StrataRaftDir, "Directory of raft's log and snapshots (required)")
	flags.Bool("strata-raft-durable", def.StrataRaftDurable, "Keep the replicated tables in a persist store in --strata-raft-dir: a restart replays only the log after it")
	flags.StringSlice("strata-raft-peers", def.StrataRaftPeers, "The cluster's servers: id=raft-address[/forward-address], comma-separated")
	flags.Bool("strata-raft-bootstrap", def.StrataRaftBootstrap, "Bootstrap the cluster with --strata-raft-peers (or this node alone) on the first start")
	flags.Duration("strata-raft-health-contact", def.StrataRaftHealthContact, "How long a follower may not hear from its leader before its health is Degraded")
}

// ErrInvalidConfig is the error of a configuration the Cell cannot run
// with: the hive's construction (Populate, and so Start and Run) fails
// with it, wrapped with the flag at fault.
var ErrInvalidConfig = errors.New("replicated: invalid configuration")

// Peer is a server of --strata-raft-peers.
type Peer struct {
	// ID and Address are the server's raft ID and address.
	ID      raft.ServerID
	Address raft.ServerAddress
	// Forward is the host:port of its forward server, "" if not given.
	Forward string
}

// ParsePeers parses --strata-raft-peers. An entry that is not
// "id=raft-address" or "id=raft-address/forward-address", or that repeats
// an ID or an address, is an ErrInvalidConfig.
func ParsePeers(entries []string) ([]Peer, error) {
	var peers []Peer
	ids := map[raft.ServerID]bool{}
	addrs := map[raft.ServerAddress]bool{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		id, rest, ok := strings.Cut(e, "=")
		addr, fwd, _ := strings.Cut(rest, "/")
		if !ok || id == "" || addr == "" || strings.Contains(rest, "=") || strings.Count(rest, "/") > 1 {
			return nil, fmt.Errorf("%w: --strata-raft-peers: %q: want id=raft-address or id=raft-address/forward-address", ErrInvalidConfig, e)
		}
		p := Peer{ID: raft.ServerID(id), Address: raft.ServerAddress(addr), Forward: fwd}
		if ids[p.ID] || addrs[p.Address] {
			return nil, fmt.Errorf("%w: --strata-raft-peers: %q: ID or address given twice", ErrInvalidConfig, e)
		}
		ids[p.ID], addrs[p.Address] = true, true
		peers = append(peers, p)
	}
	return peers, nil
}

// check returns the configuration's peers, or an ErrInvalidConfig naming
// the flag at fault. transport reports that the program provides raft's
// transport (Options.Transport), which makes --strata-raft-bind
// unnecessary.
func (c Config) check(transport bool) ([]Peer, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.StrataRaftID == "":
		return nil, bad("--strata-raft-id is not set")
	case c.StrataRaftNodeNumber == 0 || c.StrataRaftNodeNumber > 65535:
		return nil, bad("--strata-raft-node-number=%d: want 1 to 65535", c.StrataRaftNodeNumber)
	case c.StrataRaftDir == "":
		return nil, bad("--strata-raft-dir is not set")
	case c.StrataRaftBind == "" && !transport:
		return nil, bad("--strata-raft-bind is not set")
	case c.StrataRaftHealthContact < 0:
		return nil, bad("--strata-raft-health-contact=%s: must not be negative", c.StrataRaftHealthContact)
	}
	peers, err := ParsePeers(c.StrataRaftPeers)
	if err != nil {
		return nil, err
	}
	if c.StrataRaftBootstrap && len(peers) > 0 {
		self := false
		for _, p := range peers {
			self = self || p.ID == raft.ServerID(c.StrataRaftID)
		}
		if !self {
			return nil, bad("--strata-raft-bootstrap: --strata-raft-peers does not name this node, %q", c.StrataRaftID)
		}
	}
	return peers, nil
}
