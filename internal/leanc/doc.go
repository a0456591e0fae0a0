// Package leanc keeps the C runtime small when it is linked, so that pepa
// runs under an address-space cap (ulimit -v, as HPC login and batch nodes
// set it) as a binary without the C runtime does.
//
// Importing net (for pepa serve) links the C runtime whenever cgo is
// enabled, which it is by default wherever a C compiler is installed. glibc
// then gives the process's threads their own malloc arenas (64 MiB of
// address space each) and 8 MiB stacks (RLIMIT_STACK): a Go process of a
// few threads maps 300 MiB more than the same binary built with
// CGO_ENABLED=0, and under a 1 GiB cap it had nothing left for its work,
// or failed in pthread_create before main.
//
// Imported for its side effect (import _ "pepa/internal/leanc") by a
// command's main package, it runs a C constructor before the Go runtime
// starts its first thread: one malloc arena for every thread (the Go
// runtime does not use C's malloc; only the resolver and the runtime's
// thread start do, a few bytes each) and 256 KiB stacks for threads created
// later (Go code runs on its own goroutine stacks; a thread's own stack
// serves only the runtime's scheduler and C calls, for which 256 KiB is
// ample: musl's default is 128 KiB). Without cgo the package is empty.
//
// Invariants: it changes no Go behaviour and no figure; it runs once,
// before main; it is linked only into commands, never into libraries.
package leanc
