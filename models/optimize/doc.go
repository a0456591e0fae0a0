// Package optimize searches for the most robust mapping of a
// specification and for the front of robustness against energy. It holds:
// optimize.go (Optimize: the heuristics, then the exact method or local
// search), bound.go (an upper bound on every mapping's score), evaluate.go
// and fastsolve.go (one machine's chain built without PEPA text, and a
// solver for it checked against dense matrix exponentials), mapeval.go
// (the evaluator for independent machines), coupledopt.go (the evaluator
// by groups when machines share resources) and pareto.go (ParetoFront).
//
// Invariants: each machine computes its applications in specification
// order, so its P(F <= beta) is a function of its set (the first
// application's race picks the path). A result with Proved set is the
// largest score over all such mappings (dynamic program over subsets);
// otherwise Bound is an upper bound on every mapping's score; the exact
// method is skipped when its tables do not fit the memory budget
// (local search instead, and a warning). The figures reported for a
// mapping are always machineFinish's (package passage). With shared
// resources a machine's P(F <= beta) is no function of its own set: the
// exact method is skipped and a mapping is evaluated by groups, each
// group's model written alone and solved as models.AnalyzeGroups solves
// it, cached by the group's content, so a move re-solves only the groups
// whose content it changes; the figures of a coupled mapping equal
// AnalyzeGroups' on its whole generated model (tested). Bound stays an
// upper bound: a transfer only delays.
//
// Dependencies: models, models/spec, models/energy, passage, ctmc; never
// models/plot.
package optimize
