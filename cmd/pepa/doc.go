// Command pepa compiles and solves PEPA models of applications mapped onto
// non-dedicated machines.
//
// It is thin: each verb parses its flags, calls the packages that do the
// work, and prints. The command-line contract (verbs, flags, JSON keys, exit
// codes) is docs/cli.md; scripts depend on it.
//
// Invariants: diagnostics go to stderr as FILE:LINE:COL: SEVERITY: MESSAGE;
// results go to stdout or to -o, which is written to a temporary file and
// renamed, so a failed run never leaves a partial output; exit codes are 0
// (success, warnings allowed), 1 (invalid model or impossible analysis),
// 2 (bad usage), 130 (interrupted).
//
// Size: about 5,000 lines of non-test Go, past the house's 5,000, because
// it holds every verb (thirteen: flags, the call, text, JSON and CSV
// renderers each), not because a verb decides anything; the service lives
// in cmd/pepa/serve, shared rendering in cmd/pepa/internal.
package main
