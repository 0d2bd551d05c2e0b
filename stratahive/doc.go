// Package stratahive runs Strata inside a cilium/hive program: the
// database, its tables, reconcilers and derived tables as cells, and
// script commands to inspect and drive them from hive's script tests
// and a running program's shell.
//
// # Cells
//
//	hive.NewWithOptions(hive.Options{ModuleDecorators: stratahive.ModuleHandles},
//		stratahive.Cell, // *strata.DB, metrics, script commands
//		job.Cell,
//		cell.Module("app", "The application",
//			stratahive.Table("hosts", hostByName, hostByZone), // RWTable[*Host] and Table[*Host]
//			cell.Provide(job.Registry.NewGroup, newHostOps),
//			stratahive.Reconciler((*Host).Clone, (*Host).SetStatus, (*Host).GetStatus),
//			cell.Invoke(stratahive.Derive("derive-dns", hostToRecord)),
//		),
//	)
//
// Cell provides *strata.DB. Its metrics are chosen with the
// --strata-metrics flag (none, expvar or prometheus), unless the program
// provides a metrics.Metrics (and a reconciler.Metrics) of its own;
// Prometheus collectors are registered with the program's
// prometheus.Registerer, or the default registry, from the hive's start
// to its stop. With ModuleHandles each module gets its own handle on the
// database, named after the module, so that metrics and LastWriter tell
// which module wrote.
//
// Table declares a table in one line and provides it as both
// strata.RWTable[Obj] and strata.Table[Obj]; two cells declaring one
// table name fail the hive's construction with ErrDuplicateTable.
// Durable tables, loaded from a Pebble store when the hive starts, are
// declared by package stratahive/durable, a package of its own so that a
// program that keeps its tables in memory does not build Pebble.
//
// RegisterReconciler (statedb's reconciler.Register) and Reconciler run a
// reconciler (package reconciler) as a job of the module's job.Group,
// with its health reported through cell.Health. Derive keeps a table
// derived from another, as statedb's Derive does. Expirer runs the
// database's strata.Expirer, which deletes the objects of tables with a
// strata.ExpiryIndex once they expire, as a job too.
//
// # Script commands
//
// Cell provides the commands of Commands to the hive's script engine:
// db, db/show, db/insert, db/delete, db/cmp, db/get, db/list, db/prefix,
// db/lowerbound, db/count, db/watch, db/initialized, db/empty, db/dump and
// reconciler/status (stratahive/durable adds db/snapshot and
// db/restore); a program without Cell gets them from Commands or
// ScriptCommands, with a Registry of its own (NewRegistry). A test runs
// txtar scripts against a hive with scripttest.Test:
//
//	hive start
//	db/insert hosts a1.yaml
//	db/cmp hosts hosts.table
//	reconciler/status hosts
//
// Objects show as columns when they implement TableWritable, and as YAML
// or JSON otherwise. A command given an unknown table or index, a key
// that does not parse or a file that does not decode into the table's
// type fails with an error that says so (ErrBadInput,
// strata.ErrTableNotFound, strata.ErrIndexNotFound, index.ErrParseKey)
// and writes nothing.
package stratahive
