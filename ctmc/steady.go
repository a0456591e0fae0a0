package ctmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"pepa/internal/membudget"
)

// Steady-state methods, as named in SteadyOptions.Method and
// SteadyResult.Method.
const (
	MethodAuto      = ""         // direct up to DirectLimit states, iterative above
	MethodDirect    = "gth"      // dense Grassmann-Taksar-Heyman state reduction
	MethodIterative = "bicgstab" // ILU(0)-preconditioned BiCGSTAB with iterative refinement
)

// DefaultDirectLimit is the largest closed class solved by dense GTH when
// SteadyOptions.DirectLimit is zero. Dense GTH costs m^3/3 multiply-adds and
// 8 m^2 bytes: BenchmarkSteadyMethods measured 0.07 s at 625 states, 1.1 s
// at 2,401 and 1.9 s at 3,125 (one run each, loaded 2-core machine), where
// the iterative method took 0.003 s, 0.12 s and 0.02 s on those
// (non-stiff) mapping chains. GTH is kept up to where it costs about a
// second, because it is the method that is accurate on any chain.
const DefaultDirectLimit = 2000

// SteadyOptions controls the steady-state solver.
type SteadyOptions struct {
	// Tolerance is the target for the estimated error of every throughput
	// relative to that throughput (see SteadyResult.ThroughputError).
	// Iterative refinement continues until every estimate is at or below
	// it; if it cannot get there, Steady fails rather than return a vector
	// that misses it. Values below 1e-13, which float64 cannot promise on
	// a sum over many states, are raised to 1e-13. Default 1e-12.
	Tolerance float64
	// MaxIterations caps the BiCGSTAB iterations of the iterative method,
	// summed over its solves; reaching it is an error. Default 100000.
	MaxIterations int
	// Omega was the SOR factor of the former Gauss-Seidel solver. It is
	// accepted and ignored, so that callers that set it keep compiling.
	Omega float64
	// Method forces a method (MethodDirect or MethodIterative); empty
	// chooses by size, and falls back to the direct method when the
	// iterative one cannot reach the tolerance on a class of at most
	// 16,000 states.
	Method string
	// DirectLimit is the largest closed class solved directly under
	// MethodAuto; 0 means DefaultDirectLimit.
	DirectLimit int
}

