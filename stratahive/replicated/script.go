package replicated

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata/replicate"
	"github.com/strata-db/strata/stratahive"
)

// scriptCommands are the Cell's script commands: replicated/status and
// replicated/members.
func scriptCommands(r *Replica) hive.ScriptCmdsOut {
	return hive.NewScriptCmds(map[string]script.Cmd{
		"replicated/status":  stratahive.ErrorsToStderr(statusCmd(r)),
		"replicated/members": stratahive.ErrorsToStderr(membersCmd(r)),
	})
}

func statusCmd(r *Replica) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Show the node's raft state",
			Flags: func(fs *pflag.FlagSet) {
				fs.Bool("leading", false, "Wait until the node leads and is ready to take writes")
				fs.Duration("timeout", time.Minute, "With --leading, fail if the node does not lead within this time")
			},
			Detail: []string{
				"Shows the node's health as the Cell reports it (its role, term,",
				"applied and published indexes). With --leading, waits first until",
				"the node leads and is ready in its term.",
			},
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			n := r.Node()
			if n == nil {
				return nil, ErrNotStarted
			}
			leading, err := s.Flags.GetBool("leading")
			if err != nil {
				return nil, err
			}
			timeout, err := s.Flags.GetDuration("timeout")
			if err != nil {
				return nil, err
			}
			if leading {
				ctx, cancel := context.WithTimeout(s.Context(), timeout)
				defer cancel()
				for {
					is, changed := n.Leading()
					if is {
						break
					}
					h := n.Health()
					if h.Closed {
						return nil, fmt.Errorf("the node does not lead (%s): %w", HealthMessage(h), replicate.ErrShutdown)
					}
					select {
					case <-changed:
					case <-ctx.Done():
						// Not ctx's error: the engine takes a deadline for
						// the script's own.
						return nil, fmt.Errorf("the node does not lead within %s (%s)", timeout, HealthMessage(n.Health()))
					}
				}
			}
			out := HealthMessage(n.Health()) + "\n"
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}

func membersCmd(r *Replica) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Show the cluster's members as this node knows them",
			Detail: []string{
				"Shows each server of the latest configuration: its ID, raft",
				"address, suffrage, and whether it leads or is this node.",
			},
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			n := r.Node()
			if n == nil {
				return nil, ErrNotStarted
			}
			m, err := n.Members()
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%-10s %-24s %-9s %s\n", "ID", "Address", "Suffrage", "Role")
			for _, mb := range m.Members {
				var role []string
				if mb.Leader {
					role = append(role, "leader")
				}
				if mb.Self {
					role = append(role, "self")
				}
				fmt.Fprintf(&b, "%-10s %-24s %-9s %s\n", mb.ID, mb.Address, mb.Suffrage, strings.Join(role, ","))
			}
			out := b.String()
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		},
	)
}
