//go:build !cgo || !linux

package leanc

// Linked reports whether the constructor is in this binary.
const Linked = false
