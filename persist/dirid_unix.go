//go:build unix

package persist

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity returns what tells a file apart from every other on the
// machine, its device and inode, or false if info does not come from the
// operating system.
func fileIdentity(info os.FileInfo) (string, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return "", false
	}
	return fmt.Sprintf("dev %d inode %d", st.Dev, st.Ino), true
}
