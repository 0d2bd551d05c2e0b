// Package replicated runs a replicated Strata database in a cilium/hive
// program: a raft node (package replicate) over the hive's *strata.DB as
// a cell, tables bound to it, leader-only jobs, and the node's health in
// the hive's health tree.
//
//	hive.New(
//		stratahive.Cell,
//		job.Cell,
//		cell.SimpleHealthCell,
//		replicated.Cell, // --strata-raft-id, -node-number, -bind, -forward, -dir, -peers, -bootstrap
//		cell.Module("app", "The application",
//			replicated.Table("hosts", persist.JSON[*Host](), hostByName),
//			cell.Provide(job.Registry.NewGroup),
//			replicated.LeaderJob("gc", collectGarbage), // on the leader only
//		),
//	)
//
// # The node
//
// Cell provides *Replica. When the hive starts it opens raft's log (a
// Pebble store, replicate.Open) and snapshot store in --strata-raft-dir,
// raft's TCP transport on --strata-raft-bind, and starts a
// replicate.Node replicating every table declared with Table; it serves
// the followers' forwarded writes on --strata-raft-forward, forwards its
// own to the leader's forward address as --strata-raft-peers gives it,
// and, with --strata-raft-bootstrap, bootstraps the cluster of
// --strata-raft-peers (or of itself alone): replicate.StartServer, from
// the flags. When the hive stops, the node shuts down gracefully (a
// leader hands its leadership over first, replicate.Server.Handover) and
// everything it ran on closes. Replica.Node
// returns the running replicate.Node: write with its Write (which a
// follower forwards to the leader), read with ReadTxn, ReadAtLeast or
// ReadLinearizable, change the membership with AddVoter and
// RemoveServer.
//
// A restarted node starts on an empty database and gets its tables back
// from raft's latest snapshot and log; tables are not also kept in a
// persist store (stratahive/durable) yet.
//
// A configuration the Cell cannot run with fails the hive's construction
// with ErrInvalidConfig, naming the flag; a store, transport or listener
// that cannot open fails its start with their error. Options lets a
// program (a test) give raft's transport (raft.InmemTransport for
// several hives in one process), change raft's configuration, and give
// a forwarder (replicate.LocalForwarder).
//
// # Tables
//
// Table declares a table bound to the node, as stratahive/durable's
// Table binds one to its store: it provides strata.RWTable[Obj] and
// strata.Table[Obj], and the db/* script commands know it. Every node
// declares the same replicated tables. On the leader a commit of them
// goes through raft; on a follower it fails with a
// *replicate.NotLeaderError, and Node().Write forwards it instead.
//
// # Leader-only jobs
//
// LeaderJob (a cell) and Replica.LeaderJob (a job.Job) run a function
// each time the node becomes the leader, with a context cancelled when it
// stops leading (replicate.Node.RunWhileLeader, which says how raft
// bounds the moment two nodes may both believe they lead). Added on every
// node, the job runs on one at a time, and moves with the leadership.
//
// A reconciler of a replicated table writes statuses, which only the
// leader can: Reconciler declares one (stratahive.Reconciler's
// arguments) that runs in a leader-only job, a new
// reconciler.Reconciler each term the node leads. The next leader's
// starts from the replicated statuses and does not redo what is Done.
//
// # Health
//
// The node's health goes to the hive's cell.Health (if the program
// provides one) under the scope "strata-raft", on every change of its
// leadership and every second: OK with its role, term and indexes
// ("leader, term 3, applied 17, published 17", "follower of n1, ...")
// while it serves; Degraded, with replicate.Health.Err's error, when it
// knows no leader or has not heard from it within
// --strata-raft-health-contact, or stopped applying the log; Stopped once
// the hive stopped.
//
// # Script commands
//
// replicated/status shows the node's health (--leading waits until it
// leads); replicated/members the cluster's members as the node knows
// them.
package replicated
