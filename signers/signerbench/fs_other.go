//go:build !linux

package signerbench

// isTmpfs is only known on Linux.
func isTmpfs(string) bool { return false }
