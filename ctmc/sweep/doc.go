// Package sweep varies rate constants of a PEPA model over a grid and
// collects measures at each point: parsing --vary specifications (positive
// values only), editing a parsed model's rate definitions (the model is
// re-checked, so every derived rate follows), running an analysis at
// every point (Run: a point's measures are named columns the caller makes
// from its typed result; nothing here knows a verb), locating where one
// series overtakes another (bisection on the exact solver), deriving each model's chain once for
// every point (ChainCache), splitting the grid into shards and merging
// their results (Result, Merge). Its figures (lines for one parameter, a
// heat map for two) are drawn by package models/plot.
//
// Invariants: a point's model is the source with the varied definitions'
// right-hand sides replaced by the values, and nothing else changed, so
// a point's measures are exactly those of the model edited by hand (the
// value written with strconv's shortest round-trip formatting); a chain
// from ChainCache is, rate for rate, the one deriving the point's model
// gives (ctmc.Rerate checks the structure, and each row's count and
// actions). Points are evaluated independently, in parallel, and returned
// in grid order, the first parameter varying slowest. A crossing is found by the range that holds
// the first grid point of its bracket (CrossingsFrom), so the crossings of
// ranges merged, in SortCrossings order, are those of the whole grid.
package sweep
