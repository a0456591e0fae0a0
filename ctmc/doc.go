// Package ctmc derives the continuous-time Markov chain of a checked PEPA
// model, and measures a distribution over its states (Throughputs,
// Utilisations). It knows nothing of mappings, machines or passage times;
// package ctmc/steady solves a chain for its steady state.
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
// exports are the same on every run. Exploration takes chunks of consecutive
// states: all cores compute their transitions (each worker on its own copy
// of the evaluation tree, reading the index only), then one goroutine
// numbers the new targets in state order, so the numbering is exactly the
// single-threaded one whatever the number of cores (a test compares the
// two entry for entry). With the direct-address index the next chunk is
// expanded while one is numbered: entries are written and read atomically,
// an entry found is final, a target not found is looked up again when its
// own chunk is numbered. The state index is a direct-address
// table on the state's mixed-radix number when the product of the local
// state counts is small enough (in two levels: blocks of 1,024 numbers,
// placed one after the other as states are met in them, so that memory
// goes to the blocks that hold states), an open-addressing hash set
// otherwise; no state is a heap object. Activities of one state with the same action and
// target (the same delta) are merged on the evaluated list, before any
// lookup, into the first of them, their rates added in list order. On
// Linux the chain's arrays and the direct index are advised for
// transparent huge pages (huge_linux.go).
//
// Each explorer evaluates its own copy of the tree in which subtrees are
// replaced by tabulating equivalents (memo.go, split.go): a subtree whose
// moving leaves lie within 12 bits of one word becomes a memoNode, which
// stores the subtree's list per value of those bits on first use (found
// in a table of every value; a wider span of one word, in a hash table of
// the values met, when the other leaves' local states multiply to 64 or
// more, so that its values recur); a
// cooperation of a constant side with a parallel composition is split
// into groups of consecutive kids (12 bits each) whose unshared and shared
// transitions are stored per group key, the joint transitions formed from
// them by the cooperation's own code (or, when no shared action is
// performed by two groups, stored per group as well: a mapping model's
// machines). Invariant: the list a replaced node appends is, entry for
// entry, the one the original appends, errors included: a key whose
// evaluation meets an error is never stored (the original evaluates it
// in place), and the per-state transition limit, checked by cooperations
// against the length of the list they append to, is re-checked at the real
// position (evalError.track records the last checked position of a stored
// list). TestMemoAndSplitRowsExact compares rows and errors under every
// small limit; the sequential reference uses no replaced node.
//
// # Local derivatives
//
// Local derivatives are terms (semantics.md section 1, the PEPA Eclipse
// Plug-in's rule): a process constant is a derivative of its own, named by
// the constant, with its body's activities (P = Q makes P and Q two
// derivatives); any other term is identified by its structure, a prefix by
// its action, its rate's value and its continuation's identity, a choice by
// its branches' identities in order, parentheses ignored, and is named by
// the text of its first occurrence. Activities of one derivative with the
// same action, target and passivity are one activity at the summed rate, so
// Q + Q is a race at twice Q's rate. Identity is decided once, at compile
// time, by numbering terms (termIDs); throughputs do not depend on it, the
// state count does.
//
// # Limits
//
// DeriveOptions.MaxStates bounds the states; Options.MaxStates (the same
// number on the command line) bounds what Compile builds before any state
// exists: the sequential components and each aggregated array's count
// vectors; and one state's transition list is bounded by four times the
// limit (at least 65536), checked before a cooperation of many copies
// lists the product of their choices. Each failure wraps ErrTooManyStates
// ("model too large"). An array with a cooperation set, P[n][L], is one
// n-ary node (multiCoopNode): cooperation on one set is associative, and a
// left-deep chain of binary nodes would list every copy's transitions again
// at every level, quadratic in n.
//
// Memory: Derive obeys the memory budget its context carries (package
// internal/membudget). Derive checks every array before it makes
// or grows it (the states, the row offsets, the transitions, the state
// index), sizes its reservations from what the budget leaves (at most a
// quarter of it, where the bound alone once reserved 17.8 GB of address
// space for a 1,000-machine model), takes the hash index where the direct
// table would take more than a quarter, and, where the budget is tight
// (it leaves less than 8 times the chain), trims over-reserved arrays to
// their length at the end (the runtime counts the untouched part; a copy
// otherwise only costs time and resident memory). A
// chain that does not fit fails with an error wrapping both
// ErrTooManyStates and membudget.ErrOverBudget. Without a budget nothing
// is checked and nothing changes.
//
// Errors of the model found during derivation name the state by its
// components' local states and the activity by its prefix's position:
// a passive activity enabled at the top level, and an action enabled both
// actively and passively by one side of a cooperation (no apparent rate).
//
// # Independent parts and groups
//
// Decompose splits a model whose moving components never synchronise with
// each other (they only cooperate with inert partners: one local state,
// passive activities) into parts, each with the chain of its own moves; the
// model's chain is their product, so a passage that concerns one part can
// be solved on that part alone. The criterion and why it is exact are
// written out in decompose.go. Groups generalises it: moving components that
// perform a common visible action are coupled, and the connected sets of
// that relation are groups; Restrict builds a group's own sub-model (its
// components and the inert ones that serve it, the rest removed), whose
// chain is the group's factor of the model's (groups.go says why), and can
// stop components: their given actions lead to a terminal local state
// (FinishedState) instead of their targets. OwnChain is a lone component's
// chain without a derivation.
//
// # Rates changed
//
// Rerate builds the chain of a structure compiled with other values of the
// rate constants (a sweep's point) from a chain already derived. It checks
// that the structure is the chain's but for the rates (leaves packed alike,
// the same local states and activities: action, passivity, target; the
// same tree), on which alone evaluation's control flow depends (rates are
// positive); then states, rows, targets and actions are shared, and every
// state's transitions are evaluated on the new tree and merged as Derive
// merges them (their number and actions checked against the row), so the
// result is Derive's, rate for rate, without looking up or numbering a
// state (TestRerateEqualsDerive compares them on random models). The rate
// indices are kept, with a new table, when the rates that were equal stay
// equal. Values that change which local derivatives are one (a term's
// identity includes its rate's value) change the structure:
// ErrStructureChanged.
//
// # Storage
//
// The chain is stored in CSR form: RowPtr (int64), Col (int32 targets),
// the rates (RateAt: a 2-byte index into RateTable, the chain's distinct
// rates, when there are at most 65,536 of them, else Rates, float64) and
// Act (int32 action ids), one entry per transition,
// self-loops kept (they are firings, for throughput and for action-based
// passages) but left out of exit rates. The CSR type is this package's own:
// github.com/james-bowman/sparse, named in the original design, cannot be
// had from the Go module proxy (403 for every version), and a plain CSR
// loop was measured 25-40% faster than its general-purpose one here.
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
//
// # Size
//
// About 6,000 lines of non-test Go, past the house's 5,000, on purpose:
// compilation, the packed state layout, evaluation, the tabulating
// replacements (memo, split, tables), the state index and the exploration
// share one unexported representation and one hot loop, and a package
// boundary between them would export the layout the invariants above
// protect. What stands apart already lives apart: ctmc/steady,
// ctmc/simulate, ctmc/sweep, ctmc/fluid, ctmc/elim.
package ctmc
