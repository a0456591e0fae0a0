// Package membudget finds how much memory this process may use, and
// checks each large allocation against that budget before it is made, so
// that a model too large for the job fails early with one line saying
// which stage needs how much, instead of a Go runtime crash (RLIMIT_AS,
// RLIMIT_DATA) or a kill by the kernel (a cgroup's limit, the machine's
// memory) after the job's time is spent.
//
// # The budget
//
// Detect takes the smallest of what each limit it finds still allows:
//
//   - MemAvailable (/proc/meminfo): what the machine can give without
//     swapping;
//   - the process's cgroup, v2 (memory.max less memory.current) and v1
//     (memory.limit_in_bytes less memory.usage_in_bytes), at every level up
//     to the hierarchy's root, the file cache the kernel would drop first
//     (inactive_file) not counted as used: what a Slurm job's --mem or a
//     container's limit leaves;
//   - RLIMIT_AS (ulimit -v) less the address space the process has mapped
//     at start, and RLIMIT_DATA (ulimit -d) less its data segment: the Go
//     runtime alone reserves several hundred megabytes of address space at
//     start, which an address-space cap counts;
//   - GOMEMLIMIT, when set.
//
// Each is turned into the same unit, the Go runtime's own memory (what it
// has mapped, less what it has returned to the system: the quantity
// debug.SetMemoryLimit bounds), with a margin for what a limit counts that
// the runtime does not (page tables, the arenas' granularity), less the
// resident memory outside the runtime (the binary's pages). Given sets the
// budget explicitly (pepa's --memory) for the whole process's resident
// memory; hard limits (cgroup, rlimits) still cap it, since going past
// them is a crash, not a choice.
// Where nothing can be read (no /proc), 4 GiB is assumed, and the source
// says so.
//
// # Checks
//
// Check(ctx, stage, need, hint) returns nil when need more bytes fit in
// the budget carried by ctx, and otherwise an *Error wrapping
// ErrOverBudget, whose message is one line: the stage, what it needs, what
// is left of how large a budget and where the budget came from, and what
// would help. Use is measured, not booked: a check reads the runtime's
// memory now (runtime/metrics, about half a microsecond, no allocation),
// so callers never release what they checked, and a check that fails
// first collects garbage and looks again. Concurrent checks (a sweep's
// points) may each pass for the same room: checks bound single stages,
// the runtime's soft limit the rest.
// Under an address-space limit every byte the runtime ever mapped counts
// (it never unmaps, and a large array may not fit in the holes freed ones
// left); otherwise memory returned to the system does not.
//
// The budget travels in the context (NewContext, FromContext), as a
// deadline does: every long computation of this module already takes one,
// so a stage written later is checked by calling Check with the context it
// has, and a library caller that sets no budget gets no checks (Check
// returns nil) and its code paths unchanged. Available says how much is
// left, for callers that size a reservation or choose a cheaper method;
// Degrade reports such a choice to the user (Budget.Warn).
//
// Invariants: Limit is positive; a nil *Budget (no budget) allows
// everything; Check never allocates what it checks, and never panics.
//
// The package knows nothing of chains or models: it is below ctmc,
// passage and models, which call it, and cmd/pepa, which detects the
// budget, sets the runtime's soft limit from it and puts it in the context.
// It lives under internal/ because its API is for this module's packages,
// not a public one.
package membudget
