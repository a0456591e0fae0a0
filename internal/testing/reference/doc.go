// Package reference is a small, slow and deliberately obvious interpreter of
// PEPA (semantics.md sections 1 and 2), used only as an oracle by the
// differential tests of the real solvers. It shares no code with ctmc or
// passage: it reads the checked lang.Model and nothing else.
//
// # Terms
//
// The system equation is expanded once into a fixed tree of cooperation and
// hiding nodes over sequential leaves: static constants are replaced by
// their bodies where they are used, and an array P[n] becomes n copies of P
// cooperating left-associatively on its action list (no aggregation). A
// state is the vector of the leaves' local derivatives. A local derivative
// is identified by its key, a string built exactly as semantics.md section 1
// says: a constant is named by the constant; a prefix by its action, its
// evaluated rate and the key of its continuation; a choice by the keys of
// its branches in order (written in brackets). Two terms with equal keys
// have the same activities, so the key is all a state needs.
//
// # Transitions
//
// The transitions of a state are computed by the structured operational
// semantics applied literally, with every activity kept separately (two
// identical prefixes of a choice are two transitions that race): prefix,
// choice, constant, hiding (relabel to tau), cooperation (unsynchronised
// actions interleave; for a shared action every pair of partner
// transitions gives one transition of rate (r1/ra(P))*(r2/ra(Q))*min(ra(P),
// ra(Q)), with the apparent rates summed from the partners' own transition
// lists). Passive rates carry a weight; min(r, w*infty) = r and two passives
// give a passive whose weight follows the same formula. A component that
// mixes active and passive activities of one action in one state has no
// defined apparent rate: the reference refuses the model (ErrInvalid).
//
// # Invariants
//
//   - States are numbered in breadth-first discovery order, the initial state 0.
//   - Every transition of the chain has a finite positive rate; a reachable
//     state enabling a passive activity at the top level makes Explore fail
//     with ErrInvalid.
//   - Self-loops are kept as transitions (for throughputs and action-ended
//     passages) and left out of the generator's diagonal bookkeeping.
//   - Numerical work is dense and direct: GTH elimination for the steady
//     state of each closed class; with several closed classes, the
//     long-run distribution from the initial state weighs each class by
//     the probability of ending in it, by state reduction of the
//     transient states into state 0's rates to the classes (Absorption,
//     subtraction-free, a method of its own: ctmc solves expected times);
//     subtraction-free elimination for mean passage times, and for
//     passage CDFs the scaling and squaring of the dense generator's
//     exponential (up to DenseLimit states) or, on larger chains, Taylor
//     substeps on the sparse rows with the generator shifted to be
//     nonnegative (nothing cancels). CDFs returns each value with a bound on
//     the reference's own error, 1e-13 + 4u c t, which the two methods keep
//     against each other on random and stiff models. Chains of a few
//     thousand states are the most it is meant for (the eliminations are
//     cubic).
//   - That bound is useless on stiff chains (q t of 1e7 to 1e9:
//     millisecond transfers beside hour-long jobs), so transient analysis
//     has two more oracles, each of its own making and checked against
//     closed forms and the other. TransientDD and CDFsDD (transientdd.go)
//     compute alpha exp(Q t) in double-double arithmetic (dd.go) by a
//     uniformized short step and repeated squaring, subtraction-free, to
//     about one rounding of float64 whatever q t (a stated bound), on up
//     to DDMaxStates states (seconds at a thousand). TransientRadau and
//     CDFsRadau (radau.go) integrate d pi/dt = pi Q by the Radau IIA
//     method of order 5 with step-size control and a sparse LU of their
//     own (sparselu.go) in a strongly-connected-component order
//     (order.go), for chains of tens of thousands of states, to about
//     5e-11 at the default tolerances (measured; CDFsRadau estimates it
//     by a second run). CDFsStiff takes the first up to StiffDDLimit
//     states, the second beyond.
package reference
