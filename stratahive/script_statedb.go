package stratahive

import (
	"github.com/cilium/hive/script"

	"github.com/strata-db/strata"
)

// This file has cilium/statedb's constructors of the db/... script
// commands, one per command, for an engine assembled by hand. Each is the
// command of that name in Commands(db, NewRegistry()): db lists no
// modules, as no table was declared to the new Registry. In a hive with
// Cell, take the Registry and call Commands instead.

func statedbCmd(db *strata.DB, name string) script.Cmd { return Commands(db, NewRegistry())[name] }

// DBCmd is the "db" command (statedb's DBCmd).
func DBCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db") }

// ShowCmd is the "db/show" command (statedb's ShowCmd).
func ShowCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/show") }

// CompareCmd is the "db/cmp" command (statedb's CompareCmd).
func CompareCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/cmp") }

// EmptyCmd is the "db/empty" command (statedb's EmptyCmd).
func EmptyCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/empty") }

// InsertCmd is the "db/insert" command (statedb's InsertCmd).
func InsertCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/insert") }

// DeleteCmd is the "db/delete" command (statedb's DeleteCmd).
func DeleteCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/delete") }

// GetCmd is the "db/get" command (statedb's GetCmd).
func GetCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/get") }

// PrefixCmd is the "db/prefix" command (statedb's PrefixCmd).
func PrefixCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/prefix") }

// ListCmd is the "db/list" command (statedb's ListCmd).
func ListCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/list") }

// LowerBoundCmd is the "db/lowerbound" command (statedb's LowerBoundCmd).
func LowerBoundCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/lowerbound") }

// WatchCmd is the "db/watch" command (statedb's WatchCmd).
func WatchCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/watch") }

// InitializedCmd is the "db/initialized" command (statedb's
// InitializedCmd).
func InitializedCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/initialized") }

// DumpCmd is the "db/dump" command (statedb's DumpCmd).
func DumpCmd(db *strata.DB) script.Cmd { return statedbCmd(db, "db/dump") }
