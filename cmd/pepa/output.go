package main

import (
	"io"

	"pepa/cmd/pepa/internal/atomicfile"
)

// writeFileAtomic writes data to a temporary file beside path and renames it
// over path, so that a failed or interrupted run never leaves a partial file
// (for make to trust). An existing file keeps its permissions.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, atomicfile.Options{Perm: 0o644})
}

// writeFileAtomicFunc is writeFileAtomic for output produced by write,
// streamed to the temporary file.
func writeFileAtomicFunc(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, atomicfile.Options{Perm: 0o644}, write)
}
