// Package ctmc derives the continuous-time Markov chain of a checked PEPA
// model and solves it for its steady state. It knows nothing of mappings,
// machines or passage times.
//
// # Derivation
//
// Compile turns a lang.Model into a Structure: each sequential component
// is compiled once to its local derivative graph (a Leaf), static
// components are expanded, nested parallel compositions are flattened, and
// arrays P[n] of a sequential P without a cooperation set are aggregated
// (Options.Aggregate, on by default) into one leaf whose local states are
// count vectors; this is a lumping, so no steady-state or passage result
// changes, only the state count. Derive explores the product breadth-first
// from the initial state: a global state is the leaves' local states packed
// into machine words (a field never straddles a word), the transitions of a
// state are computed bottom-up over the cooperation tree in reused buffers
// with the apparent-rate rule of PEPA (semantics.md section 1), and states
// are numbered in discovery order, the initial state 0, so numbering and
// exports are the same on every run. The state index is a direct-address
// table on the state's mixed-radix number when the product of the local
// state counts is small enough, an open-addressing hash set otherwise; no
// state is a heap object.
//
// # Independent parts
//
// Decompose splits a model whose moving components never synchronise with
// each other (they only cooperate with inert partners: one local state,
// passive activities) into parts, each with the chain of its own moves; the
// model's chain is their product, so a passage that concerns one part can
// be solved on that part alone. The criterion and why it is exact are
// written out in decompose.go.
//
// # Storage
//
// The chain is stored in CSR form: RowPtr (int64), Col (int32 targets),
// Rate (float64) and Act (int32 action ids), one entry per transition,
// self-loops kept (they are firings, for throughput and for action-based
// passages) but left out of exit rates. The CSR type is this package's own:
// github.com/james-bowman/sparse, named in the original design, cannot be
// had from the Go module proxy (403 for every version), and a plain CSR
// loop was measured 25-40% faster than its general-purpose one here.
//
// # Steady state
//
// Steady runs Gauss-Seidel (or SOR) sweeps on pi Q = 0 over the incoming
// transitions, stops on the true relative residual
// ||pi Q||_inf / (max_i q_i ||pi||_inf) (default 1e-12), and fails with an
// error at its iteration cap rather than return an unconverged vector. It
// refuses deadlocked and reducible chains, naming the deadlocked state's
// components or the closed classes and transient states.
//
// # Without a state space
//
// An Evaluator (one per goroutine: it owns the cooperation nodes' scratch
// buffers) lists the transitions enabled in any packed state with the same
// code and order as Derive, for simulation (package ctmc/simulate).
// IndependentLeaves gives per-leaf transition tables for models whose
// moving leaves share no cooperation action with each other (mapping
// models): a state's transitions are then the union of its leaves' entries
// and a constant list, computed by the same evaluation code.
// ContextTables extends them to moving leaves coupled through a few context
// leaves (a shared store): entries by leaf and context state, and base
// entries by context state.
package ctmc
