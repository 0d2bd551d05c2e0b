// Package reconciler makes an outside world (routes, files, BPF maps,
// cloud resources) match the desired state kept in a Strata table, and
// writes each object's reconciliation status back into the table.
//
// # Using it
//
// The objects of the table embed a Status. Whoever changes an object sets
// its status to StatusPending(); the reconciler calls Operations.Update
// (or Delete, for deleted objects) and writes StatusDone, or an Error
// status, back. New takes the table and the functions that clone an object
// and get and set its status; Run reconciles until its context ends:
//
//	r, err := reconciler.New(db, reconciler.Config[*Route]{
//		Table:           routes,
//		CloneObject:     (*Route).Clone,
//		GetObjectStatus: (*Route).GetStatus,
//		SetObjectStatus: (*Route).SetStatus,
//		Operations:      routeOps{},
//	}, reconciler.WithWorkers(4))
//	go r.Run(ctx, nil)
//
// The names are cilium/statedb's (Operations, BatchOperations, BatchEntry,
// Status, StatusSet, StatusPending, WaitUntilReconciled), so that code
// written for statedb's reconciler ports by changing imports and the
// constructor; package reconcilertest has an outside world for tests.
//
// # What it promises
//
//   - Level-triggered: an object is reconciled in its newest version;
//     versions in between may be skipped, and an operation may be repeated,
//     so Update and Delete must be idempotent. Every change is attempted at
//     least once.
//   - Only objects whose status is Pending or Refreshing, and deleted
//     objects, cause operations. A write that changes nothing but statuses
//     (the reconciler's own, another reconciler's in a StatusSet) causes
//     none: a converged table costs no operations and no writes.
//   - At most one operation runs per object (or per Config.OrderingKey),
//     with any number of workers (WithWorkers). Changes that arrive while
//     an object's operation runs cause exactly one more operation, on the
//     newest version, also when they arrive while the status of the
//     operation is being written. The objects of one ordering key are
//     reconciled in the order of the revisions of their changes.
//   - A failed object is retried with exponential backoff (100ms to 1
//     minute, with jitter, WithRetry), from its newest version; a change
//     resets the backoff. The number of failed attempts is kept in the
//     status, so a reconciler started later (a durable table after a
//     restart) resumes each object's backoff. Terminal, RetryAfter and
//     Requeue let an operation choose otherwise.
//   - Statuses are written back in few write transactions, each status
//     with a compare-and-swap on the revision that was reconciled. If the
//     object changed only in another reconciler's status meanwhile, the
//     outcome is merged in; if it changed otherwise, the outcome is
//     dropped and the new version reconciled. The decision to retry is
//     made after the write, in one place, so no retry is lost to a
//     conflict. If the write itself fails (a durable table whose store
//     refuses it), the outcomes are kept and the write retried, with
//     Degraded health.
//   - An operation that runs past the operation timeout (1 minute,
//     WithOpTimeout) is cancelled and fails; one that panics fails,
//     without taking the reconciler down. Pause stops operations, and
//     returns once none runs.
//   - Prune runs once the table's initializers are done and the prune
//     guard agrees (WithPruneGuard), then every interval and on Prune,
//     never while another operation runs; a failed prune is retried with
//     backoff. A prune budget (WithPruneBudget) keeps a periodic prune from
//     deleting more than a fraction of the outside world, if the Prune
//     operation asks CheckPruneBudget (PruneStrangers, a Prune body for
//     worlds that can list what they hold, asks for it): the reconciler
//     does not see what Prune deletes, and warns when a prune did not ask.
//     A prune writes nothing to the table. Prune called while a prune
//     runs makes another one after it.
//   - With a round rate limit (WithRoundRateLimit, statedb's round
//     limiter; none by default) at most that many rounds a second are
//     handed to the workers, after a burst; changes queue meanwhile and
//     are taken by the next rounds, none lost.
//   - Refresh marks Done objects older than the refresh interval (with
//     jitter) Refreshing, at a limited rate and in batches, and reconciles
//     them in the background; objects found Done when Run starts (a
//     durable table's, whose outside world may have changed while the
//     program was down) are refreshed too.
//
// # How it works
//
// Run's goroutine (the loop) reads the table's change feed and keeps a
// record (an item) for each object with work. Items wait in three lanes,
// new changes, retries and background refreshes, picked by weight (8, 2,
// 1) with aging, so that none starves. The loop hands rounds of items to
// the workers, sized so that every worker gets work and a round of slow
// operations stays short; a committer goroutine writes the rounds'
// statuses back, several rounds in one transaction when they queue up,
// and the loop then decides what comes next for each object: done,
// retried after a backoff (one timer for all), or reconciled again in a
// newer version. Operations get a context cancelled by the loop's
// watchdog at their timeout, not a timer each.
//
// WaitUntilReconciled reports progress as the revision up to which every
// change was attempted (with several workers, the one before the oldest
// change not yet attempted), and the lowest revision of an object whose
// last attempt failed. A change superseded by a newer one of the same
// object counts as attempted once the newer one is.
//
// Every hand-off between these goroutines passes through a hold point
// (holds.go), where the model test (model_test.go) holds them and drives
// them in many seeded orders; docs/interleavings.md lists what it
// explores and checks.
//
// # Observing it
//
// Inspect says where one object is (queued, in flight, in backoff until
// when, after how many attempts, with which error); Stats gives the queue
// depths, the objects delayed, in flight and failing, the lag in revisions
// and the age of the oldest pending change. Metrics (NopMetrics, which
// costs nothing, by default; NewExpVar; package reconciler/prometheus)
// receive operations by outcome, their durations and queue waits, the
// time from a change (its Pending status's UpdatedAt) to the commit of its
// Done status, status writes and conflicts, prunes and refreshes. Run reports health to a Health, which
// cilium/hive's cell.Health satisfies, and logs with log/slog;
// ReportRefresh reports the refresh's state to another Health (the job
// "refresh-<name>" of stratahive, as statedb's reconciler has).
//
// This package imports neither hive nor Prometheus: adapters live
// elsewhere.
package reconciler
