// Package fluid is the fluid (ODE) analysis of PEPA populations
// (docs/semantics.md section 8; the specification's section 7): for a
// model whose sequential components come in populations (arrays P[n],
// copies of one component), the ordinary differential equations of the
// expected number of copies in every local state, their time series,
// their steady state (the fixed point), the throughput of every action,
// a tagged copy's passage time, and second moments by moment closure.
// Nothing grows with the number of copies: a model of 10^6 users is a
// handful of equations, where its chain of count vectors has no hope of
// existing.
//
// # Semantics
//
// Hillston (2005) and Tribastone, Gilmore and Hillston (2012), the fluid
// semantics of the PEPA Eclipse Plug-in. The populations x (one per local
// state of every group, ctmc.CompilePopulations) drive flows: activity k
// of a local state s, at rate r, has its own apparent rate c_k = r x_s;
// apparent rates add up a parallel composition; a cooperation on a gives
// the action the smallest of its sides' apparent rates (a passive side
// imposes none, weights w*infty count as w, and a passive side with
// nothing ready blocks the action, as in the chain); hiding makes actions
// tau, never synchronised. The flow of k is c_k times its factor, the
// product over the cooperations above it on a of (the cooperation's rate
// over its side's apparent rate): the rule of the chain's joint
// transitions (semantics.md section 1) with populations in place of
// indicators. dx/dt = sum_k flow_k (e_target(k) - e_source(k)).
//
// Build compiles this into a flat program: per activity (rate, source,
// target, slot), per slot of the tree (a node's apparent rate of one
// action) an op over its inputs (sum or minimum), in post-order. One
// evaluation runs the ops bottom-up (apparent rates), then top-down
// (factors), then the flows: time linear in the size of the model,
// nothing allocated. The Jacobian is exact, by directional derivatives of
// the same program (at a minimum's kink it takes the side that is the
// minimum, the first of equal sides).
//
// A component that performs an action both actively and passively, and
// cooperates on it, has no fluid apparent rate here: refused, naming it.
// So is a passive activity never synchronised with an active partner.
//
// # Integration and accuracy
//
// Two methods with error control on every step (weighted RMS of the local
// error estimate at most 1 with weights atol_i + rtol |x_i|; defaults
// rtol 1e-8 and atol 1e-10 times the group's copies): Dormand and Prince
// 5(4), explicit, and RODAS4 (Hairer and Wanner 1996), a 6-stage
// Rosenbrock method of order 4, L-stable and stiffly accurate, which
// factors I/(h gamma) - J each step (populations with rates 10^6 apart
// need it). MethodAuto starts explicit and switches for good to RODAS4
// when Hairer's stiffness test (h |lambda| past 3.25 on 15 steps running)
// says so; above DenseLimit populations only the explicit method runs.
// Output times are hit exactly (steps end on them; no interpolation).
// Global errors are typically 10 to 100 times the local tolerance: the
// tests compare against an independent RK4 solution with tiny steps and
// against closed forms.
//
// The steady state is the point the trajectory reaches: windows of
// doubling length from 1/(largest rate) until the residual (the largest
// |dx_i/dt| over the largest throughput) is at most SteadyTol (default
// 1e-10), then Newton's method with each group's total fixed refines it
// if that lowers the residual without moving farther than the integration
// error. A trajectory that does not settle by MaxTime (default 2^40 times
// the slowest activity's mean duration) is reported as such, with the
// populations still moving and their range over a last stretch as long
// as half the time (an oscillation, or a very slow approach).
//
// # Approximation
//
// These are the limits of the chain's means as every population grows
// together (Kurtz): errors of order 1/N for means in smooth models, 1/sqrt
// N near a kink of a minimum, and no promise at populations of 1 (a model
// without arrays still has a fluid model, every group of one copy: it is
// computed, and the output says how poor it may be). Package
// ctmc/fluid/fluidcheck measures the distance to the exact chain or to
// simulation.
//
// # Tagged passage and moments
//
// Passage follows one copy of a group (Hayden and Bradley 2010): its
// local state is a Markov chain whose rates are its activities' flows per
// copy at the fluid populations; the CDF is integrated with the
// populations. From the initial state (every copy in its initial state,
// the passage ending at the copy's first firing of a target action or on
// entering a state where a predicate holds), or in the plug-in's
// semantics (start in the states source actions enter, weighted as the
// embedded chain; populations at their steady state). The mean adds, once
// the populations have settled, the exact mean time to absorption at the
// settled rates. Second moments (moments.go) are the linear-noise
// closure, exact for models whose rates are linear in the populations;
// the series integrates the covariance with the means, the steady state
// solves its Lyapunov equation at the fixed point.
//
// Invariants: every group's total stays its number of copies (flows move
// copies between its local states); flows are never negative; the flows
// of each side of a cooperation add up to the cooperation's rate, and an
// action's throughput is its apparent rate at the top (a joint firing
// counts once); at every count vector the drift, the throughputs and the
// second jump moments are the chain's (differential_test.go); nothing
// here reads a derived chain (package fluidcheck does, to measure).
package fluid
