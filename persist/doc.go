// Package persist makes Strata tables durable on Pebble
// (github.com/cockroachdb/pebble/v2), and writes and reads point-in-time
// snapshots of tables to single checksummed files.
//
// It is a module of its own, so that programs that keep Strata in memory
// only never build, download or link Pebble.
package persist
