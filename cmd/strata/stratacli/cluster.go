package stratacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// ErrNotClusterMember: the running database asked for its cluster is not
// a member of a replication cluster (its server has no
// httpapi.Options.Cluster). ExitCode maps it to ExitNotFound.
var ErrNotClusterMember = errors.New("not a cluster member")

// ClusterRemote is a Remote that can describe the replication cluster
// its database belongs to, what the cluster command needs. HTTPDialer's
// Remotes are; a Dialer of an application's own may add it.
type ClusterRemote interface {
	Remote
	// Cluster returns the cluster as the database's node sees it; an
	// error wrapping ErrNotClusterMember if the database is not a member
	// of one.
	Cluster(ctx context.Context) (RemoteCluster, error)
}

// RemoteCluster is the replication cluster of a running database as its
// node sees it (httpapi.ClusterStatus, which says what a node knows of
// the other members). Unknown values are absent (nil) rather than 0.
type RemoteCluster struct {
	// ID and Address are the node's; State its raft state (leader,
	// follower, candidate, shutdown), Term its term.
	ID      string `json:"id"`
	Address string `json:"address,omitempty"`
	State   string `json:"state"`
	Term    uint64 `json:"term"`
	// LeaderID and LeaderAddress are the leader's, "" if the node knows
	// none.
	LeaderID      string `json:"leader_id,omitempty"`
	LeaderAddress string `json:"leader_address,omitempty"`
	// LeaderContactMillis is how long ago the leader last contacted the
	// node, on a node that does not lead.
	LeaderContactMillis *int64 `json:"leader_contact_ms,omitempty"`
	// The node's commit, applied and published indexes.
	CommitIndex    uint64 `json:"commit_index"`
	AppliedIndex   uint64 `json:"applied_index"`
	PublishedIndex uint64 `json:"published_index"`
	// Members are the servers of the cluster's configuration.
	Members []RemoteMember `json:"members"`
}

// RemoteMember is a member of a RemoteCluster.
type RemoteMember struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Suffrage is voter or nonvoter.
	Suffrage string `json:"suffrage"`
	// State is the member's as the node knows it: leader, follower,
	// candidate, unreachable (its heartbeats fail, seen from the leader)
	// or unknown.
	State string `json:"state"`
	// Leader: the node takes the member for the leader; Self: it is the
	// node.
	Leader bool `json:"leader,omitempty"`
	Self   bool `json:"self,omitempty"`
	// AppliedIndex and Lag (committed entries not yet applied) where the
	// node knows them.
	AppliedIndex *uint64 `json:"applied_index,omitempty"`
	Lag          *uint64 `json:"lag,omitempty"`
	// HeartbeatFailures and LastContactMillis: the leader's heartbeats
	// to the member that failed in a row, and how long ago it last
	// answered (seen from the leader, while they fail).
	HeartbeatFailures uint64 `json:"heartbeat_failures,omitempty"`
	LastContactMillis *int64 `json:"last_contact_ms,omitempty"`
}

func (a *app) clusterCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cluster [ADDR]",
		Short: "Show a running database's replication cluster: members, leader, lag",
		Long: `Show the replication cluster of the running database at ADDR (or --addr), as
its node sees it: the node's state, term and indexes, then one row per
member: ID, address, suffrage (voter, nonvoter), state, applied index,
lag (committed entries not yet applied) and last contact.

A follower knows its own applied index and when the leader last contacted
it; the leader knows which followers answer its heartbeats, and, of one
that does not, when it last did and what was committed since (its lag, at
least). What a node cannot know is shown as "-": ask the leader (or the
member itself) for more. --json writes the whole status as JSON.

A database that is not a cluster member (its server was not given one)
fails with exit code 4.`,
		Args: maxArgs(1, "ADDR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := optArg(args)
			switch {
			case a.dir != "" || a.file != "":
				return usagef("cluster reads a running database (ADDR or --addr): a store or a snapshot has no cluster")
			case addr != "" && a.addr != "":
				return usagef("give ADDR or --addr, not both")
			case addr == "":
				addr = a.addr
			}
			if addr == "" {
				return usagef("cluster needs the running database's address: %s cluster ADDR", a.cfg.name)
			}
			format := a.format
			if asJSON {
				if f := cmd.Flag("output"); f != nil && f.Changed && a.format != formatJSON {
					return usagef("--json and --output %s: give one", a.format)
				}
				format = formatJSON
			}
			return a.cluster(cmd.Context(), addr, format)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the cluster's status as JSON (as --output json)")
	return cmd
}

// cluster writes the cluster of the database at addr.
func (a *app) cluster(ctx context.Context, addr, format string) error {
	rm, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer rm.Close()
	cr, ok := rm.(ClusterRemote)
	if !ok {
		return usagef("cluster: the connection to %s cannot describe a cluster (its Remote has no Cluster method: see stratacli.ClusterRemote)", addr)
	}
	st, err := cr.Cluster(ctx)
	if err != nil {
		return err
	}
	if st.Members == nil {
		st.Members = []RemoteMember{}
	}
	return writeDoc(a.out, format, st, func(w io.Writer) error {
		writeClusterTable(w, st)
		return nil
	})
}

// writeClusterTable writes st as text: the node, then its members as a
// table (tab-separated, for a tabwriter).
func writeClusterTable(w io.Writer, st RemoteCluster) {
	fmt.Fprintf(w, "node %s: %s, term %d; ", st.ID, st.State, st.Term)
	switch {
	case st.LeaderID == "":
		fmt.Fprintln(w, "no known leader")
	case st.LeaderID == st.ID:
		fmt.Fprintln(w, "the leader")
	default:
		fmt.Fprintf(w, "leader %s at %s", st.LeaderID, st.LeaderAddress)
		if st.LeaderContactMillis != nil {
			fmt.Fprintf(w, ", last contact %s", ago(*st.LeaderContactMillis))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "commit index %d, applied %d, published %d\n\n", st.CommitIndex, st.AppliedIndex, st.PublishedIndex)
	fmt.Fprintln(w, "ID\tADDRESS\tSUFFRAGE\tSTATE\tAPPLIED\tLAG\tLAST CONTACT")
	for _, m := range st.Members {
		id := m.ID
		if m.Self {
			id += " (self)"
		}
		contact := "-"
		switch {
		case m.LastContactMillis != nil:
			contact = ago(*m.LastContactMillis)
		case m.Leader && !m.Self && st.LeaderContactMillis != nil:
			// A follower's view: when the leader last contacted it.
			contact = ago(*st.LeaderContactMillis)
		}
		state := m.State
		if m.HeartbeatFailures > 0 {
			state += fmt.Sprintf(" (%d failed heartbeats)", m.HeartbeatFailures)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, m.Address, m.Suffrage, state, optUint(m.AppliedIndex), optUint(m.Lag), contact)
	}
}

// optUint is *v in decimal, "-" if nil.
func optUint(v *uint64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatUint(*v, 10)
}

// ago says how long ago a contact ms milliseconds old was.
func ago(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String() + " ago"
}
