package steady

import (
	"context"
	"errors"
	"fmt"
	"math"
	"pepa/internal/option"
	"runtime/debug"
	"sort"
	"strings"

	"pepa/ctmc"
	"pepa/internal/membudget"
)

// Steady-state methods, as named in Options.Method and
// Result.Method.
const (
	MethodAuto      = ""             // chosen per closed class (see Solve)
	MethodDirect    = "gth"          // dense Grassmann-Taksar-Heyman state reduction
	MethodIterative = "bicgstab"     // ILU(0)-preconditioned BiCGSTAB with iterative refinement
	MethodSweeps    = "gauss-seidel" // Gauss-Seidel sweeps over the chain in place (sweeps.go)
	MethodSparse    = "sparse-gth"   // GTH by fronts in a nested-dissection order, in scaled arithmetic (sparse.go)
)

// DefaultDirectLimit is the largest closed class solved by dense GTH when
// Options.DirectLimit is zero. Dense GTH costs m^3/3 multiply-adds and
// 8 m^2 bytes: BenchmarkSteadyMethods measured 0.07 s at 625 states, 1.1 s
// at 2,401 and 1.9 s at 3,125 (one run each, loaded 2-core machine), where
// the iterative method took 0.003 s, 0.12 s and 0.02 s on those
// (non-stiff) mapping chains. GTH is kept up to where it costs about a
// second, because it is the method that is accurate on any chain.
const DefaultDirectLimit = 2000

// DefaultSweepLimit is the most Gauss-Seidel sweeps MethodAuto predicts it
// may spend on a class before it turns to BiCGSTAB (Options.SweepLimit).
const DefaultSweepLimit = 600

// Options controls the steady-state solver.
type Options struct {
	// Tolerance is the target for the estimated error of every throughput
	// relative to that throughput (see Result.ThroughputError).
	// The iterative solvers iterate until every estimate is at or below
	// it; if one cannot get there, Solve tries the next method or fails
	// rather than return a vector that misses it. The direct ones (GTH,
	// sparse GTH) report their estimate whatever it is. Values below 1e-13, which
	// float64 cannot promise on a sum over many states, are raised to
	// 1e-13. Default 1e-12.
	Tolerance float64
	// MaxIterations caps the BiCGSTAB iterations of the iterative method,
	// summed over its solves, and the sweeps of a forced MethodSweeps;
	// reaching it is an error. Default 100000.
	MaxIterations int
	// Omega was the SOR factor of a former Gauss-Seidel solver. It is
	// accepted and ignored, so that callers that set it keep compiling
	// (over-relaxation diverges on the cyclic chains of mapping models).
	Omega float64
	// Method forces a method (MethodDirect, MethodIterative or
	// MethodSweeps) on every closed class of more than one state; empty
	// chooses per class (see Solve).
	Method string
	// DirectLimit is the largest closed class solved directly under
	// MethodAuto; 0 means DefaultDirectLimit.
	DirectLimit int
	// SweepLimit is the most sweeps MethodAuto lets Gauss-Seidel take,
	// by its prediction, before it hands over; 0 means
	// DefaultSweepLimit.
	SweepLimit int
	// SparseEarlyWork is the predicted work (multiply-adds) up to which
	// MethodAuto tries sparse GTH before the sweeps; 0 means what
	// SweepLimit sweeps over the class would cost (see solveAuto), a
	// negative value never first.
	SparseEarlyWork float64
	// SparseRescale makes sparse GTH always reduce a second time, scaled
	// by the first reduction's steady state (what it does on its own
	// only when the first underflows, see sparseGTH): for the
	// differential tests, whose chains are too small to underflow.
	SparseRescale bool
	// SingleClass refuses a chain with several closed classes (with a
	// *NotIrreducibleError) instead of solving its long-run distribution
	// from the initial state: for callers that need the steady state
	// proper (plug-in passages).
	SingleClass bool
	// Goroutines is the number of goroutines Gauss-Seidel sweeps a class
	// of at least 100,000 states with: 1 (0 means 1) or 2 (the class cut
	// in two blocks, sweeps.go). One is the default because it was faster:
	// on this 2-core machine, under the other jobs it shares it with,
	// two blocks took 1.25x the wall time and more CPU (paired runs on
	// 705,894 states).
	Goroutines int
	// StateProbabilities is for callers that use the probabilities of
	// single states (plug-in passages' start distributions), not only
	// throughputs: MethodAuto then does not choose Gauss-Seidel, whose
	// error estimate covers the throughputs only (the aggregation
	// corrections make them converge well before the probabilities of
	// single states; measured: plug-in figures 4e-10 apart from the exact
	// ones with every throughput within an estimated 1e-14).
	StateProbabilities bool
}

