// Package steady solves a derived chain (package ctmc) for its long-run
// distribution from the initial state, and says how accurate the answer
// is. It reads the chain and changes nothing in it; what is measured on
// the distribution (throughputs, utilisations) is ctmc's. Analyze
// (analyze.go) is the whole analysis in one call, from a model to its
// measures, as 'pepa steady' makes it.
//
// Solve with one closed communicating class gives its steady state, pi Q
// = 0; transient states (start-up phases) get probability 0. With several
// (absorption.go), it is the probability of ending in each class from the
// initial state (expected times in the transient states, solved block by
// strongly connected block in the order the chain passes through them:
// one division, subtraction-free elimination, or sweeps) times the class's
// own steady state; Options.SingleClass refuses that case instead, with a
// *NotIrreducibleError naming a state of each class by its components'
// local states. A deadlock is refused. Each closed class is solved by one
// of four methods:
//
//   - GTH (MethodDirect, gth.go): dense Grassmann-Taksar-Heyman state
//     reduction (package ctmc/elim). Every pivot is a sum of remaining
//     rates, never a difference, so each probability, however small, has
//     a small relative error (O'Cinneide 1993); this is what makes stiff
//     chains (rates 1e-4 to 1e5) safe. Chosen up to DefaultDirectLimit
//     (2,000) states.
//   - Gauss-Seidel (MethodSweeps, sweeps.go): sweeps over the chain's own
//     rows in place (pushing each change to the inflows of its targets, so
//     that no transposed generator is built), a large class cut into two
//     blocks swept on two goroutines if Options.Goroutines asks (one was
//     faster on this shared 2-core machine), corrected every 4 sweeps by
//     aggregation over each component's local states (aggregate.go).
//     Chosen above the direct limit; it stops when the estimated error of
//     every throughput (the last move of the throughputs times c / (1 -
//     c), c the measured contraction) meets the tolerance, and hands over
//     to BiCGSTAB when the contraction predicts more than
//     DefaultSweepLimit sweeps (stiff chains). Its estimate covers
//     throughputs, not single states' probabilities
//     (Options.StateProbabilities avoids it).
//   - BiCGSTAB (MethodIterative, ilu.go) right-preconditioned by ILU(0),
//     with the ILU pivots formed the GTH way (subtraction-free) and the
//     unknown of the most probable state fixed; then iterative refinement
//     (generator.go) on the exact residual with corrections solved in a
//     scaled system (unknowns relative to the current probabilities,
//     balances relative to each state's outflow), until the estimated
//     error of every throughput meets the tolerance, or an error says it
//     cannot.
//   - Sparse GTH (MethodSparse, nd.go, sparse.go): the GTH reduction in a
//     nested-dissection order by dense fronts (multifrontal), each
//     probability a mantissa with its own binary exponent, so that chains
//     whose probabilities span beyond float64 are solved. The last state
//     (the one kept) is a state guessed probable by a short random walk,
//     the class reduced again with the most probable state last when the
//     guess was rare: the error estimate's correction is anchored there,
//     and a rare anchor would drown the bulk's correction in its offset.
//     Where the probabilities span more than float64 within one front,
//     rates of the censored chains underflow too (a rare state's whole
//     inflow rounds to 0): the class is then reduced again on the
//     similar matrix W Q W^-1, W the steady state the pass before found,
//     whose entries are flows relative to their target's probability,
//     with that pass's pivots (sparse.go says why), until no inflow
//     underflows (Options.SparseRescale forces one such pass, for the
//     differential tests).
//
// Above the direct limit, auto (solveAuto) tries in turn sparse GTH when
// its predicted work is small, Gauss-Seidel, sparse GTH, BiCGSTAB and
// sparse GTH at any cost; any failure hands over to the next, and the
// Reason lists what failed and why (a *methodsError wraps every failure
// when none answers). Under auto each method's work is capped (sparse
// GTH's by its prediction, the sweeps' by their measured contraction,
// BiCGSTAB's iterations by bicgAutoWork), so that a class no method can
// solve fails in seconds to tens of seconds, not hours.
//
// # Invariants
//
// Result.Pi sums to 1 over the closed classes and is 0 on transient
// states. The iterative methods' every throughput's estimated error
// meets Options.Tolerance, or Solve fails (or, under MethodAuto, tries the
// next method): they never return a vector that misses it. The direct
// methods (GTH, sparse GTH) compute once and report their estimate
// whatever it is (dense GTH estimates again in a second order first when
// it misses): on the differential tests' stiff chains sparse GTH's
// reached 3e-12 against 1e-12 asked, its values within it. Results are bit-for-bit the same
// whatever GOMAXPROCS is: the sweeps' two blocks and the aggregation's
// two halves are cut by position, not by the number of cores, and GTH's
// rows split between two goroutines are independent.
//
// # Accuracy
//
// GTH (dense and sparse) and BiCGSTAB results carry, per action, an
// estimated error of its throughput relative to itself (Result.ThroughputError): the first-order
// effect of one further refinement step, whose residual p Q is formed
// with error-free products and compensated sums so that it is exact in
// every state, floored by the state's own relative imbalance. It is an a
// posteriori estimate, not a rigorous bound (ErrorBoundKind says so in
// words). Measured against 256-bit reference solves
// (steady_accuracy_test.go, 1,000 stiff birth-death chains and 1,000
// random stiff chains, rates 1e-4 to 1e5): every throughput was within 10
// x its estimate + 1e-13 of the reference, for both methods. GTH solved
// every chain; the iterative method refused (with an error) 172 of the
// birth-death chains, whose probabilities span up to 1e-18, and 2 of the
// random ones, rather than reach the tolerance. Gauss-Seidel, forced on
// the tests' 100 birth-death and 100 random stiff chains (up to 20,000
// sweeps), gave up on 153 of the solves (which is why auto hands such
// chains to BiCGSTAB) and was within the same bound on the others.
// Sparse GTH, forced on the same 200 chains, solved every one within the
// same bound. Its estimate is checked on a vector with a known error too
// (TestSparseEstimateTracksError: the correction within a factor of 2 of
// the error, unscaled and scaled).
//
// Parallel transitions (several actions or derivations between the same
// two states) are kept apart in the generator: merging them rounds their
// sum, and the residual would then show an imbalance no vector removes.
//
// # Size
//
// About 5,000 lines of Go without tests: four solvers, absorption into
// several classes and auto's chain of methods. They stay one package
// because auto hands a class from one method to the next with what it
// has built (the class graph, the generator, the plan's predicted work)
// and every method's answer goes through the same error estimate's
// refinement (generator.go); split, those would be exported for one
// caller each.
//
// # Memory
//
// Solve obeys the memory budget its context carries (package
// internal/membudget): it checks each stage (closed classes,
// Gauss-Seidel's vectors, generator, ILU(0) factors and vectors or GTH's
// matrix, refinement, absorption) with its size computed beforehand
// (steadymem.go). Without a budget nothing is checked and nothing
// changes.
package steady
