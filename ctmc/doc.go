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
// Steady solves pi Q = 0 on the chain's only closed communicating class;
// transient states (start-up phases) get probability 0. A deadlock, or
// several closed classes, is refused with an error naming a state of each
// by its components' local states. Two methods, chosen by the size of the
// closed class (DefaultDirectLimit, 2,000 states):
//
//   - GTH (gth.go): dense Grassmann-Taksar-Heyman state reduction. Every
//     pivot is a sum of remaining rates, never a difference, so each
//     probability, however small, has a small relative error (O'Cinneide
//     1993); this is what makes stiff chains (rates 1e-4 to 1e5) safe.
//   - BiCGSTAB (ilu.go) right-preconditioned by ILU(0), with the ILU
//     pivots formed the GTH way (subtraction-free) and the unknown of the
//     most probable state fixed; then iterative refinement (generator.go)
//     on the exact residual with corrections solved in a scaled system
//     (unknowns relative to the current probabilities, balances relative
//     to each state's outflow), until the estimated error of every
//     throughput meets the tolerance, or an error says it cannot. Chosen
//     automatically, a class of up to 16,000 states that it cannot vouch
//     for is then solved by GTH instead.
//
// Either way the result carries, per action, an estimated error of its
// throughput relative to itself (SteadyResult.ThroughputError): the first-
// order effect of one further refinement step, whose residual p Q is formed
// with error-free products and compensated sums so that it is exact in
// every state, floored by the state's own relative imbalance. It is an a
// posteriori estimate, not a rigorous bound. Measured against 256-bit
// reference solves (steady_accuracy_test.go, 1,000 stiff birth-death chains
// and 1,000 random stiff chains, rates 1e-4 to 1e5): every throughput was
// within 10 x its estimate + 1e-13 of the reference, for both methods. GTH
// solved every chain; the iterative method refused (with an error) 172 of
// the birth-death chains, whose probabilities span up to 1e-18, and 2 of
// the random ones, rather than reach the tolerance.
//
// Parallel transitions (several actions or derivations between the same
// two states) are kept apart in the generator: merging them rounds their
// sum, and the residual would then show an imbalance no vector removes.
package ctmc
