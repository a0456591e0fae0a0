// Package laplace computes a chain's transient figures by inverting their
// Laplace transforms on a contour (semantics.md section 2, "Laplace-
// transform inversion"): the probability of being in closed sets of
// states at any time (a passage-time distribution, when the set is where
// the passage ends), means and the chance of ever getting there, and a
// whole transient distribution at one time. Its cost does not grow with
// the largest rate times the time, as uniformization's does: millisecond
// transfers beside hour-long jobs, owners cycling in seconds, a resource
// failing and repaired 10^6 times faster than jobs end.
//
// # What is in it
//
//   - System (system.go): the generator ordered for substitution, in
//     strongly connected blocks (Tarjan), a target's transitions sent to a
//     sink; x (zI - Q) = b is one pass in that order, each block solved
//     densely by a Grassmann-Taksar-Heyman elimination (subtraction-free at
//     z = 0), a closed block only receiving (never solved). It records the
//     widest angle of the blocks' eigenvalues from the negative real axis
//     (0 for reversible blocks, by Kolmogorov's criterion; computed
//     otherwise).
//   - contour (contour.go): Weideman and Trefethen's hyperbola and its
//     parameters for a window [t0, 16 t0], searched under the poles'
//     sector.
//   - Engine (engine.go): windows solved on demand, CDF, PDF, Quantile,
//     Mean, Limit, MaxRest; Check, a second contour at one time and, where
//     it disagrees, the trapezoidal rule refined (h/2, h/4, ...) until two
//     levels agree; Transient, a whole distribution at one time.
//
// # Invariants
//
// Every set given is closed (no transition leaves it: NewSystem's and
// New's callers make it so; New refuses one that is not, with
// ErrNotApplicable). Every pole (a block's eigenvalue, an acyclic state's
// -q_i) lies left of the contour in every window. A block the chain leaves
// has at most MaxBlock states and its eigenvalues lie within MaxSector of
// the negative real axis; otherwise NewSystem returns ErrNotApplicable and
// the caller runs uniformization. Accuracy is an estimate (the contour's
// predicted error, checked at the goal as above), never a bound, and is
// reported as such. The engine reads the chain's own rows and keeps no
// copy of its transitions: the chain must outlive it. An Engine is safe
// for concurrent use.
package laplace
