//go:build !unix

package persist

import "os"

// fileIdentity returns what tells a file apart from every other on the
// machine, or false if info does not come from the operating system. Off
// Unix there is none here: a second Open of a store is refused by Pebble's
// lock alone.
func fileIdentity(os.FileInfo) (string, bool) { return "", false }
