// Package atomicfile writes files so that a reader never finds a partial
// one: the content goes to a temporary file beside the target, which is
// renamed over it. The command line's -o outputs (for make to trust) and
// pepa serve's state (durably: the file and its directory fsynced before
// the rename is reported done) are written here.
//
// Invariants: on any error the target is as it was and the temporary
// file is removed; an existing target keeps its permissions; with Durable,
// a nil error means the new content survives a crash.
package atomicfile
