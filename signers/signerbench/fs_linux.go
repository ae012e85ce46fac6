//go:build linux

package signerbench

import "syscall"

// tmpfsMagic is TMPFS_MAGIC from linux/magic.h.
const tmpfsMagic = 0x01021994

// isTmpfs reports whether dir is on tmpfs, where fsync costs nothing and
// the backend rows would look faster than on a validator's disk.
func isTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}
