//go:build !linux

package ctmc

// adviseHuge does nothing here (see huge_linux.go).
func adviseHuge[T any](s []T) {}
