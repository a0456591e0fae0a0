package membudget

import "syscall"

// rlimit returns the soft limit of RLIMIT_AS ("as") or RLIMIT_DATA
// ("data"); false when unlimited or unreadable.
func rlimit(which string) (uint64, bool) {
	res := syscall.RLIMIT_AS
	if which == "data" {
		res = syscall.RLIMIT_DATA
	}
	var r syscall.Rlimit
	if err := syscall.Getrlimit(res, &r); err != nil || r.Cur == ^uint64(0) {
		return 0, false
	}
	return r.Cur, true
}
