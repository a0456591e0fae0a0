// Package elim is the project's one kernel of state reduction without
// subtraction: it eliminates the states of a dense block of a
// continuous-time Markov chain one by one, from the last down, each time
// censoring the chain on the states that remain (Grassmann, Taksar and
// Heyman 1985), and solves with the reduction for a row vector
// (probabilities, expected times: SolveLeft) or a column vector (mean
// times, absorption probabilities: SolveRight). It knows nothing of
// models or chains beyond the block it is given.
//
// # Accuracy
//
// Eliminating state k folds its rates into every state i that enters it:
//
//	s_k = Out_1[k] + ... + sum_{j<k} a_kj,
//	a_ij += (a_ik / s_k) a_kj,  Out[i] += (a_ik / s_k) Out[k],
//	Cols[i] += (a_ik / s_k) Cols[k]   (i, j < k),
//
// where s_k, the pivot, is the total rate at which k leaves the states
// not yet eliminated, formed as a sum of the rates it has left and never
// as its diagonal minus the return the elimination creates. Under the
// precondition below every operation of Reduce, and of SolveLeft and
// SolveRight on a nonnegative right-hand side, adds, multiplies or
// divides nonnegative numbers: nothing cancels, so every computed value,
// however small (a probability of 1e-30 next to ones of order 1, a mean
// time of 1e9 next to ones of 1e-3), has a relative error bounded by a
// low-degree polynomial in the block's size times the unit roundoff,
// whatever the spread of the rates (O'Cinneide 1993, "Entrywise
// perturbation theory and error analysis for Markov chains", for the
// stationary vector; the argument, that each result is a chain of such
// operations each off by at most one rounding, holds for every solve
// here). That is why stiff chains are solved by it; partial-pivoting LU
// lost 4e-7 of a mean time on a 6-state chain with rates from 2.5e-4 to
// 5.9e3.
//
// # Precondition
//
// Every off-diagonal entry of Block.Rates and every entry of Block.Out
// is nonnegative and finite (the diagonal is ignored on entry); Block.Cols
// and the right-hand side of SolveLeft are nonnegative for the accuracy
// above, and may have either sign otherwise (they are then reduced and
// solved correctly, but the sums may cancel). A block that is not Closed
// must be left from every state: from each state, some path through the
// states before it ends in a rate out; a Closed block has no rate out
// and must be irreducible. Reduce does not assume that: a pivot that is
// not positive and finite (nothing left to leave by, or rates that under-
// or overflow float64) is a *PivotError, and no value is returned.
//
// # Callers
//
//   - ctmc/steady gth.go: a closed class's generator (Rates its rates in
//     the order of elimination, Closed, Compensated pivots, as its loop
//     formed them); SolveLeft(nil) with x_0 = 1 is its
//     steady state up to scale, SolveLeft(r) with x_0 = 0 a correction d
//     with d Q = -r (r signed: these solves subtract, see gth.go).
//   - ctmc/steady aggregate.go: the aggregated chain of one component's
//     local states (Closed); SolveLeft(nil) with x_0 = 1, normalised.
//   - ctmc/steady absorption.go: a strongly connected block of transient
//     states (Out: the rate out of the block); SolveLeft(inflow) gives
//     the expected time spent in each state.
//   - passage mean.go: a block of the mean-time system (Out: the rate that
//     ends the passage or enters solved states; Cols: 1 plus the flow to
//     solved states times their means); SolveRight(Cols[0]) gives the
//     mean remaining times.
//   - passage dense.go: the states that can reach the target (Out: the
//     rate into the target, then the rate to states that cannot reach
//     it); SolveRight(Out[0]) gives the probability of ever reaching the
//     target.
//
// Each caller used to have its own copy of the loop. They differed in
// what they skipped (a zero rate of the pivot row, the diagonal's
// entry), where they kept the pivots and when they reduced a row-vector
// right-hand side, none of which changes a value for finite rates: the
// results are bit for bit those of the loops replaced. (Where a pivot
// overflowed to +Inf, passage's two loops went on with it; Reduce refuses
// it, as the others always did.)
//
// # Speed
//
// Reduce costs about n^3/3 multiply-adds and skips every row that does
// not enter the state being eliminated (sparse blocks stay cheap). From
// parallelRows rows up, a step with enough work to be worth it
// (parallelWork) splits the rows that enter its state between the calling
// goroutine and one helper: the rows are independent, so the results are
// the same bits however the split falls.
package elim
