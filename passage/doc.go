// Package passage computes passage-time distributions of a CTMC by
// uniformization (semantics.md section 2): the distribution of the time the
// chain takes to reach a target, from a start distribution.
//
// # Method
//
// The target is made absorbing: transitions labelled by target actions are
// redirected to a sink (the passage ends at their first firing), target
// states absorb the mass that enters them. With q = 1.02 times the largest
// total rate at which a state is left once the target is absorbing
// (MaxLeaveRate: a self-loop labelled by a target action counts, since it
// ends the passage; Chain.ExitRate leaves self-loops out), P = I + Q/q,
// and one forward pass v_{k+1} = v_k P gives the absorbed mass a_k after
// k jumps; then for every t of a grid
//
//	F(t) = sum_k Poisson(k; q t) a_k,   f(t) = q sum_k Poisson(k; q t) (a_{k+1} - a_k)
//
// with Poisson weights from FoxGlynn (ratio recurrences from the mode, no
// overflow or underflow for q t from 1e-6 to 1e13). The pass stops at the
// right truncation point of the largest t, or earlier, with proof, once the
// mass in states that can still reach the target is below epsilon/2 (later
// a_k cannot grow more than that; the live states are found once, by a
// backward search from the transitions that end the passage, so mass
// drained into a closed class without the target stops the series too).
// A series asked up to a horizon and for quantiles (Options.Quantiles)
// runs past the horizon only until its CDF, at the latest time the steps
// taken give, reaches the largest quantile asked: Result.Quantile then
// finds them within the series (ErrBeyondHorizon for one past it).
// There is no fixed step cap: cost grows with q*t, and only memory stops a
// series (MaxSeriesValues values over all passages, ErrTooManySteps). A
// chain of at most DenseMaxStates states whose series would pass
// DenseSwitchSteps (rates many orders of magnitude apart) is solved by the
// matrix exponential of its absorbing generator instead (dense.go:
// scaling and squaring on exp(G t) - I, which keeps a slow state's tiny
// leaving probability that 1 - 1e-19 would round away); Result.Method
// says which.
//
// A single passage asked only up to a horizon on a chain of at least a
// million transitions (backwardMinTransitions) is iterated backward
// instead (backward.go): u_{k+1} = P u_k from the target's indicator, a_k
// = alpha . u_k, the same sequence, computed over the chain's own rows
// with no generator built; it stops at the horizon, or once alpha's whole
// mass is absorbed, and gives no mean (Result.SeriesMean refuses it).
// Options.Backward asks for it on any chain (tests). Result.Path says which
// way a result was computed (dense, backward, forward, forward in lanes).
//
// # Accuracy
//
// Every CDF value is within Result.Epsilon of the exact one, rounding
// included: the series is truncated at 0.9 Options.Epsilon (default 1e-10;
// at most half of it from the Poisson truncation, half from an early stop),
// and Result.Epsilon is Options.Epsilon, or the truncation plus
// RoundingFloor of the steps taken (four unit roundoffs a step) where that
// is larger; the differential test checks every value against the
// reference at that bound. The dense path is checked against closed forms
// to 1e-10. Densities are within
// q * epsilon. CDFs are clamped to [0, 1] and never decrease along a grid
// (the weights shift monotonically and a_k does not decrease). Mean passage
// times come from a linear solve on the strongly connected blocks of the
// transient states (mean.go: elimination without subtraction for small
// blocks, Gauss-Seidel with a coarse correction for large ones until the
// rigorous bound rho = max_k |r_k| / b_k, the residual's rounding included,
// is below 1e-12 relative, and elimination for a block of up to 2,000
// states where the sweeps cannot get there; it reads the chain's own
// transitions and rate table, copying none), never from integrating a
// truncated CDF; they are +Inf when the passage may never end, and
// ErrMeanUnavailable, never a wrong number, when no method meets the bound.
// MeanTimesWith says which methods solved the blocks. When the series
// is complete, the mean is also its sum (Result.SeriesMean; Analyze runs a
// big chain's series on past the horizon for it, Options.ExtraSteps, when
// Result.StepsToComplete predicts that it ends within a few hundred steps,
// and keeps the linear solve otherwise): E[T] is the sum over k of P(K > k),
// the mass not absorbed after k jumps, divided by q, with the geometric
// tail beyond the last step estimated from the series' own decay (below a
// relative 1e-10 of the mean for the default epsilon), +Inf when the
// passage may never end (Result.MayNeverEnd: a forward search from the
// start meets a state that cannot reach the target).
//
// # Analysis
//
// Analyze answers a whole query (which chain to solve, flat or one
// independent part; the passage of the chosen semantics; grid, density,
// quantiles, mean) for the command line and any other Go caller.
//
// # Memory
//
// Solve, the backward iteration and the mean obey the memory budget their
// context carries (package internal/membudget, memory.go): what the
// generator, the vectors, the series and the mean's system need is
// computed and checked before they are made. Where a cheaper way fits,
// it is taken and reported (membudget.Degrade): passages in blocks of 8
// or 1 instead of all at once (the same numbers, more sweeps); backward
// iteration for a single passage up to a horizon whose forward iteration
// does not fit (the same CDF, no series mean); in Analyze, the series run
// on to completion for a mean whose linear solve would not fit. A mean
// that does not fit at all is ErrMeanUnavailable, with the budget's
// reason; any other stage that does not fit fails with the budget's error.
//
// # Kernel
//
// Invariant: every diagonal entry of P outside the targets is in [0, 1]
// (the kernel refuses a q below MaxLeaveRate), so v stays a
// sub-probability vector and a_k never decreases.
//
// The matrix is stored transposed (a gather: row j lists the states that
// move into j), split into entries no passage redirects and the few that
// some passage ends (with a byte per group of 8 passages saying which; for
// those the mass goes to the passage's sink instead). Memory is per state
// and per entry, not per passage: one diagonal value per state, lane masks
// (target, live) of a byte per group, 4-byte row offsets, and an entry is a
// 4-byte source and a 2-byte index into the chain's distinct values r/q (4
// bytes past 65,536 of them). Up to 64 passages over one chain (one per
// machine) share each sweep, with their vectors interleaved in groups of 8
// lanes so that each matrix entry is read from memory once for all.
// Options.ReleaseChain lets Solve drop the chain's transitions once the
// generator is built, before the vectors are made. Rows are cut into fixed blocks of 4096 that
// the cores take in turn; per-block partial sums are reduced in block order,
// so results are bit-for-bit the same whatever GOMAXPROCS is.
//
// On amd64 processors with AVX2 the step runs in assembly
// (kernel_amd64.s): an 8-lane group's entry is one broadcast and two
// 4-lane multiplies and adds, where Go issues eight scalar ones. A row of
// 8 lanes is computed whole in registers (its common entries, then its
// special ones, its target and live lanes) and stored once with
// non-temporal stores (fusedRows8AVX2; the vectors are 64-byte aligned):
// y is written whole every step and read only in the next, so its lines
// are not fetched into the cache before they are written. The sources of
// special entries are fetched 32 entries ahead (PREFETCHT0): a machine's
// last application closes its cycle, so in the breadth-first numbering
// those sources lie many levels away from their rows and missed the
// cache, where common entries' sources lie in the level before. On the
// 28/7 chain, seven passages (BenchmarkKernelStep, paired runs): 5.0-5.4
// ns an entry on one core and 2.9-3.1 on both, against 7.8-8.0 and
// 4.2-4.3 for the two passes it replaced; the special entries, 23% of
// them, had taken half of a step's time. The assembly performs the very operations of
// the Go loops, in their order and without fused multiply-adds, so
// results are bit-for-bit the same with or without it
// (TestAssemblyKernelExact checks the one-pass kernel, the two-pass one
// and the Go loops against each other on random models; the Go loops are
// checked against the chain's transitions). What remains of a step's cost
// is mostly memory: the gathers of source rows (64 bytes a group) that
// miss the cache. On a chain of 65,536 states or more the kernel of a
// block of passages numbers its rows in the lexicographic order of the
// states' local states
// (order.go), where a transition's source lies a component's stride from
// its row, so that those gathers run as a few streams: on the 28/7
// chain a flat robustness analysis took 9.4 s against 10.6 s in the
// derivation's breadth-first numbering (paired runs), 0.4 s more to
// build the kernel included; on the 32/8 chain 134 s against 143 s, 7 s
// more to build it (the transposition's writes scatter).
package passage