// Result is a steady-state distribution with the solver's report.
type Result struct {
	// Pi is the long-run distribution from the initial state: with one
	// closed class its steady state (transient states 0), with several
	// the sum over classes of the probability of ending in the class
	// times its steady state.
	Pi []float64
	// Method is MethodDirect, MethodIterative or MethodSweeps (with
	// several closed classes, the method of the largest; Classes has each).
	Method string
	// Reason says why that method ran (and what ran before it, if a
	// method gave up), for --verbose.
	Reason string
	// Iterations counts BiCGSTAB iterations (iterative method), sweeps
	// (Gauss-Seidel) or refinement steps after the elimination (direct
	// method).
	Iterations int
	// Residual is ||pi Q||_inf / (max_i q_i * ||pi||_inf), the former
	// stopping measure, kept for comparison; it says little about rare
	// states, the error estimates below do.
	Residual float64
	// ThroughputError maps each action to the estimated error of its
	// throughput relative to itself: max(|dX_a| / X_a, e_a) + 2u, where
	// dX_a = sum_i d_i r_a(i), d is the correction that one further step
	// of iterative refinement would apply to Pi (d Q = -Pi Q, the
	// residual formed with error-free products and compensated sums, so
	// that it is exact in every state, rare ones included), and e_a is
	// the largest relative imbalance |(Pi Q)_i| / (Pi_i q_i) of a state
	// where a is enabled. This is a first-order a posteriori estimate,
	// not a rigorous bound: it is as good as the correction solve
	// (direct: the same GTH reduction; iterative: BiCGSTAB on the scaled
	// system to 1e-10). Gauss-Seidel estimates the correction instead
	// from its own sweeps: twice the largest relative change of a
	// probability in the last sweep times c / (1 - c), c the measured
	// contraction of that change a sweep (the changes still to come if
	// they keep shrinking so), with the same floor e_a. With several
	// closed classes, each action's estimate is the largest of its
	// classes' plus that of the class probabilities. The package
	// documentation says how the estimates compared with exact answers.
	// Actions enabled only in transient states are absent (their
	// throughput is 0 exactly).
	ThroughputError map[string]float64
	// MaxThroughputError is the largest entry of ThroughputError.
	MaxThroughputError float64
	// ClosedStates is the number of states in closed classes (the
	// closed class, with one); Transient is the number of transient
	// states (probability 0).
	ClosedStates, Transient int
	// Classes describes each closed class when there are several (nil
	// with one), in the order of their first states.
	Classes []ClassResult
	// AbsorptionError estimates the error of every class probability
	// relative to itself (several classes only).
	AbsorptionError float64
}

// ClassResult is one closed class of a chain with several.
type ClassResult struct {
	States []int32 // the class's states, increasing
	// Name names its first state by its components' local states.
	Name string
	// Probability is that of ending in the class, from the initial state.
	Probability float64
	// Method, Iterations and MaxThroughputError are those of the solve of
	// the class's own steady state.
	Method             string
	Iterations         int
	MaxThroughputError float64
}

// ErrorBoundKind says in words what ThroughputError is, for output.
const ErrorBoundKind = "a posteriori estimate from one step of iterative refinement (exact residual), not a rigorous bound"

// NotIrreducibleError says why a chain has no unique steady state: it has
// several closed classes.
type NotIrreducibleError struct {
	Closed    [][]int32 // the closed (bottom) strongly connected classes
	Transient []int32   // states in no closed class
	// Names names the first state of each closed class by its components'
	// local states (Chain.StateString).
	Names []string
}

func (e *NotIrreducibleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the chain has %d closed classes, so it has no unique steady state", len(e.Closed))
	for i, c := range e.Closed {
		if i == 5 {
			fmt.Fprintf(&b, "; ...")
			break
		}
		name := ""
		if i < len(e.Names) {
			name = " such as (" + e.Names[i] + ")"
		}
		fmt.Fprintf(&b, "; class %d has %d states%s: %s", i+1, len(c), name, listStates(c, 5))
	}
	if len(e.Transient) > 0 {
		fmt.Fprintf(&b, "; %d transient states (%s)", len(e.Transient), listStates(e.Transient, 5))
	}
	return b.String()
}

