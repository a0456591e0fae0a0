// Package fluidcheck measures how far a fluid analysis (package
// ctmc/fluid) is from the model's chain: against the exact figures of the
// chain of count vectors where it fits (ctmc.Derive with arrays
// aggregated, ctmc/steady for the steady state, passage.Hidden for the
// transient means at the series' times), else against simulation's
// confidence intervals of the steady state (ctmc/simulate). It is
// fluid's Checker; it changes nothing in the analysis.
//
// Distances: populations as a fraction of their group's copies (a
// distance of 0.01 is 1% of the population), throughputs relative to the
// largest throughput, the largest over every local state, action and time.
// A component that makes several fluid groups is compared as their sum,
// as the chain's utilisations sum its copies.
package fluidcheck
