// Package models knows what a mapping model is: applications (passive
// components) allocated to machines (components that compute their
// applications in a cycle). It finds the machines of a compiled model,
// computes each machine's finishing-time distribution with package passage,
// derives the robustness figures of semantics.md section 3, ranks mappings,
// plots them, and generates mapping models from specifications (section 4).
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
// upper bound on every mapping's score (bound.go); the exact method is
// skipped when its tables do not fit the memory budget the context carries
// (membudget: local search instead, and a warning). The figures reported
// for a mapping are always machineFinish's (package passage); the search
// itself solves with machineSolver, checked against dense matrix
// exponentials.
//
// Shared resources (shared.go, coupledopt.go): a specification's
// "resources" are networks or file servers; gen writes each as a
// component the machines that stage input through it cooperate with (a
// request and a transfer before each application with data), so those
// machines form a group. Optimize then skips the exact method (a machine's
// P(F <= beta) is no function of its own set) and evaluates a mapping by
// groups: each group's model written alone and solved as AnalyzeGroups
// solves it (solveGroupProbabilities), cached by the group's content (its
// machines and their applications), so a move re-solves only the groups
// whose content it changes; the figures of a coupled mapping equal
// AnalyzeGroups' on its whole generated model (tested), and the reported
// ones are those. Bound stays an upper bound: a transfer only delays.
//
// Plots (Figure): every CDF panel of a ranking shares one time range; all
// text is one embedded typeface at fixed point sizes, so PNG, SVG and PDF
// look alike; legends are drawn beside the axes, never over them.
package models
