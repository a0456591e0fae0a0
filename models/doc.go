// Package models knows what a mapping model is: applications (passive
// components) allocated to machines (components that compute their
// applications in a cycle). It finds the machines of a compiled model,
// computes each machine's finishing-time distribution with package passage
// and derives the robustness figures of semantics.md section 3: Robustness
// takes a Request (one model or several) to a Report (each model's Result,
// the ranking, sensitivities, energy figures).
//
// The files, in the order of a call (each calls only files below it):
// request.go (Request, Report, Robustness: the request validated once,
// each model compiled and sent down one path, the energy figures added,
// the ranking); then the two paths, groups.go (AnalyzeGroups, the
// default: each group of coupled machines on its own chain; simgroups.go,
// a group past the budget simulated; groupsolve.go, the groups'
// probabilities alone, for the optimizer) and flat.go (the product chain:
// flatRobustness, Analyze, the joint figures from the chain with
// completion flags, flags.go; a model past the budget simulated whole);
// energyfig.go and energyflags.go (the energy figures of semantics.md
// section 5 and their rate-divided chains: they need the groups' chains;
// package energy has the arithmetic), sensitivity.go, rank.go; below them
// what both paths share: result.go (Question, Options, Result,
// MachineResult), chains.go (the stop rule applied to a structure, the
// start distributions, the simulator's spec), makespan.go (the machines'
// means and the joint makespan figures from the distributions: MaxMean),
// machines.go (which components are machines), pragma.go and owner.go
// (the pepa: pragmas a model carries, among them an owner's workload) and
// parallel.go. simulation.go (Simulate: one simulation, pepa simulate's
// call) is an entry of its own.
//
// What is built on it lives below: models/spec (mapping specifications and
// the models gen writes from them), models/optimize (the search for the
// most robust mapping and the Pareto front), models/plot (every figure
// drawn), models/observe (figures conditioned on observed completions),
// models/energy and models/etc. Dependencies run one way: plot -> optimize
// -> spec -> models; nothing here imports them.
//
// Invariants: a Machine is a single sequential component with only active,
// visible activities that returns to its initial local state (or, stopped,
// reaches the terminal state ctmc.FinishedState); its first actions leave
// that state, its last actions re-enter it. Under initial semantics (without
// Options.Cycling) a machine stops once it has finished (semantics.md
// section 3): its cycle-closing actions lead to a terminal state, so it no
// longer takes part in what it shares. AnalyzeGroups solves each group of
// coupled machines (ctmc.Structure.Groups) on its own chain, a machine
// alone on the chain of its own moves, and its figures are exactly the
// product chain's (tested against Analyze on the flat chain and against
// the reference semantics); P(max_j F_j <= beta) is the product over groups
// of each group's probability that all its machines have finished, a
// passage into the set where they are all terminal (the chain with a
// completion flag per machine under Cycling); E[max_j F_j] integrates the
// product of the groups' distributions (MaxMean), or is the one group's
// mean. Robustness is min_j P(F_j <= beta) over the machines analysed. A
// group past Options.MaxGroupStates is simulated (Options.Simulate), alone,
// and only then do figures carry intervals. A machine whose E[F] is
// infinite carries a Note saying so, and a Result's Warnings name the
// applications no machine computes.
package models
