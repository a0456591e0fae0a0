package ctmc

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// SteadyOptions controls the steady-state solver.
type SteadyOptions struct {
	// Tolerance is the bound on the relative residual
	// ||pi Q||_inf / (max_i q_i * ||pi||_inf) at which the solver stops.
	// Default 1e-12.
	Tolerance float64
	// MaxIterations caps the sweeps; reaching it is an error. Default 100000.
	MaxIterations int
	// Omega is the SOR relaxation factor in (0, 2); default 1 (Gauss-Seidel).
	Omega float64
}

// SteadyResult is a steady-state distribution with the solver's report.
type SteadyResult struct {
	Pi         []float64
	Iterations int
	Residual   float64 // final relative residual, as defined on SteadyOptions
}

// NotIrreducibleError says why a chain has no unique steady state.
type NotIrreducibleError struct {
	Closed    [][]int32 // the closed (bottom) strongly connected classes
	Transient []int32   // states in no closed class
}

func (e *NotIrreducibleError) Error() string {
	var b strings.Builder
	b.WriteString("the chain is not irreducible, so it has no unique steady state: ")
	fmt.Fprintf(&b, "%d closed classes", len(e.Closed))
	for i, c := range e.Closed {
		if i == 3 {
			fmt.Fprintf(&b, ", ...")
			break
		}
		fmt.Fprintf(&b, "; class %d has %d states (%s)", i+1, len(c), listStates(c, 5))
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

// Steady solves pi Q = 0, sum pi = 1 by Gauss-Seidel (or SOR) sweeps over
// the incoming transitions of each state, in state order. The chain must be
// irreducible (checked first; a NotIrreducibleError says which classes
// exist). Convergence is judged on the true residual, computed every few
// sweeps, never on the change between sweeps, which can be small while the
// answer is still far off.
func Steady(ctx context.Context, c *Chain, opt SteadyOptions) (*SteadyResult, error) {
	if opt.Tolerance <= 0 {
		opt.Tolerance = 1e-12
	}
	if opt.MaxIterations <= 0 {
		opt.MaxIterations = 100000
	}
	if opt.Omega == 0 {
		opt.Omega = 1
	}
	if len(c.Deadlocks) > 0 {
		i := int(c.Deadlocks[0])
		return nil, fmt.Errorf("deadlock in state %d: %s (steady-state analysis needs a chain without deadlocks)", i, c.StateString(i))
	}
	if err := Irreducible(c); err != nil {
		return nil, err
	}
	n := c.N
	in := c.incoming()
	exit := make([]float64, n)
	qmax := 0.0
	for i := 0; i < n; i++ {
		exit[i] = c.ExitRate(i)
		qmax = math.Max(qmax, exit[i])
	}
	pi := make([]float64, n)
	if n == 1 {
		pi[0] = 1
		return &SteadyResult{Pi: pi}, nil
	}
	for i := range pi {
		pi[i] = 1 / float64(n)
	}
	omega := opt.Omega
	res := math.Inf(1)
	for it := 1; it <= opt.MaxIterations; it++ {
		if it&15 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		for j := 0; j < n; j++ {
			sum := 0.0
			for k := in.ptr[j]; k < in.ptr[j+1]; k++ {
				sum += pi[in.src[k]] * in.rate[k]
			}
			pi[j] = (1-omega)*pi[j] + omega*sum/exit[j]
		}
		normalise(pi)
		if it%10 == 0 || it < 10 {
			res = residual(pi, in, exit) / qmax
			if res <= opt.Tolerance {
				return &SteadyResult{Pi: pi, Iterations: it, Residual: res}, nil
			}
		}
	}
	return nil, fmt.Errorf("steady state did not converge in %d iterations (relative residual %.3g, tolerance %.3g)",
		opt.MaxIterations, res, opt.Tolerance)
}

func normalise(pi []float64) {
	s := 0.0
	for _, x := range pi {
		s += x
	}
	for i := range pi {
		pi[i] /= s
	}
}

// residual is ||pi Q||_inf / ||pi||_inf.
func residual(pi []float64, in *csr, exit []float64) float64 {
	r, m := 0.0, 0.0
	for j := range pi {
		sum := -pi[j] * exit[j]
		for k := in.ptr[j]; k < in.ptr[j+1]; k++ {
			sum += pi[in.src[k]] * in.rate[k]
		}
		r = math.Max(r, math.Abs(sum))
		m = math.Max(m, pi[j])
	}
	return r / m
}

// csr is a compressed matrix of incoming transitions: for state j, the
// entries ptr[j]..ptr[j+1] give source states and rates (summed over
// actions, self-loops left out).
type csr struct {
	ptr  []int64
	src  []int32
	rate []float64
}

func (c *Chain) incoming() *csr {
	n := c.N
	m := &csr{ptr: make([]int64, n+1)}
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			if int(c.Col[k]) != i {
				m.ptr[c.Col[k]+1]++
			}
		}
	}
	for j := 0; j < n; j++ {
		m.ptr[j+1] += m.ptr[j]
	}
	m.src = make([]int32, m.ptr[n])
	m.rate = make([]float64, m.ptr[n])
	fill := append([]int64(nil), m.ptr[:n]...)
	for i := 0; i < n; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := c.Col[k]
			if int(j) == i {
				continue
			}
			m.src[fill[j]] = int32(i)
			m.rate[fill[j]] = c.RateAt(k)
			fill[j]++
		}
	}
	return m
}

// Irreducible returns nil if every state of c can reach every other, else a
// *NotIrreducibleError listing the closed classes and the transient states.
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
		}
		e.Closed[k] = append(e.Closed[k], int32(i))
	}
	return e
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
