// Package simulate estimates the measures of a PEPA model by stochastic
// simulation (Gillespie's direct method) over its compiled ctmc.Structure,
// without building the state space: memory stays a few words per path
// whatever the size of the product chain.
//
// # What it estimates
//
// Passage times from the initial state (first firing of a target action, or
// first entry into states satisfying a predicate; the same definitions as
// package passage's initial semantics), mapping robustness (each machine's
// finishing time is the first firing of one of its cycle-closing actions,
// as in package models; the machines of RobustnessSpec.Stop stop once they
// have finished), and steady-state throughputs and populations by batch
// means after a warm-up. Robustness simulates each group of coupled
// machines (ctmc.Structure.Groups) on its own sub-model, group g's stream
// of replication i seeded from (Seed, g, i): groups never interact, so the
// joint distribution is the same, and a replication costs the machines'
// own events whatever the size of the product chain.
//
// # Invariants
//
//   - Every estimate carries a confidence interval at Options.Confidence:
//     Clopper-Pearson for probabilities (exact binomial, conservative),
//     Wilson per point and the Dvoretzky-Kiefer-Wolfowitz band for CDFs,
//     Student t on the sample for means, and ratio batch means over
//     independent streams for steady-state figures.
//   - Replication (or stream) i draws from its own PCG generator seeded from
//     (Options.Seed, i) only. Replications are handed out in fixed blocks
//     and their results combined in index order, and every stopping rule
//     except the wall-clock budget is checked only between blocks, on the
//     results so far: the output is a function of the seed and the number
//     of replications, never of the number of cores or of timing. A run
//     stopped by --budget reports its replication count, and rerunning with
//     that count reproduces it.
//   - A run of a fixed number of replications (or streams) can be split
//     into ranges run anywhere (RobustnessRange, PassageRange,
//     SteadyRange): each returns its replications' raw results (finishing
//     times, passage times, every stream's batches), and Combine* feeds
//     them, in index order, through the accumulator a whole run uses, so
//     the combined figures are the whole run's bit for bit (quantiles
//     included: the samples are kept). The precision and budget rules look
//     at the whole run and are refused in a range.
//   - Where ctmc.IndependentLeaves or ctmc.ContextTables applies, a jump
//     updates one leaf's (or, when the context moves, every leaf's) total
//     rate from those tables instead of evaluating the whole tree; the
//     tables are computed by the same evaluation code and checked against
//     it on every state in package ctmc's tests.
//   - Otherwise the engine takes the transitions of a state from ctmc.Evaluator, so
//     rates are those of Derive (the apparent-rate rule of semantics.md
//     section 1), and a model Derive rejects is rejected here with the same
//     error, at the first state where a path meets it.
package simulate