// SteadyResult is a steady-state distribution with the solver's report.
type SteadyResult struct {
	Pi []float64
	// Method is MethodDirect or MethodIterative.
	Method string
	// Iterations counts BiCGSTAB iterations (iterative method) or
	// refinement steps after the elimination (direct method).
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
	// system to 1e-10). The package documentation says how it compared
	// with exact answers. Actions enabled only in transient
	// states are absent (their throughput is 0 exactly).
	ThroughputError map[string]float64
	// MaxThroughputError is the largest entry of ThroughputError.
	MaxThroughputError float64
	// ClosedStates is the size of the closed class that was solved;
	// Transient is the number of transient states (probability 0).
	ClosedStates, Transient int
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

// Steady solves pi Q = 0, sum pi = 1 on the chain's single closed class;
// transient states get probability 0. A deadlock, or more than one closed
// class, is refused with an error naming the states. Closed classes of up
// to DirectLimit states are solved by GTH state reduction, which performs
// no subtraction and so is accurate entrywise, rare states included;
// larger ones by BiCGSTAB preconditioned with ILU(0). Either way the
// answer is then checked (and if need be improved) by iterative refinement
// against the exactly formed residual until the estimated error of every
// throughput, relative to that throughput, is within the tolerance (see
// SteadyResult.ThroughputError for what the estimate is).
func Steady(ctx context.Context, c *Chain, opt SteadyOptions) (*SteadyResult, error) {
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
	switch opt.Method {
	case MethodAuto, MethodDirect, MethodIterative:
	default:
		return nil, fmt.Errorf("unknown steady-state method %q (want %q or %q)", opt.Method, MethodDirect, MethodIterative)
	}
	if len(c.Deadlocks) > 0 {
		i := int(c.Deadlocks[0])
		return nil, fmt.Errorf("deadlock in state %d: %s (steady-state analysis needs a chain without deadlocks)", i, c.StateString(i))
	}
	budget := membudget.FromContext(ctx)
	if err := budget.Check("steady: finding the closed class", sccBytes(c.N), steadyHint); err != nil {
		return nil, err
	}
	class, ntransient, err := closedClass(c)
	if err != nil {
		return nil, err
	}
	classTransitions := int64(0)
	for _, i := range class {
		classTransitions += c.RowPtr[i+1] - c.RowPtr[i]
	}
	if err := budget.Check("steady: the generator", generatorBytes(c.N, len(class), classTransitions), steadyHint); err != nil {
		return nil, err
	}
	g, err := newGenerator(c, class)
	if err != nil {
		return nil, err
	}
	if g.n == 1 {
		// Nothing to solve, and nothing to estimate: every throughput is
		// a rate of the one state's self-loops, exactly.
		res := &SteadyResult{Method: MethodDirect, ClosedStates: 1, Transient: ntransient, Pi: make([]float64, c.N), ThroughputError: map[string]float64{}}
		res.Pi[class[0]] = 1
		for k := c.RowPtr[class[0]]; k < c.RowPtr[class[0]+1]; k++ {
			res.ThroughputError[c.S.Actions[c.Act[k]]] = 0
		}
		return res, nil
	}
	method := opt.Method
	if method == MethodAuto {
		method = MethodDirect
		if g.n > opt.DirectLimit {
			method = MethodIterative
		}
	}
	var s steadySolver
	if method == MethodDirect {
		if err := budget.Check(fmt.Sprintf("steady: GTH's dense matrix of %d states", g.n), gthBytes(g.n), "--method bicgstab needs far less"); err != nil {
			return nil, err
		}
		s, err = newGTH(ctx, g, nil)
	} else {
		if err := budget.Check("steady: BiCGSTAB's ILU(0) factors and vectors", iluBytes(g.n, classTransitions), steadyHint); err != nil {
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
	if err := budget.Check("steady: the refinement's vectors", refineBytes(c.N, g.n), steadyHint); err != nil {
		return nil, err
	}
	// GTH's vector is entrywise accurate as it is; refinement only
	// estimates its error (the GTH correction solves subtract, and on
	// stiff chains applying them can do harm). The iterative solver's
	// vector is refined until the estimate meets the tolerance.
	est, steps, err := refine(ctx, c, g, s, p, opt.Tolerance, method == MethodIterative)
	if err != nil && opt.Method == MethodAuto && method == MethodIterative && errors.Is(err, errNoProgress) && g.n <= maxDirectStates {
		// The iterative method cannot vouch for its answer (extremely
		// stiff chains); the direct one is slower but accurate on any
		// chain, and the class fits in memory for it.
		method = MethodDirect
		if berr := budget.Check(fmt.Sprintf("steady: GTH's dense matrix of %d states (tried because %v)", g.n, err), gthBytes(g.n), ""); berr != nil {
			return nil, berr
		}
		if s, err = newGTH(ctx, g, nil); err != nil {
			return nil, err
		}
		if p, err = s.initial(ctx); err != nil {
			return nil, err
		}
		est, steps, err = refine(ctx, c, g, s, p, opt.Tolerance, false)
	}
	if err != nil {
		return nil, err
	}
	if method == MethodDirect && maxOf(est) > opt.Tolerance {
		// Estimate again with the most probable states eliminated last,
		// which makes the correction solves accurate on the rare states
		// too (see gth), and keep the better-checked vector.
		if err := budget.Check(fmt.Sprintf("steady: a second GTH matrix of %d states, for a better error estimate", g.n), gthBytes(g.n), "--method bicgstab needs far less"); err != nil {
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
	iters := s.iterations()
	res := &SteadyResult{Method: method, Iterations: iters + steps, ClosedStates: g.n, Transient: ntransient}
	res.Pi = make([]float64, c.N)
	for k, i := range class {
		res.Pi[i] = p[k]
	}
	res.ThroughputError = est
	for _, e := range est {
		res.MaxThroughputError = math.Max(res.MaxThroughputError, e)
	}
	res.Residual = g.normResidual(p)
	return res, nil
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

// closedClass returns the states of the chain's only closed class, in
// state order, and the number of transient states, or a
// *NotIrreducibleError if there are several closed classes.
func closedClass(c *Chain) ([]int32, int, error) {
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
	nclosed := 0
	the := int32(-1)
	for ci, ok := range closed {
		if ok {
			nclosed++
			the = int32(ci)
		}
	}
	if nclosed > 1 {
		return nil, 0, notIrreducible(c, comp, closed)
	}
	size := 0
	for i := 0; i < c.N; i++ {
		if comp[i] == the {
			size++
		}
	}
	class := make([]int32, 0, size)
	for i := 0; i < c.N; i++ {
		if comp[i] == the {
			class = append(class, int32(i))
		}
	}
	return class, c.N - len(class), nil
}

func notIrreducible(c *Chain, comp []int32, closed []bool) *NotIrreducibleError {
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
// (with a single closed class, Closed has one entry: Steady solves such a
// chain).
func Irreducible(c *Chain) error {
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

// sccs labels the strongly connected components of the transition graph
// (Tarjan's algorithm, iterative so that long chains do not exhaust the
// stack).
func sccs(c *Chain) ([]int32, int32) {
	n := c.N
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	type frame struct {
		v    int32
		edge int64
	}
	var call []frame
	next, ncomp := int32(0), int32(0)
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call = append(call, frame{v: int32(root), edge: c.RowPtr[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.edge < c.RowPtr[v+1] {
				w := c.Col[f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w, edge: c.RowPtr[w]})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				if low[v] < low[u] {
					low[u] = low[v]
				}
			}
		}
	}
	return comp, ncomp
}
