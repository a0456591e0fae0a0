// Package models knows what a mapping model is: applications (passive
// components) allocated to machines (components that compute their
// applications in a cycle). It finds the machines of a compiled model,
// computes each machine's finishing-time distribution with package passage,
// derives the robustness figures of semantics.md section 3, ranks mappings,
// plots them, and generates mapping models from specifications (section 4).
//
// Invariants: a Machine is a single sequential component with only active,
// visible activities that returns to its initial local state; its first
// actions leave that state, its last actions re-enter it. Robustness is
// min_j P(F_j <= beta) over the machines analysed; P(max_j F_j <= beta) is a
// product only when Independent says the machines are independent (no shared
// actions, every other component single-state and passive), and otherwise a
// passage on the chain with a completion flag per machine. A machine whose
// E[F] is infinite carries a Note saying so, and a Result's Warnings name the
// applications no machine computes.
//
// Specifications are JWCC; every error a specification gets has its file,
// line, column and field path (SpecError). Generate writes lang.Format's
// canonical layout, in time linear in the model; gen and optimize describe
// a combined machine's states once (machineMoves). A specification's ETC
// matrix may be drawn (etc_generate, package etc: the same bits on every
// machine) and its mappings given by rule (rules.go: a heuristic, as
// Optimize runs it, or random mappings uniform among those with at least k
// applications per machine, each from its own stream of the seed).
//
// Optimize: each machine computes its applications in specification order,
// so its P(F <= beta) is a function of its set (the first application's
// race picks the path). A result with Proved set is the largest score over
// all such mappings (dynamic program over subsets); otherwise Bound is an
// upper bound on every mapping's score (bound.go). The figures reported
// for a mapping are always machineFinish's (package passage); the search
// itself solves with machineSolver, checked against dense matrix
// exponentials.
//
// Plots (Figure): every CDF panel of a ranking shares one time range; all
// text is one embedded typeface at fixed point sizes, so PNG, SVG and PDF
// look alike; legends are drawn beside the axes, never over them.
package models
