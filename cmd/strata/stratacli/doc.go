// Package stratacli is the strata command as a library: a cobra command
// tree that looks inside Strata databases, for the strata binary
// (cmd/strata: NewCommand with HTTPDialer, and Run) and for an application
// that adds the same commands to its own binary.
//
// The commands read three kinds of source:
//
//   - a store directory that persist wrote (--dir), opened read-only under
//     the store's lock: a store that a running process holds fails at once
//     with ExitLocked, and the command says to ask that process (--addr)
//     or to read a snapshot (--file);
//   - a snapshot file (--file), read whole and verified;
//   - a running database (--addr), through a Remote that a Dialer opens:
//     HTTPDialer reaches the HTTP API of package httpapi with package
//     remote's client ("http://", "https://" or "unix://" addresses).
//
// The offline commands are inspect, tables, dump, get, check, compact and
// snapshot (export, import, verify, inspect, decode, diff); tables, dump
// and get also work online; and, in and or combine key queries of several
// indexes as strata.And, In and Or do, online (RemoteCombiner) and, for
// registered tables, offline; watch follows a running table's changes,
// and cluster shows a replicated database's cluster (ClusterRemote).
// Only compact and snapshot import write to a store. Output is a table,
// JSON, JSON lines or YAML (-o); data goes to the command's output, and
// progress and logs to its error output.
//
// Without types the commands show stored records raw, and take keys as
// text of the kind the user names (--key-format uint64, addr, …; a store
// records no key kinds) or in hex, on the primary index only: secondary
// indexes are not stored (ErrIndexNotStored). A snapshot records no keys,
// so snapshot import of a table of unknown type needs to be told its
// primary key's fields (--key, for JSON tables), or fails with
// ErrTypeNeeded. An application
// registers the Go type of each table with WithTable (its codec and its
// indexes, those it gives strata.NewTable): the commands then decode the
// objects, show them as columns of their fields, query any index with keys
// typed as text, check that every stored key is the object's primary key,
// and import the table from snapshots. WithName renames the root command
// when the tree is added under an application's own (root.AddCommand).
//
// Run executes a tree and returns its exit code; ExitCode maps an error to
// one: 0 ok, 1 error, 2 usage, 3 damage, 4 not found, 5 cannot connect, 6
// store locked. cmd/strata/README.md lists every command and flag.
package stratacli