func listStates(s []int32, max int) string {
	var parts []string
	for i, x := range s {
		if i == max {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

// errNoProgress is wrapped when refinement stops improving above the
// tolerance.
var errNoProgress = errors.New("steady state: error estimate does not reach the tolerance")

// Solve solves the chain's long-run distribution from its initial state.
// With one closed class that is the steady state, pi Q = 0 and sum pi = 1
// on the class, transient states 0; with several (unless SingleClass), it
// is the probability of ending in each class, from the initial state,
// times that class's own steady state (absorption.go), as model checkers
// compute it. A deadlock is refused with an error naming the state.
//
// Each closed class is solved by one of three methods. Under MethodAuto a
// class of up to DirectLimit states goes to GTH state reduction, which
// performs no subtraction and so is accurate entrywise, rare states
// included; a larger one to Gauss-Seidel sweeps over the chain in place
// (sweeps.go: the chain and two vectors, three on two goroutines), which stop
// once their estimated error meets the tolerance; if the sweeps' measured
// contraction predicts more than SweepLimit sweeps (stiff chains), to
// BiCGSTAB preconditioned with ILU(0), and if that cannot reach the
// tolerance on a class of at most 16,000 states, to GTH after all. GTH's and
// BiCGSTAB's answers are checked (BiCGSTAB's improved) by iterative
// refinement against the exactly formed residual. Result.Reason says
// which method ran and why; Result.ThroughputError what the
// estimates are.
func Solve(ctx context.Context, c *ctmc.Chain, opt Options) (*Result, error) {
	if opt.Tolerance <= 0 || math.IsNaN(opt.Tolerance) {
		opt.Tolerance = 1e-12
	}
	opt.Tolerance = math.Max(opt.Tolerance, 1e-13)
	if opt.MaxIterations <= 0 {
		opt.MaxIterations = 100000
	}
	if opt.DirectLimit <= 0 {
		opt.DirectLimit = DefaultDirectLimit
	}
	if opt.SweepLimit <= 0 {
		opt.SweepLimit = DefaultSweepLimit
	}
	switch opt.Method {
	case MethodAuto, MethodDirect, MethodIterative, MethodSweeps, MethodSparse:
	default:
		return nil, fmt.Errorf("unknown steady-state method %q (want %q, %q, %q or %q)", opt.Method, MethodDirect, MethodSparse, MethodIterative, MethodSweeps)
	}
	if len(c.Deadlocks) > 0 {
		i := int(c.Deadlocks[0])
		return nil, fmt.Errorf("deadlock in state %d: %s (steady-state analysis needs a chain without deadlocks)", i, c.StateString(i))
	}
	budget := membudget.FromContext(ctx)
	cl, err := findClasses(c, budget)
	if err != nil {
		return nil, err
	}
	if len(cl.classes) > 1 && opt.SingleClass {
		return nil, notIrreducible(c, cl.comp, cl.closed)
	}
	if len(cl.classes) == 1 {
		class := cl.classes[0]
		cl = nil // the labels are not needed any more
		whole := len(class) == c.N
		sol, err := solveClass(ctx, c, class, whole, opt, budget)
		if err != nil {
			return nil, err
		}
		res := sol.result()
		res.ClosedStates, res.Transient = len(class), c.N-len(class)
		return res, nil
	}
	return longRun(ctx, c, cl, opt, budget)
}

// classSolution is the steady state of one closed class.
type classSolution struct {
	pi         []float64 // over the chain's states, 0 outside the class, summing to 1
	est        map[string]float64
	method     string
	reason     string
	iterations int
	residual   float64
	// correction (sparse GTH) is the part of est that one refinement
	// step's correction gives, before est's floor (each state's relative
	// imbalance): what a test of the estimate on a vector with a known
	// error checks.
	correction map[string]float64
}

func (s *classSolution) result() *Result {
	res := &Result{Pi: s.pi, Method: s.method, Reason: s.reason, Iterations: s.iterations, Residual: s.residual, ThroughputError: s.est}
	res.MaxThroughputError = maxOf(s.est)
	return res
}

// solveClass solves one closed class (whole: it is every state of the
// chain) by the method opt asks for or, under MethodAuto, as Solve says.
func solveClass(ctx context.Context, c *ctmc.Chain, class []int32, whole bool, opt Options, budget *membudget.Budget) (*classSolution, error) {
	n := len(class)
	if n == 1 {
		// Nothing to solve, and nothing to estimate: every throughput is
		// a rate of the one state's self-loops, exactly.
		if err := budget.Check("steady: the distribution", membudget.Bytes(int64(c.N), 8), option.Text(steadyHint)); err != nil {
			return nil, err
		}
		sol := &classSolution{method: MethodDirect, reason: "a closed class of one state", pi: make([]float64, c.N), est: map[string]float64{}}
		i := class[0]
		sol.pi[i] = 1
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if int(c.Col[k]) != int(i) {
				return nil, fmt.Errorf("internal error: closed class of state %d leaks to %d", i, c.Col[k])
			}
			sol.est[c.S.Actions[c.Act[k]]] = 0
		}
		return sol, nil
	}
	switch {
	case opt.Method == MethodSweeps:
		sol, _, err := solveSweeps(ctx, c, class, whole, opt, budget, false, false)
		if sol != nil {
			sol.reason = option.Text("{Method} gauss-seidel; ") + sol.reason
		}
		return sol, err
	case opt.Method == MethodSparse:
		pl, err := planSparse(ctx, c, class, budget, 0)
		if err != nil {
			return nil, err
		}
		pl.rescale = opt.SparseRescale
		sol, err := pl.solve(ctx, c, budget)
		if sol != nil {
			sol.reason = option.Text("{Method} sparse-gth: ") + pl.describe()
		}
		return sol, err
	case opt.Method != MethodAuto:
		return solveRefined(ctx, c, class, opt.Method, option.Sprintf("{Method} %s", opt.Method), opt, budget)
	case n <= opt.DirectLimit:
		return solveRefined(ctx, c, class, MethodDirect, fmt.Sprintf("a closed class of %d states, at most %d: dense GTH, accurate on any chain", n, opt.DirectLimit), opt, budget)
	}
	return solveAuto(ctx, c, class, whole, opt, budget)
}

// Sparse GTH's place in the automatic choice, by its predicted work in
// multiply-adds (nested dissection tells it before anything is reduced).
// Gauss-Seidel's sweeps cost about sweepWorkPerTransition multiply-adds'
// time a transition (measured: a sweep of the 501,501-state web shop, 1.5M
// transitions, took as long as 1.4e7 multiply-adds of the fronts' matrix
// products on this machine), so up to opt.SweepLimit sweeps cost about
// SweepLimit * sweepWorkPerTransition * T: sparse GTH goes first when it
// costs no more than that, after the sweeps and before BiCGSTAB up to
// sparseLateWork (tens of seconds), and last of all at any cost that fits
// the memory budget.
//
// BiCGSTAB under auto gets bicgAutoWork, counted at
// bicgWorkPerTransition a transition an iteration (two products with the
// generator, two ILU(0) solves and the vector updates; measured on the
// web shop of 1,000 users, 1.5M transitions: 110 ms an iteration, the
// time of 1.4e8 multiply-adds of the fronts), and at least bicgAutoFloor
// iterations. With no cap it ran there for several minutes where it
// could only fail (probabilities spanning more than float64 holds:
// 2,665 iterations, 205 s in all); capped (233 iterations) auto gives up
// in about 40 s. Forced (MethodIterative), it keeps
// Options.MaxIterations.
const (
	sweepWorkPerTransition = 10
	sparseLateWork         = 1e11
	bicgWorkPerTransition  = 100
	bicgAutoWork           = 2e10
	bicgAutoFloor          = 100
)

// autoIterations is BiCGSTAB's iteration cap under auto on a class of T
// transitions (at most max).
func autoIterations(T int64, max int) int {
	n := int(bicgAutoWork / (bicgWorkPerTransition * float64(T)))
	return min(max, bicgAutoFloor+n)
}

// solveAuto solves a class of more than opt.DirectLimit states under
// MethodAuto: it tries the methods in turn, each failure (no convergence,
// a breakdown, a refused state, probabilities beyond float64, a stage that
// does not fit the memory budget) handing over to the next, and says in
// the solution's reason what ran, what failed and why.
func solveAuto(ctx context.Context, c *ctmc.Chain, class []int32, whole bool, opt Options, budget *membudget.Budget) (*classSolution, error) {
	n := len(class)
	var T int64
	for _, i := range class {
		T += c.RowPtr[i+1] - c.RowPtr[i]
	}
	head := fmt.Sprintf("a closed class of %d states, above %d", n, opt.DirectLimit)
	var failed []string
	var errs []error
	fail := func(what string, err error) {
		failed = append(failed, fmt.Sprintf("%s failed (%v)", what, err))
		errs = append(errs, err)
	}
	done := func(sol *classSolution, why string) *classSolution {
		parts := append([]string{head}, failed...)
		sol.reason = strings.Join(parts, "; ") + ": " + why
		return sol
	}
	// The sparse plan (graph and order) first: it says what sparse GTH
	// would cost.
	earlyWork := float64(opt.SweepLimit) * sweepWorkPerTransition * float64(T)
	if opt.SparseEarlyWork != 0 {
		earlyWork = opt.SparseEarlyWork
	}
	plan, perr := planSparse(ctx, c, class, budget, sparseLateWork)
	if perr != nil {
		if ctx.Err() != nil {
			return nil, perr
		}
		fail("sparse GTH's ordering", perr)
	}
	sparseDone := false
	trySparse := func(why string) (*classSolution, error) {
		sparseDone = true
		sol, err := plan.solve(ctx, c, budget)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			fail("sparse GTH", err)
			return nil, nil
		}
		return done(sol, why+": "+plan.describe()), nil
	}
	sparseFits := func() bool {
		return plan != nil && !plan.tooMuch && budget.Check("", sparseBytes(plan.o, c.N), "") == nil
	}
	if plan != nil && !plan.tooMuch && plan.o.work <= earlyWork {
		sol, err := trySparse(fmt.Sprintf("sparse GTH, direct, its work (%.3g multiply-adds) within what %d Gauss-Seidel sweeps would cost", plan.o.work, opt.SweepLimit))
		if sol != nil || err != nil {
			return sol, err
		}
	}
	// Gauss-Seidel, unless single states' probabilities are asked for
	// (its estimate covers throughputs only).
	krylov := generatorBytes(c.N, n, T) + iluBytes(n, T) + refineBytes(c.N, n)
	if !opt.StateProbabilities {
		alternatives := budget.Check("", krylov, "") == nil || !sparseDone && sparseFits()
		sol, stalled, err := solveSweeps(ctx, c, class, whole, opt, budget, true, alternatives)
		switch {
		case err == nil && stalled == "":
			return done(sol, "Gauss-Seidel sweeps over the chain in place: "+sol.reason), nil
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			fail("Gauss-Seidel", err)
		default:
			failed = append(failed, fmt.Sprintf("Gauss-Seidel sweeps over the chain in place gave up (%s)", stalled))
			errs = append(errs, fmt.Errorf("%w: Gauss-Seidel: %s", errNoProgress, stalled))
		}
	}
	if !sparseDone && plan != nil && !plan.tooMuch {
		sol, err := trySparse("sparse GTH")
		if sol != nil || err != nil {
			return sol, err
		}
	}
	capped := opt
	capped.MaxIterations = autoIterations(T, opt.MaxIterations)
	sol, err := solveRefined(ctx, c, class, MethodIterative, "", capped, budget)
	if err == nil {
		return done(sol, "ILU(0)-BiCGSTAB"), nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	fail("ILU(0)-BiCGSTAB", err)
	if !sparseDone && plan != nil {
		// Its order was cut short at sparseLateWork: order it in full,
		// whatever it costs, if it fits.
		if plan, perr = planSparse(ctx, c, class, budget, 0); perr == nil {
			sol, err := trySparse("sparse GTH, whatever its work")
			if sol != nil || err != nil {
				return sol, err
			}
		} else if ctx.Err() != nil {
			return nil, perr
		} else {
			fail("sparse GTH's ordering", perr)
		}
	}
	return nil, &methodsError{head: head, failed: failed, errs: errs}
}

// methodsError says that every method auto tried on a class failed, and
// how each did; it wraps each one's error.
type methodsError struct {
	head   string
	failed []string
	errs   []error
}

func (e *methodsError) Error() string {
	return fmt.Sprintf("every steady-state method failed on %s: %s", e.head, strings.Join(e.failed, "; "))
}

func (e *methodsError) Unwrap() []error { return e.errs }

// solveSweeps solves a class by Gauss-Seidel sweeps. Under auto (MethodAuto)
// it gives up, returning why in stalled, when the measured contraction
// predicts more than opt.SweepLimit sweeps, unless no other method fits
// the budget (alternatives false): then it sweeps on up to
// opt.MaxIterations. A forced MethodSweeps sweeps up to opt.MaxIterations
// and fails if they do not reach the tolerance.
func solveSweeps(ctx context.Context, c *ctmc.Chain, class []int32, whole bool, opt Options, budget *membudget.Budget, auto, alternatives bool) (sol *classSolution, stalled string, err error) {
	n := len(class)
	two := n >= sweepParallelStates && opt.Goroutines == 2
	if err := budget.Check("steady: Gauss-Seidel's vectors", sweepBytes(c.N, two), option.Text(steadyHint)); err != nil {
		return nil, "", err
	}
	states := class
	if whole {
		states = nil
	}
	// The derivation's garbage (its workers' transition lists, about a
	// third of the chain's own size) is collected and its pages given
	// back first: the sweeps' vectors and table are large objects that
	// the freed, scattered spans rarely fit, so without this they would
	// add to the peak (28/7: 121 MB against 104).
	debug.FreeOSMemory()
	s := newSweeper(c, states, two)
	if s.gath != nil && budget.Check("steady: Gauss-Seidel's aggregation table", slotsBytes(int64(len(c.Col))), "") == nil {
		s.gath.buildSlots(s)
	}
	// The sweeps aim a little below the tolerance: the finished vector
	// adds its rounding (finish).
	target := opt.Tolerance * 0.9
	limit := opt.MaxIterations
	if auto {
		limit = opt.SweepLimit
	}
	out, err := s.run(ctx, target, limit)
	if err != nil && auto && errors.Is(err, errNoProgress) {
		// The sweeps failed outright (an inflow that cancels to 0 or
		// below on a chain whose probabilities span many orders of
		// magnitude): under auto that is one more reason to hand over,
		// as a stall is, not a refusal.
		out.Stalled, err = strings.TrimPrefix(err.Error(), errNoProgress.Error()+": "), nil
	}
	if err != nil {
		return nil, "", err
	}
	if out.Stalled != "" && auto {
		if alternatives {
			return nil, out.Stalled, nil
		}
		// No other method fits: sweep on.
		if out, err = s.run(ctx, target, opt.MaxIterations); err != nil {
			return nil, "", err
		}
	}
	if out.Stalled != "" {
		return nil, "", fmt.Errorf("%w: Gauss-Seidel: %s (tolerance %.3g)", errNoProgress, out.Stalled, opt.Tolerance)
	}
	sol = &classSolution{pi: s.pi, method: MethodSweeps, iterations: out.Sweeps}
	blocks := "one block"
	if two {
		blocks = "two blocks on two goroutines"
	}
	sol.reason = fmt.Sprintf("%d sweeps (%s) with %d corrections by aggregation over the components' local states; the throughputs' moves shrink by %.3g every %d sweeps, estimated error %.2g", out.Sweeps, blocks, s.corrections, out.Contraction, aggEvery, out.Estimate)
	sol.est, sol.residual = s.finish(out.Estimate)
	s.acc, s.buf = nil, nil
	return sol, "", nil
}

// solveRefined solves a class by GTH (MethodDirect) or ILU(0)-BiCGSTAB
// (MethodIterative) on its generator, with iterative refinement.
func solveRefined(ctx context.Context, c *ctmc.Chain, class []int32, method, reason string, opt Options, budget *membudget.Budget) (*classSolution, error) {
	classTransitions := int64(0)
	for _, i := range class {
		classTransitions += c.RowPtr[i+1] - c.RowPtr[i]
	}
	if err := budget.Check("steady: the generator", generatorBytes(c.N, len(class), classTransitions), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	g, err := newGenerator(c, class)
	if err != nil {
		return nil, err
	}
	var s steadySolver
	if method == MethodDirect {
		if err := budget.Check(fmt.Sprintf("steady: GTH's dense matrix of %d states", g.n), gthBytes(g.n), option.Text("{Method} gauss-seidel or bicgstab needs far less")); err != nil {
			return nil, err
		}
		s, err = newGTH(ctx, g, nil)
	} else {
		if err := budget.Check("steady: BiCGSTAB's ILU(0) factors and vectors", iluBytes(g.n, classTransitions), option.Text(steadyHint)); err != nil {
			return nil, err
		}
		s, err = newILUSolver(ctx, g, opt.MaxIterations)
	}
	if err != nil {
		return nil, err
	}
	p, err := s.initial(ctx)
	if err != nil {
		return nil, err
	}
	if err := budget.Check("steady: the refinement's vectors", refineBytes(c.N, g.n), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	// GTH's vector is entrywise accurate as it is; refinement only
	// estimates its error (the GTH correction solves subtract, and on
	// stiff chains applying them can do harm). The iterative solver's
	// vector is refined until the estimate meets the tolerance.
	est, steps, err := refine(ctx, c, g, s, p, opt.Tolerance, method == MethodIterative)
	if err != nil {
		return nil, err
	}
	if method == MethodDirect && maxOf(est) > opt.Tolerance {
		// Estimate again with the most probable states eliminated last,
		// which makes the correction solves accurate on the rare states
		// too (see gth), and keep the better-checked vector.
		if err := budget.Check(fmt.Sprintf("steady: a second GTH matrix of %d states, for a better error estimate", g.n), gthBytes(g.n), option.Text("{Method} gauss-seidel or bicgstab needs far less")); err != nil {
			return nil, err
		}
		s2, err := newGTH(ctx, g, byDecreasing(p))
		if err != nil {
			return nil, err
		}
		p2, err := s2.initial(ctx)
		if err != nil {
			return nil, err
		}
		est2, _, err := refine(ctx, c, g, s2, p2, opt.Tolerance, false)
		if err != nil {
			return nil, err
		}
		if maxOf(est2) < maxOf(est) {
			p, est = p2, est2
		}
		steps = 1
	}
	if m := maxOf(est); !(m <= math.MaxFloat64) {
		return nil, fmt.Errorf("%w: some throughput is 0 in float64 although its action is enabled in the closed class (the steady-state probabilities span more than float64 holds)", errNoProgress)
	}
	sol := &classSolution{method: method, reason: reason, iterations: s.iterations() + steps, est: est}
	sol.pi = make([]float64, c.N)
	for k, i := range class {
		sol.pi[i] = p[k]
	}
	sol.residual = g.normResidual(p)
	return sol, nil
}

func maxOf(m map[string]float64) float64 {
	x := 0.0
	for _, v := range m {
		x = math.Max(x, v)
	}
	return x
}

// byDecreasing returns the local states ordered by decreasing p.
func byDecreasing(p []float64) []int32 {
	perm := make([]int32, len(p))
	for i := range perm {
		perm[i] = int32(i)
	}
	sort.SliceStable(perm, func(a, b int) bool { return p[perm[a]] > p[perm[b]] })
	return perm
}

// classes are the closed classes of a chain and the labels that found
// them.
type classes struct {
	comp   []int32 // strongly connected component of each state (sccs)
	closed []bool  // per component: no transition leaves it
	// classes lists the states of each closed class, increasing, the
	// classes in the order of their first states.
	classes [][]int32
}

// findClasses finds the closed classes of c. A chain that is one closed
// class (irreducible: the common case) is recognised by reachOne, at a
// fraction of Tarjan's cost (0.65 s of CPU on 705,894 states and 5.7M
// transitions, measured on a loaded machine); then comp and closed are
// nil and the one class lists every state.
func findClasses(c *ctmc.Chain, budget *membudget.Budget) (*classes, error) {
	if err := budget.Check("steady: finding the closed classes", reachBytes(c.N), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	if c.N > 0 && reachOne(c) {
		all := make([]int32, c.N)
		for i := range all {
			all[i] = int32(i)
		}
		return &classes{classes: [][]int32{all}}, nil
	}
	if err := budget.Check("steady: finding the closed classes (Tarjan)", sccBytes(c.N), option.Text(steadyHint)); err != nil {
		return nil, err
	}
	comp, ncomp := sccs(c)
	closed := make([]bool, ncomp)
	for i := range closed {
		closed[i] = true
	}
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if comp[c.Col[k]] != comp[i] {
				closed[comp[i]] = false
			}
		}
	}
	size := make(map[int32]int)
	var order []int32
	for i := 0; i < c.N; i++ {
		if ci := comp[i]; closed[ci] {
			if _, ok := size[ci]; !ok {
				order = append(order, ci)
			}
			size[ci]++
		}
	}
	cl := &classes{comp: comp, closed: closed}
	at := make(map[int32]int, len(order))
	for k, ci := range order {
		at[ci] = k
		cl.classes = append(cl.classes, make([]int32, 0, size[ci]))
	}
	for i := 0; i < c.N; i++ {
		if ci := comp[i]; closed[ci] {
			k := at[ci]
			cl.classes[k] = append(cl.classes[k], int32(i))
		}
	}
	return cl, nil
}

func notIrreducible(c *ctmc.Chain, comp []int32, closed []bool) *NotIrreducibleError {
	e := &NotIrreducibleError{}
	classIndex := map[int32]int{}
	for i := 0; i < c.N; i++ {
		ci := comp[i]
		if !closed[ci] {
			e.Transient = append(e.Transient, int32(i))
			continue
		}
		k, ok := classIndex[ci]
		if !ok {
			k = len(e.Closed)
			classIndex[ci] = k
			e.Closed = append(e.Closed, nil)
			e.Names = append(e.Names, c.StateString(i))
		}
		e.Closed[k] = append(e.Closed[k], int32(i))
	}
	return e
}

// Irreducible returns nil if every state of c can reach every other, else a
// *NotIrreducibleError listing the closed classes and the transient states
// (with a single closed class, Closed has one entry: Solve solves such a
// chain).
func Irreducible(c *ctmc.Chain) error {
	comp, ncomp := sccs(c)
	if ncomp == 1 {
		return nil
	}
	closed := make([]bool, ncomp)
	for i := range closed {
		closed[i] = true
	}
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if comp[c.Col[k]] != comp[i] {
				closed[comp[i]] = false
			}
		}
	}
	return notIrreducible(c, comp, closed)
}

// reachOnePasses bounds the marking passes of reachOne.
const reachOnePasses = 24

// reachOne reports whether every state of c can reach every other: state 0
// reaches every state (a breadth-first search over a bitset, in the order
// derivation numbered them) and every state reaches state 0 (marks spread
// backwards along the transitions, in passes over the rows that alternate
// direction, each marking a state with a marked successor). False when
// either fails, or the passes still mark new states after reachOnePasses:
// then the caller runs Tarjan.
func reachOne(c *ctmc.Chain) bool {
	n := c.N
	seen := make([]uint64, (n+63)/64)
	has := func(i int32) bool { return seen[i>>6]>>(uint(i)&63)&1 != 0 }
	set := func(i int32) { seen[i>>6] |= 1 << (uint(i) & 63) }
	queue := make([]int32, 1, 1024)
	set(0)
	for k := 0; k < len(queue); k++ {
		i := queue[k]
		for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
			if j := c.Col[e]; !has(j) {
				set(j)
				queue = append(queue, j)
			}
		}
	}
	if len(queue) != n {
		return false
	}
	queue = nil
	clear(seen)
	set(0)
	left := n - 1
	for pass := 0; pass < reachOnePasses && left > 0; pass++ {
		marked := 0
		visit := func(i int) {
			if has(int32(i)) {
				return
			}
			for e := c.RowPtr[i]; e < c.RowPtr[i+1]; e++ {
				if has(c.Col[e]) {
					set(int32(i))
					marked++
					return
				}
			}
		}
		if pass%2 == 0 {
			for i := n - 1; i >= 0; i-- {
				visit(i)
			}
		} else {
			for i := 0; i < n; i++ {
				visit(i)
			}
		}
		left -= marked
		if marked == 0 {
			return false // some state cannot reach state 0
		}
	}
	return left == 0
}

// sccs labels the strongly connected components of the transition graph,
// numbered in the order Tarjan's algorithm completes them
// (ctmc.StrongComponents).
func sccs(c *ctmc.Chain) ([]int32, int32) {
	flat, ptr := ctmc.StrongComponents(c.Graph(), nil, 0)
	comp := make([]int32, c.N)
	for k := 0; k+1 < len(ptr); k++ {
		for _, v := range flat[ptr[k]:ptr[k+1]] {
			comp[v] = int32(k)
		}
	}
	return comp, int32(len(ptr) - 1)
}
