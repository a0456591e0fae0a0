//go:build !linux

package membudget

// rlimit reports no limit: elsewhere than Linux the address space in use
// cannot be read from /proc, so an rlimit could not be turned into a
// budget anyway.
func rlimit(string) (uint64, bool) { return 0, false }
